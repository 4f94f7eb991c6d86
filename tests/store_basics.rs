//! The store through its public API: commit, read, reopen, recovery, rebuild, compact.

use engram::memory::Memories;
use engram::store::{verify, Store, StoreOptions, WriteBatch};
use serde_json::Map;

fn open(dir: &std::path::Path) -> Store {
    Store::open(dir, StoreOptions::default(), engram::memory::projections()).unwrap()
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
    let store = Store::open(
        dir.path(),
        StoreOptions::default(),
        engram::memory::projections(),
    )
    .unwrap();
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
fn an_abandoned_batch_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let mut b = WriteBatch::new();
    b.put("file:kept", Map::new(), "kept").unwrap();
    s.commit(&b).unwrap();
    {
        let mut w = s.begin_batch().unwrap();
        for i in 0..3000 {
            w.put(&format!("file:gone/{i}"), Map::new(), vec![b'y'; 2048])
                .unwrap();
        }
    }
    assert!(s.get("file:gone/0").unwrap().is_none());
    let mut b = WriteBatch::new();
    b.put("file:after", Map::new(), "after").unwrap();
    s.commit(&b).unwrap();
    drop(s);
    let s = open(dir.path());
    assert_eq!(s.live_records().unwrap(), 2);
    assert!(verify(dir.path()).unwrap().is_sound());
}

fn unit(seed: u64, dim: usize) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut v: Vec<f32> = (0..dim)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect();
    let n = v.iter().map(|a| a * a).sum::<f32>().sqrt();
    v.iter_mut().for_each(|a| *a /= n);
    v
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
