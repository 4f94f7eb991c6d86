//! Opening a store: bringing the tracker level with the log.
//!
//! On a clean open this costs a `stat` and one small SQLite read, whatever the log's
//! size. Otherwise, under the writer lock, it replays committed batches the tracker has
//! not applied, drops an uncommitted tail, or rebuilds the tracker when it does not
//! belong to this log (other store, other generation, other schema, or ahead of the
//! log after a power loss). It never drops a committed batch.

use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};

use rusqlite::Connection;

use super::blob_log::BlobLog;
use super::error::{Result, StoreError};
use super::lock::WriterLock;
use super::scan::{self, scan_batches, ScanEnd, ScanStart, Tail};
use super::tracker::{self, Projection, TrackerMeta};
use super::{
    presence, temporary, vectors, Store, StoreOptions, BLOB_FILE, LOCK_FILE, TRACKER_FILE,
};
use crate::format::{FormatError, RecordKind, FILE_HEADER_LEN};

/// What opening (or rebuilding) did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenReport {
    /// The store was created by this open.
    pub created: bool,
    /// Committed batches applied to the tracker that it had not seen.
    pub replayed_batches: u64,
    /// Bytes of uncommitted tail dropped, with the reason.
    pub truncated_bytes: u64,
    pub truncated_reason: Option<String>,
    /// Why the tracker was rebuilt from the log, when it was.
    pub rebuilt: Option<String>,
    /// Damage found in the middle of the log: the store opened for reading up to it
    /// and refuses writes until it is repaired.
    pub damaged: Option<String>,
    /// Temporary files a stopped writer left behind (a compaction's new log, a cache
    /// being rebuilt), removed by this open.
    pub removed_temporaries: Vec<String>,
}

const NEW_TRACKER: &str = "tracker.db is new or was never initialised";

enum Need {
    Clean,
    CatchUp(TrackerMeta),
    Rebuild(String),
}

pub(super) fn open(
    dir: &Path,
    options: StoreOptions,
    projections: Vec<Box<dyn Projection>>,
) -> Result<Store> {
    let blob_path = dir.join(BLOB_FILE);
    let mut report = OpenReport::default();
    if !dir.exists() {
        if !options.create {
            return Err(StoreError::NotAStore {
                path: dir.into(),
                reason: "the directory does not exist".into(),
            });
        }
        std::fs::create_dir_all(dir).map_err(StoreError::io("create directory", dir))?;
    }
    if !dir.is_dir() {
        return Err(StoreError::NotAStore {
            path: dir.into(),
            reason: "it is not a directory".into(),
        });
    }
    if !blob_path.exists() {
        if !options.create || options.read_only {
            return Err(presence::missing_log(dir));
        }
        let mut id = [0u8; 16];
        getrandom::getrandom(&mut id)
            .map_err(|e| StoreError::Invalid(format!("no randomness for a store id: {e}")))?;
        report.created = presence::create_log(dir, id, super::now_ms())?;
    }
    let opened = if options.read_only {
        BlobLog::open_read_only(&blob_path)
    } else {
        BlobLog::open(&blob_path)
    };
    let blob = opened.map_err(|e| not_a_store(dir, e))?;
    if !blob.is_writable() {
        return open_read_only(dir, options, projections, blob);
    }
    let refs: Vec<&dyn Projection> = projections.iter().map(|p| p.as_ref()).collect();
    let (db, tracker_created) = tracker::open_reporting(&dir.join(TRACKER_FILE), &refs)?;
    drop(refs);
    let store = Store::assemble(dir, options, blob, db, projections);
    let mut db = store.db()?;
    let need = store.need(&db, true)?;
    // Bytes past the tracker while another process holds the writer lock are that
    // writer's batch in flight (an import can take minutes): a reader must not wait
    // for it, and the writer applies it. With the lock free they are a dead writer's.
    let busy_writer =
        matches!(need, Need::CatchUp(_)) && WriterLock::is_held_elsewhere(&dir.join(LOCK_FILE))?;
    if !matches!(need, Need::Clean) && !busy_writer {
        let _writer = store.exclusive()?;
        let r = match store.bring_level(&mut db, true, tracker_created) {
            Ok(r) => r,
            // Damage with committed batches after it: readable up to the damage,
            // never truncated; writes are refused with the same message.
            Err(e @ StoreError::Corrupt { .. }) => {
                tracing::error!(store = %dir.display(), "{e}");
                OpenReport {
                    damaged: Some(e.to_string()),
                    ..OpenReport::default()
                }
            }
            Err(e) => return Err(e),
        };
        report.replayed_batches = r.replayed_batches;
        report.truncated_bytes = r.truncated_bytes;
        report.truncated_reason = r.truncated_reason;
        report.rebuilt = r.rebuilt;
        report.damaged = r.damaged;
    }
    drop(db);
    report.removed_temporaries = temporary::remove_left_behind(dir)?;
    let mut store = store;
    // A store created with a key is sealed from its first record (encryption.md).
    if report.created {
        if let Some(key) = store.options.vector_key.clone() {
            store.seal_vectors(&key)?;
        }
    }
    store.open_report = report;
    Ok(store)
}

/// A store over `dir`'s log and a bare connection to its tracker, from which nothing
/// has been read: for [`super::rebuild_dir`], whose rebuild replaces the tracker
/// without reading it.
pub(super) fn open_for_rebuild(
    dir: &Path,
    options: StoreOptions,
    projections: Vec<Box<dyn Projection>>,
) -> Result<Store> {
    let blob_path = dir.join(BLOB_FILE);
    if !blob_path.exists() {
        return Err(presence::missing_log(dir));
    }
    let blob = BlobLog::open(&blob_path).map_err(|e| not_a_store(dir, e))?;
    let db = super::io::open_db(&dir.join(TRACKER_FILE), rusqlite::OpenFlags::default())?;
    db.busy_timeout(std::time::Duration::from_secs(30))?;
    Ok(Store::assemble(dir, options, blob, db, projections))
}

/// Open a store that cannot or must not be written: no lock, no repair, no tracker
/// update. Reads see what the tracker had applied; a tracker that would need a rebuild
/// is refused with what to do.
fn open_read_only(
    dir: &Path,
    options: StoreOptions,
    projections: Vec<Box<dyn Projection>>,
    blob: BlobLog,
) -> Result<Store> {
    let db = tracker::open_read_only(&dir.join(TRACKER_FILE))?;
    let store = Store::assemble(dir, options, blob, db, projections);
    let need = {
        let db = store.db()?;
        store.need(&db, false)?
    };
    match need {
        Need::Clean => {}
        Need::CatchUp(_) => tracing::warn!(
            store = %dir.display(),
            "read-only store: tracker.db is behind blob.dat; reading what it has applied"
        ),
        Need::Rebuild(why) => {
            return Err(StoreError::NotAStore {
                path: dir.into(),
                reason: format!(
                    "it is read-only and its tracker.db must be rebuilt ({why}); open it once with write access, or copy it somewhere writable"
                ),
            })
        }
    }
    Ok(store)
}

impl Store {
    /// A store handle over an opened log and tracker, not yet brought level.
    fn assemble(
        dir: &Path,
        options: StoreOptions,
        blob: BlobLog,
        db: Connection,
        projections: Vec<Box<dyn Projection>>,
    ) -> Store {
        Store {
            dir: dir.to_path_buf(),
            vector_key: RwLock::new(options.vector_key.clone()),
            sealed_caches: Default::default(),
            plain_caches: Default::default(),
            writer_caches: Default::default(),
            options,
            blob: RwLock::new(Arc::new(blob)),
            db: Mutex::new(db),
            projections: projections.into(),
            write_mutex: Mutex::new(()),
            commit_queue: Default::default(),
            syncer: Default::default(),
            lock_file: Default::default(),
            open_report: OpenReport::default(),
        }
    }

    /// Decide, without the lock, whether the tracker reflects the log exactly.
    /// `thorough` (at open) checks that everything past the tracker's end is zero, so
    /// a torn write behind a hole of zeros (a power loss) is found; otherwise (under
    /// the writer lock, per commit) the first bytes tell, as only a writer that died
    /// can have left bytes there.
    fn need(&self, db: &Connection, thorough: bool) -> Result<Need> {
        let blob = self.blob()?;
        let Some(meta) = tracker::read_meta(db)? else {
            return Ok(Need::Rebuild(
                "tracker.db is new or was never initialised".into(),
            ));
        };
        let h = blob.header();
        if meta.store_id != hex(&h.store_id) {
            return Ok(Need::Rebuild("tracker.db belongs to another store".into()));
        }
        if meta.generation != h.generation.get() {
            return Ok(Need::Rebuild(format!(
                "tracker.db reflects log generation {}, the log is generation {}",
                meta.generation,
                h.generation.get()
            )));
        }
        if meta.schema != tracker::schema_fingerprint(&self.projection_refs()) {
            return Ok(Need::Rebuild(format!(
                "tracker.db schema {} is not this build's",
                meta.schema
            )));
        }
        let len = blob.len()?;
        if meta.applied_end > len {
            return Ok(Need::Rebuild(
                "tracker.db is ahead of the log (a power loss with durability other than always?)"
                    .into(),
            ));
        }
        if meta.last_commit != 0 {
            let snap = blob.snapshot(meta.applied_end)?;
            let ok = snap
                .record_at(meta.last_commit)
                .map(|r| r.kind == RecordKind::Commit && r.seq() == meta.applied_seq)
                .unwrap_or(false);
            if !ok {
                return Ok(Need::Rebuild(
                    "tracker.db's last commit is not in the log".into(),
                ));
            }
        }
        if len > meta.applied_end {
            // Past the data may lie zero-filled space (blob-log.md); anything else
            // there is a batch the tracker has not seen, or a torn one.
            let dirty = if thorough {
                let snap = blob.snapshot(len)?;
                !all_zero(&snap.bytes()[meta.applied_end as usize..])
            } else {
                let mut next = [0u8; 4];
                let n = blob.read_at(meta.applied_end, &mut next)?;
                n < next.len() || next != [0; 4]
            };
            if dirty {
                return Ok(Need::CatchUp(meta));
            }
        }
        Ok(Need::Clean)
    }

    /// Reopen `blob.dat`: compaction replaced it since this handle opened it.
    pub(super) fn reload_blob(&self) -> Result<()> {
        let fresh = BlobLog::open(&self.dir.join(BLOB_FILE))?;
        *self
            .blob
            .write()
            .map_err(|_| StoreError::Invalid("blob log handle poisoned".into()))? = Arc::new(fresh);
        Ok(())
    }

    /// With the writer lock held: make the tracker reflect every committed batch and
    /// return its bookkeeping, ready for an append at `applied_end`.
    pub(super) fn refresh_locked(&self, db: &mut Connection) -> Result<TrackerMeta> {
        if let Some(m) = tracker::read_meta(db)? {
            if m.generation != self.blob()?.header().generation.get() {
                self.reload_blob()?;
            }
        }
        let report = self.bring_level(db, false, false)?;
        if report.rebuilt.is_some() || report.replayed_batches > 0 {
            vectors::rebuild_caches(self, db)?;
        }
        tracker::read_meta(db)?
            .ok_or_else(|| StoreError::Invalid("tracker.db lost its bookkeeping".into()))
    }

    /// `created`: `db` is a tracker whose schema this process made in an empty file
    /// (see [`tracker::open_reporting`]).
    fn bring_level(
        &self,
        db: &mut Connection,
        thorough: bool,
        created: bool,
    ) -> Result<OpenReport> {
        match self.need(db, thorough)? {
            Need::Clean => Ok(OpenReport::default()),
            Need::CatchUp(meta) => self.catch_up_locked(db, meta),
            Need::Rebuild(why) => {
                if why.starts_with(NEW_TRACKER) {
                    tracing::info!(store = %self.dir.display(), "building tracker.db from the log");
                } else {
                    tracing::warn!(store = %self.dir.display(), "rebuilding tracker.db: {why}");
                }
                // A tracker made by this open holds no rows: nothing to drop first.
                let mut r = self.rebuild_locked(db, created && why.starts_with(NEW_TRACKER))?;
                r.rebuilt = Some(why);
                Ok(r)
            }
        }
    }

    fn catch_up_locked(&self, db: &mut Connection, mut meta: TrackerMeta) -> Result<OpenReport> {
        let blob = self.blob()?;
        let len = blob.len()?;
        let snap = blob.snapshot(len)?;
        let projections = self.projection_refs();
        let tx = tracker::write_transaction(db)?;
        let mut report = OpenReport::default();
        let end = scan_batches(
            snap.bytes(),
            ScanStart {
                offset: meta.applied_end,
                last_commit: meta.last_commit,
                last_seq: meta.applied_seq,
            },
            |b| {
                report.replayed_batches += 1;
                tracker::apply_batch(&tx, &b, &projections, &mut meta)
            },
        )?;
        tracker::write_meta(&tx, &meta)?;
        tx.commit()?;
        if report.replayed_batches > 0 {
            tracing::info!(store = %self.dir.display(), batches = report.replayed_batches, "replayed committed batches into tracker.db");
        }
        self.drop_tail(&blob, snap.bytes(), &end, &mut report)?;
        Ok(report)
    }

    /// Rebuild the tracker behind `db` from the log. `empty`: it holds this build's
    /// schema and no rows (made just now), so its tables need not be dropped first.
    pub(super) fn rebuild_locked(&self, db: &mut Connection, empty: bool) -> Result<OpenReport> {
        self.rebuild_locked_with(db, empty, || Ok(()))
    }

    /// Rebuild the tracker from the current log handle; `before_commit` runs after the
    /// new tables are written and before their transaction commits (compaction swaps
    /// the log there).
    pub(super) fn rebuild_locked_with(
        &self,
        db: &mut Connection,
        empty: bool,
        before_commit: impl FnOnce() -> Result<()>,
    ) -> Result<OpenReport> {
        let blob = self.blob()?;
        let len = blob.len()?;
        let snap = blob.snapshot(len)?;
        let projections = self.projection_refs();
        let h = blob.header();
        let meta = TrackerMeta {
            applied_seq: 0,
            applied_end: FILE_HEADER_LEN as u64,
            last_commit: 0,
            generation: h.generation.get(),
            store_id: hex(&h.store_id),
            schema: tracker::schema_fingerprint(&projections),
        };
        tracker::set_cache_kib(db, tracker::rebuild_cache_kib())?;
        let rebuilt =
            self.rebuild_tables(db, empty, &blob, &snap, &projections, meta, before_commit);
        // The large cache is for the rebuild only; restore it even when that failed.
        let restored = tracker::set_cache_kib(db, tracker::NORMAL_CACHE_KIB);
        let report = rebuilt?;
        restored?;
        Ok(report)
    }

    /// Replace every projection's rows with the log's, in one transaction.
    #[allow(clippy::too_many_arguments)]
    fn rebuild_tables(
        &self,
        db: &mut Connection,
        empty: bool,
        blob: &BlobLog,
        snap: &super::LogSnapshot,
        projections: &[&dyn Projection],
        mut meta: TrackerMeta,
        before_commit: impl FnOnce() -> Result<()>,
    ) -> Result<OpenReport> {
        let tx = tracker::write_transaction(db)?;
        if !empty {
            tracker::reset(&tx, projections)?;
        }
        let mut report = OpenReport::default();
        let end = scan_batches(
            snap.bytes(),
            ScanStart {
                offset: FILE_HEADER_LEN as u64,
                last_commit: 0,
                last_seq: 0,
            },
            |b| {
                report.replayed_batches += 1;
                tracker::apply_batch(&tx, &b, projections, &mut meta)
            },
        )?;
        tracker::write_meta(&tx, &meta)?;
        tracker::write_identity(&tx, &meta)?;
        before_commit()?;
        tx.commit()?;
        self.drop_tail(blob, snap.bytes(), &end, &mut report)?;
        report.rebuilt = Some("requested".into());
        Ok(report)
    }

    /// Drop an uncommitted tail after the scan of `log` ended at `end` — unless
    /// committed batches lie beyond where it stopped ([`scan::classify_tail`]), in
    /// which case the stop is damage in the middle of the log: nothing is dropped and
    /// the error names the offset. Dropping zero-fills the tail rather than cutting
    /// the file, so no reader's mapped page ever disappears under it.
    fn drop_tail(
        &self,
        blob: &BlobLog,
        log: &[u8],
        end: &ScanEnd,
        report: &mut OpenReport,
    ) -> Result<()> {
        let (at, why) = match scan::classify_tail(log, end) {
            Tail::Clean => return Ok(()),
            Tail::Damaged { at, why } => {
                return Err(StoreError::Corrupt {
                    path: blob.path().to_path_buf(),
                    offset: at,
                    reason: format!(
                        "{why}; committed batches follow it, so nothing was dropped and the store takes no writes until the damaged record is restored from a backup (the store still opens for reading)"
                    ),
                })
            }
            Tail::Torn { at, why } => (at, why),
        };
        let why = format!("at offset {at}: {why}");
        if !blob.is_writable() {
            // Reported, not done: a read-only handle reads only up to the tracker.
            tracing::warn!(store = %self.dir.display(), "blob.dat has an uncommitted tail {why}; a writable open drops it");
            return Ok(());
        }
        let dropped = blob.discard(end.committed_end, u64::MAX)?;
        tracing::warn!(store = %self.dir.display(), bytes = dropped, "dropped uncommitted tail of blob.dat {why}");
        report.truncated_bytes = dropped;
        report.truncated_reason = Some(why);
        Ok(())
    }
}

/// Whether every byte is zero: by blocks folded with `|`, which the compiler vectorises
/// (byte by byte, every open's scan of the 4 MiB written ahead of the data took ~1 ms).
fn all_zero(bytes: &[u8]) -> bool {
    bytes
        .chunks(4096)
        .all(|block| block.iter().fold(0u8, |acc, &b| acc | b) == 0)
}

/// Lowercase hex of a byte string.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A log whose header is not engram's means the directory is not a store; other
/// errors pass through.
fn not_a_store(dir: &Path, e: StoreError) -> StoreError {
    match e {
        StoreError::Format {
            source: FormatError::NotABlobLog,
            ..
        } => StoreError::NotAStore {
            path: dir.into(),
            reason: format!("{BLOB_FILE} is not an engram blob log"),
        },
        other => other,
    }
}
