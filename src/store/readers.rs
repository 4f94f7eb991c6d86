//! Extra read connections to `tracker.db`, for threads of one process that read the
//! tracker at the same time.
//!
//! A [`Store`](super::Store) has one tracker connection behind a mutex. A search reads
//! its symbol, keyword and memory lists and its vector list on several threads; on the
//! one connection they queued behind each other, so a query cost the sum of its
//! lists. A reader that finds that connection busy takes an idle one from here (or
//! opens one), and gives it back when done. In WAL mode each sees the last committed
//! state when its statement starts, as the main connection does: what a commit made
//! visible is visible to every reader that starts after it returns. Nothing here ever
//! writes, and no connection here is used by two threads at once.

use std::path::Path;
use std::sync::Mutex;

use rusqlite::Connection;

use super::error::{Result, StoreError};
use super::tracker;

/// Idle read connections are kept up to this many; more are closed when given back.
const KEEP: usize = 4;

/// Idle read connections to one store's tracker.
#[derive(Default)]
pub(super) struct ReaderPool {
    idle: Mutex<Vec<Connection>>,
}

impl ReaderPool {
    /// Run `f` with an idle connection, or a new one opened on `path` (read-only when
    /// `read_only`), and keep it for the next reader.
    pub fn with<T>(
        &self,
        path: &Path,
        read_only: bool,
        f: impl FnOnce(&Connection) -> Result<T>,
    ) -> Result<T> {
        let pooled = self.idle()?.pop();
        let db = match pooled {
            Some(db) => db,
            None => tracker::open_reader(path, read_only)?,
        };
        let result = f(&db);
        let mut idle = self.idle()?;
        if idle.len() < KEEP {
            idle.push(db);
        }
        result
    }

    fn idle(&self) -> Result<std::sync::MutexGuard<'_, Vec<Connection>>> {
        self.idle
            .lock()
            .map_err(|_| StoreError::Invalid("tracker reader pool poisoned by a panic".into()))
    }
}
