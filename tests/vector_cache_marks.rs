//! Vector caches written without a flush per commit (`format-spec/vector-cache.md`,
//! "Durability in a store"): a durable commit marks the cache with this boot's id
//! instead of flushing it; a clean close flushes it and removes the mark; a cache
//! marked by an earlier boot is never trusted, since rows it claims may have been
//! lost when the machine went down, and is rebuilt from the log.

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
