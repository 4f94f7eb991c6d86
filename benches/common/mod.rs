//! What every benchmark binary shares: choosing parts and sizes from the environment,
//! and scratch directories on the repository's disk.

#![allow(dead_code)] // each bench uses its own subset

use std::path::{Path, PathBuf};

/// `ENGRAM_BENCH_QUICK` set: smaller sizes, for a smoke run.
pub fn quick() -> bool {
    std::env::var_os("ENGRAM_BENCH_QUICK").is_some()
}

/// Whether `ENGRAM_BENCH` (comma-separated parts; unset means all) asks for `part`.
pub fn wanted(part: &str) -> bool {
    std::env::var("ENGRAM_BENCH")
        .map(|v| v.split(',').any(|p| p == part))
        .unwrap_or(true)
}

/// A path under the repository root (where Cargo.toml is), whatever the current directory.
pub fn repo_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// A scratch directory under target/, so the files sit on the repository's disk,
/// not a RAM-backed /tmp.
pub fn bench_dir(name: &str) -> tempfile::TempDir {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-tmp");
    std::fs::create_dir_all(&base).expect("create target/bench-tmp");
    tempfile::Builder::new()
        .prefix(name)
        .tempdir_in(base)
        .expect("temp dir")
}

/// Rust sources of the cargo registry, in a stable order.
#[cfg(feature = "index")]
pub fn registry_sources() -> Vec<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .expect("CARGO_HOME or HOME");
    let mut files: Vec<PathBuf> = ignore::WalkBuilder::new(home.join("registry/src"))
        .standard_filters(false)
        .build()
        .filter_map(Result::ok)
        .map(|e| e.into_path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.len() < 1 << 20))
        .collect();
    files.sort();
    files
}

/// SplitMix64: a fixed, seedable stream of test data, the same on every machine.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A float in [-1, 1) from the next 24 random bits.
    pub fn symmetric(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }
}

/// Write requests the device under target/bench-tmp has completed so far, from
/// `/proc/diskstats` (None where that file or the device's line is missing). The
/// difference across a run tells how many device writes each durable commit cost,
/// which explains a throughput figure better than the noisy time does.
#[allow(dead_code)]
pub fn device_writes() -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-tmp");
    std::fs::create_dir_all(&base).ok()?;
    let dev = std::fs::metadata(&base).ok()?.dev();
    // Linux's dev_t encoding of major and minor numbers.
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    let stats = std::fs::read_to_string("/proc/diskstats").ok()?;
    stats.lines().find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        (f.len() > 7 && f[0].parse() == Ok(major) && f[1].parse() == Ok(minor))
            .then(|| f[7].parse().ok())
            .flatten()
    })
}
