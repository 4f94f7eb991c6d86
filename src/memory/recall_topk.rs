//! The best `k` rows of a flat keyword expression over posting lists held in memory,
//! with `bm25()`'s scores, without scoring every row that holds a common word.
//!
//! Rows are taken from the last (the latest write) down. Each list is cut into blocks
//! of [`BLOCK`] rows whose largest count and shortest row bound the score any row in
//! them can reach (`Postings::block_max`). Once `k` rows are held, a stretch of rowids
//! where the blocks in reach cannot beat the `k`-th is passed over whole: it is the
//! block-max idea of WAND-style engines, kept exact. Two facts make it exact:
//! - a row's score is a sum of one share per token, each share growing with the
//!   token's count and falling with the row's length, and IEEE addition and division
//!   are monotone, so the same sum over the bounds is at least the row's score;
//! - rows come in falling rowid order, so a row scoring exactly the `k`-th's loses the
//!   tie (ties go to the later row, as in the statement), and "at most the `k`-th"
//!   is enough to pass over.
//!
//! Scores are computed with the same operations in the same order as the statement's
//! `bm25()`, so they are equal to the bit.
//!
//! Owns: that traversal. Must never read the database: lists come from the caller.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::store::fts_postings::{BlockMax, Posting, Postings, BLOCK};

/// BM25's constants, as FTS5's `bm25()` has them.
pub(super) const K1: f64 = 1.2;
pub(super) const B: f64 = 0.75;

/// A scored row: `bm25()`'s score (higher is better) and its rowid.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Scored {
    pub score: f64,
    pub rowid: i64,
}

/// The statement's order: best score first, then the later row.
pub(super) fn better(a: &Scored, b: &Scored) -> Ordering {
    b.score
        .total_cmp(&a.score)
        .then_with(|| b.rowid.cmp(&a.rowid))
}

/// In a max-heap, the worst held row on top.
struct Worst(Scored);

impl PartialEq for Worst {
    fn eq(&self, other: &Self) -> bool {
        better(&self.0, &other.0) == Ordering::Equal
    }
}
impl Eq for Worst {}
impl PartialOrd for Worst {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Worst {
    fn cmp(&self, other: &Self) -> Ordering {
        better(&self.0, &other.0)
    }
}

/// How a query scores: per list its token's idf, the column weights and the mean row
/// length, as `bm25()` reads them.
pub(super) struct Scoring<'a> {
    pub idf: &'a [f64],
    pub weights: [f64; 2],
    pub avgdl: f64,
}

impl Scoring<'_> {
    fn norm(&self, len: u32) -> f64 {
        1.0 - B + B * f64::from(len) / self.avgdl
    }

    /// One token's share of a row's score: `bm25()`'s term, operation for operation.
    fn share(idf: f64, freq: f64, norm: f64) -> f64 {
        idf * ((freq * (K1 + 1.0)) / (freq + K1 * norm))
    }

    fn freq(&self, p: &Posting) -> f64 {
        f64::from(p.tf[0]) * self.weights[0] + f64::from(p.tf[1]) * self.weights[1]
    }
}

/// The best `k` rows holding every token (`all`) or any, best first, ties to the
/// later row. `lists[i]` is the list of the token whose idf is `scoring.idf[i]`.
pub(super) fn top_k(
    lists: &[&Postings],
    scoring: &Scoring<'_>,
    all: bool,
    k: usize,
) -> Vec<Scored> {
    let n = lists.len();
    if k == 0 || n == 0 {
        return Vec::new();
    }
    // Per list and block, the most a row of the block adds to a score.
    let bounds: Vec<Vec<f64>> = lists
        .iter()
        .zip(scoring.idf)
        .map(|(l, &idf)| {
            l.block_max(scoring.weights)
                .iter()
                .map(|m: &BlockMax| Scoring::share(idf, m.max_freq, scoring.norm(m.min_len)))
                .collect()
        })
        .collect();
    // Per list, how many rows are left: the next row to take is `rows[end - 1]`.
    let mut end: Vec<usize> = lists.iter().map(|l| l.rows.len()).collect();
    let mut freq = vec![0.0f64; n];
    let mut heap: BinaryHeap<Worst> = BinaryHeap::with_capacity(k.min(1 << 16) + 1);
    // The stretch last judged worth reading: its lowest rowid and the floor it was
    // judged against. It is judged again once left or once the floor rises.
    let mut window: Option<(i64, f64)> = None;
    loop {
        // The next candidate: for AND the smallest head (every list must hold it), for
        // OR the largest.
        let mut next: Option<i64> = None;
        for (l, &e) in lists.iter().zip(&end) {
            if e == 0 {
                if all {
                    return into_sorted(heap);
                }
                continue;
            }
            let head = l.rows[e - 1].rowid;
            next = Some(match next {
                None => head,
                Some(d) if all => d.min(head),
                Some(d) => d.max(head),
            });
        }
        let Some(rowid) = next else {
            return into_sorted(heap);
        };
        if heap.len() == k {
            let floor = heap.peek().map_or(f64::NEG_INFINITY, |w| w.0.score);
            let judged = window.is_some_and(|(from, at)| rowid >= from && at == floor);
            if !judged {
                let (from, bound) = reach(lists, &bounds, &end, all);
                if bound <= floor {
                    for (l, e) in lists.iter().zip(end.iter_mut()) {
                        *e = gallop_back(&l.rows[..*e], from - 1);
                    }
                    window = None;
                    continue;
                }
                window = Some((from, floor));
            }
        }
        let mut held = 0usize;
        let mut len = 0u32;
        for (k, l) in lists.iter().enumerate() {
            freq[k] = 0.0;
            if all {
                end[k] = gallop_back(&l.rows[..end[k]], rowid);
            }
            if let Some(p) = end[k].checked_sub(1).map(|i| &l.rows[i]) {
                if p.rowid == rowid {
                    freq[k] = scoring.freq(p);
                    len = p.len;
                    held += 1;
                    end[k] -= 1;
                }
            }
        }
        if all && held < n {
            continue;
        }
        let norm = scoring.norm(len);
        let mut score = 0.0;
        for (idf, f) in scoring.idf.iter().zip(&freq) {
            score += Scoring::share(*idf, *f, norm);
        }
        let row = Worst(Scored { score, rowid });
        if heap.len() < k {
            heap.push(row);
        } else if heap.peek().is_some_and(|w| row < *w) {
            heap.pop();
            heap.push(row);
        }
    }
}

/// The stretch the lists' current blocks cover together, as its lowest rowid `from`,
/// and the most a row at or above `from` (and below every list's next row) can score.
///
/// Each list's next row is in its current block, which reaches down to that block's
/// first row; above the highest of those first rows every list's remaining rows are
/// in its current block (or it has none there), so the blocks' bounds hold for them.
/// The bound is summed in the lists' order, as a row's score is.
fn reach(lists: &[&Postings], bounds: &[Vec<f64>], end: &[usize], all: bool) -> (i64, f64) {
    let mut from = i64::MIN;
    for (l, &e) in lists.iter().zip(end) {
        if e > 0 {
            from = from.max(l.rows[(e - 1) / BLOCK * BLOCK].rowid);
        }
    }
    let mut bound = 0.0;
    for ((l, b), &e) in lists.iter().zip(bounds).zip(end) {
        bound += match e.checked_sub(1) {
            Some(i) if l.rows[i].rowid >= from => b[i / BLOCK],
            // A list with no row there: for AND no row there holds every token.
            _ if all => return (from, f64::NEG_INFINITY),
            _ => 0.0,
        };
    }
    (from, bound)
}

/// How many leading rows of `rows` are at or below `rowid`, searched from the end.
fn gallop_back(rows: &[Posting], rowid: i64) -> usize {
    let n = rows.len();
    if rows.last().is_none_or(|p| p.rowid <= rowid) {
        return n;
    }
    // rows[n - step] is above `rowid` while stepping.
    let mut step = 1usize;
    while step < n && rows[n - 1 - step].rowid > rowid {
        step *= 2;
    }
    let lo = n.saturating_sub(step + 1);
    let hi = n - step / 2 - 1;
    lo + rows[lo..hi].partition_point(|p| p.rowid <= rowid)
}

fn into_sorted(heap: BinaryHeap<Worst>) -> Vec<Scored> {
    let mut out: Vec<Scored> = heap.into_iter().map(|w| w.0).collect();
    out.sort_unstable_by(better);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every matching row scored and sorted: what `top_k` must equal.
    fn exhaustive(lists: &[&Postings], s: &Scoring<'_>, all: bool, k: usize) -> Vec<Scored> {
        let mut ids: Vec<i64> = lists
            .iter()
            .flat_map(|l| l.rows.iter().map(|p| p.rowid))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        let mut out = Vec::new();
        for id in ids {
            let found: Vec<Option<&Posting>> = lists
                .iter()
                .map(|l| {
                    l.rows
                        .binary_search_by_key(&id, |p| p.rowid)
                        .ok()
                        .map(|i| &l.rows[i])
                })
                .collect();
            if all && found.iter().any(Option::is_none) {
                continue;
            }
            let len = found
                .iter()
                .flatten()
                .map(|p| p.len)
                .next_back()
                .unwrap_or(0);
            let norm = s.norm(len);
            let mut score = 0.0;
            for (idf, p) in s.idf.iter().zip(&found) {
                score += Scoring::share(*idf, p.map_or(0.0, |p| s.freq(p)), norm);
            }
            out.push(Scored { score, rowid: id });
        }
        out.sort_unstable_by(better);
        out.truncate(k);
        out
    }

    /// Lists over rowids `0..universe`, each row holding each token with probability
    /// `density`, counts small (many ties) and one length per row.
    fn lists_strategy() -> impl Strategy<Value = (Vec<Postings>, Vec<f64>)> {
        (1usize..4, 1usize..2000, 1u8..10, 0u32..12).prop_flat_map(
            |(n, universe, density, spread)| {
                let rows = proptest::collection::vec(
                    (
                        proptest::collection::vec((0u8..10, 0u16..4, 0u16..2), n),
                        0..=spread,
                    ),
                    universe,
                );
                let idf = proptest::collection::vec(0.000_001f64..3.0, n);
                (rows, idf).prop_map(move |(rows, idf)| {
                    let mut lists: Vec<Vec<Posting>> = vec![Vec::new(); n];
                    for (rowid, (tokens, extra)) in rows.iter().enumerate() {
                        for (list, &(coin, t0, t1)) in lists.iter_mut().zip(tokens) {
                            if coin < density && t0 + t1 > 0 {
                                list.push(Posting {
                                    rowid: rowid as i64 * 3 + 1,
                                    tf: [t0, t1],
                                    len: 8 + extra,
                                });
                            }
                        }
                    }
                    (
                        lists.into_iter().map(|r| Postings::new(r, false)).collect(),
                        idf,
                    )
                })
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn top_k_equals_the_exhaustive_ranking(
            (lists, idf) in lists_strategy(),
            all in any::<bool>(),
            k in 1usize..40,
            avgdl in 6.0f64..20.0,
        ) {
            let refs: Vec<&Postings> = lists.iter().collect();
            let s = Scoring { idf: &idf, weights: [1.0, 2.0], avgdl };
            let want = exhaustive(&refs, &s, all, k);
            let got = top_k(&refs, &s, all, k);
            prop_assert_eq!(got, want);
        }
    }

    /// Where every row scores the same, the latest `k` win and whole blocks are passed.
    #[test]
    fn ties_go_to_the_later_row() {
        let rows: Vec<Posting> = (0..10_000)
            .map(|i| Posting {
                rowid: i,
                tf: [1, 0],
                len: 10,
            })
            .collect();
        let list = Postings::new(rows, false);
        let s = Scoring {
            idf: &[1.0],
            weights: [1.0, 2.0],
            avgdl: 10.0,
        };
        let got = top_k(&[&list], &s, true, 3);
        let ids: Vec<i64> = got.iter().map(|r| r.rowid).collect();
        assert_eq!(ids, [9_999, 9_998, 9_997]);
    }

    #[test]
    fn gallop_back_counts_rows_at_or_below() {
        let rows: Vec<Posting> = [2, 4, 6, 8, 10, 12, 14]
            .iter()
            .map(|&rowid| Posting {
                rowid,
                tf: [1, 0],
                len: 1,
            })
            .collect();
        for probe in 0..16 {
            let want = rows.iter().filter(|p| p.rowid <= probe).count();
            assert_eq!(gallop_back(&rows, probe), want, "{probe}");
            for cut in 0..rows.len() {
                let want = rows[..cut].iter().filter(|p| p.rowid <= probe).count();
                assert_eq!(gallop_back(&rows[..cut], probe), want, "{probe} in {cut}");
            }
        }
    }
}
