//! The localization eval's metrics: Acc@k, MRR@10 and paired bootstrap intervals, over
//! the 1-based rank of each query's first gold file (`None`: not in the list). Pure
//! functions; `tests/it/search_eval.rs` checks them against a hand-computed example.

/// The rank of the first file of `ranked` that is in `gold` (1-based), if any.
pub fn first_gold_rank(ranked: &[String], gold: &[String]) -> Option<usize> {
    ranked.iter().position(|f| gold.contains(f)).map(|i| i + 1)
}

/// Files in the order their first hit appears, each once.
pub fn files_in_order<I: IntoIterator<Item = String>>(paths: I) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    paths
        .into_iter()
        .filter(|p| seen.insert(p.clone()))
        .collect()
}

/// Whether rank `r` is within the top `k`.
pub fn hit_at(r: Option<usize>, k: usize) -> f64 {
    f64::from(u8::from(r.is_some_and(|r| r <= k)))
}

/// Reciprocal rank within the top 10.
pub fn rr10(r: Option<usize>) -> f64 {
    match r {
        Some(r) if r <= 10 => 1.0 / r as f64,
        _ => 0.0,
    }
}

/// Acc@1, Acc@5, Acc@10 and MRR@10 of some ranks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub acc1: f64,
    pub acc5: f64,
    pub acc10: f64,
    pub mrr10: f64,
}

pub fn summarize(ranks: &[Option<usize>]) -> Summary {
    let n = ranks.len();
    let mean = |f: &dyn Fn(Option<usize>) -> f64| {
        if n == 0 {
            0.0
        } else {
            ranks.iter().map(|&r| f(r)).sum::<f64>() / n as f64
        }
    };
    Summary {
        n,
        acc1: mean(&|r| hit_at(r, 1)),
        acc5: mean(&|r| hit_at(r, 5)),
        acc10: mean(&|r| hit_at(r, 10)),
        mrr10: mean(&rr10),
    }
}

/// The 95% interval (2.5th and 97.5th percentiles) of the mean of `diffs` over 2,000
/// resamples with replacement, from a fixed seed: the same ranks give the same interval.
pub fn bootstrap_ci(diffs: &[f64]) -> (f64, f64) {
    if diffs.is_empty() {
        return (0.0, 0.0);
    }
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let n = diffs.len();
    let mut means: Vec<f64> = (0..2000)
        .map(|_| {
            (0..n)
                .map(|_| diffs[(next() % n as u64) as usize])
                .sum::<f64>()
                / n as f64
        })
        .collect();
    means.sort_by(f64::total_cmp);
    (means[50], means[1949])
}

/// Paired differences of a per-query metric between two systems' ranks.
pub fn paired(
    a: &[Option<usize>],
    b: &[Option<usize>],
    metric: fn(Option<usize>) -> f64,
) -> Vec<f64> {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| metric(x) - metric(y))
        .collect()
}
