//! Whether a directory without `blob.dat` may get a new log: the decision made before
//! any file of a store is created.
//!
//! A new log goes only into an empty (or new) directory. A directory that still holds
//! part of a store — `tracker.db`, vector caches, pattern databases, `LOCK` — lost its
//! log: starting an empty one there would make the next open rebuild the tracker from
//! nothing and wipe the only copy left. Such a directory is refused with
//! [`StoreError::LogMissing`], and nothing in it is touched. This module must never
//! create anything but `LOCK` and the new log, and only in a directory it found empty
//! of store files.

use std::fs::OpenOptions;
use std::io::ErrorKind;
use std::path::Path;

use super::blob_log::BlobLog;
use super::error::{Result, StoreError};
use super::lock::WriterLock;
use super::{BLOB_FILE, LOCK_FILE, TRACKER_FILE};
use crate::format::FileHeader;

/// The error for `dir` without `blob.dat`: [`StoreError::LogMissing`] when other
/// files of a store are there, else "not a store".
pub fn missing_log(dir: &Path) -> StoreError {
    match remnants(dir, true) {
        Ok(found) if !found.is_empty() => log_missing(dir, found),
        Ok(_) => StoreError::NotAStore {
            path: dir.into(),
            reason: format!("it has no {BLOB_FILE}"),
        },
        Err(e) => e,
    }
}

/// Refuse `dir` when its `blob.dat` is gone but other files of a store remain.
/// Callers that only read (verify, dump) check this before anything else.
pub fn refuse_missing_log(dir: &Path) -> Result<()> {
    if dir.join(BLOB_FILE).exists() {
        return Ok(());
    }
    let found = remnants(dir, true)?;
    if found.is_empty() || dir.join(BLOB_FILE).exists() {
        return Ok(());
    }
    Err(log_missing(dir, found))
}

/// Create the log of a new store in `dir`, which had no `blob.dat` when the caller
/// looked. Returns false when another process created it meanwhile.
pub(super) fn create_log(dir: &Path, store_id: [u8; 16], now_ms: u64) -> Result<bool> {
    let blob_path = dir.join(BLOB_FILE);
    refuse_foreign_directory(dir)?;
    let found = remnants(dir, false)?;
    // A creator beside us may have made the log and its tracker since the caller
    // looked: files of a store beside a log are a store, not remnants.
    if !found.is_empty() {
        return match blob_path.exists() {
            true => Ok(false),
            false => Err(log_missing(dir, found)),
        };
    }
    // Creating `LOCK` exclusively tells a creator beside us (it made `LOCK` first, and
    // holds the lock until its log exists) from a `LOCK` left behind by a store whose
    // log is gone (its lock is free and there is still no log once we hold it).
    let lock_path = dir.join(LOCK_FILE);
    let made_lock = match OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&lock_path)
    {
        Ok(_) => true,
        Err(e) if e.kind() == ErrorKind::AlreadyExists => false,
        Err(e) => return Err(StoreError::io("create lock file", &lock_path)(e)),
    };
    let created = {
        let _lock = WriterLock::acquire(&lock_path)?;
        if blob_path.exists() {
            return Ok(false);
        }
        // A `LOCK` we did not make, with nothing else of a store beside it, holds no
        // data: most likely a creator beside us made it and we locked it first (the
        // gap between its create and its lock). Creating the log loses nothing.
        if !made_lock {
            let found = remnants(dir, false)?;
            if !found.is_empty() {
                return Err(log_missing(dir, found));
            }
        }
        BlobLog::create(&blob_path, &FileHeader::new(1, store_id, now_ms))
    };
    if created.is_err() {
        // Leave the directory as we found it, so a retry is not taken for a lost log.
        let _ = std::fs::remove_file(&lock_path);
    }
    created.map(|()| true)
}

fn log_missing(dir: &Path, found: Vec<String>) -> StoreError {
    StoreError::LogMissing {
        path: dir.into(),
        found: found.join(", "),
    }
}

/// The files of a store in `dir` other than its log and the log's temporaries
/// (`blob.dat.*`, which a crashed creation or compaction may leave); `LOCK` only when
/// `with_lock`. Sorted, for a stable message.
fn remnants(dir: &Path, with_lock: bool) -> Result<Vec<String>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(StoreError::io("read directory", dir))? {
        let entry = entry.map_err(StoreError::io("read directory", dir))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let of_store = (with_lock && name == LOCK_FILE)
            || name.starts_with(TRACKER_FILE)
            || name.starts_with("vectors")
            || name == "patterns";
        if of_store {
            found.push(name);
        }
    }
    found.sort();
    Ok(found)
}

/// A directory with files but no blob log is somebody else's: never write into it.
fn refuse_foreign_directory(dir: &Path) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(StoreError::io("read directory", dir))?;
    for entry in entries {
        let entry = entry.map_err(StoreError::io("read directory", dir))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let ours = name == LOCK_FILE
            || name.starts_with(TRACKER_FILE)
            || name.starts_with("vectors")
            || name == "patterns"
            || name.starts_with("blob.dat");
        if !ours {
            return Err(StoreError::NotAStore {
                path: dir.into(),
                reason: format!(
                    "it holds {name:?} but no {BLOB_FILE}; use an empty or new directory for a store"
                ),
            });
        }
    }
    Ok(())
}
