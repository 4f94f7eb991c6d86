//! The log's sync, run on a thread of its own while the committing thread applies the
//! batch to the tracker.
//!
//! A durable commit waits for one `fdatasync` of the log and applies the batch to
//! `tracker.db`. For a small batch the two cost about the same (a tenth of a
//! millisecond each on an SSD), and neither needs the other until the tracker's
//! transaction commits, which must come after the sync (format-spec/blob-log.md,
//! "Writing"). So the writer hands the sync to this thread, applies meanwhile, and
//! waits for the sync only before it commits the transaction: a commit then costs the
//! longer of the two instead of their sum.
//!
//! One thread per store, started by the first durable commit and asleep between
//! commits. Writers of one process take turns (the store's writer mutex), so one sync
//! is in flight at a time. This thread must never decide anything: it syncs the file
//! it is handed and reports the result; what to do about a failed sync (roll the
//! tracker back, discard the batch) is the writer's.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use super::blob_log::BlobLog;
use super::error::{Result, StoreError};

/// The store's sync thread; see the module doc.
#[derive(Default)]
pub(super) struct Syncer {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

#[derive(Default)]
pub(super) struct Shared {
    state: Mutex<State>,
    /// Signalled when a job is posted, and on shutdown.
    posted: Condvar,
    /// Signalled when a job's result is in.
    finished: Condvar,
}

#[derive(Default)]
struct State {
    /// The log to sync, while a sync is asked for or running.
    job: Option<Arc<BlobLog>>,
    /// The last sync's result, until its writer takes it.
    result: Option<Result<()>>,
    stop: bool,
}

/// A sync in flight. [`SyncInFlight::wait`] gives its result; dropped without
/// waiting (the writer failed first), the sync still finishes, and the next one
/// waits for it.
#[must_use = "a sync in flight must be waited for before the batch is acknowledged"]
pub(super) enum SyncInFlight<'a> {
    Thread(&'a Shared),
    /// The thread could not be started: the sync already ran on the writer's thread.
    Done(Result<()>),
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    // The lock guards plain data that no panicking section leaves half-changed.
    state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Syncer {
    /// Start syncing `blob` (everything written to it so far) beside the caller.
    pub fn start(&self, blob: Arc<BlobLog>) -> SyncInFlight<'_> {
        if !self.ensure_thread() {
            return SyncInFlight::Done(blob.sync());
        }
        let shared = &*self.shared;
        let mut st = lock(&shared.state);
        // A sync whose writer gave up on it may still be running: let it end first,
        // so its result is not taken for this one's.
        while st.job.is_some() {
            st = shared
                .finished
                .wait(st)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        st.result = None;
        st.job = Some(blob);
        drop(st);
        shared.posted.notify_one();
        SyncInFlight::Thread(shared)
    }

    /// Whether the thread runs (starting it if need be).
    fn ensure_thread(&self) -> bool {
        let mut thread = match self.thread.lock() {
            Ok(t) => t,
            Err(poisoned) => poisoned.into_inner(),
        };
        if thread.is_some() {
            return true;
        }
        let shared = Arc::clone(&self.shared);
        match std::thread::Builder::new()
            .name("engram-sync".into())
            .spawn(move || run(&shared))
        {
            Ok(handle) => {
                *thread = Some(handle);
                true
            }
            Err(e) => {
                tracing::debug!("no sync thread ({e}); syncing on the writer's thread");
                false
            }
        }
    }
}

impl SyncInFlight<'_> {
    /// Wait for the sync to finish; `Ok` once everything written before it started is
    /// durable.
    pub fn wait(self) -> Result<()> {
        let shared = match self {
            SyncInFlight::Done(result) => return result,
            SyncInFlight::Thread(shared) => shared,
        };
        let mut st = lock(&shared.state);
        loop {
            if let Some(result) = st.result.take() {
                return result;
            }
            if st.stop {
                return Err(StoreError::Invalid(
                    "the store's sync thread stopped before the sync finished".into(),
                ));
            }
            st = shared
                .finished
                .wait(st)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }
}

fn run(shared: &Shared) {
    let mut st = lock(&shared.state);
    loop {
        if let Some(blob) = st.job.clone() {
            drop(st);
            let result = blob.sync();
            drop(blob);
            st = lock(&shared.state);
            st.job = None;
            st.result = Some(result);
            shared.finished.notify_all();
            continue;
        }
        if st.stop {
            return;
        }
        st = shared
            .posted
            .wait(st)
            .unwrap_or_else(|poisoned| poisoned.into_inner());
    }
}

impl Drop for Syncer {
    fn drop(&mut self) {
        lock(&self.shared.state).stop = true;
        self.shared.posted.notify_all();
        let thread = match self.thread.get_mut() {
            Ok(t) => t.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let Some(handle) = thread {
            // It finishes the job in hand (a sync) and returns.
            let _ = handle.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syncs_in_turn_and_reports_each_result() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("blob.dat");
        BlobLog::create(&path, &crate::format::FileHeader::new(1, [7; 16], 0)).expect("create");
        let blob = Arc::new(BlobLog::open(&path).expect("open"));
        let syncer = Syncer::default();
        for _ in 0..50 {
            syncer.start(Arc::clone(&blob)).wait().expect("sync");
        }
        // One dropped without waiting: the next still gets a result of its own.
        drop(syncer.start(Arc::clone(&blob)));
        syncer
            .start(Arc::clone(&blob))
            .wait()
            .expect("sync after a dropped one");
        drop(syncer);
        // The thread let go of the log: this handle is the last.
        assert_eq!(Arc::strong_count(&blob), 1);
    }
}
