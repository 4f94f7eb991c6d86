//! `tracker.db`: the SQLite file derived from `blob.dat`.
//!
//! It maps each key hash to its live record, records the last sequence number applied,
//! and holds the query tables of the layers above, which plug in as [`Projection`]s.
//! Everything here can be thrown away and rebuilt from the log; so nothing may be
//! written here that is not first in the log.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, Transaction};
use serde_json::{Map, Value};

use super::error::{Result, StoreError};
use crate::format::RecordView;
use crate::key::hash64;

pub use super::tracker_apply::{apply_batch, note_applied};
pub(crate) use schema::create_schema;
pub use schema::reset;

mod schema;
pub use super::verify_projections::{CheckedTable, RowsOf};

/// A change a committed batch makes, as projections see it.
#[derive(Debug)]
pub enum Change<'a> {
    /// A key's new live value.
    Put {
        key: &'a str,
        key_hash: u64,
        seq: u64,
        timestamp_ms: u64,
        offset: u64,
        meta: &'a Map<String, Value>,
        body: &'a [u8],
        /// Whether the key had a live value before this put. When it had none, no
        /// projection holds a row for it (a tombstone removed them all, or there never
        /// was one), so looking up what to replace can be skipped: for a new memory
        /// those lookups were six statements of the fifteen its put cost.
        replaces: bool,
        /// The sequence number of the key's previous live value, when it had one: the
        /// rows a projection derived from that value carry it (keyed or tagged by
        /// `seq`), so they are found by it without an index on the key hash, whose
        /// random order makes each batch rewrite most of such an index's pages.
        previous_seq: Option<u64>,
    },
    /// A key deleted (a tombstone names only the key's hash).
    Delete {
        key_hash: u64,
        seq: u64,
        timestamp_ms: u64,
        /// The sequence number of the live value deleted (None: the key was not live).
        previous_seq: Option<u64>,
        /// The key deleted, when it was live.
        key: Option<&'a str>,
    },
    /// An event record (audit trail).
    Event {
        seq: u64,
        timestamp_ms: u64,
        meta: &'a Map<String, Value>,
        body: &'a [u8],
    },
}

/// A set of query tables derived from the log by an upper layer.
///
/// The tracker calls `apply` for every change of every committed batch, in log order,
/// inside the batch's transaction. Bump `version` when the tables or the mapping
/// change: the tracker then rebuilds itself from the log on the next open.
pub trait Projection: Send + Sync {
    /// Stable name, part of the schema fingerprint.
    fn name(&self) -> &'static str;
    /// Version of the tables and the mapping.
    fn version(&self) -> u32;
    /// Create the tables (`IF NOT EXISTS`).
    fn create(&self, db: &Connection) -> rusqlite::Result<()>;
    /// Drop the tables (for a rebuild).
    fn drop_tables(&self, db: &Connection) -> rusqlite::Result<()>;
    /// Reflect one change.
    fn apply(&self, db: &Connection, change: &Change<'_>) -> Result<()>;
    /// The tables `verify` checks against the log, and how. A table not listed is
    /// not checked.
    fn checked_tables(&self) -> Vec<CheckedTable> {
        Vec::new()
    }
}

/// Where a key's live record is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordLocation {
    pub key: String,
    pub offset: u64,
    pub length: u64,
    pub seq: u64,
    pub timestamp_ms: u64,
}

/// The tracker's bookkeeping: how far into the log it reflects.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TrackerMeta {
    pub applied_seq: u64,
    pub applied_end: u64,
    pub last_commit: u64,
    pub generation: u64,
    pub store_id: String,
    pub schema: String,
}

/// Version of the core tables (`schema::CORE_SCHEMA`); part of the schema fingerprint.
///
/// 5: `embedders.count` is kept by [`apply_batch`] instead of triggers on `vectors`.
/// A statement that fires a trigger opens a statement journal, and opening one makes
/// every FTS5 table written in the transaction flush its pending terms to a new
/// segment: with the triggers, each put and each vector flushed the memory and code
/// full-text indexes once per record, and FTS5 spent the batch merging the segments.
///
/// 6: `records` is keyed by `seq`, with a unique index on `key_hash`. Key hashes are
/// random, so a table keyed by them takes each batch's rows at random places and a
/// commit rewrote most of its leaf pages; keyed by `seq`, rows are appended, and only
/// the narrow index (a hash and a rowid per key) takes random inserts.
const CORE_VERSION: u32 = 6;

/// The schema fingerprint for a set of projections.
pub fn schema_fingerprint(projections: &[&dyn Projection]) -> String {
    let mut s = format!("core:{CORE_VERSION}");
    for p in projections {
        s.push_str(&format!(";{}:{}", p.name(), p.version()));
    }
    s
}

/// Size of `tracker.db-wal` past which a writer checkpoints it: fewer, larger
/// checkpoints write the hot pages (bookkeeping, recent keys) back once per
/// checkpoint rather than once per few commits.
pub const CHECKPOINT_WAL_BYTES: u64 = 32 << 20;

/// The tracker connection's page cache, in KiB.
const CACHE_KIB: i64 = 64 << 10;

/// The page cache of a rebuild, which rewrites every table and index of the tracker
/// in one transaction: 1 GiB, or a quarter of the machine's memory if that is less.
/// With the normal cache, a tracker of gigabytes spills pages to the WAL and reads
/// them back through its index all through the rebuild (`walFindFrame` led the
/// profile of a 5 GB one). Measured on a tracker of 688 MB (199K chunks): 119-129 s
/// with 64 MiB, 89-94 s with 1 GiB, and 42% fewer bytes written. Pages are only
/// allocated as used, and the cache goes back to normal when the rebuild ends.
pub(super) fn rebuild_cache_kib() -> i64 {
    // SAFETY: sysconf only reads system configuration.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    // c_long is i32 on 32-bit targets; `from` is a no-op only on 64-bit ones.
    #[allow(clippy::useless_conversion)]
    let quarter_kib = if pages > 0 && page > 0 {
        i64::from(pages).saturating_mul(i64::from(page)) / 4 / 1024
    } else {
        0
    };
    quarter_kib.clamp(CACHE_KIB, 1 << 20)
}

/// Set the connection's page cache to `kib` KiB.
pub(super) fn set_cache_kib(db: &Connection, kib: i64) -> Result<()> {
    db.pragma_update(None, "cache_size", -kib)?;
    Ok(())
}

/// The page cache every connection starts with, in KiB.
pub(super) const NORMAL_CACHE_KIB: i64 = CACHE_KIB;

/// How long a connection waits for another process's lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Open `tracker.db` with the settings every connection uses, and create the core
/// tables and the projections' tables if missing.
pub fn open(path: &Path, projections: &[&dyn Projection]) -> Result<Connection> {
    open_reporting(path, projections).map(|(db, _)| db)
}

/// [`open`], also telling whether this call made the schema in an empty database.
/// Such a tracker holds exactly this build's tables, as `reset` would leave them, so a
/// rebuild into it can skip dropping and recreating them: half of a new store's open.
pub(super) fn open_reporting(
    path: &Path,
    projections: &[&dyn Projection],
) -> Result<(Connection, bool)> {
    let db = super::io::open_db(path, rusqlite::OpenFlags::default())?;
    db.busy_timeout(BUSY_TIMEOUT)?;
    // WAL lets readers run beside the one writer; NORMAL is enough because the log,
    // not the tracker, is what must survive a crash: lost tracker commits are replayed.
    set_wal_mode(&db)?;
    db.pragma_update(None, "synchronous", "NORMAL")?;
    // Writers checkpoint themselves, after releasing the writer lock (see
    // `Store::checkpoint_if_due`), rather than inside a commit.
    db.pragma_update(None, "wal_autocheckpoint", 0)?;
    // After a complete checkpoint SQLite cuts the WAL back to this size, so the
    // file's length tells how much is waiting to be checkpointed.
    db.pragma_update(None, "journal_size_limit", 4 << 20)?;
    // A batch touches pages all over the B-trees and full-text indexes; SQLite's
    // default 2 MiB cache spills them mid-transaction (pagerStress) and reads them
    // back. Pages are only allocated as used, so small stores pay nothing.
    db.pragma_update(None, "cache_size", -CACHE_KIB)?;
    // Statement journals (a multi-row write opens one) and sorts stay in memory
    // rather than in a temporary file: they are small, and dropped at commit.
    db.pragma_update(None, "temp_store", "MEMORY")?;
    super::fts_rank::register(&db)?;
    super::fts_postings::register(&db)?;
    let mut db = db;
    let created = schema::ensure(&mut db, projections)?;
    Ok((db, created))
}

/// Open the tracker for reading in one read transaction, check its structure with
/// SQLite's `quick_check` (every page, B-tree and record format; not the indexes'
/// contents, which the comparison with the log covers for the core tables), and read
/// its bookkeeping. `Err` says why it is damaged.
pub(super) fn open_checked(
    path: &Path,
) -> std::result::Result<(Connection, Option<TrackerMeta>), String> {
    let damaged = |e: &dyn std::fmt::Display| format!("tracker.db is damaged: {e}");
    let db = super::io::open_db(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| damaged(&e))?;
    let checked = (|| -> rusqlite::Result<Vec<String>> {
        db.execute_batch("BEGIN")?;
        let mut stmt = db.prepare("PRAGMA quick_check(5)")?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
        rows.collect()
    })()
    .map_err(|e| damaged(&e))?;
    if checked != ["ok"] {
        return Err(damaged(&checked.join("; ")));
    }
    let meta = read_meta(&db).map_err(|e| damaged(&e))?;
    Ok((db, meta))
}

/// Open `tracker.db` for reading only (a read-only store): nothing is created or
/// changed. Where SQLite cannot even create its shared-memory file next to it (a
/// read-only mount), the file is opened as immutable, which is what it is there.
pub fn open_read_only(path: &Path) -> Result<Connection> {
    use rusqlite::OpenFlags;
    if !super::io::db_exists(path) {
        return Err(StoreError::NotAStore {
            path: path.to_path_buf(),
            reason: "a read-only store needs its tracker.db; open it once with write access".into(),
        });
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI;
    let db = super::io::open_db(path, flags)?;
    db.busy_timeout(BUSY_TIMEOUT)?;
    if read_meta(&db).is_ok() {
        super::fts_rank::register(&db)?;
        super::fts_postings::register(&db)?;
        return Ok(db);
    }
    let uri = format!("file:{}?immutable=1", path.display());
    let db = Connection::open_with_flags(uri, flags)?;
    read_meta(&db)?;
    super::fts_rank::register(&db)?;
    super::fts_postings::register(&db)?;
    Ok(db)
}

/// Begin a transaction that takes SQLite's write lock up front.
///
/// Every transaction that writes the tracker must start this way: a DEFERRED one
/// that reads first fails at once with "database is locked" when another connection
/// commits in between (SQLite cannot retry it without breaking isolation), whereas
/// `BEGIN IMMEDIATE` waits on the busy timeout like any other lock.
pub fn write_transaction(db: &mut Connection) -> Result<Transaction<'_>> {
    Ok(db.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?)
}

/// Switch a connection to WAL, retrying while another process holds the lock.
///
/// The first connection to a new file converts it, which needs an exclusive lock;
/// a concurrent opener can get SQLITE_BUSY from the pragma without the busy
/// handler being consulted, so retry here for as long as the busy timeout.
fn set_wal_mode(db: &Connection) -> Result<()> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        match db.pragma_update(None, "journal_mode", "WAL") {
            Ok(()) => return Ok(()),
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Read the bookkeeping; `None` for a tracker that has never been initialised.
///
/// Stored as two rows: `applied` (`seq:end:commit`, rewritten by every batch, so a
/// commit touches one row) and `identity` (`generation:store_id:schema`, written when
/// the tracker is built).
pub fn read_meta(db: &Connection) -> Result<Option<TrackerMeta>> {
    let mut stmt =
        db.prepare_cached("SELECT name, value FROM meta WHERE name IN ('applied', 'identity')")?;
    let mut rows = stmt.query([])?;
    let mut m = TrackerMeta::default();
    let (mut applied, mut identity) = (false, false);
    let bad =
        || StoreError::Invalid("tracker.db bookkeeping is malformed; run `engram rebuild`".into());
    while let Some(row) = rows.next()? {
        let name: String = row.get(0)?;
        let value: String = row.get(1)?;
        if name == "applied" {
            let mut it = value.split(':').map(str::parse::<u64>);
            let mut next = || it.next().and_then(|r| r.ok()).ok_or_else(bad);
            m.applied_seq = next()?;
            m.applied_end = next()?;
            m.last_commit = next()?;
            applied = true;
        } else {
            let mut it = value.splitn(3, ':');
            m.generation = it.next().and_then(|g| g.parse().ok()).ok_or_else(bad)?;
            m.store_id = it.next().ok_or_else(bad)?.to_string();
            m.schema = it.next().ok_or_else(bad)?.to_string();
            identity = true;
        }
    }
    Ok((applied && identity).then_some(m))
}

/// Write how far the tracker has applied the log (inside the batch's transaction).
pub fn write_meta(db: &Connection, m: &TrackerMeta) -> Result<()> {
    db.prepare_cached("INSERT INTO meta (name, value) VALUES ('applied', ?1) ON CONFLICT (name) DO UPDATE SET value = excluded.value")?
        .execute([format!(
            "{}:{}:{}",
            m.applied_seq, m.applied_end, m.last_commit
        )])?;
    Ok(())
}

/// The key id the store's vectors are sealed under (the last `sealed` event's), or
/// `None` for a plain store.
pub fn sealed_key_id(db: &Connection) -> Result<Option<String>> {
    Ok(db
        .prepare_cached("SELECT value FROM meta WHERE name = 'sealed'")?
        .query_row([], |r| r.get(0))
        .optional()?)
}

/// Write which log and schema the tracker reflects (when it is built).
pub fn write_identity(db: &Connection, m: &TrackerMeta) -> Result<()> {
    db.prepare_cached("INSERT OR REPLACE INTO meta (name, value) VALUES ('identity', ?1)")?
        .execute([format!("{}:{}:{}", m.generation, m.store_id, m.schema)])?;
    Ok(())
}

/// Look up a key's live record and the log generation the tracker reflects, in one
/// statement (so from one consistent snapshot, without a transaction).
pub fn locate_with_generation(
    db: &Connection,
    key_hash: u64,
) -> Result<Option<(RecordLocation, u64)>> {
    Ok(db
        .prepare_cached(
            "SELECT key, offset, length, seq, timestamp_ms,
                    (SELECT value FROM meta WHERE name = 'identity')
             FROM records WHERE key_hash = ?1",
        )?
        .query_row([key_hash as i64], |r| {
            let identity: Option<String> = r.get(5)?;
            let generation = identity
                .as_deref()
                .and_then(|v| v.split(':').next())
                .and_then(|g| g.parse().ok())
                .unwrap_or(0);
            Ok((
                RecordLocation {
                    key: r.get(0)?,
                    offset: r.get::<_, i64>(1)? as u64,
                    length: r.get::<_, i64>(2)? as u64,
                    seq: r.get::<_, i64>(3)? as u64,
                    timestamp_ms: r.get::<_, i64>(4)? as u64,
                },
                generation,
            ))
        })
        .optional()?)
}

/// The JSON metadata of a Put or Vector record, which must be an object naming the
/// record's key.
pub fn record_meta(
    rec: &RecordView<'_>,
) -> std::result::Result<(Map<String, Value>, String), String> {
    let meta: Map<String, Value> = if rec.meta.is_empty() {
        Map::new()
    } else {
        serde_json::from_slice(rec.meta)
            .map_err(|e| format!("metadata is not a JSON object: {e}"))?
    };
    let key = meta
        .get("key")
        .and_then(Value::as_str)
        .ok_or("metadata has no \"key\"")?
        .to_string();
    if hash64(&key) != rec.key_hash() {
        return Err(format!(
            "key {key:?} does not hash to the record's key hash"
        ));
    }
    Ok((meta, key))
}
