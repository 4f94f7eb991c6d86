//! Vector caches built beside a batch applied while it is written (what an import
//! does): a new embedder's from the batch alone, and a copy of an existing cache for a
//! batch it would grow for. Each must answer exactly as the cache rebuilt from the
//! log does, follow every put and vector of the batch in order, and leave nothing
//! behind when the batch is abandoned.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use engram::store::{verify, Store, StoreOptions, WriteBatch};
use serde_json::Map;

use vectors::unit;

use crate::support::vectors;

fn open(dir: &Path) -> Store {
    Store::open(dir, StoreOptions::default(), engram::projections()).unwrap()
}

/// Files in `dir` whose name ends with `suffix`.
fn files_ending(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect()
}

/// Wait (at most 20 s) until the thread has started a cache beside the batch.
fn wait_for_ahead_file(dir: &Path) {
    let start = Instant::now();
    while files_ending(dir, ".vec.ahead").is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no cache was started beside the batch"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// 1 KiB a vector, so the vectors fill several of the writer's chunks.
const DIM: usize = 256;
const KEYS: u64 = 3000;

/// Puts of `KEYS` keys with 1 KiB bodies, then their vectors (several flushes of
/// each), as an import writes them.
fn write_puts_then_vectors(w: &mut engram::store::BatchWriter<'_>) {
    for i in 0..KEYS {
        w.put(&format!("file:v/{i}"), Map::new(), vec![b'x'; 1024])
            .unwrap();
    }
    for i in 0..KEYS {
        w.put_vector(&format!("file:v/{i}"), "e", &unit(i, DIM))
            .unwrap();
    }
}

/// Every key and score of the best 20 for a few queries.
fn answers(s: &Store, embedder: &str, dim: usize) -> Vec<Vec<(String, u32)>> {
    (0..8u64)
        .map(|q| {
            s.vector_search(embedder, &unit(q * 97 + 5, dim), 20)
                .unwrap()
                .into_iter()
                .map(|h| (h.key, h.score.to_bits()))
                .collect()
        })
        .collect()
}

#[test]
fn a_cache_built_beside_the_batch_answers_as_the_rebuilt_one_does() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let mut w = s.begin_batch().unwrap();
    w.apply_while_writing().unwrap();
    write_puts_then_vectors(&mut w);
    // Later in the same batch: keys put again without a vector lose theirs, and
    // keys given a second vector keep only the second.
    for i in 0..100 {
        w.put(&format!("file:v/{i}"), Map::new(), "changed")
            .unwrap();
    }
    for i in 100..200 {
        w.put_vector(&format!("file:v/{i}"), "e", &unit(i + 10_000, DIM))
            .unwrap();
    }
    // A second embedder.
    for i in 0..50 {
        w.put_vector(&format!("file:v/{i}"), "f", &unit(i, 8))
            .unwrap();
    }
    wait_for_ahead_file(dir.path());
    w.finish().unwrap();

    assert_eq!(files_ending(dir.path(), ".ahead"), Vec::<PathBuf>::new());
    let report = verify(dir.path()).unwrap();
    assert!(
        report.is_sound() && report.warnings.is_empty(),
        "{report:?}"
    );
    let hit = |q: Vec<f32>, embedder: &str| s.vector_search(embedder, &q, 1).unwrap().remove(0);
    // The re-put keys have no vector; the second vectors replaced the first.
    let top = hit(unit(7, DIM), "e");
    assert_ne!(top.key, "file:v/7");
    let top = hit(unit(150 + 10_000, DIM), "e");
    assert_eq!(top.key, "file:v/150");
    assert!(top.score > 0.999, "{top:?}");
    assert_ne!(hit(unit(150, DIM), "e").key, "file:v/150");
    assert_eq!(hit(unit(2999, DIM), "e").key, "file:v/2999");
    assert_eq!(hit(unit(3, 8), "f").key, "file:v/3");

    let (e, f) = (answers(&s, "e", DIM), answers(&s, "f", 8));
    s.rebuild().unwrap();
    assert_eq!(
        answers(&s, "e", DIM),
        e,
        "built beside the batch vs rebuilt"
    );
    assert_eq!(answers(&s, "f", 8), f);

    // The next batches follow the swapped-in cache as any other.
    drop(s);
    let s = open(dir.path());
    let mut b = WriteBatch::new();
    b.put_vector("file:v/0", "e", &unit(77_777, DIM)).unwrap();
    s.commit(&b).unwrap();
    assert_eq!(hit_key(&s, unit(77_777, DIM)), "file:v/0");
    let report = verify(dir.path()).unwrap();
    assert!(
        report.is_sound() && report.warnings.is_empty(),
        "{report:?}"
    );
}

fn hit_key(s: &Store, q: Vec<f32>) -> String {
    s.vector_search("e", &q, 1).unwrap().remove(0).key
}

#[test]
fn an_abandoned_batch_leaves_no_cache_built_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    {
        let mut w = s.begin_batch().unwrap();
        w.apply_while_writing().unwrap();
        write_puts_then_vectors(&mut w);
        wait_for_ahead_file(dir.path());
    }
    assert_eq!(files_ending(dir.path(), ".ahead"), Vec::<PathBuf>::new());
    assert_eq!(files_ending(dir.path(), ".vec"), Vec::<PathBuf>::new());
    let mut b = WriteBatch::new();
    b.put("file:v/1", Map::new(), "kept").unwrap();
    b.put_vector("file:v/1", "e", &unit(1, DIM)).unwrap();
    s.commit(&b).unwrap();
    assert_eq!(hit_key(&s, unit(1, DIM)), "file:v/1");
    assert_eq!(s.vector_spaces().unwrap()[0].count, 1);
    let report = verify(dir.path()).unwrap();
    assert!(
        report.is_sound() && report.warnings.is_empty(),
        "{report:?}"
    );
}

/// A store with ten vectors of "e", committed the usual way.
fn store_with_old_vectors(dir: &Path) -> Store {
    let s = open(dir);
    let mut b = WriteBatch::new();
    for i in 0..10 {
        b.put(&format!("file:old/{i}"), Map::new(), "old").unwrap();
        b.put_vector(&format!("file:old/{i}"), "e", &unit(50_000 + i, DIM))
            .unwrap();
    }
    s.commit(&b).unwrap();
    s
}

fn cache_inode(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let caches = files_ending(dir, ".vec");
    assert_eq!(caches.len(), 1, "{caches:?}");
    std::fs::metadata(&caches[0]).unwrap().ino()
}

/// A batch of `KEYS` new keys with vectors into a store with old vectors of "e",
/// which puts the old key `old/{again}` again without a vector: before the copy of
/// the cache begins (so the copy goes row by row, leaving it out), or after (so the
/// copy takes the old sections whole, and the put then drops its row). Either way
/// the cache keeps the other old vectors beside the batch's, and answers as the
/// rebuilt one does.
fn copy_beside_a_batch_putting_an_old_key_again(again: u64, before_the_copy: bool) {
    let dir = tempfile::tempdir().unwrap();
    let s = store_with_old_vectors(dir.path());
    let mut w = s.begin_batch().unwrap();
    w.apply_while_writing().unwrap();
    w.expect_vectors(KEYS);
    let old = format!("file:old/{again}");
    if before_the_copy {
        w.put(&old, Map::new(), "changed").unwrap();
    }
    write_puts_then_vectors(&mut w);
    if !before_the_copy {
        w.put(&old, Map::new(), "changed").unwrap();
    }
    wait_for_ahead_file(dir.path());
    w.finish().unwrap();
    assert_eq!(files_ending(dir.path(), ".ahead"), Vec::<PathBuf>::new());
    assert_eq!(hit_key(&s, unit(50_003, DIM)), "file:old/3");
    let hit = s
        .vector_search("e", &unit(50_000 + again, DIM), 1)
        .unwrap()
        .remove(0);
    assert!(hit.key != old || hit.score < 0.999, "{hit:?}");
    assert_eq!(hit_key(&s, unit(2500, DIM)), "file:v/2500");
    assert_eq!(s.vector_spaces().unwrap()[0].count, 9 + KEYS);
    let report = verify(dir.path()).unwrap();
    assert!(
        report.is_sound() && report.warnings.is_empty(),
        "{report:?}"
    );
    let e = answers(&s, "e", DIM);
    s.rebuild().unwrap();
    assert_eq!(answers(&s, "e", DIM), e);
}

#[test]
fn an_embedder_with_vectors_is_copied_beside_a_batch_it_would_grow_for() {
    copy_beside_a_batch_putting_an_old_key_again(5, true);
}

/// The copy that takes the old cache's sections whole (no key put before it began).
#[test]
fn an_embedder_with_vectors_is_copied_whole_when_the_batch_puts_no_old_key_first() {
    copy_beside_a_batch_putting_an_old_key_again(7, false);
}

#[test]
fn an_embedder_with_vectors_is_updated_in_place_after_a_small_batch() {
    let dir = tempfile::tempdir().unwrap();
    let s = store_with_old_vectors(dir.path());
    let before = cache_inode(dir.path());
    let mut w = s.begin_batch().unwrap();
    w.apply_while_writing().unwrap();
    // No expectation said, and room in the cache: no copy.
    for i in 0..100 {
        w.put(&format!("file:v/{i}"), Map::new(), vec![b'x'; 1024])
            .unwrap();
        w.put_vector(&format!("file:v/{i}"), "e", &unit(i, DIM))
            .unwrap();
    }
    w.finish().unwrap();
    assert_eq!(cache_inode(dir.path()), before, "the cache was replaced");
    assert_eq!(hit_key(&s, unit(50_003, DIM)), "file:old/3");
    assert_eq!(hit_key(&s, unit(42, DIM)), "file:v/42");
    let e = answers(&s, "e", DIM);
    s.rebuild().unwrap();
    assert_eq!(answers(&s, "e", DIM), e);
}

#[test]
fn an_embedder_whose_dimension_changes_in_the_batch_is_rebuilt_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let mut w = s.begin_batch().unwrap();
    w.apply_while_writing().unwrap();
    write_puts_then_vectors(&mut w);
    // The cache holds the latest dimension's vectors only, built beside the batch
    // or not: the thread gives this one up at its first vector of another dimension.
    for i in 0..50 {
        let dim = if i < 25 { 8 } else { 4 };
        w.put_vector(&format!("file:v/{i}"), "g", &unit(i, dim))
            .unwrap();
    }
    wait_for_ahead_file(dir.path());
    w.finish().unwrap();
    assert_eq!(files_ending(dir.path(), ".ahead"), Vec::<PathBuf>::new());
    let top = s.vector_search("g", &unit(40, 4), 1).unwrap().remove(0);
    assert_eq!(top.key, "file:v/40");
    let (e, g) = (answers(&s, "e", DIM), answers(&s, "g", 4));
    let latest = |k: &str| (25..50).any(|i| k == format!("file:v/{i}"));
    assert!(g.iter().flatten().all(|(k, _)| latest(k)), "{g:?}");
    // `verify` compares the cache with the tracker's vectors of that dimension.
    let report = verify(dir.path()).unwrap();
    assert!(
        report.is_sound() && report.warnings.is_empty(),
        "{report:?}"
    );
    s.rebuild().unwrap();
    assert_eq!(answers(&s, "e", DIM), e);
    assert_eq!(answers(&s, "g", 4), g);
}
