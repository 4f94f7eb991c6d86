//! Indexing and search benchmarks, reported against baselines from the same run.
//!
//! - index: a repository of real source (`.rs` files copied from the cargo registry,
//!   at least 100K lines) indexed cold, again with nothing changed (warm), and after
//!   one file changed; throughput is compared with reading the same files once
//!   (`read`: the least any indexer must do); then cold on one thread against one
//!   thread per core (`IndexOptions::threads`), in the same run; then one thread per
//!   core against SQLite (WAL, synchronous=FULL) inserting the rows that index wrote,
//!   into a table plus two FTS5 tables (`index/sqlite_baseline.rs`).
//! - query: hybrid, keyword-only and vector-only search latency p50/p99 over a store of
//!   at least 100K chunks (hybrid also for each query's first run, before the
//!   connection keeps the query's phrase row counts) (5M lines of the registry's Rust sources, cycled if fewer),
//!   compared with one FTS5 BM25 query (`fts`, any word, 40 best: the query every
//!   keyword search ran before the all-words-first strategy); the time from opening
//!   the store to the first answer (a new process's path: open, replay check, first
//!   search with the vector cache not yet mapped), and the process's peak memory.
//! - wal: what each commit of a cold index writes to `tracker.db-wal` (bytes per
//!   transaction) and which B-trees the pages belong to (`index/wal.rs`), over the
//!   first `ENGRAM_BENCH_WAL_LINES` lines (default 300000) of the Rust sources of the
//!   crates `Cargo.lock` names, in path order, added `ENGRAM_BENCH_WAL_BATCH_FILES`
//!   files at a time (default 8, about what one 100 ms batch holds) with an index run
//!   after each; then the same tree's cold index time.
//!
//! - graph (only when named): what the code graph costs, index time and store size
//!   with it and without, and `refs` latency in a 100K-chunk store (`index/graph.rs`).
//!
//! `cargo bench --bench index`; `ENGRAM_BENCH=index,query,wal` picks parts;
//! `ENGRAM_BENCH_LINES=N` sets the index corpus size (default 100000);
//! `ENGRAM_BENCH_QUERY_LINES=N` the query store's (default 5000000; 50000000 makes
//! about 1M chunks).

mod common;
#[path = "index/graph.rs"]
mod graph_cost;
#[path = "index/sqlite_baseline.rs"]
mod sqlite_baseline;
#[path = "index/wal.rs"]
mod wal;
use common::{bench_dir, wanted};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use engram::index::{self, IndexOptions, IndexReport};
use engram::search::{search, SearchOptions};
use engram::store::{Store, StoreOptions};

/// Copy registry sources into `dest` until `lines` lines; returns (files, bytes, lines).
fn make_repo(dest: &Path, lines: u64) -> (u64, u64, u64) {
    make_repo_from(dest, lines, common::registry_sources())
}

/// [`make_repo`] from the given sources.
fn make_repo_from(dest: &Path, lines: u64, sources: Vec<PathBuf>) -> (u64, u64, u64) {
    let (mut n, mut bytes, mut total) = (0u64, 0u64, 0u64);
    assert!(!sources.is_empty(), "no .rs files in the cargo registry");
    // Cycle through the sources (under new names) when they hold fewer lines.
    for (i, src) in sources.iter().cycle().enumerate() {
        if total >= lines {
            break;
        }
        let Ok(text) = std::fs::read(src) else {
            continue;
        };
        let name = src.file_name().and_then(|f| f.to_str()).unwrap_or("x.rs");
        let to = dest.join(format!("d{:03}/{i:06}_{name}", i / 100));
        std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
        std::fs::write(&to, &text).expect("write");
        n += 1;
        bytes += text.len() as u64;
        total += text.iter().filter(|&&b| b == b'\n').count() as u64;
    }
    (n, bytes, total)
}

fn open(dir: &Path) -> Store {
    Store::open(dir, StoreOptions::default(), engram::projections()).expect("open store")
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let t = Instant::now();
    let r = f();
    (r, t.elapsed())
}

fn bench_index() {
    let lines: u64 = std::env::var("ENGRAM_BENCH_LINES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let repo = bench_dir("index-repo");
    let (files, bytes, lines) = make_repo(repo.path(), lines);
    // Baseline: read every file once (warm page cache, as the indexer sees it).
    let walk = || {
        let mut total = 0usize;
        for e in ignore::WalkBuilder::new(repo.path()).build().flatten() {
            if e.file_type().is_some_and(|t| t.is_file()) {
                total += std::fs::read(e.path()).map(|b| b.len()).unwrap_or(0);
            }
        }
        total
    };
    walk();
    let (_, read) = timed(walk);
    let store_dir = bench_dir("index-store");
    let store = open(store_dir.path());
    let opts = IndexOptions::default();
    let (cold, cold_t): (IndexReport, _) =
        timed(|| index::index(&store, repo.path(), &opts).expect("index"));
    let (warm, warm_t) = timed(|| index::index(&store, repo.path(), &opts).expect("index"));
    assert_eq!(warm.files_unchanged, cold.files_indexed);
    // One file changed: append a function to the first file.
    let first = ignore::WalkBuilder::new(repo.path())
        .build()
        .flatten()
        .find(|e| e.file_type().is_some_and(|t| t.is_file()))
        .expect("a file");
    let mut text = std::fs::read_to_string(first.path()).unwrap_or_default();
    text.push_str("\nfn engram_bench_added() -> u32 { 42 }\n");
    std::fs::write(first.path(), text).expect("edit");
    let (one, one_t) = timed(|| index::index(&store, repo.path(), &opts).expect("index"));
    assert_eq!(one.files_indexed, 1);
    let mb = bytes as f64 / 1e6;
    println!(
        "index: {files} files, {lines} lines, {mb:.1} MB -> {} chunks, {} symbols",
        cold.chunks, cold.symbols
    );
    println!(
        "  cold  {:>8.3} s  {:>6.1} MB/s  {:>7.0} files/s  {:>7.0} lines/s | read-only baseline {:.3} s ({:.1}x of it)",
        cold_t.as_secs_f64(),
        mb / cold_t.as_secs_f64(),
        files as f64 / cold_t.as_secs_f64(),
        lines as f64 / cold_t.as_secs_f64(),
        read.as_secs_f64(),
        cold_t.as_secs_f64() / read.as_secs_f64()
    );
    println!(
        "  warm  {:>8.3} s (nothing changed; {:.2}x the read-only baseline)",
        warm_t.as_secs_f64(),
        warm_t.as_secs_f64() / read.as_secs_f64()
    );
    println!("  one file changed {:>8.1} ms", one_t.as_secs_f64() * 1e3);

    // Cold again into new stores: one thread, then one per core, alternating, best of two.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cold_with = |threads: usize| {
        let dir = bench_dir("index-threads");
        let store = open(dir.path());
        let opts = IndexOptions {
            threads,
            ..IndexOptions::default()
        };
        timed(|| index::index(&store, repo.path(), &opts).expect("index")).1
    };
    let (mut one_thread, mut all_threads) = (f64::MAX, f64::MAX);
    for _ in 0..2 {
        one_thread = one_thread.min(cold_with(1).as_secs_f64());
        all_threads = all_threads.min(cold_with(cores).as_secs_f64());
    }
    println!(
        "  cold, 1 thread  {one_thread:>8.3} s  {:>7.0} lines/s",
        lines as f64 / one_thread
    );
    println!(
        "  cold, {cores} threads {all_threads:>8.3} s  {:>7.0} lines/s  ({:.2}x one thread)",
        lines as f64 / all_threads,
        one_thread / all_threads
    );

    // SQLite inserting the rows the index wrote, alternating with engram's cold
    // index again, best of two each.
    let rows = sqlite_baseline::indexed_rows(&store);
    let (file_rows, chunk_rows, symbol_rows) = sqlite_baseline::counts(&rows);
    let (mut batched, mut one_tx) = (f64::MAX, f64::MAX);
    for _ in 0..2 {
        all_threads = all_threads.min(cold_with(cores).as_secs_f64());
        let dir = bench_dir("index-sqlite");
        batched = batched.min(sqlite_baseline::insert_rows(dir.path(), &rows, 1000));
        let dir = bench_dir("index-sqlite");
        one_tx = one_tx.min(sqlite_baseline::insert_rows(dir.path(), &rows, rows.len()));
    }
    println!(
        "  SQLite WAL FULL inserting the same {} rows ({file_rows} files, {chunk_rows} chunks with vectors, {symbol_rows} symbols; a table + 2 FTS5, walked, parsed and embedded beforehand):",
        rows.len()
    );
    println!(
        "    1000 rows/tx {batched:>8.3} s  {:>7.0} rows/s  engram ({cores} threads)/SQLite {:.2}x",
        rows.len() as f64 / batched,
        batched / all_threads
    );
    println!(
        "    one tx       {one_tx:>8.3} s  {:>7.0} rows/s  engram ({cores} threads)/SQLite {:.2}x",
        rows.len() as f64 / one_tx,
        one_tx / all_threads
    );
}

/// The baseline: one any-word FTS5 BM25 query for the 40 best chunks, as plain SQL.
fn any_word_fts(store: &Store, q: &str) -> Vec<i64> {
    let fts = engram::fts::fts_query(q).expect("words");
    store
        .with_tracker(|db| {
            let mut stmt = db.prepare_cached(
                "SELECT rowid FROM code_fts WHERE code_fts MATCH ?1
                 ORDER BY bm25(code_fts, 4.0, 1.0) LIMIT 40",
            )?;
            let rows = stmt.query_map([fts], |r| r.get(0))?;
            Ok(rows.collect::<rusqlite::Result<Vec<i64>>>()?)
        })
        .expect("fts")
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e3
}

fn bench_query() {
    // ENGRAM_BENCH_STORE=DIR keeps the indexed store there and reuses it next time.
    let kept = std::env::var_os("ENGRAM_BENCH_STORE").map(PathBuf::from);
    let temp = bench_dir("query-store");
    let store_dir = kept.clone().unwrap_or_else(|| temp.path().to_path_buf());
    let reuse = kept.is_some() && store_dir.join("blob.dat").exists();
    let store = open(&store_dir);
    if !reuse {
        let repo = bench_dir("query-repo");
        // About 5M lines make 100K chunks; the registry is cycled if it has fewer.
        let lines = std::env::var("ENGRAM_BENCH_QUERY_LINES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(5_000_000);
        let (files, bytes, lines) = make_repo(repo.path(), lines);
        let (report, t) =
            timed(|| index::index(&store, repo.path(), &IndexOptions::default()).expect("index"));
        println!(
            "query: {files} files, {lines} lines, {:.0} MB -> {} chunks (indexed in {:.1} s)",
            bytes as f64 / 1e6,
            report.chunks,
            t.as_secs_f64()
        );
    }
    let chunks: i64 = store
        .with_tracker(|db| Ok(db.query_row("SELECT count(*) FROM code_chunks", [], |r| r.get(0))?))
        .expect("count");
    println!("  store holds {chunks} chunks");
    if chunks < 100_000 {
        println!("  warning: fewer than 100K chunks");
    }
    // Open to first answer, as a new process sees it (the OS page cache may be warm).
    drop(store);
    let (store, opened) = timed(|| open(&store_dir));
    let (_, first) = timed(|| search(&store, "first query", &SearchOptions::default()));
    println!(
        "  open to first answer: {:.1} ms (open {:.1} ms, first query with the vector cache unmapped {:.1} ms)",
        (opened + first).as_secs_f64() * 1e3,
        opened.as_secs_f64() * 1e3,
        first.as_secs_f64() * 1e3
    );
    // Queries: identifiers and phrases of the kind agents ask.
    let queries = [
        "parse http request",
        "read config file",
        "serialize to json",
        "hash map insert",
        "thread pool spawn",
        "error handling",
        "utf8 decode",
        "async runtime block on",
        "random number generator",
        "write buffer flush",
        "iterator adapter",
        "lock mutex",
        "TcpStream connect",
        "Deserialize",
        "from_str_radix",
        "sort by key",
        "base64 encode",
        "retry with backoff",
        "memory allocation",
        "unicode normalization",
        "date time format",
        "compress gzip",
        "sql query",
        "command line arguments",
        "regex match",
        "path join",
        "environment variable",
        "timeout duration",
        "channel send receive",
        "checksum crc",
    ];
    let verbose = std::env::var_os("ENGRAM_BENCH_VERBOSE").is_some();
    let run = |opts: &SearchOptions| {
        let mut lat = Vec::new();
        let mut worst: Vec<(Duration, &str)> = Vec::new();
        // One pass first, reported apart: each query's first run. The connection has
        // not yet kept its phrases' row counts (see `store::fts_rank`), which later
        // runs reuse while the store is unchanged.
        let mut first = Vec::new();
        for q in queries {
            let (r, d) = timed(|| search(&store, q, opts).expect("search"));
            std::hint::black_box(r);
            first.push(d);
        }
        first.sort();
        for _round in 0..5 {
            for q in queries {
                let (r, d) = timed(|| search(&store, q, opts).expect("search"));
                std::hint::black_box(r);
                lat.push(d);
                worst.push((d, q));
            }
        }
        if verbose {
            worst.sort();
            for (d, q) in worst.iter().rev().take(6) {
                println!("    slow: {:>7.2} ms  {q}", d.as_secs_f64() * 1e3);
            }
        }
        lat.sort();
        (lat, first)
    };
    let fts = {
        let mut lat = Vec::new();
        for _round in 0..5 {
            for q in queries {
                let (r, d) = timed(|| any_word_fts(&store, q));
                std::hint::black_box(r);
                lat.push(d);
            }
        }
        lat.sort();
        lat
    };
    let (hybrid, hybrid_first) = run(&SearchOptions::default());
    // Its first runs reuse the row counts the hybrid runs kept: not reported.
    let (keyword, _) = run(&SearchOptions {
        keyword_only: true,
        ..SearchOptions::default()
    });
    let embedder = SearchOptions::default().embedder;
    let vector = {
        let mut lat = Vec::new();
        for _round in 0..5 {
            for q in queries {
                let (r, d) = timed(|| {
                    let v = embedder.embed(&[q]).expect("embed").remove(0);
                    store
                        .vector_search(embedder.name(), &v, 10)
                        .expect("vector search")
                });
                std::hint::black_box(r);
                lat.push(d);
            }
        }
        lat.sort();
        lat
    };
    // Where a hybrid query's time goes: each source on its own, as search runs it
    // (40 candidates per source), p50 over the same queries.
    let stage = |f: &dyn Fn(&str)| {
        let mut lat = Vec::new();
        for _round in 0..5 {
            for q in queries {
                lat.push(timed(|| f(q)).1);
            }
        }
        lat.sort();
        lat
    };
    let stages = [
        (
            "symbols",
            stage(&|q| {
                std::hint::black_box(index::symbol_ranked(&store, q, 1, 40).expect("symbols"));
            }),
        ),
        (
            "chunk keywords",
            stage(&|q| {
                std::hint::black_box(
                    index::keyword_ranked(&store, q, None, 10, 40).expect("keywords"),
                );
            }),
        ),
        (
            "memory keywords",
            stage(&|q| {
                let filter = engram::memory::MemoryFilter::default();
                std::hint::black_box(
                    engram::memory::keyword_ranked(&store, q, &filter, 40).expect("memories"),
                );
            }),
        ),
        (
            "embed query",
            stage(&|q| {
                std::hint::black_box(embedder.embed(&[q]).expect("embed"));
            }),
        ),
        (
            "vector scan",
            stage(&|q| {
                let v = embedder.embed(&[q]).expect("embed").remove(0);
                std::hint::black_box(
                    store
                        .vector_search(embedder.name(), &v, 80)
                        .expect("vector search"),
                );
            }),
        ),
    ];
    for (name, lat) in &stages {
        println!(
            "  stage {name:<16} p50 {:>7.2} ms  p99 {:>7.2} ms",
            percentile(lat, 0.5),
            percentile(lat, 0.99)
        );
    }
    for (name, lat) in [
        ("hybrid", &hybrid),
        ("hybrid 1st run", &hybrid_first),
        ("keyword only", &keyword),
        ("vector only", &vector),
        ("fts (baseline)", &fts),
    ] {
        println!(
            "  {name:<15} p50 {:>7.2} ms  p99 {:>7.2} ms  ({:.1}x fts p50)",
            percentile(lat, 0.5),
            percentile(lat, 0.99),
            percentile(lat, 0.5) / percentile(&fts, 0.5)
        );
    }
    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        for line in status
            .lines()
            .filter(|l| l.starts_with("VmHWM") || l.starts_with("VmRSS"))
        {
            println!(
                "  memory: {}",
                line.split_whitespace().collect::<Vec<_>>().join(" ")
            );
        }
    }
}

/// Whether `ENGRAM_BENCH` names `part`: for the parts that run only when named.
fn wanted_exactly(part: &str) -> bool {
    std::env::var("ENGRAM_BENCH").is_ok_and(|v| v.split(',').any(|p| p == part))
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    if ["graph", "graph-cost", "graph-refs"]
        .iter()
        .any(|p| wanted_exactly(p))
    {
        graph_cost::run();
    }
    if wanted("index") {
        bench_index();
    }
    if wanted("query") {
        bench_query();
    }
    if wanted("wal") {
        bench_wal();
    }
}

/// What each commit of a cold index writes to the tracker's WAL, by B-tree.
fn bench_wal() {
    let lines: u64 = std::env::var("ENGRAM_BENCH_WAL_LINES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300_000);
    // Only the crates Cargo.lock names (`name-version/` directories), which a build
    // of this repository has fetched: the same subset on any machine that built it,
    // whatever else the registry holds.
    let lock = std::fs::read_to_string(common::repo_path("Cargo.lock")).expect("Cargo.lock");
    let mut locked = std::collections::HashSet::new();
    let mut name = None;
    for line in lock.lines() {
        if let Some(v) = line.strip_prefix("name = ") {
            name = Some(v.trim_matches('"').to_string());
        } else if let (Some(v), Some(n)) = (line.strip_prefix("version = "), name.take()) {
            locked.insert(format!("{n}-{}", v.trim_matches('"')));
        }
    }
    let sources: Vec<PathBuf> = common::registry_sources()
        .into_iter()
        .filter(|p| {
            p.ancestors()
                .filter_map(|a| a.file_name()?.to_str())
                .any(|d| locked.contains(d))
        })
        .collect();
    let repo = bench_dir("index-wal-repo");
    let (files, bytes, lines) = make_repo_from(repo.path(), lines, sources);
    let batch_files = std::env::var("ENGRAM_BENCH_WAL_BATCH_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8);
    wal::run(repo.path(), batch_files, files, lines, bytes as f64 / 1e6);
}
