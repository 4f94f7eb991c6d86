//! The i8 scan by column: a sparse query (few non-zero codes) sums only its own
//! dimensions' columns, block by block, instead of reading every row.
//!
//! Owns: choosing the column scan for a query, the per-block integer dots (AVX2 when
//! the CPU has it), the approximate scores and the block prefetch.
//! Must never: give a score the row scan would not (the same integer dot, the same
//! float arithmetic), allocate per block, or read outside the validated section.

use super::{best_of_parts, prefetch, Metric, Sections, TopK};
use crate::format::vector_file::{COLUMN_BLOCK, SLOT_LIVE};

/// A query reads its columns instead of every row when at most this share of its
/// quantized codes are non-zero: a column costs about what a row's share of it does,
/// so below half the dimensions the columns read fewer bytes.
const MAX_COLUMN_SHARE: f64 = 0.5;

/// The query's non-zero codes `(dimension, code)` when the cache has i8 columns and
/// they are few enough for a column scan to read less than a row scan.
pub(super) fn sparse_dims(s: &Sections<'_>, query_i8: &[i8]) -> Option<Vec<(usize, i16)>> {
    if s.i8_columns.is_empty() {
        return None;
    }
    let dims: Vec<(usize, i16)> = query_i8
        .iter()
        .take(s.dim)
        .enumerate()
        .filter(|&(_, &q)| q != 0)
        .map(|(j, &q)| (j, i16::from(q)))
        .collect();
    (dims.len() as f64 <= s.dim as f64 * MAX_COLUMN_SHARE).then_some(dims)
}

/// [`super::best_i8`] by columns: the same approximate scores (the integer dot of the codes,
/// summed over the query's non-zero dimensions only), so the same candidates, the
/// blocks split among `threads`.
pub(super) fn best_by_columns(
    s: &Sections<'_>,
    dims: &[(usize, i16)],
    candidates: usize,
    metric: Metric,
    threads: usize,
) -> TopK {
    let blocks = s.live.len().div_ceil(COLUMN_BLOCK as usize);
    best_of_parts(blocks, threads, candidates, |range| {
        scan_column_blocks(s, dims, range, candidates, metric)
    })
}

/// The best `candidates` of the slots in column blocks `blocks`.
fn scan_column_blocks(
    s: &Sections<'_>,
    dims: &[(usize, i16)],
    blocks: std::ops::Range<usize>,
    candidates: usize,
    metric: Metric,
) -> TopK {
    const B: usize = COLUMN_BLOCK as usize;
    let mut approx = TopK::new(candidates);
    let mut dots = [0i32; B];
    let mut scores = [0f32; B];
    for block in blocks {
        let first = block * B;
        let n = s.live.len().saturating_sub(first).min(B);
        // The next block's columns are short runs far apart, which the hardware
        // prefetcher does not see coming: ask for them while this block is summed.
        prefetch_columns(s.i8_columns, s.dim, block + 1, dims);
        block_dots(s.i8_columns, s.dim, block, dims, &mut dots);
        let meta = |section: usize| first.min(section)..(first + n).min(section);
        block_scores(
            &dots,
            &s.live[meta(s.live.len())],
            &s.scales[meta(s.scales.len())],
            &s.norms[meta(s.norms.len())],
            metric,
            &mut scores,
        );
        // Most slots fall below the worst kept candidate: one compare each.
        for (i, &score) in scores.iter().take(n).enumerate() {
            if approx.admits(score) {
                if let Some(&key) = s.keys.get(first + i) {
                    approx.offer(score, key, first + i);
                }
            }
        }
    }
    approx
}

/// Approximate scores of one block's slots from their integer dots, as the row scan
/// computes them; NaN for a dead slot, which no candidate list admits. Branch-free
/// per slot, so it compiles to vector code.
fn block_scores(
    dots: &[i32],
    live: &[u8],
    scales: &[f32],
    norms: &[f32],
    metric: Metric,
    out: &mut [f32],
) {
    let slots = out.iter_mut().zip(dots).zip(live).zip(scales).zip(norms);
    match metric {
        Metric::Cosine => {
            for ((((out, &dot), &live), &scale), &norm) in slots {
                let score = if norm == 0.0 {
                    0.0
                } else {
                    scale * dot as f32 / norm
                };
                *out = if live == SLOT_LIVE { score } else { f32::NAN };
            }
        }
        Metric::Dot => {
            for ((((out, &dot), &live), &scale), _) in slots {
                let score = scale * dot as f32;
                *out = if live == SLOT_LIVE { score } else { f32::NAN };
            }
        }
    }
}

/// Prefetch the cache lines of `block`'s columns for `dims`.
fn prefetch_columns(columns: &[i8], dim: usize, block: usize, dims: &[(usize, i16)]) {
    const B: usize = COLUMN_BLOCK as usize;
    let base = block * dim * B;
    for &(j, _) in dims {
        let start = base + j * B;
        if start + B > columns.len() {
            return;
        }
        let column = columns[start..].as_ptr().cast::<u8>();
        for line in (0..B).step_by(64) {
            prefetch(column.wrapping_add(line));
        }
    }
}

/// The integer dot products of one block's slots with the query's non-zero codes.
fn block_dots(
    columns: &[i8],
    dim: usize,
    block: usize,
    dims: &[(usize, i16)],
    out: &mut [i32; COLUMN_BLOCK as usize],
) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        unsafe { block_dots_avx2(columns, dim, block, dims, out) };
        return;
    }
    block_dots_portable(columns, dim, block, dims, out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn block_dots_avx2(
    columns: &[i8],
    dim: usize,
    block: usize,
    dims: &[(usize, i16)],
    out: &mut [i32; COLUMN_BLOCK as usize],
) {
    // The same code, compiled for AVX2: the column loop becomes 16 codes per step.
    block_dots_portable(columns, dim, block, dims, out);
}

#[inline(always)]
fn block_dots_portable(
    columns: &[i8],
    dim: usize,
    block: usize,
    dims: &[(usize, i16)],
    out: &mut [i32; COLUMN_BLOCK as usize],
) {
    const B: usize = COLUMN_BLOCK as usize;
    out.fill(0);
    let base = block * dim * B;
    for &(j, q) in dims {
        let start = base + j * B;
        // A column past the mapping cannot happen for a validated layout; it adds nothing.
        let Some(column) = columns.get(start..start + B) else {
            continue;
        };
        // i8 x i8 fits in i16 and a sum of up to 65,536 of them in i32, so the
        // wrapping ops never wrap; they keep overflow checks (on in test and CI
        // builds) out of the loop, which would stop it being vectorised.
        for (acc, &code) in out.iter_mut().zip(column) {
            *acc = acc.wrapping_add(i32::from(i16::from(code).wrapping_mul(q)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::best_i8;
    use super::super::tests::Rows;
    use super::*;
    use crate::format::vector_file::l2_norm;

    /// The column blocks of `rows` (`dim` codes each), as the file lays them out.
    fn columns_of(rows: &[i8], dim: usize) -> Vec<i8> {
        const B: usize = COLUMN_BLOCK as usize;
        let n = rows.len() / dim;
        let mut out = vec![0i8; n.div_ceil(B) * dim * B];
        for (slot, row) in rows.chunks(dim).enumerate() {
            for (j, &code) in row.iter().enumerate() {
                out[((slot / B) * dim + j) * B + slot % B] = code;
            }
        }
        out
    }

    #[test]
    fn a_sparse_query_finds_by_columns_what_the_rows_give() {
        // Several blocks, the last one partial, dead slots, and codes from a few
        // values so that many scores tie and the key tie-break decides.
        let (dim, n) = (64usize, 5 * COLUMN_BLOCK as usize + 300);
        let mix = |i: usize| (i as u64 ^ 0xC01).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let f32_rows: Vec<f32> = (0..n * dim).map(|i| (mix(i) >> 61) as f32 - 3.5).collect();
        let mut i8_rows = vec![0i8; n * dim];
        let mut scales = vec![0f32; n];
        for (slot, row) in f32_rows.chunks(dim).enumerate() {
            scales[slot] = crate::format::vector_file::quantize_i8(
                row,
                &mut i8_rows[slot * dim..(slot + 1) * dim],
            );
        }
        let columns = columns_of(&i8_rows, dim);
        let norms: Vec<f32> = f32_rows.chunks(dim).map(l2_norm).collect();
        let keys: Vec<u64> = (0..n).map(|i| mix(i + n * dim)).collect();
        let live: Vec<u8> = (0..n)
            .map(|i| if i % 89 == 0 { 0 } else { SLOT_LIVE })
            .collect();
        let rows = Rows {
            keys,
            live,
            norms,
            scales,
            f32_rows,
            i8_rows,
            i8_columns: columns,
            bits: Vec::new(),
            dim,
        };
        let s = rows.sections();
        let mut query = vec![0f32; dim];
        for (j, x) in [(3, 0.9f32), (17, -0.4), (40, 0.25), (63, 0.6)] {
            query[j] = x;
        }
        let mut query_i8 = vec![0i8; dim];
        crate::format::vector_file::quantize_i8(&query, &mut query_i8);
        let dims = sparse_dims(&s, &query_i8).expect("four of 64 codes are sparse");
        assert_eq!(dims.len(), 4);
        let key = |t: TopK| {
            t.into_sorted()
                .iter()
                .map(|c| (c.key, c.slot, c.score.to_bits()))
                .collect::<Vec<_>>()
        };
        for metric in [Metric::Cosine, Metric::Dot] {
            let rows = key(best_i8(&s, &query_i8, 150, metric, 1));
            assert_eq!(rows.len(), 150);
            for threads in [1, 2, 3, 7] {
                let by_columns = key(best_by_columns(&s, &dims, 150, metric, threads));
                assert_eq!(by_columns, rows, "{metric:?}, {threads} threads");
            }
        }
        // A dense query reads the rows.
        let dense: Vec<i8> = (0..dim).map(|j| (j % 5) as i8 - 2).collect();
        assert!(sparse_dims(&s, &dense).is_none());
    }
}
