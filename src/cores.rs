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

/// Let the calling thread give way to the process's other threads when the cores are
/// short: its nice value is raised by `by` (Linux sets it per thread; threads it
/// starts from now on inherit it). For work that runs ahead of what will wait for it,
/// beside a thread that bounds the whole. Best effort: where it cannot, nothing
/// changes. The value cannot be lowered again without privileges, so only a thread
/// that ends with its work should ask.
pub fn give_way(by: i32) {
    #[cfg(all(target_os = "linux", feature = "store"))]
    // SAFETY: plain system calls on this thread's own id; no memory is shared.
    unsafe {
        let tid = libc::gettid() as libc::id_t;
        // getpriority returns -1 for both nice -1 and an error: clear errno first.
        *libc::__errno_location() = 0;
        let now = libc::getpriority(libc::PRIO_PROCESS, tid);
        if now == -1 && *libc::__errno_location() != 0 {
            return;
        }
        libc::setpriority(libc::PRIO_PROCESS, tid, (now + by).min(19));
    }
    #[cfg(not(all(target_os = "linux", feature = "store")))]
    let _ = by;
}

#[cfg(all(test, target_os = "linux", feature = "store"))]
mod tests {
    /// This thread's nice value.
    fn nice() -> i32 {
        // SAFETY: a plain system call on this thread's own id.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) }
    }

    #[test]
    fn giving_way_raises_only_this_threads_nice_value() {
        let before = nice();
        let (inside, child) = std::thread::spawn(move || {
            super::give_way(3);
            // A thread started from here on inherits it.
            let child = std::thread::spawn(nice).join().expect("child");
            (nice(), child)
        })
        .join()
        .expect("thread");
        assert_eq!(inside, (before + 3).min(19));
        assert_eq!(child, inside);
        assert_eq!(nice(), before, "the calling thread is left as it was");
    }
}
