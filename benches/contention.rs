//! Latency of an agent's reads while another process indexes a large repository.
//!
//! An `engram serve` (stdio MCP, as an agent window runs it) answers `memory_search`
//! calls back to back, first on a quiet store (the baseline), then while a separate
//! `engram index` process indexes a repository of many small files of real code (the
//! cargo registry's Rust sources, first 40 lines of each, cycled under new names).
//! Reported: p50, p99 and max round-trip latency in both phases, the first call under
//! load on its own, the indexing time, and how long each of the indexer's batches held
//! the writer lock (from its debug log). Targets: p99 under load below 50 ms; the lock
//! held about 100 ms at most.
//!
//! `cargo bench --bench contention`; `ENGRAM_BENCH_FILES=N` sets the repository size
//! (default 100,000; 10,000 with `ENGRAM_BENCH_QUICK`).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// `n` files of real code, 40 lines each at most.
fn make_repo(dest: &Path, n: usize) -> u64 {
    let sources = common::registry_sources();
    assert!(!sources.is_empty(), "no .rs files in the cargo registry");
    let mut lines = 0u64;
    let mut made = 0usize;
    for (i, src) in sources.iter().cycle().enumerate() {
        if made >= n {
            break;
        }
        let Ok(text) = std::fs::read_to_string(src) else {
            continue;
        };
        let head: String = text.lines().take(40).map(|l| format!("{l}\n")).collect();
        let to = dest.join(format!("d{:04}/f{i:06}.rs", i / 100));
        std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
        std::fs::write(&to, &head).expect("write");
        lines += head.lines().count() as u64;
        made += 1;
    }
    lines
}

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Server {
    fn start(store: &Path, repo: &Path) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_engram"))
            .arg("--store")
            .arg(store)
            .args(["serve", "--tools", "all", "--repo"])
            .arg(repo)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn engram serve");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut s = Server {
            child,
            stdin,
            stdout,
            next: 0,
        };
        let init = s.call(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "contention-bench", "version": "0"}}),
        );
        assert!(init.get("result").is_some(), "initialize: {init}");
        writeln!(
            s.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        )
        .expect("write");
        s
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let msg = json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params});
        writeln!(self.stdin, "{msg}").expect("write");
        self.stdin.flush().expect("flush");
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).expect("read");
            assert!(n > 0, "engram serve closed stdout");
            let v: Value = serde_json::from_str(&line).expect("a JSON-RPC line");
            if v["id"] == json!(self.next) {
                return v;
            }
        }
    }

    /// One timed `memory_search`.
    fn search(&mut self, i: usize) -> Duration {
        let words = [
            "retry", "cache", "parser", "token", "index", "lock", "timeout",
        ];
        let q = format!(
            "{} {}",
            words[i % words.len()],
            words[(i / 7) % words.len()]
        );
        let t = Instant::now();
        let r = self.call(
            "tools/call",
            json!({"name": "memory_search", "arguments": {"query": q, "top_k": 5}}),
        );
        let took = t.elapsed();
        assert!(
            r.get("error").is_none() && r["result"]["isError"] != json!(true),
            "{r}"
        );
        took
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn report(name: &str, mut samples: Vec<Duration>) {
    if samples.is_empty() {
        println!("{name:<30} no sample (each waited for the whole run)");
        return;
    }
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{name:<30} {:>6} samples  p50 {:>7.2} ms  p99 {:>7.2} ms  max {:>8.2} ms",
        samples.len(),
        ms(percentile(&samples, 0.5)),
        ms(percentile(&samples, 0.99)),
        ms(*samples.last().expect("samples"))
    );
}

fn main() {
    let files: usize = std::env::var("ENGRAM_BENCH_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if common::quick() { 10_000 } else { 100_000 });
    let dir = common::bench_dir("contention");
    let repo = dir.path().join("repo");
    let store = dir.path().join("store");
    let lines = make_repo(&repo, files);
    println!("repository: {files} files, {lines} lines");
    {
        let memories = engram::memory::Memories::open(&store).expect("store");
        let words = [
            "retry", "cache", "parser", "token", "index", "lock", "timeout", "queue",
        ];
        for i in 0..2000 {
            let text = format!(
                "memory {i}: the {} path needs a {} before the {}",
                words[i % 8],
                words[(i / 8) % 8],
                words[(i / 64) % 8]
            );
            memories.remember(&text, &[], None).expect("remember");
        }
    }
    let mut server = Server::start(&store, &repo);
    let baseline: Vec<Duration> = (0..300).map(|i| server.search(i)).collect();
    report("memory_search, quiet store", baseline);

    let started = Instant::now();
    let mut indexer = Command::new(env!("CARGO_BIN_EXE_engram"))
        .arg("--store")
        .arg(&store)
        .arg("index")
        .arg(&repo)
        // Each commit logs how long it held the writer lock.
        .env("RUST_LOG", "engram=debug")
        .stdout(Stdio::null())
        .stderr(Stdio::from(
            std::fs::File::create(dir.path().join("index.log")).expect("index log"),
        ))
        .spawn()
        .expect("spawn engram index");
    std::thread::sleep(Duration::from_millis(200));
    let first = server.search(0);
    let mut loaded = Vec::new();
    let mut i = 1;
    while indexer.try_wait().expect("wait").is_none() {
        loaded.push(server.search(i));
        i += 1;
        std::thread::sleep(Duration::from_millis(10));
    }
    let indexed_in = started.elapsed();
    assert!(
        indexer.wait().expect("wait").success(),
        "engram index failed"
    );
    println!(
        "first memory_search under load: {:.2} ms",
        first.as_secs_f64() * 1e3
    );
    report("memory_search, while indexing", loaded);
    println!(
        "engram index of {files} files took {:.1} s beside the searches",
        indexed_in.as_secs_f64()
    );
    let log = std::fs::read_to_string(dir.path().join("index.log")).expect("index log");
    let held: Vec<Duration> = log
        .lines()
        .filter(|l| l.contains("batch committed"))
        .filter_map(|l| l.split("held_ms=").nth(1))
        .filter_map(|v| v.split_whitespace().next()?.parse().ok())
        .map(Duration::from_millis)
        .collect();
    report("writer lock held per batch", held);
}
