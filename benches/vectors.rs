//! Vector cache scan benchmark (plain `main`, no harness).
//!
//! Owns: measuring f32 scan bandwidth against a raw memory-read baseline over the
//! same mapped bytes, i8 + re-rank speed-up and recall, and sparse queries by i8
//! column against by row, for 100K and 1M rows of dim 384. `ENGRAM_BENCH_ROWS=100000` (comma list) restricts the row counts.
//! Must never: leave its temporary cache files behind or run for minutes.

use std::hint::black_box;
use std::time::{Duration, Instant};

use engram::format::vector_file::{VectorFileLayout, FLAG_F32, FLAG_I8, FLAG_I8_COLUMNS};
use engram::store::vector_cache::{
    embedder_id, Metric, ScanMode, VectorCache, VectorCacheOptions, VectorHit,
};

const DIM: usize = 384;
const K: usize = 10;
const QUERIES: usize = 20;

mod common;
use common::Rng;

/// Fill `out` with a random unit vector.
fn unit(rng: &mut Rng, out: &mut [f32]) {
    for x in out.iter_mut() {
        *x = rng.symmetric();
    }
    let norm = out.iter().map(|x| x * x).sum::<f32>().sqrt();
    out.iter_mut().for_each(|x| *x /= norm);
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
    let cache = build(&path, rows, true);
    // Queries come from another stream than the rows.
    let mut rng = Rng(0x0a11 ^ rows);
    println!(
        "rows={rows:>8}  build (upsert incl. i8 quantize): {:>8.2?}",
        t.elapsed()
    );

    // Baseline: read the very same f32 row bytes through a second read-only map.
    let file = std::fs::File::open(&path).expect("open");
    // SAFETY: the bench is the only writer and does not write while this map lives.
    let map = unsafe { memmap2::Mmap::map(&file) }.expect("mmap");
    let layout = VectorFileLayout::compute(DIM as u32, FLAG_F32 | FLAG_I8 | FLAG_I8_COLUMNS, rows)
        .expect("layout");
    let f32_bytes = rows * layout.stride_f32;
    let start = layout.f32_rows as usize;
    let rows_bytes = &map[start..start + f32_bytes as usize];
    let (words, _) = <[u64] as zerocopy::FromBytes>::ref_from_prefix_with_elems(
        rows_bytes,
        rows_bytes.len() / 8,
    )
    .expect("aligned");
    let mut best_base = Duration::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        let sum = black_box(words)
            .iter()
            .fold(0u64, |a, &w| a.wrapping_add(w));
        black_box(sum);
        best_base = best_base.min(t.elapsed());
    }
    let base = gbps(f32_bytes, best_base);
    println!(
        "rows={rows:>8}  baseline memory read (u64 sum):   {base:>6.2} GB/s  ({best_base:.2?})"
    );

    let queries: Vec<Vec<f32>> = (0..QUERIES)
        .map(|_| {
            let mut q = vec![0f32; DIM];
            unit(&mut rng, &mut q);
            q
        })
        .collect();
    // One warm-up pass so page faults are not billed to the first query.
    black_box(
        cache
            .search(&queries[0], K, Metric::Cosine, ScanMode::F32)
            .expect("search"),
    );
    black_box(
        cache
            .search(
                &queries[0],
                K,
                Metric::Cosine,
                ScanMode::i8_rerank_default(K),
            )
            .expect("search"),
    );

    let mut exact = Vec::new();
    let t = Instant::now();
    for q in &queries {
        exact.push(
            cache
                .search(q, K, Metric::Cosine, ScanMode::F32)
                .expect("search"),
        );
    }
    let f32_t = t.elapsed() / QUERIES as u32;
    let f32_bw = gbps(f32_bytes, f32_t);
    println!(
        "rows={rows:>8}  f32 cosine scan:                  {f32_bw:>6.2} GB/s  ({f32_t:.2?}/query)  ratio to baseline {:.2} (target >= 0.70)",
        f32_bw / base
    );

    let t = Instant::now();
    for q in &queries {
        black_box(
            cache
                .search(q, K, Metric::Dot, ScanMode::F32)
                .expect("search"),
        );
    }
    let dot_t = t.elapsed() / QUERIES as u32;
    println!(
        "rows={rows:>8}  f32 dot scan (comparison):              {:>6.2} GB/s  ({dot_t:.2?}/query)",
        gbps(f32_bytes, dot_t)
    );

    let mode = ScanMode::i8_rerank_default(K);
    // One unmeasured pass: the f32 scans above never touched the i8 rows, so the
    // first i8 query would pay their page faults and the one-thread run below not.
    black_box(
        cache
            .search(&queries[0], K, Metric::Cosine, mode)
            .expect("search"),
    );
    let mut approx = Vec::new();
    let t = Instant::now();
    for q in &queries {
        approx.push(cache.search(q, K, Metric::Cosine, mode).expect("search"));
    }
    let i8_t = t.elapsed() / QUERIES as u32;
    let r = exact
        .iter()
        .zip(&approx)
        .map(|(e, a)| recall(e, a))
        .sum::<f64>()
        / QUERIES as f64;
    println!(
        "rows={rows:>8}  i8 scan + f32 re-rank ({mode:?}): {i8_t:.2?}/query  speed-up vs f32 {:.2}x (target >= 3x)",
        f32_t.as_secs_f64() / i8_t.as_secs_f64()
    );
    println!("rows={rows:>8}  i8 + re-rank recall@{K} vs exact f32 over {QUERIES} queries: {r:.4} (target >= 0.99)");
    // The same scan on one thread: what the default's threads (one per core from 128K
    // rows) buy on this machine.
    let ScanMode::I8Rerank { candidates, .. } = mode else {
        unreachable!("the default i8 mode")
    };
    let one = ScanMode::I8Rerank {
        candidates,
        threads: 1,
    };
    let t = Instant::now();
    for q in &queries {
        black_box(cache.search(q, K, Metric::Cosine, one).expect("search"));
    }
    let one_t = t.elapsed() / QUERIES as u32;
    println!(
        "rows={rows:>8}  i8 scan + f32 re-rank on one thread: {one_t:.2?}/query; default threads {:.2}x faster",
        one_t.as_secs_f64() / i8_t.as_secs_f64()
    );
    drop(map);

    // Sparse queries, as the built-in hashed embedder makes for a few words: 25 of
    // the 384 dimensions set. The cache reads their columns; the same rows in a
    // cache without columns are read row by row. Same hits, in the same run.
    let rows_only = build(&dir.path().join("rows-only.vec"), rows, false);
    let sparse: Vec<Vec<f32>> = (0..QUERIES)
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
            c.search(&sparse[0], K, Metric::Cosine, mode)
                .expect("search"),
        );
        let t = Instant::now();
        let hits: Vec<Vec<VectorHit>> = sparse
            .iter()
            .map(|q| c.search(q, K, Metric::Cosine, mode).expect("search"))
            .collect();
        (hits, t.elapsed() / QUERIES as u32)
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

/// A cache at `path` of `rows` random unit vectors (the same ones for the same
/// `rows`), with or without i8 columns.
fn build(path: &std::path::Path, rows: u64, columns: bool) -> VectorCache {
    let opts = VectorCacheOptions {
        dim: DIM as u32,
        embedder_id: embedder_id("bench"),
        with_i8: true,
        with_i8_columns: columns,
        with_bits: true,
        initial_capacity: rows,
    };
    let mut rng = Rng(0x5eed ^ rows);
    let mut cache = VectorCache::create(path, &opts).expect("create");
    let mut v = vec![0f32; DIM];
    for i in 0..rows {
        unit(&mut rng, &mut v);
        cache
            .upsert(i.wrapping_mul(0x9e37_79b9_7f4a_7c15), &v)
            .expect("upsert");
    }
    cache
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
