//! Reciprocal-rank fusion: several ranked lists of keys become one.
//!
//! Each list contributes `weight / (k + rank)` to every key it holds (rank from 1).
//! Scores of different sources (BM25, cosine) are not comparable; ranks are, which is
//! why fusion looks only at positions. [`K`] = 60 is the constant of the original paper:
//! large enough that the top few of one list cannot drown agreement between lists.
//! Search uses a smaller one ([`super::weights::SEARCH_K`]): its lists are long any-word
//! lists whose tails agree by chance.

use std::collections::HashMap;

/// The RRF constant.
pub const K: f64 = 60.0;

/// One ranked list and how much its ranks count.
pub struct RankedList {
    pub keys: Vec<String>,
    pub weight: f64,
}

/// Keys of all lists with their fused score, best first; ties keep the order in which
/// keys were first seen (so the first list breaks them). The constant is [`K`].
pub fn fuse(lists: &[RankedList]) -> Vec<(String, f64)> {
    fuse_with(lists, K)
}

/// [`fuse`] with the constant `k` (> 0): the smaller, the more a list's top ranks count
/// against keys that several lists hold lower down.
pub fn fuse_with(lists: &[RankedList], k: f64) -> Vec<(String, f64)> {
    let mut score: HashMap<&str, (f64, usize)> = HashMap::new();
    let mut order = 0usize;
    for list in lists {
        for (i, key) in list.keys.iter().enumerate() {
            let e = score.entry(key.as_str()).or_insert_with(|| {
                order += 1;
                (0.0, order)
            });
            e.0 += list.weight / (k + (i + 1) as f64);
        }
    }
    let mut out: Vec<(&str, f64, usize)> = score.into_iter().map(|(k, (s, o))| (k, s, o)).collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)));
    out.into_iter()
        .map(|(k, s, _)| (k.to_string(), s))
        .collect()
}

/// Put the keys of `first` ahead of all others in `fused` (best first, as [`fuse`]
/// returns it), in their fused order: each gets the best score added.
/// For evidence that outranks any agreement of lists, such as a symbol named exactly
/// as the query.
pub fn lift(fused: &mut [(String, f64)], first: &[String]) {
    let Some(top) = fused.first().map(|(_, s)| *s) else {
        return;
    };
    if first.is_empty() {
        return;
    }
    for (key, score) in fused.iter_mut() {
        if first.contains(key) {
            *score += top;
        }
    }
    // Stable: the order within the lifted keys and within the rest is kept.
    fused.sort_by(|a, b| b.1.total_cmp(&a.1));
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

    #[test]
    fn a_small_constant_lets_one_top_rank_beat_low_agreement() {
        let lists = [
            list(
                &["a", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "b"],
                1.0,
            ),
            list(
                &["y1", "y2", "y3", "y4", "y5", "y6", "y7", "y8", "y9", "b"],
                1.0,
            ),
        ];
        assert_eq!(fuse(&lists)[0].0, "b");
        assert_eq!(fuse_with(&lists, 5.0)[0].0, "a");
    }

    #[test]
    fn lifted_keys_go_first_in_their_order() {
        let mut fused = fuse(&[list(&["a", "b", "c", "d"], 1.0)]);
        lift(&mut fused, &["d".to_string(), "c".to_string()]);
        let keys: Vec<&str> = fused.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["c", "d", "a", "b"]);
        assert!(fused[0].1 > fused[2].1 && fused[2].1 > fused[3].1);
        let mut none: Vec<(String, f64)> = Vec::new();
        lift(&mut none, &["a".to_string()]);
        assert!(none.is_empty());
    }
}
