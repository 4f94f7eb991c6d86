//! Applying a streamed batch to the tracker while it is written.
//!
//! A large batch (an import) used to be written whole, synced, and only then applied
//! to `tracker.db`: one phase after the other, on one core. In this mode a thread of
//! its own applies each chunk of records as the writer flushes it to the log, on a
//! second connection to `tracker.db`, inside one transaction that it leaves open. The
//! writer commits that transaction only once the batch's commit record is durable and
//! the batch reads back from the log as committed; on any failure the transaction is
//! rolled back (closing the connection with it open does that too). So the tracker
//! still never reflects a batch that is not committed (format-spec/blob-log.md,
//! "Writing"), and what it applies is decoded from the very bytes written to the log.
//!
//! Readers in this process use the store's own connection and are not blocked: until
//! the transaction commits they see the tracker as it was before the batch (a WAL
//! snapshot). Another process that wants to write `tracker.db` (an open that creates
//! missing tables) waits on SQLite's lock while the batch is written, up to the busy
//! timeout, as it waited for the apply phase before.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use rusqlite::Connection;

use super::error::{Result, StoreError};
use super::tracker::{self, Projection};
use super::tracker_apply::RecordApplier;
use crate::format::{decode_record, RecordKind};

/// Chunks (of about 4 MiB each) written but not yet applied before the writer waits
/// for the applying thread: enough to ride out a slow statement, little memory.
const QUEUED: usize = 4;

/// What the applying thread hands back once every chunk is applied: its connection,
/// with the batch's transaction still open, and the per-batch sums still to write.
pub(super) struct Applied {
    pub db: Connection,
    pub applier: RecordApplier,
}

/// The applying thread of one writer; see the module doc.
pub(super) struct ApplyAhead {
    chunks: Option<SyncSender<(u64, Arc<Vec<u8>>)>>,
    thread: Option<JoinHandle<Result<Applied>>>,
    /// Set when the writer gives up, so the thread stops applying what is queued.
    abandon: Arc<AtomicBool>,
}

impl ApplyAhead {
    /// Start the thread: it opens `tracker` and begins the batch's transaction.
    pub fn start(tracker: PathBuf, projections: Arc<[Box<dyn Projection>]>) -> Result<ApplyAhead> {
        let (chunks, rx) = sync_channel(QUEUED);
        let abandon = Arc::new(AtomicBool::new(false));
        let stop = abandon.clone();
        let thread = std::thread::Builder::new()
            .name("engram-apply".into())
            .spawn(move || run(&tracker, &projections, rx, &stop))
            .map_err(|e| StoreError::Invalid(format!("no thread to apply the batch: {e}")))?;
        Ok(ApplyAhead {
            chunks: Some(chunks),
            thread: Some(thread),
            abandon,
        })
    }

    /// Hand over the bytes written to the log at `offset` (whole records). An error
    /// means the thread has stopped; it is the thread's own error.
    pub fn send(&mut self, offset: u64, bytes: Arc<Vec<u8>>) -> Result<()> {
        if let Some(chunks) = &self.chunks {
            if chunks.send((offset, bytes)).is_ok() {
                return Ok(());
            }
        }
        match self.join() {
            Err(e) => Err(e),
            Ok(_) => Err(StoreError::Invalid(
                "the tracker's applying thread stopped early".into(),
            )),
        }
    }

    /// Wait until every chunk sent is applied.
    pub fn join(&mut self) -> Result<Applied> {
        drop(self.chunks.take());
        let thread = self
            .thread
            .take()
            .ok_or_else(|| StoreError::Invalid("the applying thread was already joined".into()))?;
        thread
            .join()
            .map_err(|_| StoreError::Invalid("the tracker's applying thread panicked".into()))?
    }
}

impl Drop for ApplyAhead {
    fn drop(&mut self) {
        // Abandoned: stop applying and close the connection, which rolls back.
        self.abandon.store(true, Ordering::Relaxed);
        drop(self.chunks.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run(
    tracker_path: &std::path::Path,
    projections: &[Box<dyn Projection>],
    chunks: Receiver<(u64, Arc<Vec<u8>>)>,
    abandon: &AtomicBool,
) -> Result<Applied> {
    let refs: Vec<&dyn Projection> = projections.iter().map(|p| p.as_ref()).collect();
    let db = tracker::open(tracker_path, &refs)?;
    // IMMEDIATE, as every tracker write: it waits for SQLite's lock on the busy timeout.
    db.execute_batch("BEGIN IMMEDIATE")?;
    let mut applier = RecordApplier::default();
    for (start, bytes) in chunks {
        if abandon.load(Ordering::Relaxed) {
            break;
        }
        let mut at = 0usize;
        while at < bytes.len() {
            let offset = start + at as u64;
            let rec = decode_record(&bytes[at..]).map_err(|e| StoreError::Corrupt {
                path: "blob.dat".into(),
                offset,
                reason: format!("a record just written does not decode: {e}"),
            })?;
            at += rec.record_len();
            if rec.kind != RecordKind::Commit {
                applier.apply(&db, offset, &rec, &refs)?;
            }
        }
    }
    Ok(Applied { db, applier })
}
