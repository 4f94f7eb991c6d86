//! What the code graph costs (issue 41, "Cost"): index time and store size with each
//! file's `refs:` record written and without it, then `refs` latency in a store of at
//! least 100K chunks.
//!
//! - cost: every package of the search eval (`$ENGRAM_EVAL_DATA/src/*`, default
//!   `target/search-eval`, as `tools/search-eval/fetch.sh` unpacks them) indexed cold
//!   into a new store, graph on and graph off (`IndexOptions::graph`, a hidden switch
//!   that exists for this measurement), alternating which goes first from one package
//!   to the next; wall time, the process's CPU time (user + system, all threads) and
//!   the store directory's bytes. Graph off still parses each file and walks its tree
//!   once: the call sites are collected in the same walk as the symbols, so what "off"
//!   leaves out is the record (encoding, log bytes) and its projection (`code_calls`,
//!   `code_imports` and their indexes), not that part of the walk.
//! - refs: the same packages copied under `c0/`, `c1/`, … until the store holds
//!   `ENGRAM_BENCH_GRAPH_CHUNKS` chunks (default 100000), indexed with the graph on;
//!   then `graph::refs` (the CLI's defaults: `same-name` or better, 100 results) for
//!   definitions chosen by a fixed rule: functions, methods and classes sorted by
//!   path and line, `ENGRAM_BENCH_GRAPH_QUERIES` (default 200) evenly spaced, each asked
//!   once by place (`--at PATH:LINE`) and once by name. Copies repeat every name, so
//!   a name has as many definitions and call sites as there are copies: a harder
//!   store for `refs` than one of distinct code. Then search for files (`kind: file`)
//!   in the same store, with search's graph signal and without it.
//!
//! `ENGRAM_BENCH=graph cargo bench --profile ci --bench index` (not run unless
//! named; `graph-cost` or `graph-refs` runs one part); `ENGRAM_BENCH_GRAPH_PAIRS` (on/off pairs per package, default 1);
//! `ENGRAM_BENCH_GRAPH_STORE=DIR` keeps the refs store there and reuses it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use engram::index::graph::{self, Ask, Target};
use engram::index::{self, IndexOptions};
use engram::store::Store;

use super::{open, percentile};
use crate::common::bench_dir;

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The search eval's package directories, sorted.
fn packages() -> Vec<PathBuf> {
    let data = std::env::var_os("ENGRAM_EVAL_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::common::repo_path("target/search-eval"));
    let src = data.join("src");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&src)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    if out.is_empty() {
        eprintln!(
            "graph: no packages under {} (run tools/search-eval/fetch.sh)",
            src.display()
        );
        std::process::exit(2);
    }
    out
}

/// This process's CPU time so far, user + system, every thread it ever had
/// (`/proc/self/stat`; zero where there is none).
fn cpu_time() -> Duration {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return Duration::ZERO;
    };
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
    // SAFETY: sysconf reads a constant of the system.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_secs_f64(ticks as f64 / hz as f64)
}

/// Bytes of every file under `dir`: (blob.dat, tracker.db and its WAL, the rest).
fn store_bytes(dir: &Path) -> (u64, u64, u64) {
    let (mut blob, mut tracker, mut rest) = (0, 0, 0);
    for e in walkdir(dir) {
        let len = e.metadata().map_or(0, |m| m.len());
        let name = e.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name == "blob.dat" {
            blob += len;
        } else if name.starts_with("tracker.db") {
            tracker += len;
        } else {
            rest += len;
        }
    }
    (blob, tracker, rest)
}

fn walkdir(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// One cold index run of `repo` into a new store.
#[derive(Default, Clone, Copy)]
struct Run {
    wall: Duration,
    cpu: Duration,
    blob: u64,
    tracker: u64,
    rest: u64,
    chunks: u64,
}

impl Run {
    fn bytes(&self) -> u64 {
        self.blob + self.tracker + self.rest
    }

    fn add(&mut self, o: &Run) {
        self.wall += o.wall;
        self.cpu += o.cpu;
        self.blob += o.blob;
        self.tracker += o.tracker;
        self.rest += o.rest;
        self.chunks += o.chunks;
    }
}

fn cold(repo: &Path, graph: bool) -> Run {
    let dir = bench_dir("graph-cost");
    let store = open(dir.path());
    let opts = IndexOptions {
        graph,
        ..IndexOptions::default()
    };
    let (cpu0, t0) = (cpu_time(), Instant::now());
    let report = index::index(&store, repo, &opts).expect("index");
    let (wall, cpu) = (t0.elapsed(), cpu_time().saturating_sub(cpu0));
    drop(store);
    let (blob, tracker, rest) = store_bytes(dir.path());
    Run {
        wall,
        cpu,
        blob,
        tracker,
        rest,
        chunks: report.chunks,
    }
}

fn share(on: f64, off: f64) -> String {
    format!("{:+.1}%", (on / off - 1.0) * 100.0)
}

fn print_row(name: &str, on: &Run, off: &Run) {
    let mb = |b: u64| b as f64 / 1e6;
    println!(
        "  {name:<28} {:>7} chunks | wall {:>6.2} / {:>6.2} s ({:>7}) | cpu {:>6.2} / {:>6.2} s ({:>7}) | store {:>6.1} / {:>6.1} MB ({:>7}; blob {}, tracker {})",
        on.chunks,
        on.wall.as_secs_f64(),
        off.wall.as_secs_f64(),
        share(on.wall.as_secs_f64(), off.wall.as_secs_f64()),
        on.cpu.as_secs_f64(),
        off.cpu.as_secs_f64(),
        share(on.cpu.as_secs_f64(), off.cpu.as_secs_f64()),
        mb(on.bytes()),
        mb(off.bytes()),
        share(on.bytes() as f64, off.bytes() as f64),
        share(on.blob as f64, off.blob as f64),
        share(on.tracker as f64, off.tracker as f64),
    );
}

/// Index time and store size, graph on against off, per package and in total.
fn cost(pkgs: &[PathBuf]) {
    let pairs = env_num("ENGRAM_BENCH_GRAPH_PAIRS", 1).max(1);
    println!(
        "graph cost: {} packages, graph on / off, {pairs} pair(s), cold index into new stores (on / off, then the graph's share)",
        pkgs.len()
    );
    let (mut all_on, mut all_off) = (Run::default(), Run::default());
    for (i, p) in pkgs.iter().enumerate() {
        let (mut on, mut off) = (Run::default(), Run::default());
        for pair in 0..pairs {
            // Alternate which goes first, so a warming cache or a busy neighbour does
            // not always favour the same side.
            if (i as u64 + pair).is_multiple_of(2) {
                on.add(&cold(p, true));
                off.add(&cold(p, false));
            } else {
                off.add(&cold(p, false));
                on.add(&cold(p, true));
            }
        }
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("?");
        print_row(name, &on, &off);
        all_on.add(&on);
        all_off.add(&off);
    }
    print_row("total", &all_on, &all_off);
}

/// Copy the files under `from` to `to`, keeping their relative paths.
fn copy_tree(from: &Path, to: &Path) {
    for f in walkdir(from) {
        let Ok(rel) = f.strip_prefix(from) else {
            continue;
        };
        let dest = to.join(rel);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::copy(&f, &dest).expect("copy");
    }
}

fn chunk_count(store: &Store) -> i64 {
    store
        .with_tracker(|db| Ok(db.query_row("SELECT count(*) FROM code_chunks", [], |r| r.get(0))?))
        .expect("count")
}

/// `refs` latency in a store of at least `ENGRAM_BENCH_GRAPH_CHUNKS` chunks.
fn refs_latency(pkgs: &[PathBuf]) {
    let want = env_num("ENGRAM_BENCH_GRAPH_CHUNKS", 100_000) as i64;
    let kept = std::env::var_os("ENGRAM_BENCH_GRAPH_STORE").map(PathBuf::from);
    let temp = bench_dir("graph-refs-store");
    let store_dir = kept.clone().unwrap_or_else(|| temp.path().to_path_buf());
    let reuse = kept.is_some() && store_dir.join("blob.dat").exists();
    let store = open(&store_dir);
    if !reuse {
        let repo = bench_dir("graph-refs-repo");
        let copy = |c: usize| {
            for p in pkgs {
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("pkg");
                copy_tree(p, &repo.path().join(format!("c{c}/{name}")));
            }
        };
        copy(0);
        let t = Instant::now();
        index::index(&store, repo.path(), &IndexOptions::default()).expect("index");
        let one = chunk_count(&store).max(1);
        let copies = ((want + one - 1) / one).max(1) as usize;
        for c in 1..copies {
            copy(c);
        }
        index::index(&store, repo.path(), &IndexOptions::default()).expect("index");
        println!(
            "graph refs: {copies} copies of the packages indexed in {:.1} s",
            t.elapsed().as_secs_f64()
        );
    }
    let (chunks, calls, imports): (i64, i64, i64) = store
        .with_tracker(|db| {
            Ok(db.query_row(
                "SELECT (SELECT count(*) FROM code_chunks), (SELECT count(*) FROM code_calls),
                        (SELECT count(*) FROM code_imports)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?)
        })
        .expect("counts");
    println!("  store holds {chunks} chunks, {calls} call sites, {imports} imported names");
    if chunks < want {
        println!("  warning: fewer than {want} chunks");
    }
    let defs: Vec<(String, String, u64)> = store
        .with_tracker(|db| {
            let mut stmt = db.prepare(
                "SELECT path, name, start_line FROM code_symbols
                 WHERE kind IN ('function', 'method', 'class')
                 ORDER BY path, start_line, name",
            )?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .expect("definitions");
    let n = (env_num("ENGRAM_BENCH_GRAPH_QUERIES", 200) as usize)
        .min(defs.len())
        .max(1);
    let chosen: Vec<&(String, String, u64)> = (0..n)
        .filter_map(|i| defs.get(i * defs.len() / n))
        .collect();
    let ask = Ask::default();
    for (label, by_name) in [("refs --at PATH:LINE", false), ("refs NAME", true)] {
        let mut lat = Vec::new();
        let mut found = Vec::new();
        let mut slow: Vec<(Duration, String)> = Vec::new();
        for (path, name, line) in &chosen {
            let target = if by_name {
                Target::Name(name.clone())
            } else {
                Target::At {
                    path: path.clone(),
                    line: *line,
                }
            };
            let t = Instant::now();
            let answer = graph::refs(&store, &target, ask).expect("refs");
            let d = t.elapsed();
            lat.push(d);
            found.push(answer.items.len());
            slow.push((d, format!("{path}:{line} {name}")));
        }
        lat.sort();
        found.sort();
        slow.sort();
        println!(
            "  {label:<20} {} definitions: p50 {:>7.2} ms  p90 {:>7.2} ms  p99 {:>7.2} ms  max {:>7.2} ms  (refs found: median {}, max {})",
            lat.len(),
            percentile(&lat, 0.5),
            percentile(&lat, 0.9),
            percentile(&lat, 0.99),
            percentile(&lat, 1.0),
            found[found.len() / 2],
            found.last().copied().unwrap_or(0)
        );
        for (d, what) in slow.iter().rev().take(3) {
            println!("    slow: {:>8.2} ms  {what}", d.as_secs_f64() * 1e3);
        }
    }
    search_latency(&store);
}

/// File search latency in the refs store with the graph signal (its default for
/// files) and without it (each query once to warm, then three rounds, alternating).
fn search_latency(store: &Store) {
    use engram::search::{search, GraphSignal, HitKind, SearchOptions};
    let queries = [
        "parse http request headers",
        "retry with backoff",
        "iterate over map entries",
        "observable computed value",
        "websocket close frame",
        "format help text for a command",
        "invalidate cached queries",
        "chunk an iterable into lists",
        "split bytes at index",
        "curry a function",
        "insert into an ordered map",
        "flatten nested lists",
    ];
    let off = GraphSignal {
        weight: 0.0,
        ..GraphSignal::default()
    };
    let (mut lat_off, mut lat_on) = (Vec::new(), Vec::new());
    for round in 0..4 {
        for q in queries {
            // Files: the kind of question the signal is on for by default.
            for (graph, lat) in [(Some(off), &mut lat_off), (None, &mut lat_on)] {
                let opts = SearchOptions {
                    kind: Some(HitKind::File),
                    graph,
                    ..SearchOptions::default()
                };
                let t = Instant::now();
                std::hint::black_box(search(store, q, &opts).expect("search"));
                if round > 0 {
                    lat.push(t.elapsed());
                }
            }
        }
    }
    lat_off.sort();
    lat_on.sort();
    println!(
        "  search for files, {} queries x 3: without the graph signal p50 {:.2} ms p99 {:.2} ms; with it (the default for files) p50 {:.2} ms p99 {:.2} ms",
        queries.len(),
        percentile(&lat_off, 0.5),
        percentile(&lat_off, 0.99),
        percentile(&lat_on, 0.5),
        percentile(&lat_on, 0.99)
    );
}

/// Both parts, cost first.
pub fn run() {
    let pkgs = packages();
    if super::wanted_exactly("graph-cost") || !super::wanted_exactly("graph-refs") {
        cost(&pkgs);
    }
    if super::wanted_exactly("graph-refs") || !super::wanted_exactly("graph-cost") {
        refs_latency(&pkgs);
    }
}
