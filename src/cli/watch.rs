//! `engram index --watch`: keep the index fresh from file-system events.
//!
//! Events are debounced (a burst of saves, a `git checkout`, becomes one pass) and
//! each pass is an ordinary incremental index run, so an unchanged file still costs
//! only a `stat`. Changes under `.git/` (or in the store, should it live inside the
//! repository) never trigger a pass. Runs until killed;
//! a kill mid-pass leaves the previous index intact (a pass is one batch).

use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use anyhow::{Context, Result};
use engram::index::{self, IndexOptions};
use engram::store::Store;
use notify::{Event, EventKind, RecursiveMode, Watcher};
use serde_json::json;

use super::output::Output;

/// How long the tree must be quiet before a pass starts.
const DEBOUNCE: Duration = Duration::from_millis(300);

/// Watch `root` and re-index into `store` after every quiet burst of changes.
pub fn watch(store: &Store, root: &Path, opts: &IndexOptions, out: &Output) -> Result<()> {
    let (tx, rx) = mpsc::channel::<notify::Result<Event>>();
    let mut watcher = notify::recommended_watcher(tx).context("starting the file watcher")?;
    watcher
        .watch(root, RecursiveMode::Recursive)
        .with_context(|| format!("watching {}", root.display()))?;
    let store_dir = store.dir().canonicalize().ok();
    tracing::info!("watching {} for changes", root.display());
    out.value(&json!({"watching": root}), || {
        format!("watching {} (Ctrl-C to stop)", root.display())
    })?;
    let relevant = |event: &notify::Result<Event>| match event {
        // Reads (our own passes open every changed file) change nothing.
        Ok(e) if matches!(e.kind, EventKind::Access(_)) => false,
        Ok(e) => e
            .paths
            .iter()
            .any(|p| counts(p, root, store_dir.as_deref())),
        Err(e) => {
            // A watch error (too many files for inotify, a removed directory) is
            // reported and the loop goes on: the next event still re-indexes.
            tracing::warn!("file watcher: {e}");
            false
        }
    };
    loop {
        // Block until something relevant happens, then until it has been quiet.
        match rx.recv() {
            Ok(e) if relevant(&e) => {}
            Ok(_) => continue,
            Err(_) => return Ok(()),
        }
        loop {
            match rx.recv_timeout(DEBOUNCE) {
                Ok(_) => continue,
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => return Ok(()),
            }
        }
        match index::index(store, root, opts) {
            Ok(r) => out.value(&r, || {
                format!(
                    "re-indexed: {} changed, {} deleted, {} unchanged ({:.0} ms)",
                    r.files_indexed,
                    r.files_deleted,
                    r.files_unchanged,
                    r.seconds * 1e3
                )
            })?,
            Err(e) => tracing::error!("re-index failed: {e}"),
        }
    }
}

/// Whether a change at `path` can change the index. The root itself changes whenever
/// an entry is added to it; that entry has its own event, which decides.
fn counts(path: &Path, root: &Path, store_dir: Option<&Path>) -> bool {
    path != root
        && !path.components().any(|c| c.as_os_str() == ".git")
        && !store_dir.is_some_and(|s| path.starts_with(s))
}
