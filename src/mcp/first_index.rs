//! First use of a repository that was never indexed: its first `code_search` (or
//! `symbol_search`) indexes it. The pass runs on a thread of its own and the call
//! waits for it at most [`Engine::first_index_wait`]; a call that cannot wait longer
//! answers from what is committed so far (the pass commits in batches) and says how
//! far indexing got in a `note`. Later calls find the same pass, running or done.
//!
//! Owns that one pass and its progress; it never searches and never indexes a
//! repository that already holds an index (`reindex` and `jit_*` do that).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::handlers::Engine;
use crate::index::{self, IndexOptions};
use crate::memory::Memories;

/// How long a call waits for the first index unless told otherwise: well inside the
/// minute MCP clients commonly allow a tool call.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(20);

/// The first index of an engine's repository: none started, running, or ended.
#[derive(Default)]
pub struct FirstIndex {
    /// The store is known to hold an index: nothing to check again.
    indexed: AtomicBool,
    job: Mutex<Option<Arc<Job>>>,
}

/// One indexing pass on its own thread.
struct Job {
    done: AtomicU64,
    total: AtomicU64,
    /// `Some` once the pass ended: the files it indexed, or why it failed.
    outcome: Mutex<Option<Result<u64, String>>>,
    ended: Condvar,
}

impl Job {
    fn start(
        memories: Arc<Memories>,
        root: PathBuf,
        opts: &IndexOptions,
    ) -> Result<Arc<Job>, String> {
        let job = Arc::new(Job {
            done: AtomicU64::new(0),
            total: AtomicU64::new(0),
            outcome: Mutex::new(None),
            ended: Condvar::new(),
        });
        let seen = job.clone();
        let opts = IndexOptions {
            progress: Some(Arc::new(move |done, total| {
                seen.total.store(total, Ordering::Relaxed);
                seen.done.store(done, Ordering::Relaxed);
            })),
            ..opts.clone()
        };
        let ran = job.clone();
        std::thread::Builder::new()
            .name("engram-first-index".into())
            .spawn(move || {
                let outcome = index::index(memories.store(), &root, &opts)
                    .map(|r| r.files_indexed)
                    .map_err(|e| e.to_string());
                if let Err(e) = &outcome {
                    tracing::warn!("the first index of {} failed: {e}", root.display());
                }
                *ran.outcome.lock().unwrap_or_else(PoisonError::into_inner) = Some(outcome);
                ran.ended.notify_all();
            })
            .map_err(|e| format!("cannot start indexing: {e}"))?;
        Ok(job)
    }

    /// The pass's outcome, once it ended within `wait`.
    fn wait(&self, wait: Duration) -> Option<Result<u64, String>> {
        let deadline = Instant::now() + wait;
        let mut outcome = self.outcome.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(o) = &*outcome {
                return Some(o.clone());
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            outcome = self
                .ended
                .wait_timeout(outcome, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// How far the pass got, for a call that answers before it ends.
    fn progress_note(&self) -> String {
        match self.total.load(Ordering::Relaxed) {
            0 => "indexing: listing the repository's files; results are partial".into(),
            total => format!(
                "indexing: {}/{total} files done; results are partial",
                self.done.load(Ordering::Relaxed)
            ),
        }
    }
}

impl Engine {
    /// Index the repository first if it never was (see the module doc), waiting at
    /// most [`Engine::first_index_wait`]; the note to add to the answer, if any.
    pub(super) fn index_first(&self) -> Result<Option<String>, String> {
        let first = &self.first_index;
        if first.indexed.load(Ordering::Acquire) {
            return Ok(None);
        }
        let job = {
            let mut slot = first.job.lock().unwrap_or_else(PoisonError::into_inner);
            match &*slot {
                Some(job) => job.clone(),
                None => {
                    let indexed = self
                        .memories
                        .store()
                        .with_tracker(index::has_indexed_files)
                        .map_err(|e| e.to_string())?;
                    if indexed {
                        first.indexed.store(true, Ordering::Release);
                        return Ok(None);
                    }
                    let Some(root) = self.gate.root() else {
                        return Ok(Some(
                            "this repository has never been indexed, and this server has no repository root to index".into(),
                        ));
                    };
                    let job = Job::start(
                        self.memories.clone(),
                        root.to_path_buf(),
                        &self.index_options,
                    )?;
                    *slot = Some(job.clone());
                    job
                }
            }
        };
        Ok(Some(match job.wait(self.first_index_wait) {
            Some(Ok(files)) => {
                first.indexed.store(true, Ordering::Release);
                format!("indexed {files} files first: this repository had never been indexed")
            }
            Some(Err(e)) => format!(
                "the first index of this repository failed ({e}); results may be incomplete"
            ),
            None => job.progress_note(),
        }))
    }
}

/// `answer` with `note` added, when there is one.
pub(super) fn noted(mut answer: Value, note: Option<String>) -> Value {
    if let (Some(note), Some(fields)) = (note, answer.as_object_mut()) {
        fields.insert("note".into(), json!(note));
    }
    answer
}
