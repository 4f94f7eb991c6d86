//! A sealed store's vector caches: decrypted into this process's memory, never
//! written to a file (format-spec/encryption.md, "Vector caches of a sealed store").
//!
//! Owns: one in-memory [`VectorCache`] per embedder, built from the log on the first
//! search and kept current by replaying the batches committed after its stamp; the
//! key checks that come before any vector is opened. Must never: write a vector, a
//! cache or anything derived from one to disk, or search a cache of another log
//! generation.

use std::collections::HashMap;
use std::sync::Mutex;

use super::error::{Result, StoreError};
use super::seal::VectorKey;
use super::tracker::{self, TrackerMeta};
use super::vector_cache::{embedder_id, VectorCache, VectorCacheOptions};
use super::vector_delta::VectorDelta;
use super::vector_scan::VectorHit;
use super::vectors;
use super::Store;

/// The decrypted caches of one store handle, by embedder.
#[derive(Default)]
pub(super) struct SealedCaches {
    by_embedder: Mutex<HashMap<String, Entry>>,
}

struct Entry {
    cache: VectorCache,
    /// The log generation the cache's stamp refers to.
    generation: u64,
}

impl SealedCaches {
    /// Forget every cache (after the store's key or log changed under this handle).
    pub(super) fn clear(&self) {
        if let Ok(mut map) = self.by_embedder.lock() {
            map.clear();
        }
    }
}

impl Store {
    /// The key for vectors sealed under `key_id`: the handle's key, if it is that one.
    pub(super) fn sealing_key(&self, key_id: &str) -> Result<VectorKey> {
        let key = self
            .vector_key
            .read()
            .map_err(|_| StoreError::Invalid("vector key poisoned by a panic".into()))?
            .clone();
        match key {
            Some(k) if k.id_hex() == key_id => Ok(k),
            Some(k) => Err(super::SealError::WrongKey {
                expected: key_id.to_string(),
                found: format!("the key given is {}", k.id_hex()),
            }
            .into()),
            None => Err(StoreError::KeyRequired {
                key_id: key_id.to_string(),
            }),
        }
    }

    /// The key id this store's vectors are sealed under, or `None` for a plain store.
    pub fn sealed_key_id(&self) -> Result<Option<String>> {
        tracker::sealed_key_id(&*self.db()?)
    }
}

/// Top `k` of `embedder`'s vectors in a sealed store, as of the tracker state `meta`.
pub(super) fn search(
    store: &Store,
    key_id: &str,
    embedder: &str,
    dim: u32,
    meta: &TrackerMeta,
    query: &[f32],
    k: usize,
) -> Result<Vec<VectorHit>> {
    // Checked first, so a wrong or missing key is refused even when a cache is warm.
    let key = store.sealing_key(key_id)?;
    let mut caches = store
        .sealed_caches
        .by_embedder
        .lock()
        .map_err(|_| StoreError::Invalid("sealed vector caches poisoned by a panic".into()))?;
    // A cache ahead of `meta` (another search in this process caught up since) is
    // at least as current, and fine to use.
    let usable = caches
        .get(embedder)
        .is_some_and(|e| e.generation == meta.generation && e.cache.dim() == dim);
    if !usable {
        caches.remove(embedder);
    }
    if let Some(entry) = caches.get_mut(embedder) {
        if entry.cache.seq() < meta.applied_seq && !catch_up(store, entry, embedder, dim)? {
            caches.remove(embedder);
        }
    }
    if !caches.contains_key(embedder) {
        let entry = build(store, &key, embedder, dim)?;
        caches.insert(embedder.to_string(), entry);
    }
    match caches.get(embedder) {
        Some(entry) => vectors::scan(&entry.cache, query, k),
        None => Ok(Vec::new()),
    }
}

/// Bring `entry` level with the tracker by replaying the batches it missed; `false`
/// when they are too many to replay (the caller rebuilds).
fn catch_up(store: &Store, entry: &mut Entry, embedder: &str, dim: u32) -> Result<bool> {
    let (meta, view) = store.read_with(|db| {
        tracker::read_meta(db)?
            .ok_or_else(|| StoreError::Invalid("tracker.db is not initialised".into()))
    })?;
    if meta.generation != entry.generation {
        return Ok(false);
    }
    let Some(delta) = VectorDelta::since(
        store,
        view.snapshot(),
        meta.last_commit,
        entry.cache.seq(),
        embedder,
        dim as usize,
    )?
    else {
        return Ok(false);
    };
    for (key_hash, vector) in delta.changes {
        match vector {
            Some(v) => entry.cache.upsert(key_hash, &v)?,
            None => {
                entry.cache.remove(key_hash)?;
            }
        }
    }
    entry.cache.set_seq(meta.applied_seq)?;
    Ok(true)
}

/// Decrypt every live vector of `embedder` into a new in-memory cache.
fn build(store: &Store, key: &VectorKey, embedder: &str, dim: u32) -> Result<Entry> {
    let ((rows, meta), view) = store.read_with(|db| {
        let mut stmt = db.prepare_cached(
            "SELECT key_hash, offset FROM vectors WHERE embedder = ?1 AND dim = ?2 ORDER BY seq",
        )?;
        let rows = stmt
            .query_map(rusqlite::params![embedder, dim as i64], |r| {
                Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let meta = tracker::read_meta(db)?
            .ok_or_else(|| StoreError::Invalid("tracker.db is not initialised".into()))?;
        Ok((rows, meta))
    })?;
    let opts = VectorCacheOptions {
        dim,
        embedder_id: embedder_id(embedder),
        with_i8: true,
        with_i8_columns: true,
        with_bits: true,
        initial_capacity: (rows.len() as u64 + rows.len() as u64 / 4).max(1024),
    };
    let mut cache = VectorCache::in_memory(&opts)?;
    for (key_hash, offset) in rows {
        let rec = view.snapshot().record_at(offset)?;
        let values = if super::seal::is_sealed(&rec) {
            Some(key.open(&rec, offset)?)
        } else {
            store.vector_values(&rec, offset, dim as usize)?
        };
        if let Some(v) = values.filter(|v| v.len() == dim as usize) {
            cache.upsert(key_hash, &v)?;
        }
    }
    cache.set_seq(meta.applied_seq)?;
    Ok(Entry {
        cache,
        generation: meta.generation,
    })
}
