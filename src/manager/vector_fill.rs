//! Adding a slow embedder's vectors in the background: after a keywords-first pass
//! (`index::index_keywords`) has made a repository searchable, one thread per engine
//! runs the whole pass (`index::index`), which finds only vectors left to add. A
//! request made while a fill runs is remembered and served by one more run after it,
//! so edits made meanwhile get their vectors too, and two fills never run at once.
//!
//! Owns that thread and its state; it never answers a search and never decides what
//! an index pass writes.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use crate::index::{self, IndexOptions};
use crate::memory::Memories;

/// The background fill of one engine's store.
#[derive(Default)]
pub struct VectorFill {
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    running: bool,
    /// A request came in while a run was under way: run once more after it.
    again: bool,
    /// Runs finished, and the last one's error if it failed.
    runs: u64,
    last_error: Option<String>,
}

/// What a caller may report of the fill.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FillStatus {
    pub running: bool,
    pub runs: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

impl VectorFill {
    /// Add `opts.embedder`'s vectors for `root` into `memories`' store on the fill's
    /// thread: starts it, or asks the running one for one more pass.
    pub fn request(&self, memories: Arc<Memories>, root: PathBuf, opts: &IndexOptions) {
        {
            let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            if s.running {
                s.again = true;
                return;
            }
            s.running = true;
        }
        let state = self.state.clone();
        let opts = IndexOptions {
            progress: None,
            ..opts.clone()
        };
        let spawned = std::thread::Builder::new()
            .name("engram-vector-fill".into())
            .spawn(move || loop {
                let result = index::index(memories.store(), &root, &opts);
                let mut s = state.lock().unwrap_or_else(PoisonError::into_inner);
                s.runs += 1;
                match result {
                    Ok(r) => {
                        s.last_error = None;
                        tracing::info!(
                            "{}'s vectors added to {} files of {} in {:.1} s",
                            opts.embedder.name(),
                            r.files_reembedded + r.files_indexed,
                            root.display(),
                            r.seconds
                        );
                    }
                    Err(e) => {
                        tracing::warn!(
                            "{}'s vectors for {}: {e}; search uses the built-in vectors meanwhile",
                            opts.embedder.name(),
                            root.display()
                        );
                        s.last_error = Some(e.to_string());
                    }
                }
                if !std::mem::take(&mut s.again) {
                    s.running = false;
                    return;
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("cannot start adding vectors in the background: {e}");
            self.state
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .running = false;
        }
    }

    /// Whether a fill runs, how many ended, and the last one's error.
    pub fn status(&self) -> FillStatus {
        let s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        FillStatus {
            running: s.running,
            runs: s.runs,
            last_error: s.last_error.clone(),
        }
    }

    /// Wait until no fill runs (for tests and an orderly shutdown), at most `limit`.
    pub fn wait_idle(&self, limit: std::time::Duration) -> bool {
        let deadline = std::time::Instant::now() + limit;
        while self.status().running {
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        true
    }
}
