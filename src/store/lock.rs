//! The writer lock: an advisory lock on the store's `LOCK` file, held for one batch,
//! and under it one on `blob.dat` itself.
//!
//! Readers never take it. A writer takes it around "catch up, append, sync, apply", so
//! appends from many processes serialise without any of them holding the store for
//! longer than one batch. The OS drops the lock when a process dies, so a crashed
//! writer never wedges the store.
//!
//! A lock is on an open file, not on a name: once `LOCK` is deleted or replaced, a
//! process still holding the old file and one that opened the new file would both
//! "hold" the lock. So every acquisition checks, with the lock taken, that the locked
//! file is still the one at `LOCK` (same device and inode), and takes the lock again
//! on the file now there when it is not (blob-log.md, "Writing"). A writer that took
//! the old file while another was mid-batch on the new one, or the reverse, is then
//! caught by the second lock, on the log: that file cannot vanish without the store.

use std::fs::{File, OpenOptions};
use std::path::Path;
use std::sync::{Arc, Mutex};

use super::blob_log::BlobLog;
use super::error::{Result, StoreError};
use super::stat;

/// Held while alive; released on drop.
pub struct WriterLock {
    file: Arc<File>,
}

/// Open (creating if missing) a store's lock file.
pub fn open_lock_file(path: &Path) -> Result<File> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)
        .map_err(StoreError::io("open lock file", path))
}

/// Whether `file` is the file at `path` now (false when `path` is gone).
fn is_at(file: &File, path: &Path) -> Result<bool> {
    let mine = stat::file_identity(file).map_err(StoreError::io("stat", path))?;
    match stat::path_identity(path) {
        Ok(there) => Ok(there == mine),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(StoreError::io("stat", path)(e)),
    }
}

/// The lock file one store handle keeps open between batches (saves an open and a
/// close per batch), reopened when `LOCK` is no longer the file it has open.
#[derive(Default)]
pub struct LockSlot {
    file: Mutex<Option<Arc<File>>>,
}

impl LockSlot {
    /// Block until the lock on the file at `path` is ours. Callers in one process
    /// must serialise among themselves, since `flock` does not exclude holders of the
    /// same open file.
    pub fn hold(&self, path: &Path) -> Result<WriterLock> {
        loop {
            let file = self.file(path)?;
            file.lock().map_err(StoreError::io("lock", path))?;
            let held = WriterLock { file };
            if is_at(&held.file, path)? {
                return Ok(held);
            }
            tracing::warn!(lock = %path.display(), "LOCK was deleted or replaced; locking the file there now");
            drop(held);
            self.forget()?;
        }
    }

    /// The lock if nobody holds it, without waiting; `None` also when this handle
    /// never opened the lock file or `LOCK` is no longer it.
    pub fn try_hold(&self, path: &Path) -> Result<Option<WriterLock>> {
        let Some(file) = self.opened()? else {
            return Ok(None);
        };
        match file.try_lock() {
            Ok(()) => {
                let held = WriterLock { file };
                Ok(is_at(&held.file, path)?.then_some(held))
            }
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(StoreError::io("lock", path)(e)),
        }
    }

    fn slot(&self) -> Result<std::sync::MutexGuard<'_, Option<Arc<File>>>> {
        self.file
            .lock()
            .map_err(|_| StoreError::Invalid("lock file slot poisoned by a panic".into()))
    }

    fn opened(&self) -> Result<Option<Arc<File>>> {
        Ok(self.slot()?.clone())
    }

    fn file(&self, path: &Path) -> Result<Arc<File>> {
        let mut slot = self.slot()?;
        if let Some(f) = &*slot {
            return Ok(f.clone());
        }
        let f = Arc::new(open_lock_file(path)?);
        *slot = Some(f.clone());
        Ok(f)
    }

    fn forget(&self) -> Result<()> {
        *self.slot()? = None;
        Ok(())
    }
}

impl WriterLock {
    /// Block until the lock on `path` is ours (with a file of its own, closed on drop).
    pub fn acquire(path: &Path) -> Result<WriterLock> {
        LockSlot::default().hold(path)
    }

    /// The lock on `path` if nobody holds it, without waiting.
    pub fn try_acquire(path: &Path) -> Result<Option<WriterLock>> {
        let slot = LockSlot::default();
        slot.file(path)?;
        slot.try_hold(path)
    }

    /// True when another process holds the lock on `path` right now.
    pub fn is_held_elsewhere(path: &Path) -> Result<bool> {
        // A read-only descriptor can hold an flock too: a reader without write
        // permission (a read-only store) can still ask.
        let file = match OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .or_else(|e| match e.kind() {
                std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem => {
                    OpenOptions::new().read(true).open(path)
                }
                _ => Err(e),
            }) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(StoreError::io("open lock file", path)(e)),
        };
        match file.try_lock() {
            Ok(()) => {
                let _ = file.unlock();
                Ok(false)
            }
            Err(std::fs::TryLockError::WouldBlock) => Ok(true),
            Err(std::fs::TryLockError::Error(e)) => Err(StoreError::io("lock", path)(e)),
        }
    }
}

impl Drop for WriterLock {
    fn drop(&mut self) {
        // Other handles on the same open file may outlive this one (the slot keeps
        // it open between batches): unlock rather than wait for the close.
        let _ = self.file.unlock();
    }
}

/// The lock on the log file a writer works on, released on drop.
pub(super) struct LogLock(pub(super) Arc<BlobLog>);

impl Drop for LogLock {
    fn drop(&mut self) {
        self.0.unlock();
    }
}
