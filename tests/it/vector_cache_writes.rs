//! How writers keep the vector caches: without a flush per commit
//! (`format-spec/vector-cache.md`, "Durability in a store") — a durable commit marks
//! the cache with this boot's id instead of flushing it; a clean close flushes it and
//! removes the mark; a cache marked by an earlier boot is never trusted, since rows it
//! claims may have been lost when the machine went down, and is rebuilt from the log —
//! and through a handle kept between commits, which must notice commits made through
//! any other handle.

use std::path::{Path, PathBuf};

use engram::store::{Store, StoreOptions, WriteBatch};
use serde_json::Map;

const EMBEDDER: &str = "test-embedder";

fn open(dir: &Path) -> Store {
    Store::open(dir, StoreOptions::default(), Vec::new()).unwrap()
}

/// A unit vector along axis `i` of 8.
fn axis(i: usize) -> Vec<f32> {
    let mut v = vec![0.0; 8];
    v[i] = 1.0;
    v
}

fn write_vectors(store: &Store) {
    for i in 0..8 {
        let key = format!("file:v{i}");
        let mut b = WriteBatch::new();
        b.put(&key, Map::new(), b"x".to_vec()).unwrap();
        b.put_vector(&key, EMBEDDER, &axis(i)).unwrap();
        store.commit(&b).unwrap();
    }
}

fn cache_file(dir: &Path) -> PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "vec"))
        .expect("a vector cache file")
}

fn mark_of(cache: &Path) -> PathBuf {
    let mut name = cache.as_os_str().to_owned();
    name.push(".unsynced");
    PathBuf::from(name)
}

fn nearest(store: &Store, i: usize) -> String {
    let hits = store.vector_search(EMBEDDER, &axis(i), 1).unwrap();
    hits.first().map(|h| h.key.clone()).unwrap_or_default()
}

fn this_boot() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

#[test]
fn commits_mark_the_cache_and_a_clean_close_flushes_and_unmarks_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    write_vectors(&store);
    let cache = cache_file(dir.path());
    match this_boot() {
        Some(boot) => assert_eq!(
            std::fs::read_to_string(mark_of(&cache)).unwrap().trim(),
            boot,
            "a durable commit leaves this boot's mark instead of flushing"
        ),
        None => assert!(
            !mark_of(&cache).exists(),
            "no boot id: flushed every commit"
        ),
    }
    for i in 0..8 {
        assert_eq!(nearest(&store, i), format!("file:v{i}"));
    }
    drop(store);
    assert!(!mark_of(&cache).exists(), "a clean close removes the mark");
}

#[test]
fn a_cache_marked_by_an_earlier_boot_is_rebuilt_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    write_vectors(&open(dir.path()));
    let cache = cache_file(dir.path());
    // The machine went down after the last commits: their rows never reached the
    // disk (here: everything after the 64-byte header zeroed, the header and its
    // stamp kept), and the mark an earlier boot left says so.
    let mut bytes = std::fs::read(&cache).unwrap();
    for b in &mut bytes[64..] {
        *b = 0;
    }
    std::fs::write(&cache, &bytes).unwrap();
    std::fs::write(mark_of(&cache), "an-earlier-boot").unwrap();

    let store = open(dir.path());
    for i in 0..8 {
        assert_eq!(
            nearest(&store, i),
            format!("file:v{i}"),
            "searched a cache whose rows were lost"
        );
    }
    assert_ne!(
        std::fs::read_to_string(mark_of(&cache)).ok().as_deref(),
        Some("an-earlier-boot"),
        "the earlier boot's mark outlived the rebuild"
    );
    // Writing goes on from the rebuilt cache.
    let mut b = WriteBatch::new();
    b.put("file:v0", Map::new(), b"y".to_vec()).unwrap();
    b.put_vector("file:v0", EMBEDDER, &axis(3)).unwrap();
    store.commit(&b).unwrap();
    let hits = store.vector_search(EMBEDDER, &axis(3), 2).unwrap();
    let keys: Vec<&str> = hits.iter().map(|h| h.key.as_str()).collect();
    assert!(
        keys.contains(&"file:v0") && keys.contains(&"file:v3"),
        "{keys:?}"
    );
}

fn put_vector(store: &Store, key: &str, v: &[f32]) {
    let mut b = WriteBatch::new();
    b.put(key, Map::new(), b"x".to_vec()).unwrap();
    b.put_vector(key, EMBEDDER, v).unwrap();
    store.commit(&b).unwrap();
}

#[test]
fn a_kept_cache_handle_follows_commits_made_through_another_handle() {
    let dir = tempfile::tempdir().unwrap();
    // Two handles, as two processes would have: each keeps its own writer handle on
    // the cache file between its commits.
    let (a, b) = (open(dir.path()), open(dir.path()));
    for i in 0..4 {
        put_vector(&a, &format!("file:v{i}"), &axis(i));
    }
    put_vector(&b, "file:v4", &axis(4));
    put_vector(&b, "file:v5", &axis(5));
    put_vector(&b, "file:v0", &axis(7)); // v0 moves to a new slot
                                         // Had `a` reused its handle as it was, it would append over `b`'s slots and
                                         // believe v0 still lives in slot 0.
    let mut del = WriteBatch::new();
    del.delete("file:v1").unwrap();
    a.commit(&del).unwrap();
    put_vector(&a, "file:v6", &axis(6));
    put_vector(&a, "file:v2", &axis(2)); // a replacement through `a` again

    let expect = [
        (0, None),
        (1, None),
        (2, Some("file:v2")),
        (3, Some("file:v3")),
        (4, Some("file:v4")),
        (5, Some("file:v5")),
        (6, Some("file:v6")),
        (7, Some("file:v0")),
    ];
    let fresh = open(dir.path());
    for store in [&a, &b, &fresh] {
        for (i, key) in expect {
            let got = nearest(store, i);
            match key {
                Some(key) => assert_eq!(got, key, "axis {i}"),
                None => assert_ne!(got, "file:v1", "axis {i}: a deleted vector found"),
            }
        }
        let all = store.vector_search(EMBEDDER, &axis(0), 20).unwrap();
        let mut keys: Vec<&str> = all.iter().map(|h| h.key.as_str()).collect();
        keys.sort();
        assert_eq!(
            keys,
            ["file:v0", "file:v2", "file:v3", "file:v4", "file:v5", "file:v6"],
            "the live vectors"
        );
    }
}

/// The stamp in a cache file's header (`seq`, bytes 40..48).
fn stamp(cache: &Path) -> u64 {
    let bytes = std::fs::read(cache).unwrap();
    u64::from_le_bytes(bytes[40..48].try_into().unwrap())
}

#[test]
fn a_kept_cache_handle_is_dropped_when_another_handle_replaces_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (open(dir.path()), open(dir.path()));
    for i in 0..4 {
        put_vector(&a, &format!("file:v{i}"), &axis(i));
    }
    // `b` rebuilds the tracker and every cache from the log: a new cache file, with
    // the same stamp as the one `a` last wrote.
    b.rebuild().unwrap();
    put_vector(&a, "file:v4", &axis(4));
    // `a` wrote its commit into the file the path names now, not into the one it
    // had kept (which nobody reads any more).
    let cache = cache_file(dir.path());
    assert_eq!(stamp(&cache), a.meta().unwrap().applied_seq);
    let fresh = open(dir.path());
    for i in 0..5 {
        assert_eq!(nearest(&fresh, i), format!("file:v{i}"));
    }
}
