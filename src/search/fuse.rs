//! Reciprocal-rank fusion: several ranked lists of keys become one.
//!
//! Each list contributes `weight / (K + rank)` to every key it holds (rank from 1).
//! Scores of different sources (BM25, cosine) are not comparable; ranks are, which is
//! why fusion looks only at positions. K = 60 is the constant of the original paper:
//! large enough that the top few of one list cannot drown agreement between lists.

use std::collections::HashMap;

/// The RRF constant.
pub const K: f64 = 60.0;

/// One ranked list and how much its ranks count.
pub struct RankedList {
    pub keys: Vec<String>,
    pub weight: f64,
}

/// Keys of all lists with their fused score, best first; ties keep the order in which
/// keys were first seen (so the first list breaks them).
pub fn fuse(lists: &[RankedList]) -> Vec<(String, f64)> {
    let mut score: HashMap<&str, (f64, usize)> = HashMap::new();
    let mut order = 0usize;
    for list in lists {
        for (i, key) in list.keys.iter().enumerate() {
            let e = score.entry(key.as_str()).or_insert_with(|| {
                order += 1;
                (0.0, order)
            });
            e.0 += list.weight / (K + (i + 1) as f64);
        }
    }
    let mut out: Vec<(&str, f64, usize)> = score.into_iter().map(|(k, (s, o))| (k, s, o)).collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)));
    out.into_iter()
        .map(|(k, s, _)| (k.to_string(), s))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(keys: &[&str], weight: f64) -> RankedList {
        RankedList {
            keys: keys.iter().map(|k| k.to_string()).collect(),
            weight,
        }
    }

    #[test]
    fn agreement_between_lists_beats_one_top_rank() {
        let fused = fuse(&[list(&["a", "b", "c"], 1.0), list(&["d", "b", "a"], 1.0)]);
        let keys: Vec<&str> = fused.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys[..2], ["a", "b"]);
        assert_eq!(keys.len(), 4);
        assert!((fused[0].1 - (1.0 / 61.0 + 1.0 / 63.0)).abs() < 1e-12);
        // A heavier list wins a tie of positions.
        let fused = fuse(&[list(&["x"], 1.0), list(&["y"], 2.0)]);
        assert_eq!(fused[0].0, "y");
        assert!(fuse(&[]).is_empty());
    }
}
