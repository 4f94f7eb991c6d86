//! `BatchWriter`: one batch streamed into the log under the writer lock.
//!
//! Records are encoded with their sequence numbers as they come and written in
//! multi-megabyte chunks, so a batch may be far larger than memory (an import). The
//! batch exists only once `finish` has written its commit record; if the writer is
//! dropped, fails or the process dies first, the bytes written are an uncommitted tail
//! that is cut off (now, or by the next open). This is the only code that appends to
//! `blob.dat` outside compaction.
//!
//! One writer may also carry several batches ([`BatchWriter::seal_batch`]): each is
//! committed in the log as its own batch, and one sync makes all of them durable.
//! That is how [`super::group_commit`] shares a sync between concurrent committers.

use zerocopy::IntoBytes;

use super::apply_ahead::ApplyAhead;
use super::batch::{Op, WriteBatch};
use super::blob_log::BlobLog;
use super::cache_ahead::{self, CacheAhead};
use super::error::{Result, StoreError};
use super::tracker::{self, TrackerMeta};
use super::{vectors, CommitInfo, Durability, Store, WriteGuard};
use crate::format::{encode_record, BatchCrc, CommitBody, RecordFields, RecordKind, FLAG_SEALED};
use crate::key::hash64;

mod ahead;
mod finish;

const FLUSH_AT: usize = 4 << 20;
/// The same when a thread applies what is flushed: smaller chunks let it start
/// sooner and leave it less to do after the last one.
const FLUSH_AHEAD_AT: usize = 1 << 20;

/// Records (commit records included) from which a commit syncs the log on the
/// store's sync thread while it applies them. Handing the sync over and back costs two
/// thread wake-ups (about 40 µs a commit on the 2-core VM measured), which a small
/// batch's apply does not cover: in `ENGRAM_BENCH=append` (1 KiB records) syncing
/// beside lost 25% at batches of 1, broke even at 16, and won 17–24% at 64 and 25% at
/// 1,000.
const SYNC_BESIDE_MIN_RECORDS: u64 = 32;

/// A batch being written; see the module doc. Holds the writer lock while alive.
pub struct BatchWriter<'s> {
    store: &'s Store,
    /// Taken (released) at the end of `finish`, before the checkpoint.
    writer: Option<WriteGuard<'s>>,
    blob: std::sync::Arc<BlobLog>,
    meta: TrackerMeta,
    /// The key id of a sealed store (its vectors are sealed as they are written).
    sealed_under: Option<String>,
    buf: Vec<u8>,
    /// Where the next flush writes.
    written_to: u64,
    next_seq: u64,
    records: u32,
    crc: BatchCrc,
    /// Where the batch being added to starts, and its first sequence number.
    batch_start: u64,
    batch_first_seq: u64,
    /// The offset of the last commit record written (before this writer: the store's).
    prev_commit: u64,
    /// Batches sealed by this writer, in log order; acknowledged by `finish`.
    sealed: Vec<CommitInfo>,
    now_ms: u64,
    finished: bool,
    /// When the writer lock was taken, for the hold time logged at commit.
    locked_at: std::time::Instant,
    /// The thread applying records to the tracker as they are flushed, if asked for
    /// ([`BatchWriter::apply_while_writing`]).
    ahead: Option<ApplyAhead>,
    /// The thread building new embedders' vector caches beside `ahead`.
    caches_ahead: Option<CacheAhead>,
}

impl<'s> BatchWriter<'s> {
    pub(super) fn begin(store: &'s Store) -> Result<BatchWriter<'s>> {
        let writer = store.exclusive()?;
        // The tracker connection is taken only to refresh and to apply, so readers in
        // this process are not blocked while a long batch streams in.
        let (meta, sealed_under) = {
            let mut db = store.db()?;
            let meta = store.refresh_locked(&mut db)?;
            (meta, tracker::sealed_key_id(&db)?)
        };
        let blob = store.blob()?;
        if !blob.is_writable() {
            return Err(StoreError::ReadOnly {
                path: blob.path().to_path_buf(),
            });
        }
        Ok(BatchWriter {
            store,
            writer: Some(writer),
            blob,
            written_to: meta.applied_end,
            next_seq: meta.applied_seq + 1,
            batch_start: meta.applied_end,
            batch_first_seq: meta.applied_seq + 1,
            prev_commit: meta.last_commit,
            sealed: Vec::new(),
            sealed_under,
            meta,
            buf: Vec::with_capacity(64 << 10),
            records: 0,
            crc: BatchCrc::new(),
            now_ms: super::now_ms(),
            finished: false,
            locked_at: std::time::Instant::now(),
            ahead: None,
            caches_ahead: None,
        })
    }

    /// The live value of `key` as of this batch's start, read under the writer lock:
    /// no other writer can change it before this batch commits, so a value read here
    /// and written back changed is a safe read-modify-write. Records added to this
    /// batch are not visible until it commits.
    pub fn get(&self, key: &str) -> Result<Option<super::Record>> {
        self.store.get(key)
    }

    /// Query the tracker (the state as of this batch's start) under the writer lock;
    /// see [`BatchWriter::get`]. Write nothing through it.
    pub fn with_tracker<T>(&self, f: impl FnOnce(&rusqlite::Connection) -> Result<T>) -> Result<T> {
        self.store.with_tracker(f)
    }

    /// The store this batch writes to.
    pub fn store(&self) -> &'s Store {
        self.store
    }

    /// Records added so far to the batch not yet sealed.
    pub fn len(&self) -> u32 {
        self.records
    }

    /// True when nothing has been added.
    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// Add every change of a [`WriteBatch`].
    pub fn extend(&mut self, batch: &WriteBatch) -> Result<()> {
        for op in &batch.ops {
            self.push_op(op)?;
        }
        Ok(())
    }

    /// Add a value that compaction keeps after it is superseded
    /// ([`WriteBatch::put_keeping_history`]).
    pub fn put_keeping_history(
        &mut self,
        key: &str,
        meta: serde_json::Map<String, serde_json::Value>,
        body: impl Into<Vec<u8>>,
    ) -> Result<()> {
        let mut one = WriteBatch::new();
        one.put_keeping_history(key, meta, body)?;
        self.extend(&one)
    }

    /// Add one change; see [`WriteBatch::put`] for what each kind means.
    pub fn put(
        &mut self,
        key: &str,
        meta: serde_json::Map<String, serde_json::Value>,
        body: impl Into<Vec<u8>>,
    ) -> Result<()> {
        let mut one = WriteBatch::new();
        one.put(key, meta, body)?;
        self.extend(&one)
    }

    /// Add an embedding of `key`'s value ([`WriteBatch::put_vector`]).
    pub fn put_vector(&mut self, key: &str, embedder: &str, vector: &[f32]) -> Result<()> {
        let mut one = WriteBatch::new();
        one.put_vector(key, embedder, vector)?;
        self.extend(&one)
    }

    /// Delete a key and its vectors.
    pub fn delete(&mut self, key: &str) -> Result<()> {
        let mut one = WriteBatch::new();
        one.delete(key)?;
        self.extend(&one)
    }

    fn push_op(&mut self, op: &Op) -> Result<()> {
        if self.records == u32::MAX {
            return Err(StoreError::Invalid(
                "a batch holds at most 4294967295 records".into(),
            ));
        }
        let (kind, flags, key_hash, meta, body): (_, _, _, &[u8], &[u8]) = match op {
            Op::Put {
                key,
                meta,
                body,
                flags,
            } => (RecordKind::Put, *flags, hash64(key), meta, body),
            Op::Delete { key } => (RecordKind::Tombstone, 0, hash64(key), b"", b""),
            Op::Vector { key, meta, body } => {
                if let Some(key_id) = self.sealed_under.clone() {
                    return self.push_sealed_vector(&key_id, hash64(key), meta, body);
                }
                if self.store.options.vector_key.is_some() {
                    // The user asked for sealed vectors: never one in the clear.
                    return Err(StoreError::NotSealed);
                }
                (RecordKind::Vector, 0, hash64(key), meta, body)
            }
            Op::Event { meta, body } => (RecordKind::Event, 0, 0, meta, body),
        };
        self.push_record(kind, flags, key_hash, meta, body)
    }

    /// A vector of a sealed store: its values sealed under the store key for the
    /// record's sequence number, its metadata naming the key (encryption.md).
    fn push_sealed_vector(
        &mut self,
        key_id: &str,
        key_hash: u64,
        meta: &[u8],
        values_le: &[u8],
    ) -> Result<()> {
        let key = self.store.sealing_key(key_id)?;
        let mut meta: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(meta)
            .map_err(|e| StoreError::Invalid(format!("vector metadata: {e}")))?;
        let embedder = meta
            .get("embedder")
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string();
        meta.insert("key_id".into(), key_id.into());
        let meta = serde_json::to_vec(&meta).map_err(|e| StoreError::Invalid(e.to_string()))?;
        let body = key.seal(key_hash, self.next_seq, &embedder, values_le)?;
        self.push_record(RecordKind::Vector, FLAG_SEALED, key_hash, &meta, &body)
    }

    fn push_record(
        &mut self,
        kind: RecordKind,
        flags: u16,
        key_hash: u64,
        meta: &[u8],
        body: &[u8],
    ) -> Result<()> {
        let fields = RecordFields {
            kind,
            flags,
            key_hash,
            seq: self.next_seq,
            timestamp_ms: self.now_ms,
            meta,
            body,
        };
        let crc = encode_record(&fields, &mut self.buf)
            .map_err(|e| StoreError::Invalid(e.to_string()))?;
        if kind != RecordKind::Commit {
            self.crc.push(crc);
            self.records += 1;
        }
        self.next_seq += 1;
        let flush_at = if self.ahead.is_some() {
            FLUSH_AHEAD_AT
        } else {
            FLUSH_AT
        };
        if self.buf.len() >= flush_at {
            self.flush_buf()?;
        }
        Ok(())
    }

    fn flush_buf(&mut self) -> Result<()> {
        self.blob.write_at(self.written_to, &self.buf)?;
        let at = self.written_to;
        self.written_to += self.buf.len() as u64;
        match &mut self.ahead {
            Some(ahead) if !self.buf.is_empty() => {
                let full = std::sync::Arc::new(std::mem::replace(
                    &mut self.buf,
                    Vec::with_capacity(FLUSH_AHEAD_AT + (64 << 10)),
                ));
                if let Some(caches) = &mut self.caches_ahead {
                    caches.send(std::sync::Arc::clone(&full));
                }
                ahead.send(at, full)
            }
            _ => {
                self.buf.clear();
                Ok(())
            }
        }
    }

    /// Where the writer stands: [`BatchWriter::rollback`] returns to it.
    pub(super) fn mark(&self) -> WriterMark {
        WriterMark {
            at: self.written_to + self.buf.len() as u64,
            next_seq: self.next_seq,
            records: self.records,
            crc: self.crc.clone(),
        }
    }

    /// Forget everything added since `mark` (a grouped batch that could not be
    /// encoded), so the batches around it commit as if it had never come. Bytes of it
    /// already flushed to the log are zeroed: nothing of it may follow the last commit.
    pub(super) fn rollback(&mut self, mark: WriterMark) -> Result<()> {
        if self.ahead.is_some() {
            // Its records may be applied already, in a transaction that cannot forget them.
            return Err(StoreError::Invalid(
                "a writer that applies while writing cannot roll back".into(),
            ));
        }
        if mark.at >= self.written_to {
            self.buf.truncate((mark.at - self.written_to) as usize);
        } else {
            let end = self.written_to + self.buf.len() as u64;
            self.buf.clear();
            self.blob.discard(mark.at, end)?;
            self.written_to = mark.at;
        }
        self.next_seq = mark.next_seq;
        self.records = mark.records;
        self.crc = mark.crc;
        Ok(())
    }

    /// Write the commit record of the records added since the last seal: they become
    /// one batch of the log, acknowledged (with every other sealed batch) by `finish`.
    pub(super) fn seal_batch(&mut self) -> Result<CommitInfo> {
        if self.records == 0 {
            return Err(StoreError::Invalid(
                "an empty batch cannot be committed".into(),
            ));
        }
        let commit = CommitBody::new(
            self.batch_start,
            self.prev_commit,
            self.records,
            self.crc.finish(),
            self.batch_first_seq,
        );
        let commit_offset = self.written_to + self.buf.len() as u64;
        self.push_record(RecordKind::Commit, 0, 0, b"", commit.as_bytes())?;
        let info = CommitInfo {
            first_seq: self.batch_first_seq,
            commit_seq: self.next_seq - 1,
            commit_offset,
        };
        self.sealed.push(info);
        self.prev_commit = commit_offset;
        self.batch_start = self.written_to + self.buf.len() as u64;
        self.batch_first_seq = self.next_seq;
        self.records = 0;
        self.crc = BatchCrc::new();
        Ok(info)
    }

    /// Write the commit record, make the batch durable, apply it to the tracker and
    /// the vector caches. The batch is acknowledged when this returns `Ok`.
    pub fn finish(self) -> Result<CommitInfo> {
        let mut sealed = self.finish_sealed()?;
        sealed
            .pop()
            .ok_or_else(|| StoreError::Invalid("an empty batch cannot be committed".into()))
    }

    /// Seal what is open, then make every sealed batch durable with one sync and
    /// apply them all to the tracker in one transaction. Each is acknowledged when this
    /// returns `Ok`; on an error none is.
    pub(super) fn finish_sealed(mut self) -> Result<Vec<CommitInfo>> {
        if self.records > 0 || self.sealed.is_empty() {
            self.seal_batch()?;
        }
        let start = self.meta.applied_end;
        let finishing = std::time::Instant::now();
        self.flush_buf()?;
        // A sync of many records runs on the store's sync thread while this one
        // applies them to the tracker; the tracker's transaction commits only once it
        // has returned. A few records are applied sooner than the two threads can
        // hand the sync over and back, so they sync here first.
        let records: u64 = self
            .sealed
            .iter()
            .map(|c| c.commit_seq + 1 - c.first_seq)
            .sum();
        let syncing = if self.store.options.durability != Durability::Always {
            None
        } else if records >= SYNC_BESIDE_MIN_RECORDS || self.ahead.is_some() {
            Some(self.store.syncer.start(std::sync::Arc::clone(&self.blob)))
        } else {
            self.blob.sync()?;
            None
        };
        let snap = self.blob.snapshot(self.written_to)?;
        let built = self
            .caches_ahead
            .take()
            .map(CacheAhead::join)
            .unwrap_or_default();
        let committed = match self.ahead.take() {
            Some(mut ahead) => ahead
                .join()
                .and_then(|applied| self.commit_applied(applied, &snap, start, syncing)),
            None => self.apply_after(&snap, start, syncing),
        };
        let (db, touches_vectors, sync_wait) = match committed {
            Ok(c) => c,
            Err(e) => {
                cache_ahead::discard(built);
                return Err(e);
            }
        };
        let applied_at = finishing.elapsed();
        // From here the batch is durable and visible: it is acknowledged whatever
        // happens to the derived vector caches. A cache that fails to follow is left
        // with its old stamp, which makes it stale, and is rebuilt from the log by
        // the next search or writer.
        self.finished = true;
        if let Err(e) = vectors::after_commit(self.store, &db, &snap, start, touches_vectors, built)
        {
            tracing::warn!(store = %self.store.dir.display(), "vector cache left stale after commit: {e}");
        }
        snap.release(start, self.written_to);
        // Other processes wait this long for the lock: `RUST_LOG=engram=debug` shows it.
        tracing::debug!(
            batches = self.sealed.len(),
            bytes = self.written_to - start,
            held_ms = self.locked_at.elapsed().as_millis() as u64,
            durable_and_applied_ms = applied_at.as_millis() as u64,
            sync_wait_ms = sync_wait.as_millis() as u64,
            caches_ms = (finishing.elapsed() - applied_at).as_millis() as u64,
            "batch committed"
        );
        // Write the WAL back into tracker.db after letting go of the lock, so other
        // writers never wait for a checkpoint (SQLite's own locks keep it safe beside
        // them, and readers never wait for it in WAL mode).
        drop(db);
        drop(self.writer.take());
        self.store.checkpoint_if_due();
        Ok(std::mem::take(&mut self.sealed))
    }
}

/// A point a [`BatchWriter`] can return to.
pub(super) struct WriterMark {
    at: u64,
    next_seq: u64,
    records: u32,
    crc: BatchCrc,
}

impl Drop for BatchWriter<'_> {
    fn drop(&mut self) {
        if !self.finished && self.written_to > self.meta.applied_end {
            // Abandoned: zero what was streamed so far (never cut the file: another
            // process may have it mapped). Failing that, it is an uncommitted tail
            // the next writer or open drops, so the error is only logged.
            if let Err(e) = self.blob.discard(
                self.meta.applied_end,
                self.written_to + self.buf.len() as u64,
            ) {
                tracing::warn!(
                    "could not discard an abandoned batch: {e}; the next writer drops it"
                );
            }
        }
    }
}
