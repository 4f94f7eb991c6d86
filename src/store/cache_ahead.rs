//! Building vector caches beside a batch applied while it is written.
//!
//! An import into a store that had no vectors of its embedder yet used to end with a
//! rebuild of that embedder's cache from the tracker and the log, after the commit,
//! on one core: 80-100 ms of a 20,000-memory import (half of it page faults on the
//! new file), then a flush of the whole file and a directory sync. When the batch is
//! applied to the tracker while it is written ([`super::apply_ahead`]), this thread
//! takes the same chunks of records and builds the cache as they come, into a file
//! beside the cache's (`<cache>.ahead`), on a core the writing leaves idle. After
//! the commit the writer stamps it and renames it over the cache's name.
//!
//! An embedder with no live vector when the batch began gets a cache built from the
//! batch alone: its cache as of the batch's end is exactly what the batch leaves. One
//! that had vectors gets a copy of its cache as the batch began, but only for a large
//! batch (one the cache would grow for, or a quarter of its rows or more): a second
//! import otherwise spent 192 ms after its commit updating the cache, lock held (20,000
//! memories into a store of 20,000). Records are applied in log order as the
//! incremental path applies them (a put or a tombstone drops its key's vector; a
//! vector upserts).
//!
//! Must never: write a cache file by its own name (the writer swaps the built file
//! in only once the batch is committed), nor leave a `.ahead` file behind when the
//! batch is abandoned. A built cache carries no stamp until the writer gives it one.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::error::{Result, StoreError};
use super::tracker;
use super::unsynced;
use super::vector_cache::{embedder_id, VectorCache, VectorCacheOptions};
use crate::format::{decode_record, RecordKind};

/// Chunks queued before the writer waits for this thread (as for the tracker's).
const QUEUED: usize = 4;

/// Keys a batch may put or delete before its first vector of an embedder that had
/// vectors, for that embedder's cache still to be copied beside it (each is kept in
/// memory until then).
const MAX_DROPPED_BEFORE_COPY: usize = 1 << 20;

/// Where an embedder's cache is built beside a batch.
pub(super) fn ahead_path(cache: &Path) -> PathBuf {
    let mut name = cache.as_os_str().to_owned();
    name.push(".ahead");
    PathBuf::from(name)
}

/// One embedder's cache built from the batch, at [`ahead_path`] of `cache_path`.
pub(super) struct BuiltCache {
    pub cache: VectorCache,
    pub cache_path: PathBuf,
    /// Its final name carries this boot's mark, made durable before any row was
    /// written: the rows need no flush (see `super::unsynced`).
    pub marked: bool,
}

/// What the thread built, by embedder. An embedder it gave up on (a vector of
/// another dimension, an error) is absent: the writer rebuilds that one as before.
pub(super) type Built = HashMap<String, BuiltCache>;

/// What the thread needs to know of the store.
pub(super) struct Setup {
    pub dir: PathBuf,
    /// Embedders with a live vector when the batch began: built here only as a copy
    /// of their cache, and only for a large batch (see `begin_copy`).
    pub had_vectors: HashSet<String>,
    /// The tracker's applied sequence number when the batch began: the stamp of a
    /// cache that is current.
    pub applied_seq: u64,
    /// Whether rows must be durable before the stamp (durability `always`).
    pub always: bool,
}

/// The building thread of one writer; see the module doc.
pub(super) struct CacheAhead {
    chunks: Option<SyncSender<Arc<Vec<u8>>>>,
    thread: Option<JoinHandle<Built>>,
    abandon: Arc<AtomicBool>,
    /// How many vectors the writer expects the batch to carry (0: not said).
    expected: Arc<AtomicU64>,
}

impl CacheAhead {
    pub fn start(setup: Setup) -> Result<CacheAhead> {
        let (chunks, rx) = sync_channel(QUEUED);
        let abandon = Arc::new(AtomicBool::new(false));
        let expected = Arc::new(AtomicU64::new(0));
        let (stop, hint) = (abandon.clone(), expected.clone());
        let thread = std::thread::Builder::new()
            .name("engram-vectors".into())
            .spawn(move || run(&setup, rx, &stop, &hint))
            .map_err(|e| StoreError::Invalid(format!("no thread to build vectors: {e}")))?;
        Ok(CacheAhead {
            chunks: Some(chunks),
            thread: Some(thread),
            abandon,
            expected,
        })
    }

    /// See [`super::BatchWriter::expect_vectors`].
    pub fn expect_vectors(&self, n: u64) {
        self.expected.store(n, Ordering::Relaxed);
    }

    /// Hand over whole records just written. A thread that has stopped is no error:
    /// the writer then rebuilds after the commit, as it would without this thread.
    pub fn send(&mut self, bytes: Arc<Vec<u8>>) {
        if let Some(chunks) = &self.chunks {
            if chunks.send(bytes).is_err() {
                self.chunks = None;
            }
        }
    }

    /// Wait until every chunk sent is applied; what was built.
    pub fn join(mut self) -> Built {
        drop(self.chunks.take());
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(built)) => built,
            _ => Built::new(),
        }
    }
}

impl Drop for CacheAhead {
    fn drop(&mut self) {
        // Abandoned (the batch failed or was dropped): stop, and remove what was built.
        self.abandon.store(true, Ordering::Relaxed);
        drop(self.chunks.take());
        if let Some(Ok(built)) = self.thread.take().map(JoinHandle::join) {
            discard(built);
        }
    }
}

/// Remove built files the writer did not swap in.
pub(super) fn discard(built: Built) {
    built.into_values().for_each(discard_one);
}

/// Close a cache being built and remove its file.
fn discard_one(b: BuiltCache) {
    let path = ahead_path(&b.cache_path);
    drop(b.cache);
    let _ = std::fs::remove_file(&path);
}

/// Remove the `.ahead` files of a writer that died mid-batch: only the writer
/// holding the lock builds one, and this thread runs under it.
fn remove_left_behind(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("vectors-") && name.ends_with(".ahead") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

fn run(
    setup: &Setup,
    chunks: Receiver<Arc<Vec<u8>>>,
    abandon: &AtomicBool,
    expected: &AtomicU64,
) -> Built {
    remove_left_behind(&setup.dir);
    // By embedder: `None` once given up (its file removed).
    let mut states: HashMap<String, Option<BuiltCache>> = HashMap::new();
    // Puts seen so far: a vector mostly belongs to a key put in the same batch, so
    // this (or the writer's expectation, if larger) sizes a new cache once instead
    // of growing it, which rewrites and syncs the file.
    let mut puts = 0u64;
    // Keys put or deleted so far in the batch, while a copy of an existing cache may
    // still begin: the copy is of the cache as the batch began, so their old rows
    // are left out of it.
    let mut dropped: HashSet<u64> = HashSet::new();
    let mut may_copy = !setup.had_vectors.is_empty();
    for bytes in chunks {
        if abandon.load(Ordering::Relaxed) {
            break;
        }
        let mut at = 0usize;
        while at < bytes.len() {
            // The tracker's applying thread reports a record that does not decode;
            // here it only ends the building.
            let Ok(rec) = decode_record(&bytes[at..]) else {
                give_up_all(&mut states);
                return Built::new();
            };
            at += rec.record_len();
            match rec.kind {
                RecordKind::Put | RecordKind::Tombstone => {
                    puts += 1;
                    if may_copy {
                        dropped.insert(rec.key_hash());
                        // Past this many, a copy would begin too late to be worth it.
                        may_copy = dropped.len() < MAX_DROPPED_BEFORE_COPY;
                    }
                    for state in states.values_mut() {
                        if let Some(b) = state {
                            if b.cache.remove(rec.key_hash()).is_err() {
                                give_up(state);
                            }
                        }
                    }
                }
                RecordKind::Vector => {
                    let Ok((meta, _)) = tracker::record_meta(&rec) else {
                        continue;
                    };
                    let Some(embedder) = meta.get("embedder").and_then(|v| v.as_str()) else {
                        continue;
                    };
                    if rec.body.len() % 4 != 0 {
                        continue;
                    }
                    let dim = (rec.body.len() / 4) as u32;
                    if !states.contains_key(embedder) {
                        let expected = expected.load(Ordering::Relaxed);
                        let state = if !setup.had_vectors.contains(embedder) {
                            begin(setup, embedder, dim, puts.max(expected))
                        } else if may_copy {
                            begin_copy(setup, embedder, dim, expected, &dropped)
                        } else {
                            None
                        };
                        states.insert(embedder.to_string(), state);
                        // Once every embedder that had vectors has begun (or not),
                        // no copy is left to begin: stop keeping the keys.
                        if may_copy && setup.had_vectors.iter().all(|e| states.contains_key(e)) {
                            may_copy = false;
                            dropped = HashSet::new();
                        }
                    }
                    let Some(state) = states.get_mut(embedder) else {
                        continue;
                    };
                    if let Some(b) = state {
                        let ok = b.cache.dim() == dim
                            && b.cache
                                .upsert(rec.key_hash(), &super::vectors::f32s(rec.body))
                                .is_ok();
                        if !ok {
                            // Another dimension under the same name, or a failed
                            // write: the rebuild after the commit decides.
                            give_up(state);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    if abandon.load(Ordering::Relaxed) {
        give_up_all(&mut states);
        return Built::new();
    }
    states
        .into_iter()
        .filter_map(|(e, s)| Some((e, s?)))
        .collect()
}

/// Start `embedder`'s cache: its final name marked first (durability `always`),
/// then an empty file sized for a quarter more than `rows` vectors.
fn begin(setup: &Setup, embedder: &str, dim: u32, rows: u64) -> Option<BuiltCache> {
    let cache_path = super::vectors::cache_path(&setup.dir, embedder);
    let marked = if setup.always {
        match unsynced::ensure(&cache_path, unsynced::read(&cache_path)) {
            Ok(m) => m,
            Err(_) => return None,
        }
    } else {
        false
    };
    let opts = VectorCacheOptions {
        dim,
        embedder_id: embedder_id(embedder),
        initial_capacity: rows.max(1024) + rows / 4,
        ..super::vectors::options(dim, embedder)
    };
    match VectorCache::create(&ahead_path(&cache_path), &opts) {
        Ok(cache) => Some(BuiltCache {
            cache,
            cache_path,
            marked,
        }),
        Err(_) => {
            let _ = std::fs::remove_file(ahead_path(&cache_path));
            None
        }
    }
}

/// For an embedder that had vectors: a copy of its cache as the batch began, to which
/// the batch is then applied. Only for a batch large enough that the writer would
/// otherwise spend long on it after the commit: one the cache would have to grow for
/// (which rewrites it whole anyway), or one bringing at least a quarter as many
/// vectors as the cache holds, as the writer says it will ([`CacheAhead::expect_vectors`]).
/// Only a cache current at the batch's start: stamped with the tracker's applied
/// sequence number, not marked by an earlier boot, needing no repair.
fn begin_copy(
    setup: &Setup,
    embedder: &str,
    dim: u32,
    expected: u64,
    dropped: &HashSet<u64>,
) -> Option<BuiltCache> {
    let cache_path = super::vectors::cache_path(&setup.dir, embedder);
    if expected == 0 || unsynced::read(&cache_path) == unsynced::Mark::EarlierBoot {
        return None;
    }
    let old =
        VectorCache::open_read_only(&cache_path, &super::vectors::options(dim, embedder)).ok()?;
    if old.seq() != setup.applied_seq {
        return None;
    }
    let live = old.len();
    let grows = live + expected > old.capacity();
    if !grows && expected < live / 4 {
        return None;
    }
    let mut built = begin(setup, embedder, dim, live + expected)?;
    // Section by section where the copy keeps every slot (no tombstone, no key the
    // batch already put): the same file as the row-by-row copy, without computing
    // each row's codes again.
    let whole = match dropped.iter().any(|&key| old.contains(key)) {
        true => Ok(false),
        false => built.cache.copy_slots_from(&old),
    };
    let copied = whole.and_then(|whole| match whole {
        true => Ok(()),
        false => old.for_each_live(|key, row| match dropped.contains(&key) {
            true => Ok(()),
            false => built.cache.upsert(key, row),
        }),
    });
    if copied.is_err() {
        discard_one(built);
        return None;
    }
    Some(built)
}

/// Drop a cache being built, and its file.
fn give_up(state: &mut Option<BuiltCache>) {
    if let Some(b) = state.take() {
        discard_one(b);
    }
}

fn give_up_all(states: &mut HashMap<String, Option<BuiltCache>>) {
    for state in states.values_mut() {
        give_up(state);
    }
}
