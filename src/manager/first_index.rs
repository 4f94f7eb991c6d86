//! First use of a repository that was never indexed: its first code search (MCP
//! `code_search`, `symbol_search`) indexes it. The pass runs on a thread of its own
//! and a call waits for it at most the wait it is given; a call that cannot wait
//! longer answers from what is committed so far (the pass commits in batches) with a
//! note of how far indexing got. Later calls find the same pass, running or done.
//!
//! Owns that one pass and its progress; it never searches and never indexes a
//! repository that already holds an index (re-indexing is the `jit_*` tools' job).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::{ManagerError, VectorFill};
use crate::index::{self, IndexError, IndexOptions};
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

/// How a pass ended.
type Outcome = Result<u64, Arc<IndexError>>;

/// One indexing pass on its own thread.
struct Job {
    done: AtomicU64,
    total: AtomicU64,
    /// `Some` once the pass ended: the files it indexed, or why it failed (shared by
    /// every call that waited for it).
    outcome: Mutex<Option<Outcome>>,
    ended: Condvar,
}

impl Job {
    fn start(
        memories: Arc<Memories>,
        root: PathBuf,
        opts: &IndexOptions,
        fill: Arc<VectorFill>,
    ) -> Result<Arc<Job>, ManagerError> {
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
                // Keywords first: calls waiting for the first index are answered once
                // the keyword lists (and the built-in vectors) are in; a slower
                // embedder's vectors are added after, by the engine's fill, and
                // search moves to them once they are complete.
                let slow = opts.splits_keywords_first();
                let first = if slow {
                    index::index_keywords(memories.store(), &root, &opts)
                } else {
                    index::index(memories.store(), &root, &opts)
                };
                let outcome = first.map(|r| r.files_indexed).map_err(Arc::new);
                if let Err(e) = &outcome {
                    tracing::warn!("the first index of {} failed: {e}", root.display());
                }
                let fill_now = slow && outcome.is_ok();
                *ran.outcome.lock().unwrap_or_else(PoisonError::into_inner) = Some(outcome);
                ran.ended.notify_all();
                if fill_now {
                    fill.request(memories, root, &opts);
                }
            })
            .map_err(|e| ManagerError::Invalid(format!("cannot start indexing: {e}")))?;
        Ok(job)
    }

    /// The pass's outcome, once it ended within `wait`.
    fn wait(&self, wait: Duration) -> Option<Outcome> {
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

impl FirstIndex {
    /// Index `memories`' store from `root` if it never was (see the module doc),
    /// waiting at most `wait`; the note for the answer, if any.
    pub fn ensure(
        &self,
        memories: &Arc<Memories>,
        root: Option<&Path>,
        opts: &IndexOptions,
        fill: &Arc<VectorFill>,
        wait: Duration,
    ) -> Result<Option<String>, ManagerError> {
        if self.indexed.load(Ordering::Acquire) {
            return Ok(None);
        }
        let job = {
            let mut slot = self.job.lock().unwrap_or_else(PoisonError::into_inner);
            match &*slot {
                Some(job) => job.clone(),
                None => {
                    if memories.store().with_tracker(index::has_indexed_files)? {
                        self.indexed.store(true, Ordering::Release);
                        return Ok(None);
                    }
                    let Some(root) = root else {
                        return Ok(Some(
                            "this repository has never been indexed, and there is no repository root to index".into(),
                        ));
                    };
                    let job = Job::start(memories.clone(), root.to_path_buf(), opts, fill.clone())?;
                    *slot = Some(job.clone());
                    job
                }
            }
        };
        Ok(Some(match job.wait(wait) {
            Some(Ok(files)) => {
                self.indexed.store(true, Ordering::Release);
                format!("indexed {files} files first: this repository had never been indexed")
            }
            Some(Err(e)) => format!(
                "the first index of this repository failed ({e}); results may be incomplete"
            ),
            None => job.progress_note(),
        }))
    }
}
