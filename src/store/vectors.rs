//! Keeping the vector caches in step with the log, and searching them.
//!
//! Vector records in `blob.dat` are the truth; the tracker's `vectors` table says which
//! are live; a cache file per embedder holds them flat for SIMD scans. After each
//! commit, the committing writer (holding the writer lock) applies the batch to every
//! cache and stamps it with the commit's sequence number. A cache whose stamp is not
//! the tracker's applied sequence number is stale (a writer died between the two) and
//! is rebuilt from the log under the writer lock. Never the other way round: nothing
//! here writes to the log or the tracker's core tables.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::{params, Connection, OptionalExtension};

use super::blob_log::LogSnapshot;
use super::cache_ahead::{self, Built, BuiltCache};
use super::error::{Result, StoreError};
use super::scan::Batch;
use super::sealed_cache;
use super::tracker;
use super::unsynced::{self, Mark};
use super::vector_cache::{
    embedder_id, Metric, ScanMode, VectorCache, VectorCacheError, VectorCacheOptions,
};
use super::vector_delta::VectorDelta;
use super::vector_scan::{score_f32, VectorHit};
use super::Store;
use crate::format::{vector_file, RecordKind};

/// One result of [`Store::vector_search`].
#[derive(Debug, Clone, PartialEq)]
pub struct VectorMatch {
    pub key: String,
    pub key_hash: u64,
    /// Cosine similarity, higher is closer.
    pub score: f32,
}

/// One embedder's vectors in the store: see [`Store::vector_spaces`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VectorSpace {
    /// The embedder's name.
    pub embedder: String,
    /// The dimension of its latest vector (the one its cache holds).
    pub dim: u32,
    /// How many live vectors it has (keys with a vector of it).
    pub count: u64,
}

/// Every embedder with vectors in the store, most vectors first (one read of a table
/// with a row per embedder).
pub(super) fn spaces(db: &Connection) -> Result<Vec<VectorSpace>> {
    let mut stmt = db.prepare_cached(
        "SELECT name, dim, count FROM embedders WHERE count > 0 ORDER BY count DESC, name",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok(VectorSpace {
            embedder: r.get(0)?,
            dim: r.get::<_, i64>(1)? as u32,
            count: r.get::<_, i64>(2)?.max(0) as u64,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

/// The cache file of an embedder: readable name, and a hash so names never collide.
pub fn cache_path(dir: &Path, embedder: &str) -> PathBuf {
    let slug: String = embedder
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    dir.join(format!("vectors-{slug}-{:016x}.vec", embedder_id(embedder)))
}

pub(super) fn options(dim: u32, embedder: &str) -> VectorCacheOptions {
    VectorCacheOptions {
        dim,
        embedder_id: embedder_id(embedder),
        with_i8: true,
        with_i8_columns: true,
        with_bits: true,
        initial_capacity: 1024,
    }
}

pub(super) fn batch_touches_vectors(batch: &Batch<'_>) -> bool {
    batch.records().any(|(_, r)| {
        matches!(
            r.kind,
            RecordKind::Vector | RecordKind::Tombstone | RecordKind::Put
        )
    })
}

/// Embedders the tracker knows, with their dimension.
pub(super) fn embedders(db: &Connection) -> Result<Vec<(String, u32)>> {
    let mut stmt = db.prepare_cached("SELECT name, dim FROM embedders ORDER BY name")?;
    let rows = stmt.query_map([], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u32))
    })?;
    let mut out = Vec::new();
    for row in rows {
        out.push(row?);
    }
    Ok(out)
}

/// With the writer lock held, right after a batch starting at `start` was applied.
/// `built` holds the caches built beside the batch ([`super::cache_ahead`]): each is
/// swapped in instead of being rebuilt; what is not used is removed.
pub(super) fn after_commit(
    store: &Store,
    db: &Connection,
    snap: &LogSnapshot,
    start: u64,
    changed: bool,
    mut built: Built,
) -> Result<()> {
    let result = follow_commit(store, db, snap, start, changed, &mut built);
    cache_ahead::discard(built);
    result
}

fn follow_commit(
    store: &Store,
    db: &Connection,
    snap: &LogSnapshot,
    start: u64,
    changed: bool,
    built: &mut Built,
) -> Result<()> {
    let meta = tracker::read_meta(db)?
        .ok_or_else(|| StoreError::Invalid("tracker.db lost its bookkeeping".into()))?;
    if tracker::sealed_key_id(db)?.is_some() {
        // A sealed store has no cache file; searches catch up in memory.
        return Ok(());
    }
    let always = store.options.durability == super::Durability::Always;
    for (embedder, dim) in embedders(db)? {
        if let Some(b) = built.remove(&embedder) {
            match swap_in(b, dim, meta.applied_seq, always) {
                Ok(()) => continue,
                // Then it is rebuilt below, as if nothing had been built.
                Err(e) => tracing::debug!(embedder, "cache built beside the batch not used: {e}"),
            }
        }
        let path = cache_path(&store.dir, &embedder);
        // Rows an earlier boot left unflushed may be lost: rebuild (see `unsynced`).
        let mark = unsynced::read(&path);
        let kept = store.writer_caches.take(&embedder, dim);
        let cache = match kept {
            _ if mark == Mark::EarlierBoot => None,
            Some(c) => Some(c),
            None => match VectorCache::open(&path, &options(dim, &embedder)) {
                Ok(c) => Some(c),
                Err(VectorCacheError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => {
                    tracing::warn!(cache = %path.display(), "rebuilding vector cache: {e}");
                    None
                }
            },
        };
        let mut cache = match cache {
            Some(c) if changed => c,
            Some(mut c) => {
                c.set_seq(meta.applied_seq)?;
                store.writer_caches.keep(&embedder, c);
                continue;
            }
            None => {
                rebuild_one(store, db, &embedder, dim)?;
                continue;
            }
        };
        // Rows reach the disk before the stamp that claims them, so that after a
        // power loss the cache is either current or visibly stale (an older stamp):
        // flushed before the stamp, or covered by this boot's mark, made durable
        // before the first row is written.
        let marked = always && unsynced::ensure(&path, mark)?;
        // Walk the batch just written: it ends at the commit the tracker now names.
        let mut off = start;
        let mut stale = false;
        while off < meta.last_commit {
            let rec = snap.record_at(off)?;
            if off == start && rec.seq() != cache.seq() + 1 {
                stale = true; // the cache missed an earlier batch
                break;
            }
            match rec.kind {
                RecordKind::Put | RecordKind::Tombstone => {
                    cache.remove(rec.key_hash())?;
                }
                RecordKind::Vector => {
                    let (m, _) = tracker::record_meta(&rec).map_err(StoreError::Invalid)?;
                    if m.get("embedder").and_then(|v| v.as_str()) == Some(embedder.as_str()) {
                        cache.upsert(rec.key_hash(), &f32s(rec.body))?;
                    }
                }
                _ => {}
            }
            off += rec.record_len() as u64;
        }
        if stale {
            drop(cache);
            rebuild_one(store, db, &embedder, dim)?;
        } else {
            if always && !marked {
                cache.flush()?;
            }
            cache.set_seq(meta.applied_seq)?;
            cache.release_pages();
            store.writer_caches.keep(&embedder, cache);
        }
    }
    Ok(())
}

/// Rebuild every embedder's cache from the log (writer lock held).
pub(super) fn rebuild_caches(store: &Store, db: &Connection) -> Result<()> {
    if tracker::sealed_key_id(db)?.is_some() {
        store.sealed_caches.clear();
        return remove_cache_files(&store.dir);
    }
    for (embedder, dim) in embedders(db)? {
        rebuild_one(store, db, &embedder, dim)?;
    }
    Ok(())
}

/// Stamp a cache built beside the batch with the batch's sequence number and give it
/// the cache's name. Its rows are durable as `rebuild_one`'s are: flushed with the
/// rename made durable, or covered by this boot's mark, made durable before they
/// were written.
fn swap_in(mut b: BuiltCache, dim: u32, seq: u64, always: bool) -> Result<()> {
    let tmp = cache_ahead::ahead_path(&b.cache_path);
    let swapped = (|| {
        if b.cache.dim() != dim {
            return Err(StoreError::Invalid(format!(
                "built with {} dimensions, the embedder's latest vector has {dim}",
                b.cache.dim()
            )));
        }
        b.cache.set_seq(seq)?;
        let flush = always && !b.marked;
        if flush {
            b.cache.flush()?;
        }
        // The file replaced is freed when its last handle closes: with its pages in
        // memory that took 45 ms of the writer's lock after a 40 MB cache. Held open
        // across the rename, it is closed on a thread of its own instead.
        let replaced = std::fs::File::open(&b.cache_path).ok();
        super::io::rename(&tmp, &b.cache_path).map_err(StoreError::io("rename", &tmp))?;
        if let Some(replaced) = replaced {
            let closing = std::thread::Builder::new().name("engram-free-cache".into());
            if let Err(e) = closing.spawn(move || drop(replaced)) {
                tracing::debug!("replaced vector cache closed here: {e}");
            }
        }
        if flush && unsynced::read(&b.cache_path) != Mark::Clean {
            super::blob_log::sync_dir(&b.cache_path)?;
            unsynced::clear(&b.cache_path);
        }
        Ok(())
    })();
    if swapped.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    swapped
}

fn rebuild_one(store: &Store, db: &Connection, embedder: &str, dim: u32) -> Result<()> {
    let meta = tracker::read_meta(db)?
        .ok_or_else(|| StoreError::Invalid("tracker.db lost its bookkeeping".into()))?;
    let blob = store.blob()?;
    let snap = blob.snapshot(meta.applied_end)?;
    let path = cache_path(&store.dir, embedder);
    let temporary = super::temporary::Temporary::new(path.with_extension("vec.new"));
    let tmp = temporary.path().to_path_buf();
    // Sized for every vector up front: growing rewrites (and syncs) the whole file.
    let count: i64 = db
        .prepare_cached("SELECT count(*) FROM vectors WHERE embedder = ?1")?
        .query_row([embedder], |r| r.get(0))?;
    let mut opts = options(dim, embedder);
    opts.initial_capacity = opts
        .initial_capacity
        .max(count.max(0) as u64 + count.max(0) as u64 / 4);
    let mut cache = VectorCache::create(&tmp, &opts)?;
    let mut stmt =
        db.prepare_cached("SELECT key_hash, offset FROM vectors WHERE embedder = ?1 ORDER BY seq")?;
    let rows = stmt.query_map([embedder], |r| {
        Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64))
    })?;
    for row in rows {
        let (h, offset) = row?;
        let rec = snap.record_at(offset)?;
        if rec.body.len() != dim as usize * 4 {
            continue; // another dimension under the same name: not searchable together
        }
        cache.upsert(h, &f32s(rec.body))?;
    }
    cache.set_seq(meta.applied_seq)?;
    cache.flush()?;
    drop(cache);
    super::io::rename(&tmp, &path).map_err(StoreError::io("rename", &tmp))?;
    temporary.keep();
    // The new file is flushed; once its rename is durable, no mark is needed.
    if unsynced::read(&path) != Mark::Clean {
        super::blob_log::sync_dir(&path)?;
        unsynced::clear(&path);
    }
    Ok(())
}

/// Delete every vector cache file in `dir` (and the temporary files of one being
/// written): a sealed store must hold no vector in the clear.
pub(super) fn remove_cache_files(dir: &Path) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(StoreError::io("read", dir))?;
    for entry in entries {
        let entry = entry.map_err(StoreError::io("read", dir))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("vectors-") && name.contains(".vec") {
            let path = entry.path();
            std::fs::remove_file(&path).map_err(StoreError::io("remove", &path))?;
        }
    }
    Ok(())
}

impl Store {
    /// The values of the vector record `rec` at `offset` if it has `dim` of them:
    /// opened under the store key when sealed (refused without the right key).
    pub(super) fn vector_values(
        &self,
        rec: &crate::format::RecordView<'_>,
        offset: u64,
        dim: usize,
    ) -> Result<Option<Vec<f32>>> {
        if super::seal::is_sealed(rec) {
            let sealed =
                super::seal::parse_sealed_meta(rec).map_err(|reason| StoreError::Corrupt {
                    path: self.dir.join(super::BLOB_FILE),
                    offset,
                    reason,
                })?;
            let v = self.sealing_key(&sealed.key_id)?.open(rec, offset)?;
            return Ok((v.len() == dim).then_some(v));
        }
        Ok((rec.body.len() == dim * 4).then(|| f32s(rec.body)))
    }
}

pub(super) fn f32s(body: &[u8]) -> Vec<f32> {
    body.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

pub(super) fn search(
    store: &Store,
    embedder: &str,
    query: &[f32],
    k: usize,
) -> Result<Vec<VectorMatch>> {
    // The tracker's state and the log it describes, read together (one generation).
    let ((dim, meta, sealed), view) = store.read_with(|db| {
        let dim: Option<i64> = db
            .query_row(
                "SELECT dim FROM embedders WHERE name = ?1",
                [embedder],
                |r| r.get(0),
            )
            .optional()?
            .flatten();
        let meta = tracker::read_meta(db)?
            .ok_or_else(|| StoreError::Invalid("tracker.db is not initialised".into()))?;
        Ok((dim, meta, tracker::sealed_key_id(db)?))
    })?;
    let Some(dim) = dim else {
        return Ok(Vec::new());
    };
    if query.len() != dim as usize {
        return Err(StoreError::Invalid(format!(
            "query has {} dimensions, {embedder}'s vectors have {dim}",
            query.len()
        )));
    }
    let hits = match sealed {
        Some(key_id) => {
            drop(view);
            sealed_cache::search(store, &key_id, embedder, dim as u32, &meta, query, k)?
        }
        None => plain_hits(store, embedder, dim as u32, &meta, &view, query, k)?,
    };
    let db = store.db()?;
    let mut out = Vec::with_capacity(hits.len());
    let mut stmt = db.prepare_cached("SELECT key FROM records WHERE key_hash = ?1")?;
    for h in hits {
        let key: Option<String> = stmt
            .query_row(params![h.key_hash as i64], |r| r.get(0))
            .optional()?;
        if let Some(key) = key {
            out.push(VectorMatch {
                key,
                key_hash: h.key_hash,
                score: h.score,
            });
        }
    }
    Ok(out)
}

/// Top `k` from a plain store's cache file (brought up to date first).
fn plain_hits(
    store: &Store,
    embedder: &str,
    dim: u32,
    meta: &tracker::TrackerMeta,
    view: &super::ReadView,
    query: &[f32],
    k: usize,
) -> Result<Vec<VectorHit>> {
    let path = cache_path(&store.dir, embedder);
    let opts = options(dim, embedder);
    // A cache stamped at or after the state read above is current (the writer stamps
    // only after the tracker commits). One a few batches behind — a writer is applying
    // its last batch right now — is brought up to date in memory from the log; only a
    // missing or long-stale cache waits for the writer lock to be rebuilt.
    let (cache, delta) = match store.plain_caches.open(embedder, &path, &opts) {
        Ok(c) if c.seq() >= meta.applied_seq => (c, None),
        Ok(c) => match VectorDelta::since(
            store,
            view.snapshot(),
            meta.last_commit,
            c.seq(),
            embedder,
            dim as usize,
        )? {
            Some(delta) => (c, Some(delta)),
            None => match rebuilt_cache(store, embedder, dim)? {
                Some(c) => (Arc::new(c), None),
                None => return Ok(Vec::new()),
            },
        },
        Err(_) => match rebuilt_cache(store, embedder, dim)? {
            Some(c) => (Arc::new(c), None),
            None => return Ok(Vec::new()),
        },
    };
    match &delta {
        None => scan(&cache, query, k),
        Some(delta) => scan_with_delta(&cache, delta, query, k),
    }
}

/// The writer's handles on a plain store's cache files, kept between commits (and
/// used only under the writer lock). Opening a cache indexes every slot, which each
/// commit paid again: a single save with a vector took 3.9-8.0 ms at 200,000
/// vectors. A kept handle is used only while it is current
/// ([`VectorCache::is_current`]: the same file, its header as this handle last wrote
/// it), so another process's commit, a grow or a rebuild makes the next commit open
/// the file again.
#[derive(Default)]
pub(super) struct WriterCaches {
    by_embedder: Mutex<HashMap<String, VectorCache>>,
}

impl WriterCaches {
    /// The kept handle on `embedder`'s cache, if it is still current.
    fn take(&self, embedder: &str, dim: u32) -> Option<VectorCache> {
        let cache = self.by_embedder.lock().ok()?.remove(embedder)?;
        (cache.is_current() && cache.dim() == dim).then_some(cache)
    }

    fn keep(&self, embedder: &str, cache: VectorCache) {
        if let Ok(mut map) = self.by_embedder.lock() {
            map.insert(embedder.to_string(), cache);
        }
    }

    /// Drop every kept handle (their files are being replaced or removed).
    pub(super) fn clear(&self) {
        if let Ok(mut map) = self.by_embedder.lock() {
            map.clear();
        }
    }
}

/// Read-only handles on a plain store's cache files, kept between searches: opening
/// one indexes every slot (milliseconds per 100K rows), which a search then need not
/// repeat while the file is unchanged ([`VectorCache::is_current`]).
#[derive(Default)]
pub(super) struct PlainCaches {
    by_embedder: Mutex<HashMap<String, Arc<VectorCache>>>,
}

impl PlainCaches {
    /// A current read-only handle on `path`: the kept one, or a new one (kept).
    fn open(
        &self,
        embedder: &str,
        path: &Path,
        opts: &VectorCacheOptions,
    ) -> Result<Arc<VectorCache>, VectorCacheError> {
        let mut map = self.by_embedder.lock().map_err(|_| {
            VectorCacheError::InvalidOptions("vector cache handles poisoned by a panic".into())
        })?;
        if let Some(c) = map.get(embedder) {
            if c.is_current() && c.dim() == opts.dim {
                return Ok(c.clone());
            }
        }
        map.remove(embedder);
        if unsynced::read(path) == Mark::EarlierBoot {
            return Err(VectorCacheError::InvalidOptions(
                "rows written before the machine went down may be lost".into(),
            ));
        }
        let c = Arc::new(VectorCache::open_read_only(path, opts)?);
        map.insert(embedder.to_string(), c.clone());
        Ok(c)
    }

    /// Drop every kept handle (their files are being replaced or removed).
    pub(super) fn clear(&self) {
        if let Ok(mut map) = self.by_embedder.lock() {
            map.clear();
        }
    }
}

/// The cache of `embedder`, rebuilt under the writer lock unless it is current by
/// then; `None` in a read-only store, which cannot rebuild (search goes on without
/// vectors).
fn rebuilt_cache(store: &Store, embedder: &str, dim: u32) -> Result<Option<VectorCache>> {
    let path = cache_path(&store.dir, embedder);
    let opts = options(dim, embedder);
    if !store.blob()?.is_writable() {
        tracing::warn!(cache = %path.display(), "read-only store: vector cache missing or stale, searching without vectors");
        return Ok(None);
    }
    let _writer = store.exclusive()?;
    let mut db = store.db()?;
    store.refresh_locked(&mut db)?;
    match VectorCache::open(&path, &opts) {
        Ok(c)
            if unsynced::read(&path) != Mark::EarlierBoot
                && Some(c.seq()) == tracker::read_meta(&db)?.map(|m| m.applied_seq) =>
        {
            Ok(Some(c))
        }
        _ => {
            rebuild_one(store, &db, embedder, dim)?;
            Ok(Some(VectorCache::open(&path, &opts)?))
        }
    }
}

pub(super) fn scan(cache: &VectorCache, query: &[f32], k: usize) -> Result<Vec<VectorHit>> {
    Ok(cache.search(query, k, Metric::Cosine, ScanMode::Auto { threads: 0 })?)
}

/// Top `k` of the cache with `delta` applied: the cache's rows for changed keys are
/// dropped (asking the cache for enough extra rows to make up for them), and the
/// changed keys' new vectors are scored exactly.
fn scan_with_delta(
    cache: &VectorCache,
    delta: &VectorDelta,
    query: &[f32],
    k: usize,
) -> Result<Vec<VectorHit>> {
    let shadowed = delta.changes.keys().filter(|h| cache.contains(**h)).count();
    let mut hits: Vec<VectorHit> = scan(cache, query, k + shadowed)?
        .into_iter()
        .filter(|h| !delta.changes.contains_key(&h.key_hash))
        .collect();
    let query_norm = vector_file::l2_norm(query);
    for (&key_hash, vector) in &delta.changes {
        if let Some(v) = vector {
            let score = score_f32(
                query,
                query_norm,
                v,
                vector_file::l2_norm(v),
                Metric::Cosine,
            );
            if score.is_finite() {
                hits.push(VectorHit { key_hash, score });
            }
        }
    }
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.key_hash.cmp(&b.key_hash))
    });
    hits.truncate(k);
    Ok(hits)
}
