//! How many cores this process may use, read once.
//!
//! `std::thread::available_parallelism` reads the cgroup's CPU quota from `/proc` and
//! `/sys` on every call (three files opened and read on Linux). Callers that ask per
//! file or per batch (the built-in embedder, the vector scan) paid that each time: 420
//! times for an index of 419 files. The quota of a running process rarely changes,
//! and a stale count only makes work split less evenly, never wrong.

use std::sync::OnceLock;

/// The number of threads that can run at once (at least 1), as the OS said at the
/// first call.
pub fn available() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}
