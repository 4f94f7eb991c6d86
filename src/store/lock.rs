//! The writer lock: an advisory lock on the store's `LOCK` file, held for one batch.
//!
//! Readers never take it. A writer takes it around "catch up, append, sync, apply", so
//! appends from many processes serialise without any of them holding the store for
//! longer than one batch. The OS drops the lock when a process dies, so a crashed
//! writer never wedges the store.

use std::fs::{File, OpenOptions};
use std::path::Path;

use super::error::{Result, StoreError};

/// Held while alive; released on drop.
pub struct WriterLock {
    file: File,
}

impl WriterLock {
    /// Block until the lock on `path` (created if missing) is ours.
    pub fn acquire(path: &Path) -> Result<WriterLock> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(path)
            .map_err(StoreError::io("open lock file", path))?;
        file.lock().map_err(StoreError::io("lock", path))?;
        Ok(WriterLock { file })
    }
}

impl Drop for WriterLock {
    fn drop(&mut self) {
        // Closing the file releases the lock anyway; unlocking first just makes it prompt.
        let _ = self.file.unlock();
    }
}
