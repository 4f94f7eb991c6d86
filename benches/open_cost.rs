//! What opening a store costs, per call (issue 40, item 9): the fixed SQL and
//! connection work every `Store::open` and `verify` does, which the fuzzer pays per
//! input and every CLI call pays once.
//!
//! - `header`: the fuzz target's loop without libFuzzer: a header-only `blob.dat`,
//!   its tracker in memory (`MemoryTracker`) restored from an image, then `verify`,
//!   `Store::open`, drop, `verify`; and the same with no tracker (the open makes it);
//! - `real`: a store of 300 memories made by `engram import`, its tracker a file:
//!   a clean `Store::open` with every projection, and `verify_with` them;
//! - `cli`: `engram --store S search foo` on that store (and `search --keyword-only`,
//!   `get`), CPU (user + system, from `getrusage` of the children) and wall time per call.
//!
//! `cargo bench --profile ci --all-features --bench open_cost`; `ENGRAM_BENCH=header,real,cli`
//! picks parts (`header_restored`, `header_absent`: half of `header`),
//! `ENGRAM_BENCH_ITERS` sets the iterations (default 300), `ENGRAM_BIN` the engram
//! binary (default: the one beside this bench's build).

mod common;
use common::wanted;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use engram::format::FileHeader;
use engram::store::{verify, verify_with, MemoryTracker, Projection, Store, StoreOptions};
use zerocopy::IntoBytes;

fn iters() -> usize {
    std::env::var("ENGRAM_BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
}

/// A scratch directory in `/dev/shm` when there is one (as the fuzz target uses).
fn shm_dir(name: &str) -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    let b = tempfile::Builder::new().prefix(name).clone();
    if shm.is_dir() {
        if let Ok(d) = b.tempdir_in(shm) {
            return d;
        }
    }
    b.tempdir().expect("temp dir")
}

fn ms(d: Duration, n: usize) -> f64 {
    d.as_secs_f64() * 1e3 / n as f64
}

fn header_bytes() -> Vec<u8> {
    FileHeader::new(1, [7; 16], 0).as_bytes().to_vec()
}

/// The fuzz target's loop over a header-only log, with and without its tracker.
fn header(n: usize) {
    let dir = shm_dir("open-cost");
    let path = dir.path();
    let tracker = MemoryTracker::mount(path).expect("mount");
    std::fs::write(path.join("blob.dat"), header_bytes()).expect("write log");
    drop(Store::open(path, StoreOptions::default(), engram::projections()).expect("open"));
    let template = tracker.image().expect("image");
    for restored in [true, false] {
        // `header_restored` / `header_absent` pick one of the two (for a profile).
        let part = if restored {
            "header_restored"
        } else {
            "header_absent"
        };
        if !(wanted("header") || wanted(part)) {
            continue;
        }
        let (mut v1, mut open, mut v2) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
        let all = Instant::now();
        for _ in 0..n {
            let _ = std::fs::remove_file(path.join("LOCK"));
            if restored {
                tracker.restore(&template).expect("restore");
            } else {
                tracker.remove().expect("remove");
            }
            std::fs::write(path.join("blob.dat"), header_bytes()).expect("write log");
            let t = Instant::now();
            let _ = verify(path).expect("verify");
            v1 += t.elapsed();
            let t = Instant::now();
            let store =
                Store::open(path, StoreOptions::default(), engram::projections()).expect("open");
            drop(store);
            open += t.elapsed();
            let t = Instant::now();
            assert!(verify(path).expect("verify").is_sound());
            v2 += t.elapsed();
        }
        let total = all.elapsed();
        println!(
            "header-only log, tracker {}: {n} iterations, {:.3} ms each (verify {:.3}, open+drop {:.3}, verify {:.3})",
            if restored { "restored" } else { "absent" },
            ms(total, n),
            ms(v1, n),
            ms(open, n),
            ms(v2, n),
        );
    }
}

fn engram_bin() -> PathBuf {
    if let Some(b) = std::env::var_os("ENGRAM_BIN") {
        return b.into();
    }
    // target/<profile>/deps/open_cost-… → target/<profile>/engram
    let exe = std::env::current_exe().expect("current exe");
    exe.parent()
        .and_then(Path::parent)
        .map(|p| p.join("engram"))
        .expect("engram beside the bench")
}

/// A store of 300 memories, made by the CLI as a user would.
fn real_store(bin: &Path) -> tempfile::TempDir {
    let dir = shm_dir("open-cost-real");
    let mut lines = String::new();
    for i in 0..300 {
        lines.push_str(&format!(
            "{{\"id\":\"mem:{:08x}\",\"text\":\"memory {i} about the tracker, its schema and foo {}\",\"tags\":[\"t{}\"]}}\n",
            0xb000 + i,
            i * 7,
            i % 5
        ));
    }
    let jsonl = dir.path().join("m.jsonl");
    std::fs::write(&jsonl, lines).expect("write jsonl");
    let status = Command::new(bin)
        .arg("--store")
        .arg(dir.path().join("S"))
        .arg("import")
        .arg(&jsonl)
        .status()
        .expect("run engram import");
    assert!(status.success(), "engram import failed");
    dir
}

fn real(store: &Path, n: usize) {
    let projections = engram::projections();
    let refs: Vec<&dyn Projection> = projections.iter().map(|p| p.as_ref()).collect();
    let (mut open, mut v) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..n {
        let t = Instant::now();
        let s = Store::open(store, StoreOptions::default(), engram::projections()).expect("open");
        drop(s);
        open += t.elapsed();
        let t = Instant::now();
        assert!(verify_with(store, &refs).expect("verify").is_sound());
        v += t.elapsed();
    }
    println!(
        "store of 300 memories (tracker a file): {n} iterations, clean open+drop {:.3} ms, verify_with every projection {:.3} ms",
        ms(open, n),
        ms(v, n)
    );
}

fn children_cpu() -> Duration {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn cli(bin: &Path, store: &Path, n: usize, args: &[&str]) {
    let cpu0 = children_cpu();
    let t = Instant::now();
    for _ in 0..n {
        let out = Command::new(bin)
            .arg("--store")
            .arg(store)
            .args(args)
            .output()
            .expect("run engram search");
        assert!(out.status.success(), "engram search failed");
    }
    let wall = t.elapsed();
    let cpu = children_cpu() - cpu0;
    println!(
        "engram --store S {}: {n} calls, CPU {:.2} ms per call (user+sys), wall {:.2} ms",
        args.join(" "),
        ms(cpu, n),
        ms(wall, n)
    );
}

fn main() {
    let n = iters();
    if wanted("header") || wanted("header_restored") || wanted("header_absent") {
        header(n);
    }
    if wanted("real") || wanted("cli") {
        let bin = engram_bin();
        let dir = real_store(&bin);
        let store = dir.path().join("S");
        if wanted("real") {
            real(&store, n);
        }
        if wanted("cli") {
            // The query's embedding (the neural model's load and run) is most of a
            // search; without it, what is left is closer to the store's own cost.
            cli(&bin, &store, n.min(100), &["search", "foo"]);
            cli(
                &bin,
                &store,
                n.min(100),
                &["search", "--keyword-only", "foo"],
            );
            cli(&bin, &store, n.min(100), &["get", "mem:0000b000"]);
        }
    }
}
