//! The writer lock: an advisory lock on the store's `LOCK` file, held for one batch.
//!
//! Readers never take it. A writer takes it around "catch up, append, sync, apply", so
//! appends from many processes serialise without any of them holding the store for
//! longer than one batch. The OS drops the lock when a process dies, so a crashed
//! writer never wedges the store.

use std::fs::{File, OpenOptions};
use std::path::Path;

use super::error::{Result, StoreError};

enum Handle<'a> {
    Owned(File),
    Shared(&'a File),
}

/// Held while alive; released on drop.
pub struct WriterLock<'a> {
    handle: Handle<'a>,
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

impl WriterLock<'static> {
    /// Block until the lock on `path` is ours.
    pub fn acquire(path: &Path) -> Result<WriterLock<'static>> {
        let file = open_lock_file(path)?;
        file.lock().map_err(StoreError::io("lock", path))?;
        Ok(WriterLock {
            handle: Handle::Owned(file),
        })
    }
}

impl WriterLock<'static> {
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

impl<'a> WriterLock<'a> {
    /// Block until the lock on an already open lock file is ours. Saves an open and a
    /// close per batch; callers in one process must serialise among themselves, since
    /// `flock` does not exclude holders of the same open file.
    pub fn hold(file: &'a File, path: &Path) -> Result<WriterLock<'a>> {
        file.lock().map_err(StoreError::io("lock", path))?;
        Ok(WriterLock {
            handle: Handle::Shared(file),
        })
    }
}

impl<'a> WriterLock<'a> {
    /// The lock on an already open lock file if nobody holds it, without waiting.
    pub fn try_hold(file: &'a File, path: &Path) -> Result<Option<WriterLock<'a>>> {
        match file.try_lock() {
            Ok(()) => Ok(Some(WriterLock {
                handle: Handle::Shared(file),
            })),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(StoreError::io("lock", path)(e)),
        }
    }
}

impl Drop for WriterLock<'_> {
    fn drop(&mut self) {
        let file = match &self.handle {
            Handle::Owned(f) => f,
            Handle::Shared(f) => *f,
        };
        // For an owned file closing releases the lock anyway; unlocking is prompt.
        let _ = file.unlock();
    }
}
