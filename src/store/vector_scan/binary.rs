//! The sign-bit first pass: every live row's Hamming distance between its sign bits
//! and the query's, the best few hundred kept, then ranked by exact f32 score.
//!
//! Owns: the rule that picks this pass ([`binary_pays`]), the candidate count
//! ([`binary_candidates`]), the popcount loop (POPCNT when the CPU has it) and its
//! prefetch, and the cut of the candidates by their i8 codes before the exact re-rank.
//! Must never: report a Hamming score (only candidates leave this file; their order
//! is the exact f32 one), allocate per row, or read outside the validated section.

use super::{
    best_of_parts, i8_candidates, rerank, threads_for, Metric, Prefetcher, Sections, TopK,
    VectorHit,
};
use crate::format::vector_file::{quantize_i8, sign_bits, SLOT_LIVE};

/// Candidates per result the Hamming pass keeps.
const CANDIDATES_PER_K: usize = 20;
/// Fewest candidates the Hamming pass keeps, whatever `k`.
const MIN_CANDIDATES: usize = 256;
/// Rows per candidate the Hamming pass keeps at least: a larger cache holds more
/// rows as near the query as its true neighbours, which the sign bits cannot tell apart.
const ROWS_PER_CANDIDATE: u64 = 1024;

/// Candidates the Hamming pass keeps for a top-`k` over `rows` live rows:
/// `max(20·k, 256, rows / 1024)`. Measured on clustered rows of dim 384 (1,000
/// centres, benches/RESULTS.md `## vectors`), recall@10 against the exact scan:
/// 256 candidates give 0.999 at 100K rows but 0.84 at 1M, where 512 give 0.97 and
/// 1,024 give 0.999; hence the share of the rows.
pub fn binary_candidates(k: usize, rows: u64) -> usize {
    let share = usize::try_from(rows / ROWS_PER_CANDIDATE).unwrap_or(usize::MAX);
    k.saturating_mul(CANDIDATES_PER_K)
        .max(MIN_CANDIDATES)
        .max(share)
}

/// Live rows from which [`ScanMode::Auto`](super::ScanMode::Auto) takes the
/// sign-bit pass: below, the i8 scan costs under a millisecond and keeps more of
/// the exact order.
pub(crate) const MIN_BINARY_ROWS: u64 = 32_768;

/// Share of non-zero elements from which a vector counts as dense. Embedders such
/// as MiniLM set every dimension; the built-in hashed embedder sets about a tenth,
/// where a sign bit mostly says "zero" and carries little.
const MIN_DENSE_SHARE: f64 = 0.75;

/// Slots whose f32 rows tell whether the cache's rows are dense: the first ones in
/// the file (slots are written once, so the answer does not move with each query).
const DENSITY_SAMPLE: usize = 32;

/// Whether [`ScanMode::Auto`](super::ScanMode::Auto) uses the sign-bit pass: a
/// cosine query, a cache with sign bits and at least [`MIN_BINARY_ROWS`] live rows,
/// and both the query and the cache's first rows dense (at least
/// [`MIN_DENSE_SHARE`] of their elements non-zero). The sign of a vector's
/// elements says nothing of its length, so a dot-product ranking keeps the i8 scan.
pub(crate) fn binary_pays(s: &Sections<'_>, query: &[f32], metric: Metric, live: u64) -> bool {
    metric == Metric::Cosine
        && !s.bits.is_empty()
        && live >= MIN_BINARY_ROWS
        && dense(query)
        && (0..DENSITY_SAMPLE.min(s.live.len()))
            .filter_map(|slot| s.f32_row(slot))
            .all(dense)
}

fn dense(x: &[f32]) -> bool {
    let nonzero = x.iter().filter(|&&v| v != 0.0).count();
    nonzero as f64 >= x.len() as f64 * MIN_DENSE_SHARE
}

/// The best `k` rows by exact score among the best `candidates` by Hamming distance
/// of sign bits, the rows split among `threads` (0: as the i8 scan chooses).
pub(crate) fn scan_binary_rerank(
    s: &Sections<'_>,
    query: &[f32],
    k: usize,
    candidates: usize,
    threads: usize,
    metric: Metric,
) -> Vec<VectorHit> {
    let candidates = candidates.max(k);
    let threads = threads_for(s, threads);
    let mut query_bits = vec![0u64; s.stride_bits];
    sign_bits(query, &mut query_bits);
    let approx = best_by_bits(s, &query_bits, candidates, threads);
    let kept = i8_candidates(k);
    let approx = if s.i8_rows.is_empty() || approx.heap.len() <= kept {
        approx
    } else {
        by_i8_codes(s, query, approx, kept, metric)
    };
    rerank(s, query, approx, k, metric)
}

/// The best `kept` of `approx` by the i8 scan's approximate score: a quarter of the
/// bytes of the f32 rows, so a thousand Hamming candidates cost the exact re-rank
/// only the i8 scan's `max(10·k, 100)` f32 rows.
fn by_i8_codes(s: &Sections<'_>, query: &[f32], approx: TopK, kept: usize, metric: Metric) -> TopK {
    let mut query_i8 = vec![0i8; query.len()];
    quantize_i8(query, &mut query_i8);
    let mut top = TopK::new(kept);
    for c in approx.heap {
        if let Some(score) = s.i8_score(&query_i8, c.slot, metric) {
            top.offer(score, c.key, c.slot);
        }
    }
    top
}

/// The best `candidates` live rows by Hamming distance (score `-distance`, ties by
/// key hash as everywhere), the rows split among `threads`.
pub(super) fn best_by_bits(
    s: &Sections<'_>,
    query_bits: &[u64],
    candidates: usize,
    threads: usize,
) -> TopK {
    best_of_parts(s.live.len(), threads, candidates, |range| {
        scan_bits(s, query_bits, range, candidates)
    })
}

fn scan_bits(
    s: &Sections<'_>,
    query_bits: &[u64],
    slots: std::ops::Range<usize>,
    candidates: usize,
) -> TopK {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("popcnt") {
        // SAFETY: the CPU has POPCNT, checked just above.
        return unsafe { scan_bits_popcnt(s, query_bits, slots, candidates) };
    }
    scan_bits_by_width(s, query_bits, slots, candidates)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
fn scan_bits_popcnt(
    s: &Sections<'_>,
    query_bits: &[u64],
    slots: std::ops::Range<usize>,
    candidates: usize,
) -> TopK {
    // The same code, compiled for POPCNT: `count_ones` is then one instruction
    // instead of a dozen.
    scan_bits_by_width(s, query_bits, slots, candidates)
}

/// A loop of fixed width for the common dimensions (256, 384, 512, 768, 1024), which
/// the compiler unrolls; any other width takes the general loop.
#[inline(always)]
fn scan_bits_by_width(
    s: &Sections<'_>,
    query_bits: &[u64],
    slots: std::ops::Range<usize>,
    candidates: usize,
) -> TopK {
    match query_bits.len() {
        4 => scan_bits_fixed::<4>(s, query_bits, slots, candidates),
        6 => scan_bits_fixed::<6>(s, query_bits, slots, candidates),
        8 => scan_bits_fixed::<8>(s, query_bits, slots, candidates),
        12 => scan_bits_fixed::<12>(s, query_bits, slots, candidates),
        16 => scan_bits_fixed::<16>(s, query_bits, slots, candidates),
        _ => scan_bits_any(s, query_bits, slots, candidates),
    }
}

#[inline(always)]
fn scan_bits_fixed<const W: usize>(
    s: &Sections<'_>,
    query_bits: &[u64],
    slots: std::ops::Range<usize>,
    candidates: usize,
) -> TopK {
    let mut q = [0u64; W];
    q.copy_from_slice(&query_bits[..W]);
    scan_rows(s, slots, W, candidates, |row| {
        // wrapping_add: a sum of at most 65,536 bits never wraps; it keeps overflow
        // checks (on in test and CI builds) out of the loop.
        let mut d = 0u32;
        for (a, b) in row.iter().take(W).zip(&q) {
            d = d.wrapping_add((a ^ b).count_ones());
        }
        d
    })
}

#[inline(always)]
fn scan_bits_any(
    s: &Sections<'_>,
    query_bits: &[u64],
    slots: std::ops::Range<usize>,
    candidates: usize,
) -> TopK {
    scan_rows(s, slots, query_bits.len(), candidates, |row| {
        row.iter()
            .zip(query_bits)
            .fold(0u32, |d, (a, b)| d.wrapping_add((a ^ b).count_ones()))
    })
}

/// Offer each live slot in `slots`, scored `-distance(row)`, to a top-`candidates`.
#[inline(always)]
fn scan_rows(
    s: &Sections<'_>,
    slots: std::ops::Range<usize>,
    words: usize,
    candidates: usize,
    distance: impl Fn(&[u64]) -> u32,
) -> TopK {
    let mut approx = TopK::new(candidates);
    let stride = s.stride_bits.max(1);
    if words > stride {
        return approx;
    }
    let first = slots.start;
    let rows = s
        .bits
        .get(first.saturating_mul(stride)..slots.end.saturating_mul(stride))
        .unwrap_or(&[])
        .chunks_exact(stride);
    let live = s.live.get(slots).unwrap_or(&[]);
    // 48-byte rows cross a 4 KiB page every 85 rows; the hardware prefetcher stops
    // there, so a software lead keeps the stream going (as for the i8 rows).
    let ahead = Prefetcher::new(s.bits.as_ptr(), stride * 8);
    for (i, (row, &live)) in rows.zip(live).enumerate() {
        let slot = first + i;
        ahead.row(slot);
        let score = -(distance(row) as f32);
        if live == SLOT_LIVE && approx.admits(score) {
            if let Some(&key) = s.keys.get(slot) {
                approx.offer(score, key, slot);
            }
        }
    }
    approx
}
