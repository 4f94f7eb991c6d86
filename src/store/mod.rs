//! The storage engine: one store directory holding `blob.dat` (the source of truth),
//! `tracker.db` (derived, SQLite) and vector caches (derived).
//!
//! [`Store`] owns the commit protocol of format-spec/blob-log.md: append a batch and
//! its commit record, make them durable per [`Durability`], then apply the batch to the
//! tracker in one transaction. Opening a store replays committed batches the tracker
//! has not seen and drops an uncommitted tail. The store knows keys, records and
//! projections; it must never know what a memory, a symbol or a prompt is.

mod apply_ahead;
mod batch;
mod blob_log;
mod cache_ahead;
mod compact;
mod error;
pub mod fts_postings;
pub mod fts_rank;
mod group_commit;
mod io;
mod lock;
mod presence;
mod read_view;
mod rebuild;
mod recovery;
mod salvage;
mod scan;
mod seal;
mod sealed_cache;
mod small_file;
mod stat;
mod syncer;
mod temporary;
mod tracker;
mod tracker_apply;
mod unsynced;
pub mod vector_cache;
mod vector_delta;
pub mod vector_scan;
mod vectors;
mod verify;
mod verify_projections;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OptionalExtension};
use serde_json::{Map, Value};

/// Records as the store hands them out; layers above name them here, not in `format`.
pub use crate::format::{RecordKind, RecordView};
pub use batch::{BatchOp, WriteBatch};
pub use blob_log::LogSnapshot;
pub use compact::{CompactReport, Retire, Rewrite};
pub use error::{Result, StoreError};
pub use presence::refuse_missing_log;
pub use read_view::{meta_object, ReadView};
pub use rebuild::rebuild_dir;
pub use recovery::OpenReport;
pub use salvage::{salvage, DamagedRange, LostRecord, SalvageReport};
pub use scan::{scan_batches, Batch, ScanEnd, ScanStart};
pub use seal::{SealError, VectorKey};
pub use small_file::update_small_file;
pub use tracker::{Change, CheckedTable, Projection, RecordLocation, RowsOf, TrackerMeta};
pub use vectors::{VectorMatch, VectorSpace};
pub use verify::{verify, verify_with, Problem, VerifyReport};
pub use writer::BatchWriter;

use blob_log::BlobLog;
use lock::{LogLock, WriterLock};

/// File names inside a store directory.
pub const BLOB_FILE: &str = "blob.dat";
pub const TRACKER_FILE: &str = "tracker.db";
pub const LOCK_FILE: &str = "LOCK";

/// When a committed batch is made durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// fsync (fdatasync) every batch before it is acknowledged. The default.
    #[default]
    Always,
    /// fsync only on [`Store::flush`] and when the store is dropped: for bulk loads.
    Batch,
    /// Never fsync; the OS writes back when it likes. A power loss may lose recent
    /// batches, never corrupt older ones.
    Never,
}

/// A durability name that is none of the three.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("durability {name:?} is not one of always, batch, never")]
pub struct UnknownDurability {
    pub name: String,
}

impl std::str::FromStr for Durability {
    type Err = UnknownDurability;
    fn from_str(s: &str) -> std::result::Result<Self, UnknownDurability> {
        match s {
            "always" => Ok(Durability::Always),
            "batch" => Ok(Durability::Batch),
            "never" => Ok(Durability::Never),
            _ => Err(UnknownDurability { name: s.into() }),
        }
    }
}

/// How to open a store.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    pub durability: Durability,
    /// Create the directory and an empty store when missing (default true).
    pub create: bool,
    /// Open for reading only: nothing in the directory is written, not even to repair
    /// it. Also chosen by itself when `blob.dat` cannot be opened for writing (no
    /// permission, a read-only mount). Writes fail with [`StoreError::ReadOnly`].
    pub read_only: bool,
    /// The key a sealed store's vectors are sealed under (format-spec/encryption.md).
    /// Needed to search or write vectors of a sealed store; unused by a plain one
    /// until [`Store::seal_vectors`] seals it.
    pub vector_key: Option<VectorKey>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            durability: Durability::Always,
            create: true,
            read_only: false,
            vector_key: None,
        }
    }
}

/// A key's live value, copied out of the log.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub key: String,
    pub seq: u64,
    pub timestamp_ms: u64,
    pub offset: u64,
    pub meta: Map<String, Value>,
    pub body: Vec<u8>,
}

/// What a commit wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitInfo {
    pub first_seq: u64,
    pub commit_seq: u64,
    pub commit_offset: u64,
}

/// An open store. Shareable between threads (`Arc<Store>`); any number of processes
/// may open the same directory.
pub struct Store {
    dir: PathBuf,
    options: StoreOptions,
    blob: RwLock<Arc<BlobLog>>,
    db: Mutex<Connection>,
    /// Shared with a writer's applying thread (see `apply_ahead`).
    projections: Arc<[Box<dyn Projection>]>,
    /// Serialises writers inside this process; the file lock does it across processes.
    write_mutex: Mutex<()>,
    /// Where concurrent `commit`s meet to share a sync.
    commit_queue: group_commit::CommitQueue,
    /// Syncs the log while a writer applies the tracker.
    syncer: syncer::Syncer,
    /// The open `LOCK` file, opened on first write (a read-only user never needs it).
    lock_file: lock::LockSlot,
    open_report: OpenReport,
    /// The key for sealed vectors: the options' key, replaced when this handle
    /// rotates it.
    vector_key: RwLock<Option<VectorKey>>,
    /// A sealed store's vector caches, decrypted into this process's memory.
    sealed_caches: sealed_cache::SealedCaches,
    /// Read-only handles on a plain store's cache files, reused between searches.
    plain_caches: vectors::PlainCaches,
    /// The writer's handles on them, reused between commits.
    writer_caches: vectors::WriterCaches,
}

impl Store {
    /// Open (or create) the store in `dir` with the given projections.
    pub fn open(
        dir: impl AsRef<Path>,
        options: StoreOptions,
        projections: Vec<Box<dyn Projection>>,
    ) -> Result<Store> {
        recovery::open(dir.as_ref(), options, projections)
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What opening the store found and repaired.
    pub fn open_report(&self) -> &OpenReport {
        &self.open_report
    }

    /// Become the store's only writer, in this process and across processes, until
    /// the guard is dropped.
    fn exclusive(&self) -> Result<WriteGuard<'_>> {
        if !self.blob()?.is_writable() {
            return Err(StoreError::ReadOnly {
                path: self.dir.join(BLOB_FILE),
            });
        }
        let in_process = self
            .write_mutex
            .lock()
            .map_err(|_| StoreError::Invalid("writer mutex poisoned by a panic".into()))?;
        let lock = self.lock_file.hold(&self.dir.join(LOCK_FILE))?;
        // Another handle may have compacted since this one last looked: everything
        // done under the lock must work on the log the path names now, and that is
        // the file locked.
        let log = loop {
            if self.blob()?.replaced_on_disk()? {
                self.reload_blob()?;
            }
            let blob = self.blob()?;
            blob.lock()?;
            let held = LogLock(blob);
            if !held.0.replaced_on_disk()? {
                break held;
            }
        };
        Ok(WriteGuard {
            _log: log,
            _lock: lock,
            _in_process: in_process,
        })
    }

    fn projection_refs(&self) -> Vec<&dyn Projection> {
        self.projections.iter().map(|p| p.as_ref()).collect()
    }

    fn db(&self) -> Result<MutexGuard<'_, Connection>> {
        self.db
            .lock()
            .map_err(|_| StoreError::Invalid("tracker connection poisoned by a panic".into()))
    }

    fn blob(&self) -> Result<Arc<BlobLog>> {
        Ok(self
            .blob
            .read()
            .map_err(|_| StoreError::Invalid("blob log handle poisoned by a panic".into()))?
            .clone())
    }

    /// Commit a batch: durable (per [`Durability`]) and visible to every reader when
    /// this returns. Batches committed at the same time from several threads share one
    /// sync (group commit), each still its own batch of the log.
    pub fn commit(&self, batch: &WriteBatch) -> Result<CommitInfo> {
        if batch.is_empty() {
            return Err(StoreError::Invalid(
                "an empty batch cannot be committed".into(),
            ));
        }
        group_commit::commit(self, batch)
    }

    /// Start a batch streamed straight into the log (for batches larger than memory).
    /// It holds the writer lock until finished or dropped; dropping it unfinished
    /// discards it.
    pub fn begin_batch(&self) -> Result<BatchWriter<'_>> {
        BatchWriter::begin(self)
    }

    /// Make every committed batch durable (for [`Durability::Batch`] and `Never`).
    pub fn flush(&self) -> Result<()> {
        self.blob()?.sync()
    }

    /// The live value of `key`, if any.
    pub fn get(&self, key: &str) -> Result<Option<Record>> {
        let h = crate::key::hash64(key);
        for attempt in 0..2 {
            let found = tracker::locate_with_generation(&*self.db()?, h)?;
            let Some((loc, generation)) = found else {
                return Ok(None);
            };
            if loc.key != key {
                return Ok(None); // a different key with the same 64-bit hash
            }
            let blob = self.blob()?;
            if blob.header().generation.get() != generation && attempt == 0 {
                self.reload_blob()?;
                continue;
            }
            let snap = blob.snapshot(loc.offset + loc.length)?;
            let rec = snap.record_at(loc.offset)?;
            let (meta, rkey) =
                tracker::record_meta(&rec).map_err(|reason| StoreError::Corrupt {
                    path: blob.path().to_path_buf(),
                    offset: loc.offset,
                    reason,
                })?;
            if rkey != key {
                return Err(StoreError::Corrupt {
                    path: blob.path().to_path_buf(),
                    offset: loc.offset,
                    reason: format!("tracker says {key:?} lives here, the record says {rkey:?}; run `engram rebuild`"),
                });
            }
            return Ok(Some(Record {
                key: rkey,
                seq: rec.seq(),
                timestamp_ms: rec.timestamp_ms(),
                offset: loc.offset,
                meta,
                body: rec.body.to_vec(),
            }));
        }
        Err(StoreError::Invalid(
            "the log was replaced twice during one read; retry".into(),
        ))
    }

    /// The log up to the last commit the tracker has applied, of the generation the
    /// tracker describes (for scans of every record; offsets from a tracker query go
    /// through [`Store::read_with`]).
    pub fn snapshot(&self) -> Result<LogSnapshot> {
        let (_, view) = self.read_with(|_| Ok(()))?;
        Ok(view.snapshot().clone())
    }

    /// The tracker's bookkeeping.
    pub fn meta(&self) -> Result<TrackerMeta> {
        let db = self.db()?;
        tracker::read_meta(&db)?
            .ok_or_else(|| StoreError::Invalid("tracker.db is not initialised".into()))
    }

    /// Run `f` with the tracker connection, for the query tables of upper layers.
    /// Write nothing through it: the tracker is derived from the log.
    pub fn with_tracker<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let db = self.db()?;
        f(&db)
    }

    /// The live key whose 64-bit hash is `hash` (as [`crate::key::hash64`] computes
    /// it), if any: for callers that hold only the hash, as the seeds' interfaces do.
    /// SQLite shows the same hash as a signed integer; pass `hash as u64`.
    pub fn key_for_hash(&self, hash: u64) -> Result<Option<String>> {
        self.with_tracker(|db| {
            Ok(db
                .prepare_cached("SELECT key FROM records WHERE key_hash = ?1")?
                .query_row([hash as i64], |r| r.get::<_, String>(0))
                .optional()?)
        })
    }

    /// Number of live keys.
    pub fn live_records(&self) -> Result<u64> {
        self.with_tracker(|db| {
            Ok(db.query_row("SELECT count(*) FROM records", [], |r| r.get::<_, i64>(0))? as u64)
        })
    }

    /// Recreate every derived file from `blob.dat` alone. The tracker is built beside
    /// the old one, never reading it, and copied over it (see `rebuild`), so a
    /// damaged tracker is replaced like a sound one.
    pub fn rebuild(&self) -> Result<OpenReport> {
        let _writer = self.exclusive()?;
        let mut db = self.db()?;
        let report = rebuild::rebuild_tracker(self, &mut db)?;
        vectors::rebuild_caches(self, &db)?;
        Ok(report)
    }

    /// Rewrite the log without dead records and swap it in atomically.
    pub fn compact(&self) -> Result<CompactReport> {
        compact::compact(self, None, None, None)
    }

    /// [`Store::compact`], also dropping every vector of each embedder that another
    /// embedder has superseded — every key with a vector of it also has one of the
    /// other, which wrote the newest of the two — and for which `retire` (asked under
    /// the writer lock, with the tracker) says yes: the upper layers know whether the
    /// embedder is still in use. What finishes a switch of embedder: the old space
    /// stops costing disk, cache files and tracker rows. The retired names are in the
    /// report and in the compaction's event (`retired_embedders`).
    pub fn compact_retiring(&self, retire: &Retire<'_>) -> Result<CompactReport> {
        compact::compact(self, None, None, Some(retire))
    }

    /// Seal every vector of the store under `key` (format-spec/encryption.md): a
    /// compaction that rewrites each live vector sealed — opened first under the
    /// current key when the store is already sealed, which makes this key rotation —
    /// deletes every vector cache file, and names `key` in a `sealed` event. From then
    /// on every vector written is sealed under `key`, and searching or writing
    /// vectors needs it ([`StoreOptions::vector_key`]).
    pub fn seal_vectors(&self, key: &VectorKey) -> Result<CompactReport> {
        compact::compact(self, None, Some(key), None)
    }

    /// [`Store::compact`], replacing the metadata and body of each kept record for
    /// which `rewrite` returns new ones (to purge what must not stay on disk, such as
    /// a secret an older version let through). Everything else about a record — kind,
    /// key, sequence number, time — stays; dead records are dropped as usual, so after
    /// it the old bytes are in no file of the store. Follow it with
    /// [`Store::purge_tracker`] to clear `tracker.db`'s freed pages too.
    pub fn compact_rewriting(&self, rewrite: &mut Rewrite<'_>) -> Result<CompactReport> {
        compact::compact(self, Some(rewrite), None, None)
    }

    /// Rewrite `tracker.db` so no freed page keeps old contents: checkpoint and
    /// truncate the WAL, `VACUUM`, and checkpoint again (under the writer lock).
    pub fn purge_tracker(&self) -> Result<()> {
        let _writer = self.exclusive()?;
        let db = self.db()?;
        db.execute_batch(
            "PRAGMA wal_checkpoint(TRUNCATE); VACUUM; PRAGMA wal_checkpoint(TRUNCATE);",
        )?;
        Ok(())
    }

    /// Checkpoint `tracker.db`'s WAL once it has grown past
    /// [`tracker::CHECKPOINT_WAL_BYTES`] (writers call this after releasing the
    /// writer lock). Passive: it never waits for readers or writers, and a failure
    /// only leaves the WAL for the next writer.
    fn checkpoint_if_due(&self) {
        let wal = self.dir.join(format!("{TRACKER_FILE}-wal"));
        let due = stat::path_size(&wal)
            .map(|len| len >= tracker::CHECKPOINT_WAL_BYTES)
            .unwrap_or(false);
        if !due {
            return;
        }
        let done = self
            .db()
            .and_then(|db| Ok(db.execute_batch("PRAGMA wal_checkpoint(PASSIVE)")?));
        if let Err(e) = done {
            tracing::debug!("tracker checkpoint left for later: {e}");
        }
    }

    /// Every embedder with live vectors in the store, with how many, most first. Cheap:
    /// the tracker keeps the counts in a table of one row per embedder.
    pub fn vector_spaces(&self) -> Result<Vec<VectorSpace>> {
        self.with_tracker(vectors::spaces)
    }

    /// Top-k nearest keys to `query` among `embedder`'s vectors (cosine similarity).
    pub fn vector_search(
        &self,
        embedder: &str,
        query: &[f32],
        k: usize,
    ) -> Result<Vec<VectorMatch>> {
        vectors::search(self, embedder, query, k)
    }
}

/// A read-only view of the whole `blob.dat` in `dir`, committed or not, without
/// opening the store (no recovery, no tracker): for inspectors like `engram dump`.
pub fn read_log(dir: &Path) -> Result<(crate::format::FileHeader, LogSnapshot)> {
    refuse_missing_log(dir)?;
    let blob = BlobLog::open(&dir.join(BLOB_FILE))?;
    let len = blob.len()?;
    Ok((*blob.header(), blob.snapshot(len)?))
}

impl Drop for Store {
    fn drop(&mut self) {
        if self.options.durability == Durability::Batch {
            if let Ok(blob) = self.blob() {
                let _ = blob.sync();
            }
        }
        self.flush_marked_caches();
    }
}

impl Store {
    /// On a clean close, flush the vector caches this boot wrote without flushing and
    /// remove their marks (see `unsynced`), if the writer lock is free right now.
    /// Otherwise the writer holding it, or a later close, does it; a mark left behind
    /// costs a rebuild of its cache only if the machine goes down first.
    fn flush_marked_caches(&self) {
        if self.options.durability != Durability::Always
            || !self.blob().is_ok_and(|b| b.is_writable())
        {
            return;
        }
        let Ok(_in_process) = self.write_mutex.try_lock() else {
            return;
        };
        // None too when this handle never wrote.
        if let Ok(Some(_lock)) = self.lock_file.try_hold(&self.dir.join(LOCK_FILE)) {
            unsynced::flush_marked(&self.dir);
        }
    }
}

/// Held by the one writer: the in-process mutex and the cross-process file locks.
struct WriteGuard<'s> {
    // Field order is drop order: the file locks go first, the log's before LOCK's.
    _log: LogLock,
    _lock: WriterLock,
    _in_process: MutexGuard<'s, ()>,
}

/// The current time in Unix milliseconds, as records are stamped.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
