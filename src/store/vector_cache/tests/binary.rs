//! Tests for the sign-bit first pass: recall against the exact scan on clustered
//! vectors, the bits kept in step with the rows, and the rule that picks the pass.

use super::super::*;
use super::{ids, opts, recall_at, Rng};
use crate::format::vector_file::sign_bits;
use crate::store::vector_scan::{binary_candidates, binary_pays, i8_candidates};

impl Rng {
    /// A standard normal deviate (Box-Muller).
    fn gauss(&mut self) -> f32 {
        let u1 = ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let u2 = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32
    }

    /// A unit vector in a random direction.
    fn direction(&mut self, dim: usize) -> Vec<f32> {
        let mut v: Vec<f32> = (0..dim).map(|_| self.gauss()).collect();
        let norm = crate::format::vector_file::l2_norm(&v);
        v.iter_mut().for_each(|x| *x /= norm);
        v
    }
}

/// `centre` plus Gaussian noise of expected norm `spread` (relative to the unit centre).
fn near(rng: &mut Rng, centre: &[f32], spread: f32) -> Vec<f32> {
    let sigma = spread / (centre.len() as f32).sqrt();
    centre.iter().map(|&c| c + sigma * rng.gauss()).collect()
}

/// The sign bits stored for `key`'s slot, and those of its f32 row.
fn stored_and_expected_bits(c: &VectorCache, key: u64) -> (Vec<u64>, Vec<u64>) {
    let s = c.sections().unwrap();
    let slot = c.index[&key] as usize;
    let stored = s.bits[slot * s.stride_bits..(slot + 1) * s.stride_bits].to_vec();
    let mut expected = vec![0u64; s.stride_bits];
    sign_bits(&c.get(key).unwrap(), &mut expected);
    (stored, expected)
}

/// 100,000 clustered rows of dim 384 (1,000 random unit centres, each row its centre
/// plus Gaussian noise of the same norm; queries a data point plus as much noise
/// again, so the exact top 10 spans cosines of about 0.8 to 0.45): the Hamming pass
/// with its default candidates finds at least 95% of the exact top 10 (1.0 when
/// measured), and `Auto` takes that pass here.
#[test]
fn the_binary_pass_holds_recall_at_10_on_100k_clustered_vectors() {
    const DIM: usize = 384;
    let (rows, centres, queries) = (100_000usize, 1_000usize, 50usize);
    let mut rng = Rng(0xB175);
    let o = VectorCacheOptions {
        initial_capacity: rows as u64,
        ..opts(DIM as u32, true, 1)
    };
    let mut c = VectorCache::in_memory(&o).unwrap();
    let centre: Vec<Vec<f32>> = (0..centres).map(|_| rng.direction(DIM)).collect();
    let mut data = Vec::with_capacity(queries);
    for i in 0..rows {
        let home = (rng.next_u64() % centres as u64) as usize;
        let v = near(&mut rng, &centre[home], 1.0);
        if i % (rows / queries) == 0 {
            data.push(v.clone());
        }
        c.upsert((i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15), &v)
            .unwrap();
    }
    let mode = ScanMode::Binary {
        candidates: binary_candidates(10, c.len()),
        threads: 0,
    };
    // The Hamming order alone is far from the exact one (so the set is no easy
    // one): only the re-rank of a few hundred candidates recovers the top 10.
    let shallow = ScanMode::Binary {
        candidates: 32,
        threads: 0,
    };
    let (mut total, mut total_shallow) = (0.0, 0.0);
    for point in &data {
        let q = near(&mut rng, point, 1.0);
        let exact = c.search(&q, 10, Metric::Cosine, ScanMode::F32).unwrap();
        let approx = c.search(&q, 10, Metric::Cosine, mode).unwrap();
        // Every reported score is the exact one, whichever pass found the row.
        for h in &approx {
            if let Some(e) = exact.iter().find(|e| e.key_hash == h.key_hash) {
                assert_eq!(h.score, e.score);
            }
        }
        assert_eq!(
            c.search(&q, 10, Metric::Cosine, ScanMode::Auto { threads: 0 })
                .unwrap(),
            approx,
            "Auto takes the binary pass for dense rows in a large cache"
        );
        total += recall_at(&exact, &approx);
        let few = c.search(&q, 10, Metric::Cosine, shallow).unwrap();
        total_shallow += recall_at(&exact, &few);
    }
    let recall = total / data.len() as f64;
    let recall_shallow = total_shallow / data.len() as f64;
    assert!(recall >= 0.95, "binary recall@10 = {recall}");
    assert!(
        recall_shallow < 0.9,
        "32 candidates already give recall@10 = {recall_shallow}: the set is too easy"
    );
}

/// Upserts, replacements, removals and growth (which compacts the slots) keep every
/// live slot's sign bits those of its f32 row; a Hamming pass that keeps every row
/// as a candidate is then the exact scan.
#[test]
fn sign_bits_follow_upserts_removals_and_growth() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v");
    // No i8 rows, so that nothing cuts the Hamming candidates before the re-rank.
    let o = VectorCacheOptions {
        with_bits: true,
        ..opts(100, false, 8)
    };
    let mut c = VectorCache::create(&path, &o).unwrap();
    let mut rng = Rng(21);
    for i in 0..2000u64 {
        let key = (i % 1500).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        c.upsert(key, &rng.vec(100)).unwrap();
        if i % 11 == 0 {
            c.remove((i / 3).wrapping_mul(0x9e37_79b9_7f4a_7c15))
                .unwrap();
        }
    }
    assert!(c.capacity() > 8, "the cache grew");
    let keys: Vec<u64> = c.index.keys().copied().collect();
    for &key in &keys {
        let (stored, expected) = stored_and_expected_bits(&c, key);
        assert_eq!(stored, expected, "key {key:#x}");
        assert_eq!(expected.len(), 2);
        assert_eq!(expected[1] >> 36, 0, "bits past dim 100 stay zero");
    }
    c.flush().unwrap();
    let c = VectorCache::open_read_only(&path, &o).unwrap();
    let all = ScanMode::Binary {
        candidates: c.len() as usize,
        threads: 2,
    };
    for metric in [Metric::Cosine, Metric::Dot] {
        let q = rng.vec(100);
        let exact = c.search(&q, 10, metric, ScanMode::F32).unwrap();
        assert_eq!(c.search(&q, 10, metric, all).unwrap(), exact);
        let few = ScanMode::Binary {
            candidates: 50,
            threads: 1,
        };
        let one = c.search(&q, 10, metric, few).unwrap();
        let two = c
            .search(
                &q,
                10,
                metric,
                ScanMode::Binary {
                    candidates: 50,
                    threads: 3,
                },
            )
            .unwrap();
        assert_eq!(ids(&one), ids(&two), "threads do not change the candidates");
    }
}

/// `Auto` keeps the i8 scan for a small cache, for sparse rows (the hashed
/// embedder's), for a sparse query and for dot products; a cache without bits
/// refuses the binary mode.
#[test]
fn auto_takes_the_binary_pass_only_where_it_pays() {
    let mut rng = Rng(5);
    let dim = 64;
    let big = 40_000u64;
    let build = |rng: &mut Rng, sparse: bool, rows: u64| {
        let o = VectorCacheOptions {
            initial_capacity: rows,
            ..opts(dim, true, 1)
        };
        let mut c = VectorCache::in_memory(&o).unwrap();
        for i in 0..rows {
            let mut v = rng.vec(dim as usize);
            if sparse {
                v.iter_mut().skip(6).for_each(|x| *x = 0.0);
            }
            c.upsert(i.wrapping_mul(0x9e37_79b9_7f4a_7c15), &v).unwrap();
        }
        c
    };
    let dense = build(&mut rng, false, big);
    let small = build(&mut rng, false, 1000);
    let sparse = build(&mut rng, true, big);
    let pays = |c: &VectorCache, q: &[f32], metric| {
        binary_pays(&c.sections().unwrap(), q, metric, c.len())
    };
    let q = rng.vec(dim as usize);
    assert!(pays(&dense, &q, Metric::Cosine));
    assert!(!pays(&dense, &q, Metric::Dot));
    assert!(!pays(&small, &q, Metric::Cosine));
    assert!(!pays(&sparse, &q, Metric::Cosine));
    let mut few = q.clone();
    few.iter_mut().skip(10).for_each(|x| *x = 0.0);
    assert!(!pays(&dense, &few, Metric::Cosine));
    // Where it does not pay, Auto is the default i8 scan.
    let i8 = ScanMode::I8Rerank {
        candidates: i8_candidates(10),
        threads: 0,
    };
    for (c, q) in [(&small, &q), (&sparse, &q), (&dense, &few)] {
        assert_eq!(
            c.search(q, 10, Metric::Cosine, ScanMode::Auto { threads: 0 })
                .unwrap(),
            c.search(q, 10, Metric::Cosine, i8).unwrap()
        );
    }
    assert_eq!(binary_candidates(10, 100_000), 256);
    assert_eq!(binary_candidates(50, 100_000), 1000);
    assert_eq!(binary_candidates(10, 1_000_000), 976);

    let no_bits = VectorCacheOptions {
        with_bits: false,
        ..opts(dim, true, 4)
    };
    let mut c = VectorCache::in_memory(&no_bits).unwrap();
    c.upsert(1, &q).unwrap();
    let binary = ScanMode::Binary {
        candidates: 10,
        threads: 1,
    };
    assert!(matches!(
        c.search(&q, 1, Metric::Cosine, binary),
        Err(VectorCacheError::NoBits)
    ));
    assert_eq!(
        c.search(&q, 1, Metric::Cosine, ScanMode::Auto { threads: 0 })
            .unwrap()[0]
            .key_hash,
        1
    );
}
