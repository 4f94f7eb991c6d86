//! Top-k scanning over the vector cache's mapped sections.
//!
//! Owns: per-row scoring with simsimd, the bounded top-k heap, the exact f32 scan
//! and the i8 scan (by row, or by column for a sparse query) with exact f32 re-rank.
//! Must never: write to the mapping, allocate per row, sort all rows, or panic on
//! row contents (a corrupt file may hold NaN/garbage; such rows are skipped).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use simsimd::SpatialSimilarity;

use crate::format::vector_file::{l2_norm, SLOT_LIVE};

mod binary;
mod columns;
pub use binary::binary_candidates;
pub(crate) use binary::{binary_pays, scan_binary_rerank};
use columns::{best_by_columns, sparse_dims};

/// How scores are computed. Higher is better for both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    /// Cosine similarity in [-1, 1]; a zero stored vector scores 0.
    Cosine,
    /// Raw inner product.
    Dot,
}

/// Which rows are scanned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScanMode {
    /// Exact scan of every f32 row.
    F32,
    /// Scan the i8 rows, keep the best `candidates` (at least `k`), then rank
    /// those by exact f32 score. Requires a cache created with i8 rows.
    I8Rerank {
        /// Approximate candidates kept before the exact re-rank.
        candidates: usize,
        /// Threads that share the i8 scan; 0: one per core (at most 8) once the
        /// cache holds 128K rows or more, one below that. The result is the same
        /// for any count.
        threads: usize,
    },
    /// Rank every live row by the Hamming distance of its sign bits to the query's,
    /// keep the best `candidates` (at least `k`), then rank those by exact f32
    /// score. Requires a cache created with sign bits; a coarse pass meant for
    /// dense vectors (see [`ScanMode::Auto`]).
    Binary {
        /// Candidates kept from the Hamming pass before the exact re-rank.
        candidates: usize,
        /// Threads that share the Hamming pass, as for `I8Rerank`.
        threads: usize,
    },
    /// Choose per query: the sign-bit pass with [`binary_candidates`]`(k, rows)` for a
    /// dense cosine query against a large cache of dense rows (format-spec/vector-cache.md,
    /// Search), otherwise the i8 scan with [`i8_candidates`]`(k)` (by column for a
    /// sparse query), or the exact scan for a cache without i8 rows.
    Auto {
        /// Threads that share the first pass, as for `I8Rerank`.
        threads: usize,
    },
}

/// Candidates the i8 scan keeps for a top-`k` in [`ScanMode::Auto`] and
/// [`ScanMode::i8_rerank_default`]: `max(10·k, 100)`.
pub fn i8_candidates(k: usize) -> usize {
    k.saturating_mul(10).max(100)
}

impl ScanMode {
    /// i8 re-rank with the default candidate count `max(10 * k, 100)`, which keeps
    /// recall@k at or above 0.99 on 384-dim embeddings in our measurements.
    pub fn i8_rerank_default(k: usize) -> Self {
        ScanMode::I8Rerank {
            candidates: i8_candidates(k),
            threads: 0,
        }
    }
}

/// One search result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VectorHit {
    /// Key hash the vector was stored under.
    pub key_hash: u64,
    /// Score under the requested [`Metric`]; higher is better.
    pub score: f32,
}

/// Borrowed views of the used part of every section (`count` slots each).
pub(crate) struct Sections<'a> {
    pub keys: &'a [u64],
    pub live: &'a [u8],
    /// L2 norm of each f32 row.
    pub norms: &'a [f32],
    /// Empty when the file has no i8 rows.
    pub scales: &'a [f32],
    /// `count * stride_f32` elements.
    pub f32_rows: &'a [f32],
    /// `count * stride_i8` elements; empty when the file has no i8 rows.
    pub i8_rows: &'a [i8],
    /// The i8 codes by column: `ceil(count / COLUMN_BLOCK)` blocks of `dim` columns of
    /// `COLUMN_BLOCK` codes; empty when the file has none.
    pub i8_columns: &'a [i8],
    /// `count * stride_bits` words of sign bits; empty when the file has none.
    pub bits: &'a [u64],
    pub dim: usize,
    /// Row stride in f32 elements.
    pub stride_f32: usize,
    /// Row stride in i8 elements.
    pub stride_i8: usize,
    /// Sign-bit stride in 64-bit words.
    pub stride_bits: usize,
}

impl Sections<'_> {
    fn f32_row(&self, slot: usize) -> Option<&[f32]> {
        let start = slot.checked_mul(self.stride_f32)?;
        self.f32_rows.get(start..start.checked_add(self.dim)?)
    }

    /// Slot `slot`'s approximate score from its i8 codes, as [`scan_i8_range`]
    /// computes it; `None` without i8 rows.
    fn i8_score(&self, query_i8: &[i8], slot: usize, metric: Metric) -> Option<f32> {
        let start = slot.checked_mul(self.stride_i8)?;
        let row = self.i8_rows.get(start..start.checked_add(self.dim)?)?;
        let (&scale, &norm) = (self.scales.get(slot)?, self.norms.get(slot)?);
        let dot = scale * <i8 as SpatialSimilarity>::dot(query_i8, row).unwrap_or(0.0) as f32;
        Some(match metric {
            Metric::Cosine if norm == 0.0 => 0.0,
            Metric::Cosine => dot / norm,
            Metric::Dot => dot,
        })
    }
}

/// Cosine similarity from a dot product and both norms; 0 against a zero vector.
#[inline]
fn cosine_from_dot(dot: f64, query_norm: f32, row_norm: f32) -> f32 {
    let denom = f64::from(query_norm) * f64::from(row_norm);
    if denom == 0.0 {
        return 0.0;
    }
    ((dot / denom) as f32).clamp(-1.0, 1.0)
}

/// Exact score of `row` against `query`.
///
/// Cosine is a simsimd dot divided by the stored row norm and the query norm,
/// rather than simsimd's `cos`: the dot kernel does a third of the arithmetic
/// and measured ~12% faster over 1M rows of dim 384. Lengths are equal by
/// construction; the fallback only exists so a mismatch can never panic.
#[inline]
pub(crate) fn score_f32(
    query: &[f32],
    query_norm: f32,
    row: &[f32],
    row_norm: f32,
    metric: Metric,
) -> f32 {
    let dot = <f32 as SpatialSimilarity>::dot(query, row).unwrap_or(0.0);
    match metric {
        Metric::Cosine => cosine_from_dot(dot, query_norm, row_norm),
        Metric::Dot => dot as f32,
    }
}

/// A candidate ordered so that the *worse* one compares greater, which makes
/// `BinaryHeap` (a max-heap) keep the current worst on top for O(1) rejection.
#[derive(Clone, Copy)]
struct Cand {
    score: f32,
    key: u64,
    slot: usize,
}

impl Ord for Cand {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then(self.key.cmp(&other.key))
    }
}
impl PartialOrd for Cand {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for Cand {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Cand {}

/// Bounded top-k: O(n log k) over n offers, never holds more than `k` entries.
struct TopK {
    k: usize,
    heap: BinaryHeap<Cand>,
    /// Score of the worst kept entry once full; -inf before.
    floor: f32,
}

impl TopK {
    fn new(k: usize) -> Self {
        TopK {
            k,
            heap: BinaryHeap::with_capacity(k.min(1 << 16) + 1),
            floor: f32::NEG_INFINITY,
        }
    }

    /// Cheap pre-check so the scan loop only loads a key hash for rows that can
    /// enter the heap. False for NaN (corrupt rows are never reported).
    #[inline(always)]
    fn admits(&self, score: f32) -> bool {
        score >= self.floor
    }

    #[inline]
    fn offer(&mut self, score: f32, key: u64, slot: usize) {
        if !self.admits(score) || self.k == 0 {
            return;
        }
        let cand = Cand { score, key, slot };
        if self.heap.len() < self.k {
            self.heap.push(cand);
        } else if let Some(mut worst) = self.heap.peek_mut() {
            if cand < *worst {
                *worst = cand;
            }
        }
        if self.heap.len() == self.k {
            self.floor = self.heap.peek().map_or(f32::NEG_INFINITY, |c| c.score);
        }
    }

    /// Best first: score descending, then key hash ascending.
    fn into_sorted(self) -> Vec<Cand> {
        self.heap.into_sorted_vec()
    }
}

fn to_hits(cands: Vec<Cand>) -> Vec<VectorHit> {
    cands
        .into_iter()
        .map(|c| VectorHit {
            key_hash: c.key,
            score: c.score,
        })
        .collect()
}

/// Exact top-k over every live f32 row.
pub(crate) fn scan_f32(
    s: &Sections<'_>,
    query: &[f32],
    k: usize,
    metric: Metric,
) -> Vec<VectorHit> {
    let query_norm = l2_norm(query);
    let mut top = TopK::new(k);
    let rows = s.f32_rows.chunks_exact(s.stride_f32.max(1));
    // No software prefetch here: it measured 10-15% slower for f32 rows, which
    // the hardware prefetcher already streams at ~85% of raw read bandwidth.
    let slots = rows.zip(s.live).zip(s.norms).enumerate();
    for (slot, ((row, &live), &norm)) in slots {
        if live != SLOT_LIVE {
            continue;
        }
        let row = row.get(..s.dim).unwrap_or(&[]);
        let score = score_f32(query, query_norm, row, norm, metric);
        if top.admits(score) {
            if let Some(&key) = s.keys.get(slot) {
                top.offer(score, key, slot);
            }
        }
    }
    to_hits(top.into_sorted())
}

/// Approximate scan over i8 rows, then exact f32 re-rank of the best `candidates`.
///
/// The approximate score is `scale_row * dot_i8(q, row)`, divided by the row's
/// f32 norm for cosine. The query's scale and norm are dropped: positive
/// constants cannot change the order. simsimd's i8 `cos` would avoid the norm
/// lookup but measured ~2x slower than its i8 `dot` on 1M rows.
///
/// A large cache is scanned in parallel, one slice of the rows per core: each keeps
/// its own best `candidates` and the union is cut to the best `candidates` again.
/// The threads a scan of `s` runs on when asked for `threads` (0: by the rows).
pub(crate) fn threads_for(s: &Sections<'_>, threads: usize) -> usize {
    match threads {
        0 => scan_threads(s.live.len()),
        n => n.min(s.live.len().max(1)),
    }
}

/// The order is total (score, then key hash), so the result is the one-thread scan's.
pub(crate) fn scan_i8_rerank(
    s: &Sections<'_>,
    query: &[f32],
    query_i8: &[i8],
    k: usize,
    candidates: usize,
    threads: usize,
    metric: Metric,
) -> Vec<VectorHit> {
    let candidates = candidates.max(k);
    let threads = threads_for(s, threads);
    let approx = match sparse_dims(s, query_i8) {
        Some(dims) => best_by_columns(s, &dims, candidates, metric, threads),
        None => best_i8(s, query_i8, candidates, metric, threads),
    };
    rerank(s, query, approx, k, metric)
}

/// The best `k` of `approx`'s candidates by exact f32 score.
fn rerank(
    s: &Sections<'_>,
    query: &[f32],
    approx: TopK,
    k: usize,
    metric: Metric,
) -> Vec<VectorHit> {
    let query_norm = l2_norm(query);
    let mut top = TopK::new(k);
    for c in approx.heap {
        if let (Some(row), Some(&norm)) = (s.f32_row(c.slot), s.norms.get(c.slot)) {
            top.offer(
                score_f32(query, query_norm, row, norm, metric),
                c.key,
                c.slot,
            );
        }
    }
    to_hits(top.into_sorted())
}

/// The best `candidates` rows by approximate score, the rows split among `threads`.
fn best_i8(
    s: &Sections<'_>,
    query_i8: &[i8],
    candidates: usize,
    metric: Metric,
    threads: usize,
) -> TopK {
    best_of_parts(s.live.len(), threads, candidates, |range| {
        scan_i8_range(s, query_i8, range, candidates, metric)
    })
}

/// Split `0..units` (rows or column blocks) into `threads` ranges, scan each with
/// `scan` on its own thread, and keep the best `candidates` of their union. The order
/// is total (score, then key hash), so the result is the one-thread scan's.
fn best_of_parts<F>(units: usize, threads: usize, candidates: usize, scan: F) -> TopK
where
    F: Fn(std::ops::Range<usize>) -> TopK + Sync,
{
    let threads = threads.clamp(1, units.max(1));
    if threads == 1 {
        return scan(0..units);
    }
    let per = units.div_ceil(threads);
    let scan = &scan;
    let parts: Vec<TopK> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let range = (t * per).min(units)..((t + 1) * per).min(units);
                scope.spawn(move || scan(range))
            })
            .collect();
        handles
            .into_iter()
            // A scan thread only panics on a bug; scanning this slice again on
            // this thread is not worth the code, so its candidates are dropped.
            .filter_map(|h| h.join().ok())
            .collect()
    });
    let mut all = TopK::new(candidates);
    for c in parts.into_iter().flat_map(|p| p.heap) {
        all.offer(c.score, c.key, c.slot);
    }
    all
}

/// Rows below which one thread scans them all: spawning costs tens of
/// microseconds, a slice of this many rows takes milliseconds.
const ROWS_PER_SCAN_THREAD: usize = 65_536;

/// How many threads scan `rows` rows: one per core, at most 8, each with at least
/// [`ROWS_PER_SCAN_THREAD`] rows.
fn scan_threads(rows: usize) -> usize {
    let cores = crate::cores::available();
    cores.min(8).min(rows / ROWS_PER_SCAN_THREAD).max(1)
}

/// The best `candidates` of the i8 rows in `slots` by approximate score.
fn scan_i8_range(
    s: &Sections<'_>,
    query_i8: &[i8],
    slots: std::ops::Range<usize>,
    candidates: usize,
    metric: Metric,
) -> TopK {
    let mut approx = TopK::new(candidates);
    let first = slots.start;
    let stride = s.stride_i8.max(1);
    let rows = s
        .i8_rows
        .get(first.saturating_mul(stride)..)
        .unwrap_or(&[])
        .chunks_exact(stride);
    let meta = |section: usize| slots.start.min(section)..slots.end.min(section);
    let live = &s.live[meta(s.live.len())];
    let scales = &s.scales[meta(s.scales.len())];
    let norms = &s.norms[meta(s.norms.len())];
    let ahead = Prefetcher::new(s.i8_rows.as_ptr(), s.stride_i8);
    for (i, (((row, &live), &scale), &norm)) in rows.zip(live).zip(scales).zip(norms).enumerate() {
        let slot = first + i;
        ahead.row(slot);
        if live != SLOT_LIVE {
            continue;
        }
        let row = row.get(..s.dim).unwrap_or(&[]);
        let dot = scale * <i8 as SpatialSimilarity>::dot(query_i8, row).unwrap_or(0.0) as f32;
        let score = match metric {
            Metric::Cosine if norm == 0.0 => 0.0,
            Metric::Cosine => dot / norm,
            Metric::Dot => dot,
        };
        if approx.admits(score) {
            if let Some(&key) = s.keys.get(slot) {
                approx.offer(score, key, slot);
            }
        }
    }
    approx
}

/// Bytes ahead of the current row to prefetch. The mapped file sits on 4 KiB
/// pages, where the hardware prefetcher stops at each page boundary; a short
/// software lead measured i8 scans ~1.4x faster on 1M rows (52 -> 35 ms).
const PREFETCH_BYTES: usize = 2048;

/// Issues prefetches for the row `PREFETCH_BYTES` ahead of the one being scored.
struct Prefetcher {
    base: *const u8,
    stride: usize,
    lead: usize,
}

impl Prefetcher {
    fn new<T>(base: *const T, stride_bytes: usize) -> Self {
        let lead = PREFETCH_BYTES;
        Prefetcher {
            base: base.cast(),
            stride: stride_bytes,
            lead: lead.div_ceil(stride_bytes.max(1)) * stride_bytes,
        }
    }

    #[inline(always)]
    fn row(&self, slot: usize) {
        // wrapping_add: the address may lie past the mapping; it is never dereferenced.
        let ahead = self
            .base
            .wrapping_add(slot.wrapping_mul(self.stride).wrapping_add(self.lead));
        let mut line = 0;
        while line < self.stride {
            prefetch(ahead.wrapping_add(line));
            line += 64;
        }
    }
}

#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch is a hint; it never faults, even on an invalid address.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
pub(super) mod tests;
