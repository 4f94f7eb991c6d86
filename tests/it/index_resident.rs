//! Issue 43: an index's resident memory does not grow with the tree. The vector cache
//! is written through a shared map; before its pages were let go of as it was
//! written, its whole file (and, during a grow, its doubled copy too) stayed resident,
//! so the peak grew by about 1.6 KB a chunk: 1,032 MB for a 4.9M-line tree.
//!
//! The bench behind the figures is `tools/index-rss.sh`; this is its small version:
//! two generated trees, one eight times the other, and the mapped-file part of the
//! resident set sampled while `engram index` runs.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// `files` Rust files of 24 small functions each, every one its own text.
fn write_tree(dir: &Path, files: usize) {
    for f in 0..files {
        let mut src = format!("//! Module {f} of a generated tree.\n\n");
        for g in 0..24 {
            src.push_str(&format!(
                "/// Sums the {g}th series of module {f}.\npub fn series_{f}_{g}(xs: &[u64]) -> u64 {{\n    \
                 let mut total = {g}u64;\n    for x in xs {{\n        total = total.wrapping_mul(31).wrapping_add(*x ^ {f});\n    \
                 }}\n    total\n}}\n\n"
            ));
        }
        let sub = dir.join(format!("m{}", f % 16));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join(format!("f{f}.rs")), src).unwrap();
    }
}

/// The largest `RssFile` (KiB) seen while `engram index` ran over `tree`.
fn mapped_peak_kib(tree: &Path, store: &Path) -> u64 {
    let mut child = Command::new(env!("CARGO_BIN_EXE_engram"))
        .arg("--store")
        .arg(store)
        .arg("index")
        .arg(tree)
        .env_remove("ENGRAM_STORE")
        .env("ENGRAM_EMBEDDER", "hash-v2-256")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run engram index");
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak = 0u64;
    loop {
        if let Ok(status) = std::fs::read_to_string(&status_path) {
            let file = status
                .lines()
                .find_map(|l| l.strip_prefix("RssFile:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
            peak = peak.max(file.unwrap_or(0));
        }
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "engram index failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    peak
}

#[test]
fn the_mapped_part_of_an_index_resident_set_does_not_grow_with_the_tree() {
    let dir = tempfile::tempdir().unwrap();
    let (small, large) = (dir.path().join("small"), dir.path().join("large"));
    write_tree(&small, 100);
    write_tree(&large, 800);
    let small_kib = mapped_peak_kib(&small, &dir.path().join("store-small"));
    let large_kib = mapped_peak_kib(&large, &dir.path().join("store-large"));
    // 800 files are about 19,000 chunks: their vectors are about 30 MB of cache file,
    // which used to stay resident, and more during a grow. The allowance covers the
    // log's pages of the batch in flight and the binary's pages faulted in later.
    let allowance_kib = 12 * 1024;
    eprintln!("mapped files peaked at {small_kib} KiB for 100 files, {large_kib} KiB for 800");
    assert!(
        large_kib < small_kib + allowance_kib,
        "mapped files peaked at {small_kib} KiB for 100 files and {large_kib} KiB for 800"
    );
}
