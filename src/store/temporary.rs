//! Temporary files in a store directory: the new log a compaction writes, a cache
//! or tracker being rebuilt, a log being created. Each is written under the writer lock and
//! renamed into place when whole.
//!
//! A failure on the way (a full disk, a damaged record) removes the file it was
//! writing, through [`Temporary`]: on a full disk a left-behind copy of the log would
//! keep the space every later write needs. A crash cannot run that cleanup, so the
//! next writable open removes what a crash left ([`remove_left_behind`]), under the
//! writer lock, since only a writer holding it writes one. This module must never
//! remove a file that is not one of these temporaries.

use std::path::{Path, PathBuf};

use super::error::{Result, StoreError};
use super::lock::WriterLock;
use super::{BLOB_FILE, LOCK_FILE};

/// A temporary file removed on drop unless [`Temporary::keep`] was called (after it
/// was renamed into place).
pub(super) struct Temporary {
    path: PathBuf,
    armed: bool,
}

impl Temporary {
    /// Remove `path` on drop. Made before the file is created, so a failure while
    /// creating it is covered too.
    pub(super) fn new(path: PathBuf) -> Temporary {
        Temporary { path, armed: true }
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// The file was renamed into place (or is gone): nothing to remove.
    pub(super) fn keep(mut self) {
        self.armed = false;
    }
}

impl Drop for Temporary {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        match std::fs::remove_file(&self.path) {
            Ok(()) => tracing::debug!(file = %self.path.display(), "removed a temporary file"),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(file = %self.path.display(), "left a temporary file: {e}; the next writer's open removes it")
            }
        }
    }
}

/// Whether `name` is one of the temporaries a writer makes in a store directory.
fn is_temporary(name: &str) -> bool {
    let log = |suffix: &str| name.strip_prefix(BLOB_FILE) == Some(suffix);
    log(".compact")
        || log(".new")
        || name
            .strip_prefix(super::rebuild::BESIDE)
            .is_some_and(|rest| ["", "-wal", "-shm", "-journal"].contains(&rest))
        || (name.starts_with("vectors-")
            && (name.ends_with(".vec.new")
                || name.ends_with(".grow-tmp")
                || name.ends_with(".ahead")
                || name.ends_with(".unsynced.new")))
}

fn temporaries(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(StoreError::io("read directory", dir))? {
        let entry = entry.map_err(StoreError::io("read directory", dir))?;
        if is_temporary(&entry.file_name().to_string_lossy()) {
            found.push(entry.path());
        }
    }
    Ok(found)
}

/// Remove the temporaries a crashed writer left in `dir`, if the writer lock is free
/// now (when it is not, its holder may be writing one; a later open removes what is
/// left). For a writable open; the names removed are returned.
pub(super) fn remove_left_behind(dir: &Path) -> Result<Vec<String>> {
    if temporaries(dir)?.is_empty() {
        return Ok(Vec::new());
    }
    let Some(_lock) = WriterLock::try_acquire(&dir.join(LOCK_FILE))? else {
        return Ok(Vec::new());
    };
    let mut removed = Vec::new();
    for path in temporaries(dir)? {
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(StoreError::io("remove a temporary file", &path)(e)),
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        tracing::warn!(store = %dir.display(), "removed {name}, left behind by a writer that stopped");
        removed.push(name);
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::is_temporary;

    #[test]
    fn only_a_writers_temporaries_are_taken_for_one() {
        for yes in [
            "blob.dat.compact",
            "blob.dat.new",
            "vectors-bge-0123.vec.new",
            "vectors-bge-0123.vec.grow-tmp",
            "vectors-bge-0123.vec.ahead",
            "vectors-bge-0123.vec.unsynced.new",
            "tracker.db.rebuild",
            "tracker.db.rebuild-wal",
        ] {
            assert!(is_temporary(yes), "{yes}");
        }
        for no in [
            "blob.dat",
            "blob.dat.compact.bak",
            "blob.dat.new2",
            "tracker.db",
            "tracker.db-wal",
            "LOCK",
            "vectors-bge-0123.vec",
            "vectors-bge-0123.vec.unsynced",
            "notes.new",
            "tracker.db.rebuild.old",
        ] {
            assert!(!is_temporary(no), "{no}");
        }
    }
}
