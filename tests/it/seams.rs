//! One test per seam the review of the store found (seams.md sections 2-3), each of
//! which failed before its fix.

use std::path::Path;

use engram::memory::{Memories, Memory};
use engram::store::{Store, StoreError, StoreOptions, WriteBatch};
use serde_json::Map;

fn open(dir: &Path) -> Store {
    Store::open(dir, StoreOptions::default(), engram::projections()).unwrap()
}

/// A handle that missed another handle's compaction reads history by offsets the
/// tracker gives for the new log: it must read them in the new log, not its old map.
#[test]
fn history_through_a_handle_that_missed_a_compaction_is_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let stale = Memories::open(dir.path()).unwrap();
    let other = Memories::open(dir.path()).unwrap();
    let mut ids = Vec::new();
    for i in 0..6 {
        let m = other
            .remember(&format!("memory {i} first"), &[], None)
            .unwrap();
        other
            .update(&m.id, Memory::new(format!("memory {i} second")))
            .unwrap();
        ids.push(m.id);
    }
    // Make the stale handle map the log as it is now.
    assert_eq!(stale.history(&ids[0]).unwrap().len(), 2);
    // Dead records first, so compaction moves every offset.
    for id in &ids[..3] {
        other.forget(id).unwrap();
    }
    other.store().compact().unwrap();
    for (i, id) in ids.iter().enumerate().skip(3) {
        let texts: Vec<String> = stale
            .history(id)
            .unwrap()
            .into_iter()
            .map(|m| m.text)
            .collect();
        assert_eq!(
            texts,
            vec![format!("memory {i} first"), format!("memory {i} second")],
            "{id}"
        );
    }
}

/// Once the tracker has committed, the batch is acknowledged even if a derived vector
/// cache cannot follow: a retry would duplicate it.
#[test]
fn a_committed_write_is_acknowledged_when_its_vector_cache_fails() {
    let dir = tempfile::tempdir().unwrap();
    let memories = Memories::open(dir.path()).unwrap();
    memories
        .remember("first memory about caches", &[], None)
        .unwrap();
    let _ = memories.recall("caches", 1).unwrap(); // builds the cache
    let cache = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "vec"))
        .expect("a vector cache");
    // The cache can be neither opened nor rebuilt in place.
    std::fs::remove_file(&cache).unwrap();
    std::fs::create_dir(&cache).unwrap();
    std::fs::write(cache.join("blocker"), "x").unwrap();
    let second = memories
        .remember("second memory about caches", &[], None)
        .expect("acknowledged despite the cache");
    assert_eq!(memories.count().unwrap(), 2);
    assert!(memories.get(&second.id).unwrap().is_some());
    // With the obstacle gone, the cache is rebuilt and finds both.
    std::fs::remove_dir_all(&cache).unwrap();
    assert_eq!(memories.recall("caches", 5).unwrap().len(), 2);
}

/// Two keys with one 64-bit hash: the write is refused with both names, nothing of it
/// is applied or left in the log.
#[test]
fn a_key_hash_collision_is_refused_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut b = WriteBatch::new();
    b.put("file:a", Map::new(), "a").unwrap();
    store.commit(&b).unwrap();
    let before = store.meta().unwrap();
    // No real collision can be found, so the tracker is made to hold another key
    // under the hash of `file:b`, as a collision would.
    let h = engram::key::hash64("file:b") as i64;
    let db = rusqlite::Connection::open(dir.path().join("tracker.db")).unwrap();
    db.execute(
        // `seq` keys the table: the made-up row takes one no record will have.
        "INSERT INTO records (key_hash, key, offset, length, seq, timestamp_ms) SELECT ?1, 'file:other', offset, length, 1 << 40, timestamp_ms FROM records WHERE key = 'file:a'",
        [h],
    )
    .unwrap();
    drop(db);
    let mut b = WriteBatch::new();
    b.put("file:b", Map::new(), "b").unwrap();
    match store.commit(&b) {
        Err(StoreError::KeyHashCollision { new, existing }) => {
            assert_eq!((new.as_str(), existing.as_str()), ("file:b", "file:other"));
        }
        other => panic!("expected a collision error, got {other:?}"),
    }
    assert_eq!(
        store.meta().unwrap(),
        before,
        "the refused batch was applied"
    );
    // The refused batch is not in the log either: later writes follow the first one.
    let mut b = WriteBatch::new();
    b.put("file:c", Map::new(), "c").unwrap();
    let info = store.commit(&b).unwrap();
    assert_eq!(info.first_seq, before.applied_seq + 1);
}

/// Bytes that look like commit records, stored inside a batch that never committed
/// (a copied log being imported when the writer died), must not make recovery take
/// the torn tail for damage and refuse every write.
#[test]
fn commit_records_inside_a_torn_batch_do_not_fool_recovery() {
    // Another store's log: full of valid commit records at 8-aligned offsets.
    let other = tempfile::tempdir().unwrap();
    {
        let s = open(other.path());
        for i in 0..20 {
            let mut b = WriteBatch::new();
            b.put(&format!("file:x{i}"), Map::new(), vec![b'x'; 50])
                .unwrap();
            s.commit(&b).unwrap();
        }
    }
    let foreign = std::fs::read(other.path().join("blob.dat")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut b = WriteBatch::new();
    b.put("file:kept", Map::new(), "kept").unwrap();
    store.commit(&b).unwrap();
    let kept_end = store.meta().unwrap().applied_end;
    // A batch carrying the foreign log as a body, with its body 8-aligned in the file
    // (so the foreign commits sit where a scan probes), committed and then torn: its
    // first record's header is lost, as after a power loss.
    let mut key = String::from("file:copy");
    let start = loop {
        let mut b = WriteBatch::new();
        b.put(&key, Map::new(), foreign.clone()).unwrap();
        let info = store.commit(&b).unwrap();
        let (_, snap) = engram::store::read_log(dir.path()).unwrap();
        let rec = snap.record_at(info.commit_offset).unwrap();
        let body = engram::format::CommitBody::decode(rec.body).unwrap();
        let put = snap.record_at(body.batch_start.get()).unwrap();
        let body_at = body.batch_start.get() as usize + 48 + put.meta.len();
        if body_at.is_multiple_of(8) {
            break body.batch_start.get();
        }
        let mut d = WriteBatch::new();
        d.delete(&key).unwrap();
        store.commit(&d).unwrap();
        key.push('y');
        drop(snap);
    };
    drop(store);
    // Keep only the first committed batch and the aligned one, then tear the latter.
    let mut bytes = std::fs::read(dir.path().join("blob.dat")).unwrap();
    let tail: Vec<u8> = bytes[start as usize..].to_vec();
    bytes.truncate(kept_end as usize);
    bytes.extend_from_slice(&tail);
    bytes[kept_end as usize..kept_end as usize + 16].fill(0xAA);
    std::fs::write(dir.path().join("blob.dat"), &bytes).unwrap();
    std::fs::remove_file(dir.path().join("tracker.db")).unwrap();
    let _ = std::fs::remove_file(dir.path().join("tracker.db-wal"));
    let _ = std::fs::remove_file(dir.path().join("tracker.db-shm"));

    let report = engram::store::verify(dir.path()).unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);
    let store = open(dir.path());
    assert!(
        store.open_report().damaged.is_none(),
        "a torn tail was taken for damage: {:?}",
        store.open_report()
    );
    assert_eq!(store.get("file:kept").unwrap().unwrap().body, b"kept");
    let mut b = WriteBatch::new();
    b.put("file:after", Map::new(), "after").unwrap();
    store.commit(&b).expect("the store takes writes");
}
