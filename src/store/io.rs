//! The I/O seam: every write, sync and rename by which the store changes what is on
//! disk for its log, its compaction and its small files goes through these functions.
//!
//! They exist so tests can fail or "crash" the store at any chosen operation, one by
//! one, deterministically (`faults`, built only for tests): a failed `pwrite`, a
//! failed `fdatasync`, a power cut right before a rename. The kill tests
//! (`tests/crash*.rs`) stop a real process at a random moment; these stop it at every
//! operation in turn.
//!
//! Why free functions and a fail-point registry rather than a trait object held by
//! the store (redb's `StorageBackend`): the log is read through a memory map, which no
//! file-operation trait replaces, and the writes worth failing happen in places that
//! hold only a path (`update_small_file` is called from the layers above; compaction
//! and creation open files of their own). A registry keyed by the store's directory
//! reaches all of them, the sync thread included, without a handle threaded through
//! every constructor. Outside tests each function is the bare syscall: the check
//! compiles away.
//!
//! This module must never decide anything about the store: it performs (or, in a
//! test, refuses) the one operation it is asked for.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

#[cfg(test)]
pub(super) mod faults;
#[cfg(test)]
mod tests;

/// One operation that changes what is on disk, as a fault plan sees it.
// Outside tests only built, never read: the check is compiled away.
#[cfg_attr(not(test), allow(dead_code))]
#[derive(Debug, Clone, Copy)]
pub(super) enum Op<'a> {
    /// Bytes written at `offset` (or a range punched out / zeroed).
    Write {
        path: &'a Path,
        offset: u64,
        len: u64,
    },
    /// `fdatasync` / `fsync` of the file at `path`.
    Sync {
        path: &'a Path,
    },
    /// `fsync` of a directory, which makes creates and renames in it durable.
    SyncDir {
        dir: &'a Path,
    },
    Rename {
        from: &'a Path,
        to: &'a Path,
    },
}

/// Asks the test's fault plan (if any) whether `op` may run.
#[inline(always)]
fn check(op: Op<'_>) -> io::Result<()> {
    #[cfg(test)]
    {
        faults::before(op)
    }
    #[cfg(not(test))]
    {
        let _ = op;
        Ok(())
    }
}

/// `pwrite` all of `bytes` at `offset` of `file` (opened from `path`).
pub(super) fn write_at(file: &File, path: &Path, bytes: &[u8], offset: u64) -> io::Result<()> {
    check(Op::Write {
        path,
        offset,
        len: bytes.len() as u64,
    })?;
    file.write_all_at(bytes, offset)
}

/// `fdatasync`.
pub(super) fn sync_data(file: &File, path: &Path) -> io::Result<()> {
    check(Op::Sync { path })?;
    file.sync_data()
}

/// `fsync`.
pub(super) fn sync_all(file: &File, path: &Path) -> io::Result<()> {
    check(Op::Sync { path })?;
    file.sync_all()
}

/// `rename(2)`: replaces `to` atomically.
pub(super) fn rename(from: &Path, to: &Path) -> io::Result<()> {
    check(Op::Rename { from, to })?;
    std::fs::rename(from, to)
}

/// fsync the directory `dir`, so a create or rename in it is durable.
pub(super) fn sync_dir(dir: &Path) -> io::Result<()> {
    check(Op::SyncDir { dir })?;
    File::open(dir).and_then(|d| d.sync_all())
}

/// Deallocate `[offset, offset+len)` keeping the file's length. `Ok(false)` when the
/// filesystem does not support it or the range is small (the caller writes zeros).
pub(super) fn punch_hole(file: &File, path: &Path, offset: u64, len: u64) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    // Small ranges are cheaper to overwrite than to punch, and punching works in whole
    // blocks anyway (partial blocks are zeroed by the kernel).
    if len < (64 << 10) {
        return Ok(false);
    }
    let (Ok(off), Ok(n)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
        return Ok(false);
    };
    check(Op::Write { path, offset, len })?;
    // SAFETY: fallocate on a file descriptor we own, with plain integer arguments.
    let rc = unsafe {
        libc::fallocate(
            file.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            off,
            n,
        )
    };
    Ok(rc == 0)
}
