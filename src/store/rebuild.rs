//! Rebuilding `tracker.db` from `blob.dat` alone, without reading the old tracker.
//!
//! The new tracker is built in a file beside the old one (`tracker.db.rebuild`), from
//! the log only, and then copied over the old one with SQLite's online backup, which
//! writes every page of the old file without interpreting any: a tracker whose tables
//! are damaged (`database disk image is malformed`) is replaced as well as a sound
//! one, and every connection other processes hold on it sees the new contents at its
//! next read, as after any commit. Only when the old file cannot even be opened as a
//! database (its first page is damaged) is it replaced by a rename instead; a process
//! that still has the old file open keeps it until it reopens the store.
//!
//! Runs under the writer lock. It must never read a row of the old tracker.

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::backup::{Backup, StepResult};
use rusqlite::Connection;

use super::error::{Result, StoreError};
use super::recovery::OpenReport;
use super::temporary::Temporary;
use super::{tracker, Projection, Store, StoreOptions, TRACKER_FILE};

/// The file the new tracker is built in.
pub(super) const BESIDE: &str = "tracker.db.rebuild";

/// How long the copy waits for a checkpoint of another process to let it write.
const BUSY_FOR: Duration = Duration::from_secs(30);

/// Build a new tracker from the log beside the old one and put it in the old one's
/// place; `db` (a connection to the old one) then reads the new one. Writer lock held.
pub(super) fn rebuild_tracker(store: &Store, db: &mut Connection) -> Result<OpenReport> {
    let dir = store.dir();
    let beside = Temporary::new(dir.join(BESIDE));
    remove_database(beside.path())?;
    let report = {
        let (mut fresh, created) =
            tracker::open_reporting(beside.path(), &store.projection_refs())?;
        let report = store.rebuild_locked(&mut fresh, created)?;
        // One self-contained file: its WAL checkpointed into it and removed.
        fresh.pragma_update(None, "journal_mode", "DELETE")?;
        report
    };
    let path = dir.join(TRACKER_FILE);
    if let Err(e) = copy_over(beside.path(), db) {
        tracing::warn!(tracker = %path.display(), "tracker.db cannot be written in place ({e}); replacing the file");
        // The old connection closes first: closing it later would remove the WAL of
        // the new file, which has the same name.
        *db = Connection::open_in_memory()?;
        for suffix in ["-wal", "-shm", "-journal"] {
            remove_file(&dir.join(format!("{TRACKER_FILE}{suffix}")))?;
        }
        super::io::rename(beside.path(), &path).map_err(StoreError::io("rename", beside.path()))?;
        beside.keep();
        super::blob_log::sync_dir(&path)?;
        *db = tracker::open(&path, &store.projection_refs())?;
    }
    Ok(report)
}

/// [`Store::rebuild`] of the store in `dir` without opening it first, so without
/// reading its tracker: what `engram rebuild` runs, since a damaged tracker can make
/// a normal open fail. Open the store afterwards to use it.
pub fn rebuild_dir(
    dir: &Path,
    options: StoreOptions,
    projections: Vec<Box<dyn Projection>>,
) -> Result<OpenReport> {
    super::recovery::open_for_rebuild(dir, options, projections)?.rebuild()
}

/// Copy the database at `from` over the one `to` is connected to, page by page.
fn copy_over(from: &Path, to: &mut Connection) -> Result<()> {
    let src = Connection::open(from)?;
    let copy = Backup::new(&src, to)?;
    let deadline = Instant::now() + BUSY_FOR;
    loop {
        match copy.step(-1)? {
            StepResult::Done => return Ok(()),
            StepResult::More => {}
            StepResult::Busy | StepResult::Locked if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            StepResult::Busy | StepResult::Locked => {
                return Err(StoreError::Invalid(
                    "tracker.db stayed locked by another connection for 30 s".into(),
                ))
            }
            _ => {}
        }
    }
}

/// Remove a database file and its companions (left by an earlier rebuild that
/// stopped).
fn remove_database(path: &Path) -> Result<()> {
    remove_file(path)?;
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        remove_file(Path::new(&name))?;
    }
    Ok(())
}

fn remove_file(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(StoreError::io("remove", path)(e))
        }
        _ => Ok(()),
    }
}
