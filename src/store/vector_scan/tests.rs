//! Tests for the scan core: the bounded top-k, the parallel i8 scan against one
//! thread, and the cosine score; `Rows` holds sections in vectors for the
//! submodules' tests.

use super::*;

/// The sections of a cache held in vectors, rows packed (stride = `dim`).
pub(in crate::store::vector_scan) struct Rows {
    pub keys: Vec<u64>,
    pub live: Vec<u8>,
    pub norms: Vec<f32>,
    pub scales: Vec<f32>,
    pub f32_rows: Vec<f32>,
    pub i8_rows: Vec<i8>,
    pub i8_columns: Vec<i8>,
    pub bits: Vec<u64>,
    pub dim: usize,
}

impl Rows {
    pub fn sections(&self) -> Sections<'_> {
        Sections {
            keys: &self.keys,
            live: &self.live,
            norms: &self.norms,
            scales: &self.scales,
            f32_rows: &self.f32_rows,
            i8_rows: &self.i8_rows,
            i8_columns: &self.i8_columns,
            bits: &self.bits,
            dim: self.dim,
            stride_f32: self.dim,
            stride_i8: self.dim,
            stride_bits: self.dim.div_ceil(64),
        }
    }
}

#[test]
fn topk_keeps_best_and_breaks_ties_by_key() {
    let mut t = TopK::new(3);
    for (score, key) in [
        (0.5, 9),
        (0.9, 1),
        (0.5, 3),
        (f32::NAN, 0),
        (0.1, 2),
        (0.5, 4),
    ] {
        t.offer(score, key, 0);
    }
    let got: Vec<(f32, u64)> = t.into_sorted().iter().map(|c| (c.score, c.key)).collect();
    assert_eq!(got, vec![(0.9, 1), (0.5, 3), (0.5, 4)]);
}

#[test]
fn the_parallel_i8_scan_finds_what_one_thread_finds() {
    // Enough rows for several scan threads (on a machine with several cores),
    // with many equal scores so the key tie-break decides across slices.
    let (dim, n) = (8usize, 3 * ROWS_PER_SCAN_THREAD + 17);
    // Fibonacci hashing spreads the index over all 64 bits: varied, repeatable.
    let mix = |i: usize| (i as u64 ^ 0x5EED).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let f32_rows: Vec<f32> = (0..n * dim)
        .map(|i| (mix(i) >> 61) as f32 % 5.0 - 2.0)
        .collect();
    let i8_rows: Vec<i8> = f32_rows.iter().map(|&x| x as i8).collect();
    let norms: Vec<f32> = f32_rows.chunks(dim).map(l2_norm).collect();
    let keys: Vec<u64> = (0..n).map(|i| mix(i + n * dim)).collect();
    let live: Vec<u8> = (0..n)
        .map(|i| if i % 97 == 0 { 0 } else { SLOT_LIVE })
        .collect();
    let scales = vec![1.0f32; n];
    let rows = Rows {
        keys,
        live,
        norms,
        scales,
        f32_rows,
        i8_rows,
        i8_columns: Vec::new(),
        bits: Vec::new(),
        dim,
    };
    let s = rows.sections();
    let query = [1.0f32, -2.0, 0.0, 2.0, 1.0, 1.0, -1.0, 0.0];
    let query_i8: Vec<i8> = query.iter().map(|&x| x as i8).collect();
    for metric in [Metric::Cosine, Metric::Dot] {
        let one = best_i8(&s, &query_i8, 100, metric, 1).into_sorted();
        for threads in [2, 3, 7] {
            let many = best_i8(&s, &query_i8, 100, metric, threads).into_sorted();
            let key = |c: &Vec<Cand>| c.iter().map(|c| (c.key, c.slot)).collect::<Vec<_>>();
            assert_eq!(key(&many), key(&one), "{metric:?}, {threads} threads");
        }
        assert_eq!(one.len(), 100);
        // And the full search, however many threads this machine gives it.
        assert_eq!(
            scan_i8_rerank(&s, &query, &query_i8, 10, 100, 0, metric).len(),
            10
        );
    }
}

#[test]
fn cosine_score_is_similarity() {
    let a = [1.0f32, 0.0, 0.0];
    let cos = |b: &[f32]| score_f32(&a, 1.0, b, l2_norm(b), Metric::Cosine);
    assert!((cos(&a) - 1.0).abs() < 1e-6);
    assert!((cos(&[-2.0, 0.0, 0.0]) + 1.0).abs() < 1e-6);
    assert!((cos(&[1.0, 1.0, 0.0]) - 0.5f32.sqrt()).abs() < 1e-6);
    assert_eq!(cos(&[0.0, 0.0, 0.0]), 0.0);
    let dot = score_f32(&a, 1.0, &[3.0, 1.0, 0.0], 0.0, Metric::Dot);
    assert!((dot - 3.0).abs() < 1e-6);
}
