//! Vector cache scan benchmark (plain `main`, no harness).
//!
//! Owns: measuring f32 scan bandwidth against a raw memory-read baseline over the
//! same mapped bytes, the i8 scan and the sign-bit (Hamming) first pass, each with
//! exact re-rank: p50/p99 against a read of the bytes it scans, and recall@10
//! against the exact scan; and sparse queries by i8 column against by row. Rows are
//! clustered (1,000 random centres plus noise), queries drawn near data points; 100K
//! and 1M rows of dim 384. `ENGRAM_BENCH_ROWS=100000` (comma list) restricts the row
//! counts.
//! Must never: leave its temporary cache files behind or run for minutes.

use std::hint::black_box;
use std::time::{Duration, Instant};

use engram::format::vector_file::{
    VectorFileLayout, FLAG_BITS, FLAG_F32, FLAG_I8, FLAG_I8_COLUMNS,
};
use engram::store::vector_cache::{
    binary_candidates, embedder_id, Metric, ScanMode, VectorCache, VectorCacheOptions, VectorHit,
};

const DIM: usize = 384;
const K: usize = 10;
/// Queries timed for p50/p99 and recall.
const QUERIES: usize = 100;
/// Queries for the one-thread and comparison lines.
const FEW: usize = 20;
/// Cluster centres of the synthetic set.
const CENTRES: usize = 1000;

mod common;
use common::Rng;

/// An approximately standard normal deviate: the sum of four uniforms, scaled to
/// variance 1 (cheap enough for the 384M numbers of the 1M set).
fn gauss(rng: &mut Rng) -> f32 {
    (rng.symmetric() + rng.symmetric() + rng.symmetric() + rng.symmetric()) * 0.866_025_4
}

/// Fill `out` with a random unit vector.
fn unit(rng: &mut Rng, out: &mut [f32]) {
    for x in out.iter_mut() {
        *x = gauss(rng);
    }
    let norm = out.iter().map(|x| x * x).sum::<f32>().sqrt();
    out.iter_mut().for_each(|x| *x /= norm);
}

/// `out = centre + noise` of expected norm `spread` (the centre has norm 1).
fn near(rng: &mut Rng, centre: &[f32], spread: f32, out: &mut [f32]) {
    let sigma = spread / (centre.len() as f32).sqrt();
    for (o, &c) in out.iter_mut().zip(centre) {
        *o = c + sigma * gauss(rng);
    }
}

/// p50 and p99 of `times`.
fn percentiles(mut times: Vec<Duration>) -> (Duration, Duration) {
    times.sort();
    let at = |p: f64| times[((times.len() as f64 * p).ceil() as usize).clamp(1, times.len()) - 1];
    (at(0.50), at(0.99))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Best of five plain reads (a u64 sum) of `bytes`: the memory floor of a scan of them.
fn read_floor(bytes: &[u8]) -> Duration {
    let (words, _) =
        <[u64] as zerocopy::FromBytes>::ref_from_prefix_with_elems(bytes, bytes.len() / 8)
            .expect("aligned");
    let mut best = Duration::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        let sum = black_box(words)
            .iter()
            .fold(0u64, |a, &w| a.wrapping_add(w));
        black_box(sum);
        best = best.min(t.elapsed());
    }
    best
}

/// Each query's hits and time under `mode`.
fn timed(
    cache: &VectorCache,
    queries: &[Vec<f32>],
    metric: Metric,
    mode: ScanMode,
) -> (Vec<Vec<VectorHit>>, Vec<Duration>) {
    queries
        .iter()
        .map(|q| {
            let t = Instant::now();
            let hits = cache.search(q, K, metric, mode).expect("search");
            (hits, t.elapsed())
        })
        .unzip()
}

fn mean_recall(exact: &[Vec<VectorHit>], approx: &[Vec<VectorHit>]) -> f64 {
    exact
        .iter()
        .zip(approx)
        .map(|(e, a)| recall(e, a))
        .sum::<f64>()
        / exact.len().max(1) as f64
}

fn gbps(bytes: u64, t: Duration) -> f64 {
    bytes as f64 / t.as_secs_f64() / 1e9
}

fn recall(exact: &[VectorHit], approx: &[VectorHit]) -> f64 {
    let hit = approx
        .iter()
        .filter(|a| exact.iter().any(|e| e.key_hash == a.key_hash))
        .count();
    hit as f64 / exact.len().max(1) as f64
}

fn run(rows: u64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bench.vec");
    let t = Instant::now();
    let (cache, points) = build(&path, rows, true);
    // Queries come from another stream than the rows: a data point plus as much
    // noise again as the rows have about their centres.
    let mut rng = Rng(0x0a11 ^ rows);
    println!(
        "rows={rows:>8}  build (upsert incl. i8 quantize, columns, sign bits): {:>8.2?}",
        t.elapsed()
    );

    // Baselines: read the very same bytes through a second read-only map.
    let file = std::fs::File::open(&path).expect("open");
    // SAFETY: the bench is the only writer and does not write while this map lives.
    let map = unsafe { memmap2::Mmap::map(&file) }.expect("mmap");
    let layout = VectorFileLayout::compute(
        DIM as u32,
        FLAG_F32 | FLAG_I8 | FLAG_I8_COLUMNS | FLAG_BITS,
        rows,
    )
    .expect("layout");
    let section = |at: u64, len: u64| &map[at as usize..(at + len) as usize];
    let f32_bytes = rows * layout.stride_f32;
    let best_base = read_floor(section(layout.f32_rows, f32_bytes));
    let base = gbps(f32_bytes, best_base);
    println!(
        "rows={rows:>8}  baseline memory read (u64 sum) of the f32 rows: {base:>6.2} GB/s  ({best_base:.2?})"
    );
    let i8_bytes = rows * layout.stride_i8;
    let i8_floor = read_floor(section(layout.i8_rows.expect("i8"), i8_bytes));
    let bits_bytes = rows * layout.stride_bits;
    let bits_floor = read_floor(section(layout.bits.expect("bits"), bits_bytes));
    println!(
        "rows={rows:>8}  baseline memory read of the i8 rows ({} MB): {:.3} ms; of the sign bits ({} MB): {:.3} ms",
        i8_bytes / 1_000_000,
        ms(i8_floor),
        bits_bytes / 1_000_000,
        ms(bits_floor)
    );

    let queries: Vec<Vec<f32>> = points
        .iter()
        .map(|p| {
            let mut q = vec![0f32; DIM];
            near(&mut rng, p, 1.0, &mut q);
            q
        })
        .collect();
    let few = &queries[..FEW];
    // One warm-up pass of each mode so page faults are not billed to the first query.
    let binary = ScanMode::Auto { threads: 0 };
    let i8_mode = ScanMode::i8_rerank_default(K);
    for mode in [ScanMode::F32, i8_mode, binary] {
        black_box(
            cache
                .search(&queries[0], K, Metric::Cosine, mode)
                .expect("search"),
        );
    }

    let (exact, f32_times) = timed(&cache, &queries, Metric::Cosine, ScanMode::F32);
    let (f32_t, f32_p99) = percentiles(f32_times);
    let f32_bw = gbps(f32_bytes, f32_t);
    println!(
        "rows={rows:>8}  f32 cosine scan:                  {f32_bw:>6.2} GB/s  (p50 {f32_t:.2?}, p99 {f32_p99:.2?})  ratio to baseline {:.2} (target >= 0.70)",
        f32_bw / base
    );
    let (_, dot_times) = timed(&cache, few, Metric::Dot, ScanMode::F32);
    let (dot_t, _) = percentiles(dot_times);
    println!(
        "rows={rows:>8}  f32 dot scan (comparison):              {:>6.2} GB/s  ({dot_t:.2?}/query)",
        gbps(f32_bytes, dot_t)
    );

    let (approx, i8_times) = timed(&cache, &queries, Metric::Cosine, i8_mode);
    let (i8_t, i8_p99) = percentiles(i8_times);
    println!(
        "rows={rows:>8}  i8 scan + f32 re-rank ({i8_mode:?}): p50 {:.2} ms, p99 {:.2} ms; {:.2}x the i8 rows' read; speed-up vs f32 {:.2}x",
        ms(i8_t),
        ms(i8_p99),
        i8_t.as_secs_f64() / i8_floor.as_secs_f64(),
        f32_t.as_secs_f64() / i8_t.as_secs_f64()
    );
    println!(
        "rows={rows:>8}  i8 + re-rank recall@{K} vs exact f32 over {QUERIES} queries: {:.4}",
        mean_recall(&exact, &approx)
    );
    // The same scan on one thread: what the default's threads (one per core from 128K
    // rows) buy on this machine.
    let ScanMode::I8Rerank { candidates, .. } = i8_mode else {
        unreachable!("the default i8 mode")
    };
    let one = ScanMode::I8Rerank {
        candidates,
        threads: 1,
    };
    let (_, one_times) = timed(&cache, few, Metric::Cosine, one);
    let (one_t, _) = percentiles(one_times);
    println!(
        "rows={rows:>8}  i8 scan + f32 re-rank on one thread: {one_t:.2?}/query; default threads {:.2}x faster",
        one_t.as_secs_f64() / i8_t.as_secs_f64()
    );

    // The sign-bit pass, as the store's searches choose it (Auto) for dense vectors.
    let (by_bits, bits_times) = timed(&cache, &queries, Metric::Cosine, binary);
    let explicit = ScanMode::Binary {
        candidates: binary_candidates(K, cache.len()),
        threads: 0,
    };
    let (same, _) = timed(&cache, few, Metric::Cosine, explicit);
    assert_eq!(same, by_bits[..FEW], "Auto took another pass than Binary");
    let (bits_t, bits_p99) = percentiles(bits_times);
    println!(
        "rows={rows:>8}  sign bits + f32 re-rank ({explicit:?}): p50 {:.2} ms, p99 {:.2} ms; {:.2}x the sign bits' read, {:.3}x the f32 rows' read; speed-up vs i8 {:.2}x, vs f32 {:.1}x",
        ms(bits_t),
        ms(bits_p99),
        bits_t.as_secs_f64() / bits_floor.as_secs_f64(),
        bits_t.as_secs_f64() / best_base.as_secs_f64(),
        i8_t.as_secs_f64() / bits_t.as_secs_f64(),
        f32_t.as_secs_f64() / bits_t.as_secs_f64()
    );
    println!(
        "rows={rows:>8}  sign bits + re-rank recall@{K} vs exact f32 over {QUERIES} queries: {:.4} (target >= 0.95)",
        mean_recall(&exact, &by_bits)
    );
    let mut sweep = String::new();
    for candidates in [64, 128, 256, 512, 1024] {
        let mode = ScanMode::Binary {
            candidates,
            threads: 0,
        };
        let (hits, times) = timed(&cache, &queries, Metric::Cosine, mode);
        let (p50, _) = percentiles(times);
        sweep += &format!(
            "  {candidates}: {:.4} ({:.2} ms)",
            mean_recall(&exact, &hits),
            ms(p50)
        );
    }
    println!("rows={rows:>8}  sign bits recall@{K} (p50) by candidates:{sweep}");
    let one = ScanMode::Binary {
        candidates: binary_candidates(K, cache.len()),
        threads: 1,
    };
    let (_, one_times) = timed(&cache, few, Metric::Cosine, one);
    let (one_t, _) = percentiles(one_times);
    // simsimd's Hamming kernel for packed bits (u8), one call per row, best distance
    // only: less work than the pass above does, for a fair upper bound on its speed.
    let bits = section(layout.bits.expect("bits"), bits_bytes);
    let mut q_bits = vec![0u8; layout.stride_bits as usize];
    for (j, &x) in queries[0].iter().enumerate() {
        q_bits[j / 8] |= u8::from(x > 0.0) << (j % 8);
    }
    let t = Instant::now();
    for _ in 0..FEW {
        let best = bits
            .chunks_exact(layout.stride_bits as usize)
            .map(|row| <u8 as simsimd::BinarySimilarity>::hamming(&q_bits, row).unwrap_or(0.0))
            .fold(f64::MAX, f64::min);
        black_box(best);
    }
    let simsimd_t = t.elapsed() / FEW as u32;
    println!(
        "rows={rows:>8}  sign bits on one thread: {one_t:.2?}/query (popcount over u64 words, top-k kept); simsimd hamming (b8), minimum only: {simsimd_t:.2?}/query"
    );
    drop(map);

    // Sparse queries, as the built-in hashed embedder makes for a few words: 25 of
    // the 384 dimensions set. The cache reads their columns; the same rows in a
    // cache without columns are read row by row. Same hits, in the same run.
    let (rows_only, _) = build(&dir.path().join("rows-only.vec"), rows, false);
    let sparse: Vec<Vec<f32>> = (0..FEW)
        .map(|_| {
            let mut q = vec![0f32; DIM];
            for _ in 0..25 {
                q[(rng.next_u64() % DIM as u64) as usize] = rng.symmetric();
            }
            q
        })
        .collect();
    let time = |c: &VectorCache| {
        black_box(
            c.search(&sparse[0], K, Metric::Cosine, i8_mode)
                .expect("search"),
        );
        let t = Instant::now();
        let hits: Vec<Vec<VectorHit>> = sparse
            .iter()
            .map(|q| c.search(q, K, Metric::Cosine, i8_mode).expect("search"))
            .collect();
        (hits, t.elapsed() / FEW as u32)
    };
    let (by_rows, rows_t) = time(&rows_only);
    let (by_columns, columns_t) = time(&cache);
    assert_eq!(by_columns, by_rows, "columns and rows disagree");
    println!(
        "rows={rows:>8}  sparse query (25 of {DIM} dims), i8 + re-rank: by columns {columns_t:.2?}/query, by rows {rows_t:.2?}/query: columns {:.2}x faster, same hits",
        rows_t.as_secs_f64() / columns_t.as_secs_f64()
    );
    drop(rows_only);
    drop(cache);
}

/// A cache at `path` of `rows` clustered vectors (the same ones for the same
/// `rows`): each a random one of [`CENTRES`] unit centres plus noise of the same
/// norm, so that two rows of a cluster have a cosine of about 0.5. With or without
/// i8 columns. Also returns [`QUERIES`] of the rows, spread over the set.
fn build(path: &std::path::Path, rows: u64, columns: bool) -> (VectorCache, Vec<Vec<f32>>) {
    let opts = VectorCacheOptions {
        dim: DIM as u32,
        embedder_id: embedder_id("bench"),
        with_i8: true,
        with_i8_columns: columns,
        with_bits: true,
        initial_capacity: rows,
    };
    let mut rng = Rng(0x5eed ^ rows);
    let centres: Vec<Vec<f32>> = (0..CENTRES)
        .map(|_| {
            let mut c = vec![0f32; DIM];
            unit(&mut rng, &mut c);
            c
        })
        .collect();
    let mut cache = VectorCache::create(path, &opts).expect("create");
    let mut v = vec![0f32; DIM];
    let mut points = Vec::with_capacity(QUERIES);
    let every = (rows / QUERIES as u64).max(1);
    for i in 0..rows {
        let home = (rng.next_u64() % CENTRES as u64) as usize;
        near(&mut rng, &centres[home], 1.0, &mut v);
        if i % every == 0 && points.len() < QUERIES {
            points.push(v.clone());
        }
        cache
            .upsert(i.wrapping_mul(0x9e37_79b9_7f4a_7c15), &v)
            .expect("upsert");
    }
    (cache, points)
}

fn main() {
    let rows: Vec<u64> = match std::env::var("ENGRAM_BENCH_ROWS") {
        Ok(s) => s.split(',').filter_map(|x| x.trim().parse().ok()).collect(),
        Err(_) => vec![100_000, 1_000_000],
    };
    // cargo bench passes `--bench`; nothing else to parse.
    for n in rows {
        run(n);
    }
}
