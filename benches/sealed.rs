//! What sealing vectors costs (format-spec/encryption.md), as ratios to a plain store
//! measured in the same run on the same vectors (plain `main`, no harness).
//!
//! Owns: writing N vectors (dim 384) to a plain and a sealed store, the first search
//! of a fresh handle (plain: maps its cache file; sealed: decrypts every vector into
//! memory), warm searches (p50, p99), and sealing an existing plain store.
//! `ENGRAM_BENCH_ROWS=20000` sets N (default 100,000). Must never: leave its stores
//! behind.

use std::time::{Duration, Instant};

use engram::store::{Durability, Store, StoreOptions, VectorKey, WriteBatch};

const DIM: usize = 384;
const BATCH: usize = 1000;
const QUERIES: usize = 200;

mod common;
use common::Rng;

fn vector(rng: &mut Rng) -> Vec<f32> {
    (0..DIM).map(|_| rng.symmetric()).collect()
}

fn open(dir: &std::path::Path, key: Option<&VectorKey>) -> Store {
    let opts = StoreOptions {
        durability: Durability::Batch,
        vector_key: key.cloned(),
        ..Default::default()
    };
    Store::open(dir, opts, Vec::new()).expect("open store")
}

fn fill(store: &Store, rows: usize) -> Duration {
    let mut rng = Rng(7);
    let start = Instant::now();
    for first in (0..rows).step_by(BATCH) {
        let mut b = WriteBatch::new();
        for i in first..(first + BATCH).min(rows) {
            let key = format!("chunk:bench.rs:{i}");
            b.put(&key, Default::default(), b"x".to_vec()).expect("put");
            b.put_vector(&key, "bench", &vector(&mut rng))
                .expect("vector");
        }
        store.commit(&b).expect("commit");
    }
    store.flush().expect("flush");
    start.elapsed()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// First search of a fresh handle, then warm p50 and p99; and the answers, to check
/// both stores agree.
fn searches(
    dir: &std::path::Path,
    key: Option<&VectorKey>,
) -> (Duration, Duration, Duration, Vec<String>) {
    let store = open(dir, key);
    let mut rng = Rng(99);
    let q = vector(&mut rng);
    let start = Instant::now();
    let first = store.vector_search("bench", &q, 10).expect("search");
    let cold = start.elapsed();
    let mut keys: Vec<String> = first.into_iter().map(|m| m.key).collect();
    let mut times = Vec::with_capacity(QUERIES);
    for _ in 0..QUERIES {
        let q = vector(&mut rng);
        let start = Instant::now();
        let hits = store.vector_search("bench", &q, 10).expect("search");
        times.push(start.elapsed());
        keys.extend(hits.into_iter().map(|m| m.key));
    }
    times.sort();
    (
        cold,
        percentile(&times, 0.5),
        percentile(&times, 0.99),
        keys,
    )
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let rows: usize = std::env::var("ENGRAM_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let tmp = tempfile::tempdir().expect("temp dir");
    let key = VectorKey::generate().expect("key");
    let plain_dir = tmp.path().join("plain");
    let sealed_dir = tmp.path().join("sealed");
    println!("sealed vectors: {rows} vectors of dim {DIM}, batches of {BATCH}, durability batch; one run, ratios sealed / plain");

    let write_plain = fill(&open(&plain_dir, None), rows);
    let write_sealed = fill(&open(&sealed_dir, Some(&key)), rows);
    println!(
        "write        plain {:>9.1} ms   sealed {:>9.1} ms   ratio {:.2}×",
        ms(write_plain),
        ms(write_sealed),
        write_sealed.as_secs_f64() / write_plain.as_secs_f64()
    );

    let (pc, p50, p99, plain_keys) = searches(&plain_dir, None);
    let (sc, s50, s99, sealed_keys) = searches(&sealed_dir, Some(&key));
    assert_eq!(
        plain_keys, sealed_keys,
        "sealed and plain stores must answer alike"
    );
    for (what, p, s) in [
        ("first search", pc, sc),
        ("warm p50", p50, s50),
        ("warm p99", p99, s99),
    ] {
        println!(
            "{what:<12} plain {:>9.2} ms   sealed {:>9.2} ms   ratio {:.2}×",
            ms(p),
            ms(s),
            s.as_secs_f64() / p.as_secs_f64()
        );
    }

    // Sealing the plain store in place (engram encrypt): one compaction.
    let plain = open(&plain_dir, None);
    let start = Instant::now();
    let r = plain.compact().expect("compact");
    let compact = start.elapsed();
    let plain = open(&plain_dir, None);
    let start = Instant::now();
    let s = plain.seal_vectors(&key).expect("seal");
    let seal = start.elapsed();
    println!(
        "seal a plain store: {:.1} ms for {} vectors ({} → {} bytes); a plain compaction of it: {:.1} ms; ratio {:.2}×",
        ms(seal),
        s.records_rewritten,
        r.bytes_after,
        s.bytes_after,
        ms(compact),
        seal.as_secs_f64() / compact.as_secs_f64()
    );
}
