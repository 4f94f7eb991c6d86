//! How a [`BatchWriter`]'s batches reach the tracker once they are durable: applied
//! while the log syncs, or applied by a thread while they were written; either way
//! the tracker's transaction commits only after the sync has returned.

use std::time::{Duration, Instant};

use super::super::apply_ahead::Applied;
use super::super::error::{Result, StoreError};
use super::super::scan::{scan_batches, ScanStart};
use super::super::syncer::SyncInFlight;
use super::super::{tracker, vectors};
use super::BatchWriter;

/// The store's connection, whether any record touches vectors, and how long the
/// tracker's commit waited for the sync.
type Committed<'s> = (
    std::sync::MutexGuard<'s, rusqlite::Connection>,
    bool,
    Duration,
);

/// Wait for the sync in flight (if the store syncs at all); how long that took.
fn wait_durable(syncing: Option<SyncInFlight<'_>>) -> Result<Duration> {
    let waiting = Instant::now();
    if let Some(sync) = syncing {
        sync.wait()?;
    }
    Ok(waiting.elapsed())
}

impl<'s> BatchWriter<'s> {
    /// Apply the batches just written (from `start` to the end of `snap`) to the
    /// tracker in one transaction, through the same scan replay uses, so the tracker
    /// only ever reflects bytes that decode as a committed batch; commit it once
    /// `syncing` has made them durable. Readers of this process wait for the
    /// connection meanwhile, as they wait for any apply, and see nothing before the
    /// commit.
    pub(super) fn apply_after(
        &self,
        snap: &super::super::LogSnapshot,
        start: u64,
        syncing: Option<SyncInFlight<'_>>,
    ) -> Result<Committed<'s>> {
        let projections = self.store.projection_refs();
        let mut meta = self.meta.clone();
        let mut db = self.store.db()?;
        let tx = tracker::write_transaction(&mut db)?;
        let mut touches_vectors = false;
        let applied = scan_batches(snap.bytes(), self.scan_start(start), |b| {
            touches_vectors |= vectors::batch_touches_vectors(&b);
            tracker::apply_batch(&tx, &b, &projections, &mut meta)
        });
        // On error nothing has seen this batch: the tracker transaction rolls back, the
        // bytes are discarded (by Drop), and the caller gets the reason.
        let end = applied?;
        self.check_read_back(&end)?;
        tracker::write_meta(&tx, &meta)?;
        // A failed sync leaves the transaction to roll back (dropped) and the bytes to
        // be discarded: nothing was acknowledged.
        let waited = wait_durable(syncing)?;
        tx.commit()?;
        Ok((db, touches_vectors, waited))
    }

    /// Commit the transaction the applying thread filled, once the batches it applied
    /// read back from the log as committed, end where this writer wrote, and
    /// `syncing` has made them durable; otherwise it rolls back with the connection.
    pub(super) fn commit_applied(
        &self,
        applied: Applied,
        snap: &super::super::LogSnapshot,
        start: u64,
        syncing: Option<SyncInFlight<'_>>,
    ) -> Result<Committed<'s>> {
        let Applied {
            db: ahead_db,
            applier,
        } = applied;
        let mut meta = self.meta.clone();
        let mut touches_vectors = false;
        let end = scan_batches(snap.bytes(), self.scan_start(start), |b| {
            touches_vectors |= vectors::batch_touches_vectors(&b);
            tracker::note_applied(&b, &mut meta);
            Ok::<(), StoreError>(())
        })?;
        self.check_read_back(&end)?;
        if meta.applied_end != self.written_to {
            return Err(StoreError::Invalid(format!(
                "the batches applied end at {}, the writer wrote to {}",
                meta.applied_end, self.written_to
            )));
        }
        applier.finish(&ahead_db)?;
        tracker::write_meta(&ahead_db, &meta)?;
        let waited = wait_durable(syncing)?;
        // Taken before the commit: nothing may fail between the commit and `finish`
        // marking the batch acknowledged, or Drop would discard what the tracker holds.
        let db = self.store.db()?;
        ahead_db.execute_batch("COMMIT")?;
        drop(ahead_db);
        Ok((db, touches_vectors, waited))
    }

    fn scan_start(&self, start: u64) -> ScanStart {
        ScanStart {
            offset: start,
            last_commit: self.meta.last_commit,
            last_seq: self.meta.applied_seq,
        }
    }

    fn check_read_back(&self, end: &super::super::ScanEnd) -> Result<()> {
        if let Some((offset, why)) = &end.stopped {
            return Err(StoreError::Corrupt {
                path: self.blob.path().to_path_buf(),
                offset: *offset,
                reason: format!("a batch just written does not read back: {why}"),
            });
        }
        Ok(())
    }
}
