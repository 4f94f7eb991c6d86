//! The store through its public API: commit, read, reopen, recovery, rebuild, compact.

use engram::memory::Memories;
use engram::store::{verify, Store, StoreOptions, WriteBatch};
use serde_json::Map;

use vectors::unit;

use crate::support::vectors;

fn open(dir: &std::path::Path) -> Store {
    Store::open(dir, StoreOptions::default(), engram::projections()).unwrap()
}

#[test]
fn put_get_delete_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = open(dir.path());
        assert!(s.open_report().created);
        let mut b = WriteBatch::new();
        b.put("file:a.rs", Map::new(), "fn a() {}").unwrap();
        b.put("file:b.rs", Map::new(), "fn b() {}").unwrap();
        let c = s.commit(&b).unwrap();
        assert_eq!((c.first_seq, c.commit_seq), (1, 3));
        let mut b = WriteBatch::new();
        b.delete("file:a.rs").unwrap();
        b.put("file:b.rs", Map::new(), "fn b2() {}").unwrap();
        s.commit(&b).unwrap();
        assert!(s.get("file:a.rs").unwrap().is_none());
        assert_eq!(s.get("file:b.rs").unwrap().unwrap().body, b"fn b2() {}");
    }
    let s = open(dir.path());
    assert!(!s.open_report().created);
    assert_eq!(s.open_report().replayed_batches, 0);
    assert!(s.get("file:a.rs").unwrap().is_none());
    assert_eq!(s.get("file:b.rs").unwrap().unwrap().body, b"fn b2() {}");
    assert_eq!(s.live_records().unwrap(), 1);
    let r = verify(dir.path()).unwrap();
    assert!(r.is_sound(), "{r:?}");
    assert_eq!(r.batches, 2);
}

#[test]
fn memories_remember_recall_forget() {
    let dir = tempfile::tempdir().unwrap();
    let m = Memories::open(dir.path()).unwrap();
    let a = m
        .remember(
            "Use WAL mode for tracker.db so readers never block",
            &["sqlite".into()],
            None,
        )
        .unwrap();
    let b = m
        .remember("parseHttpRequest must reject bodies over 1 MiB", &[], None)
        .unwrap();
    assert!(a.id.starts_with("mem:") && a.id.len() == 12);
    let hits = m.recall("tracker WAL", 5).unwrap();
    assert_eq!(hits[0].memory.id, a.id);
    let hits = m.recall("parse http request", 5).unwrap();
    assert_eq!(hits[0].memory.id, b.id);
    let hits = m.recall("\"NEAR( * OR -", 5).unwrap();
    assert!(hits.is_empty());
    assert_eq!(m.count().unwrap(), 2);
    assert!(m.forget(&a.id).unwrap());
    assert!(!m.forget(&a.id).unwrap());
    assert!(m.get(&a.id).unwrap().is_none());
    assert_eq!(m.list(10, 0).unwrap().len(), 1);
    drop(m);
    let store = Store::open(dir.path(), StoreOptions::default(), engram::projections()).unwrap();
    store.rebuild().unwrap();
    let m = Memories::from_store(store);
    assert_eq!(m.count().unwrap(), 1);
    assert_eq!(m.recall("parse request", 5).unwrap()[0].memory.id, b.id);
    let before = std::fs::metadata(dir.path().join("blob.dat"))
        .unwrap()
        .len();
    let rep = m.store().compact().unwrap();
    assert!(rep.bytes_after < before, "{rep:?}");
    assert_eq!(m.get(&b.id).unwrap().unwrap().text, b.text);
    assert!(verify(dir.path()).unwrap().is_sound());
}

#[test]
fn a_reader_opens_without_waiting_for_a_long_batch_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let writer_store = open(dir.path());
    let mut w = writer_store.begin_batch().unwrap();
    // Enough to be flushed to blob.dat before the commit is written.
    for i in 0..3000 {
        w.put(&format!("file:big/{i}"), Map::new(), vec![b'x'; 2048])
            .unwrap();
    }
    let reader = open(dir.path());
    assert_eq!(
        reader.live_records().unwrap(),
        0,
        "an uncommitted batch is invisible"
    );
    assert_eq!(
        reader.open_report().truncated_bytes,
        0,
        "a live writer's tail is not cut"
    );
    w.finish().unwrap();
    assert_eq!(reader.live_records().unwrap(), 3000);
    assert_eq!(
        reader.get("file:big/2999").unwrap().unwrap().body.len(),
        2048
    );
}

#[test]
fn a_batch_applied_while_written_is_invisible_until_it_commits() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let mut w = s.begin_batch().unwrap();
    w.apply_while_writing().unwrap();
    // Several flushes, so the applying thread has written to the tracker before the
    // readers below look.
    for i in 0..3000 {
        w.put(&format!("file:big/{i}"), Map::new(), vec![b'x'; 2048])
            .unwrap();
    }
    w.put_vector("file:big/0", "e", &[1.0, 0.0]).unwrap();
    // Neither this handle's readers nor a new handle (another process's open) wait
    // for the open tracker transaction, and neither sees any of it.
    assert_eq!(s.live_records().unwrap(), 0);
    let reader = open(dir.path());
    assert_eq!(reader.live_records().unwrap(), 0);
    assert_eq!(reader.open_report().truncated_bytes, 0);
    w.finish().unwrap();
    assert_eq!(s.live_records().unwrap(), 3000);
    assert_eq!(reader.live_records().unwrap(), 3000);
    assert_eq!(s.get("file:big/2999").unwrap().unwrap().body.len(), 2048);
    assert_eq!(s.vector_spaces().unwrap()[0].count, 1);
    drop((s, reader));
    // Reopened, the tracker agrees with the log.
    let s = open(dir.path());
    assert_eq!(s.live_records().unwrap(), 3000);
    assert!(verify(dir.path()).unwrap().is_sound());
}

/// A batch dropped before `finish`, written plainly or applied to the tracker while
/// written (its open transaction is rolled back), leaves nothing behind.
fn abandoned_batch_leaves_nothing_behind(apply_while_writing: bool) {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let mut b = WriteBatch::new();
    b.put("file:kept", Map::new(), "kept").unwrap();
    s.commit(&b).unwrap();
    {
        let mut w = s.begin_batch().unwrap();
        if apply_while_writing {
            w.apply_while_writing().unwrap();
        }
        for i in 0..3000 {
            w.put(&format!("file:gone/{i}"), Map::new(), vec![b'y'; 2048])
                .unwrap();
        }
    }
    assert!(s.get("file:gone/0").unwrap().is_none());
    let mut b = WriteBatch::new();
    b.put("file:after", Map::new(), "after").unwrap();
    s.commit(&b).unwrap();
    assert_eq!(s.live_records().unwrap(), 2);
    drop(s);
    let s = open(dir.path());
    assert_eq!(s.live_records().unwrap(), 2);
    assert!(verify(dir.path()).unwrap().is_sound());
}

#[test]
fn an_abandoned_batch_leaves_nothing_behind() {
    abandoned_batch_leaves_nothing_behind(false);
}

#[test]
fn a_batch_abandoned_while_applied_leaves_nothing_behind() {
    abandoned_batch_leaves_nothing_behind(true);
}

#[test]
fn vectors_are_searchable_and_follow_puts_deletes_compaction_and_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let dim = 32;
    let mut b = WriteBatch::new();
    for i in 0..200u64 {
        let key = format!("chunk:src/f{i}.rs:0");
        b.put(&key, Map::new(), format!("body {i}")).unwrap();
        b.put_vector(&key, "test-embedder", &unit(i, dim)).unwrap();
    }
    s.commit(&b).unwrap();
    let hits = s.vector_search("test-embedder", &unit(7, dim), 3).unwrap();
    assert_eq!(hits[0].key, "chunk:src/f7.rs:0");
    assert!(hits[0].score > 0.99);

    // A new value without a new vector makes the old vector stale: it is dropped.
    let mut b = WriteBatch::new();
    b.put("chunk:src/f7.rs:0", Map::new(), "changed").unwrap();
    b.delete("chunk:src/f8.rs:0").unwrap();
    s.commit(&b).unwrap();
    let keys = |s: &Store, q: u64| -> Vec<String> {
        s.vector_search("test-embedder", &unit(q, dim), 5)
            .unwrap()
            .into_iter()
            .map(|h| h.key)
            .collect()
    };
    assert!(!keys(&s, 7).contains(&"chunk:src/f7.rs:0".to_string()));
    assert!(!keys(&s, 8).contains(&"chunk:src/f8.rs:0".to_string()));
    assert_eq!(keys(&s, 9)[0], "chunk:src/f9.rs:0");
    assert!(verify(dir.path()).unwrap().is_sound());

    // Wrong dimension is a clear error.
    let e = s
        .vector_search("test-embedder", &[1.0, 0.0], 3)
        .unwrap_err()
        .to_string();
    assert!(e.contains("dimensions"), "{e}");

    s.compact().unwrap();
    assert_eq!(keys(&s, 9)[0], "chunk:src/f9.rs:0");
    drop(s);
    // A lost cache is rebuilt from the log.
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let p = entry.unwrap().path();
        if p.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("vectors-")
        {
            std::fs::remove_file(p).unwrap();
        }
    }
    let s = open(dir.path());
    assert_eq!(keys(&s, 10)[0], "chunk:src/f10.rs:0");
    s.rebuild().unwrap();
    assert_eq!(keys(&s, 11)[0], "chunk:src/f11.rs:0");
    let r = verify(dir.path()).unwrap();
    assert!(r.is_sound() && r.warnings.is_empty(), "{r:?}");
}

/// A search that finds the vector cache a few batches behind (a writer is applying its
/// batch right now, or died before it could) answers from the log at once, exactly as an
/// up-to-date cache would, while another handle holds the writer lock.
#[test]
fn a_search_beside_a_busy_writer_reads_a_stale_cache_up_to_date_without_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let a = open(dir.path());
    let dim = 32;
    let key = |i: u64| format!("chunk:src/f{i}.rs:0");
    let mut b = WriteBatch::new();
    for i in 0..200u64 {
        b.put(&key(i), Map::new(), format!("body {i}")).unwrap();
        b.put_vector(&key(i), "test-embedder", &unit(i, dim))
            .unwrap();
    }
    a.commit(&b).unwrap();
    let cache_files = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "vec"))
            .collect()
    };
    let saved: Vec<(std::path::PathBuf, Vec<u8>)> = cache_files()
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    assert_eq!(saved.len(), 1, "one embedder, one cache");

    // Two more batches: a changed vector, a value without a vector, a delete, new keys.
    let mut b = WriteBatch::new();
    b.put(&key(7), Map::new(), "changed").unwrap();
    b.put_vector(&key(7), "test-embedder", &unit(1007, dim))
        .unwrap();
    b.put(&key(8), Map::new(), "no vector any more").unwrap();
    b.delete(&key(9)).unwrap();
    b.put(&key(300), Map::new(), "new").unwrap();
    b.put_vector(&key(300), "test-embedder", &unit(300, dim))
        .unwrap();
    a.commit(&b).unwrap();
    let mut b = WriteBatch::new();
    b.put(&key(301), Map::new(), "newer").unwrap();
    b.put_vector(&key(301), "test-embedder", &unit(301, dim))
        .unwrap();
    a.commit(&b).unwrap();

    let queries = [1007u64, 7, 8, 9, 10, 300, 301];
    let answer = move |s: &Store| -> Vec<Vec<(String, f32)>> {
        queries
            .iter()
            .map(|&q| {
                s.vector_search("test-embedder", &unit(q, dim), 5)
                    .unwrap()
                    .into_iter()
                    .map(|h| (h.key, h.score))
                    .collect()
            })
            .collect()
    };
    let expected = answer(&a);
    assert_eq!(expected[0][0].0, key(7));
    assert_eq!(expected[5][0].0, key(300));
    assert_eq!(expected[6][0].0, key(301));

    // Put the cache back as it was after the first batch: two batches behind.
    for (p, bytes) in &saved {
        std::fs::write(p, bytes).unwrap();
    }
    let busy = a.begin_batch().unwrap();
    let b_dir = dir.path().to_path_buf();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let b = open(&b_dir);
        let _ = tx.send(answer(&b));
    });
    let got = rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("the search waited for the writer lock");
    assert_eq!(got.len(), expected.len());
    for (q, (g, e)) in got.iter().zip(&expected).enumerate() {
        let gk: Vec<&String> = g.iter().map(|(k, _)| k).collect();
        let ek: Vec<&String> = e.iter().map(|(k, _)| k).collect();
        assert_eq!(gk, ek, "query {}", queries[q]);
        for ((_, gs), (_, es)) in g.iter().zip(e) {
            assert!((gs - es).abs() < 1e-5, "query {}: {gs} vs {es}", queries[q]);
        }
    }
    for hits in &got {
        assert!(hits.iter().all(|(k, _)| k != &key(9) && k != &key(8)));
    }
    // Nobody repaired the cache: the answer came from the log.
    for (p, bytes) in &saved {
        assert_eq!(&std::fs::read(p).unwrap(), bytes);
    }
    drop(busy);
}

#[test]
fn a_key_is_found_by_its_hash_and_an_unknown_hash_finds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let mut b = WriteBatch::new();
    b.put("file:src/lib.rs", Map::new(), "x").unwrap();
    s.commit(&b).unwrap();
    let h = engram::key::hash64("file:src/lib.rs");
    assert_eq!(
        s.key_for_hash(h).unwrap().as_deref(),
        Some("file:src/lib.rs")
    );
    // SQLite's signed view of the same hash names the same key.
    assert_eq!(
        s.key_for_hash((h as i64) as u64).unwrap().as_deref(),
        Some("file:src/lib.rs")
    );
    assert_eq!(s.key_for_hash(h ^ 1).unwrap(), None);
}

/// A search keeps its read-only handle on a cache file between calls; whatever another
/// handle does to the file meanwhile (append, tombstone, grow, rebuild, compaction) the
/// next search answers from the file as it is now.
#[test]
fn a_kept_vector_cache_handle_follows_every_change_to_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let reader = open(dir.path());
    let writer = open(dir.path());
    let one_hot = |hot: usize| -> Vec<f32> {
        (0..64)
            .map(|i| if i == hot { 1.0 } else { 0.001 })
            .collect()
    };
    let put = |key: &str, hot: usize| {
        let mut b = WriteBatch::new();
        b.put(key, Map::new(), key.as_bytes().to_vec()).unwrap();
        b.put_vector(key, "e", &one_hot(hot)).unwrap();
        writer.commit(&b).unwrap();
    };
    let top = |hot: usize| {
        reader
            .vector_search("e", &one_hot(hot), 1)
            .unwrap()
            .first()
            .map(|m| m.key.clone())
    };
    put("doc:a", 0);
    assert_eq!(top(0).as_deref(), Some("doc:a"));
    assert_eq!(top(0).as_deref(), Some("doc:a")); // the kept handle
    put("doc:b", 1);
    assert_eq!(top(1).as_deref(), Some("doc:b"));
    let mut del = WriteBatch::new();
    del.delete("doc:b").unwrap();
    writer.commit(&del).unwrap();
    assert_ne!(top(1).as_deref(), Some("doc:b"));
    // Past the initial capacity (1024 slots): the file grows, renamed over the old one.
    for i in 0..1100 {
        put(&format!("doc:n{i}"), 2 + i % 60);
    }
    assert_eq!(
        reader.vector_search("e", &one_hot(5), 2000).unwrap().len(),
        1101
    );
    writer.rebuild().unwrap();
    assert_eq!(
        reader.vector_search("e", &one_hot(5), 2000).unwrap().len(),
        1101
    );
    writer.compact().unwrap();
    put("doc:last", 63);
    assert_eq!(top(63).as_deref(), Some("doc:last"));
    assert_eq!(
        reader.vector_search("e", &one_hot(5), 2000).unwrap().len(),
        1102
    );
}

#[test]
fn a_rebuild_keeps_the_data_and_gives_back_its_large_page_cache() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let mut b = WriteBatch::new();
    for i in 0..50 {
        b.put(
            &format!("file:f{i}.rs"),
            Map::new(),
            format!("fn f{i}() {{}}"),
        )
        .unwrap();
    }
    s.commit(&b).unwrap();
    let cache = |s: &Store| -> i64 {
        s.with_tracker(|db| Ok(db.query_row("PRAGMA cache_size", [], |r| r.get(0))?))
            .unwrap()
    };
    let normal = cache(&s);
    s.rebuild().unwrap();
    // The rebuild ran with a larger cache; the connection is back to the normal one.
    assert_eq!(cache(&s), normal);
    for i in 0..50 {
        assert_eq!(
            s.get(&format!("file:f{i}.rs")).unwrap().unwrap().body,
            format!("fn f{i}() {{}}").into_bytes()
        );
    }
    assert!(verify(dir.path()).unwrap().is_sound());
}

#[test]
fn a_vector_cache_from_before_the_columns_or_the_sign_bits_is_rebuilt_with_them_and_searched() {
    use engram::format::vector_file::{check_header_bytes, VectorFileHeader};
    use engram::store::vector_cache::{embedder_id, VectorCache, VectorCacheOptions};
    use zerocopy::IntoBytes;

    let dir = tempfile::tempdir().unwrap();
    let sparse = |hot: usize| -> Vec<f32> {
        (0..64)
            .map(|i| {
                if i == hot || i == (hot + 7) % 64 {
                    1.0
                } else {
                    0.0
                }
            })
            .collect()
    };
    {
        let s = open(dir.path());
        let mut b = WriteBatch::new();
        for i in 0..40 {
            let key = format!("doc:{i}");
            b.put(&key, Map::new(), key.as_bytes().to_vec()).unwrap();
            b.put_vector(&key, "e", &sparse(i)).unwrap();
        }
        s.commit(&b).unwrap();
    }
    let cache = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "vec"))
        .expect("the store made a vector cache");
    // What an engram of format version 1 left (i8 rows, no columns) and then what one
    // of version 2 left (columns, no sign bits), each with an old stamp.
    for (version, columns) in [(1u32, false), (2, true)] {
        let old = VectorCacheOptions {
            dim: 64,
            embedder_id: embedder_id("e"),
            with_i8: true,
            with_i8_columns: columns,
            with_bits: false,
            initial_capacity: 8,
        };
        let mut c = VectorCache::create(&cache, &old).unwrap();
        c.upsert(1, &sparse(3)).unwrap();
        drop(c);
        let mut bytes = std::fs::read(&cache).unwrap();
        let mut header = check_header_bytes(&bytes).unwrap();
        header.version = version.into();
        header.seal();
        bytes[..64].copy_from_slice(header.as_bytes());
        std::fs::write(&cache, &bytes).unwrap();
        assert_eq!(check_header_bytes(&bytes).unwrap().version.get(), version);

        let s = open(dir.path());
        let top = s.vector_search("e", &sparse(12), 1).unwrap();
        assert_eq!(top[0].key, "doc:12");
        let header: VectorFileHeader = check_header_bytes(&std::fs::read(&cache).unwrap()).unwrap();
        assert_eq!(header.version.get(), 3, "rebuilt from version {version}");
        assert!(header.has_i8_columns() && header.has_bits());
        assert_eq!(s.vector_search("e", &sparse(30), 40).unwrap().len(), 40);
    }
}

/// `embedders.count` follows every way a vector row comes and goes — a new vector,
/// one replaced, one made stale by a new value, a deleted key — and the tracker has
/// no triggers (tracker.md: a trigger makes FTS5 flush once per record).
#[test]
fn vector_counts_follow_puts_replacements_and_deletes_without_triggers() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let counts = |s: &Store| -> Vec<(String, u64)> {
        let mut v: Vec<_> = s
            .vector_spaces()
            .unwrap()
            .into_iter()
            .map(|sp| (sp.embedder, sp.count))
            .collect();
        v.sort();
        v
    };
    let commit = |f: &dyn Fn(&mut WriteBatch)| {
        let mut b = WriteBatch::new();
        f(&mut b);
        s.commit(&b).unwrap();
        assert!(verify(dir.path()).unwrap().is_sound());
    };
    commit(&|b| {
        for k in ["chunk:a", "chunk:b"] {
            b.put(k, Map::new(), "text").unwrap();
            b.put_vector(k, "e1", &[1.0, 0.0]).unwrap();
        }
        b.put_vector("chunk:a", "e2", &[0.0, 1.0, 0.0]).unwrap();
    });
    assert_eq!(counts(&s), vec![("e1".into(), 2), ("e2".into(), 1)]);
    // Replacing a key's vector keeps the count.
    commit(&|b| {
        b.put_vector("chunk:a", "e1", &[0.0, 1.0]).unwrap();
    });
    assert_eq!(counts(&s), vec![("e1".into(), 2), ("e2".into(), 1)]);
    // A new value makes both of a's vectors stale; deleting b drops its vector.
    commit(&|b| {
        b.put("chunk:a", Map::new(), "new text").unwrap();
        b.delete("chunk:b").unwrap();
    });
    assert_eq!(counts(&s), vec![]);
    // A put and its vector in one batch: the vector is the value's, not stale.
    commit(&|b| {
        b.put("chunk:c", Map::new(), "text").unwrap();
        b.put_vector("chunk:c", "e2", &[1.0, 0.0, 0.0]).unwrap();
    });
    assert_eq!(counts(&s), vec![("e2".into(), 1)]);
    let triggers: i64 = s
        .with_tracker(|db| {
            Ok(db.query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'trigger'",
                [],
                |r| r.get(0),
            )?)
        })
        .unwrap();
    assert_eq!(triggers, 0);
    // A rebuild from the log counts the same.
    drop(s);
    std::fs::remove_file(dir.path().join("tracker.db")).unwrap();
    let s = open(dir.path());
    assert_eq!(counts(&s), vec![("e2".into(), 1)]);
}
