//! Model-based test beyond `store_model.rs`: two `Store` handles on one directory
//! (as two processes would have), batches committed whole or streamed through
//! `begin_batch`, streamed batches abandoned half-way, keep-history puts, reopen,
//! compact and rebuild through either handle — checked after every step against a
//! `BTreeMap`, through both handles.

use std::collections::BTreeMap;
use std::path::Path;

use engram::store::{Store, StoreOptions, WriteBatch};
use proptest::prelude::*;
use serde_json::Map;

#[derive(Debug, Clone)]
enum Op {
    Put(u8, Vec<u8>),
    PutKeepingHistory(u8, Vec<u8>),
    Delete(u8),
    /// Commit the pending changes through handle `.0`, streamed when `.1`.
    Commit(usize, bool),
    /// Stream the pending changes through handle `.0` and drop the writer unfinished.
    Abandon(usize),
    Reopen(usize),
    Compact(usize),
    Rebuild(usize),
}

const KEYS: u8 = 10;

fn op() -> impl Strategy<Value = Op> {
    let body = proptest::collection::vec(any::<u8>(), 0..150);
    prop_oneof![
        6 => (0..KEYS, body.clone()).prop_map(|(k, v)| Op::Put(k, v)),
        1 => (0..KEYS, body).prop_map(|(k, v)| Op::PutKeepingHistory(k, v)),
        2 => (0..KEYS).prop_map(Op::Delete),
        4 => (0..2usize, any::<bool>()).prop_map(|(h, s)| Op::Commit(h, s)),
        1 => (0..2usize).prop_map(Op::Abandon),
        1 => (0..2usize).prop_map(Op::Reopen),
        1 => (0..2usize).prop_map(Op::Compact),
        1 => (0..2usize).prop_map(Op::Rebuild),
    ]
}

fn key(k: u8) -> String {
    format!("mem:0000{k:04x}")
}

fn open(dir: &Path) -> Store {
    Store::open(dir, StoreOptions::default(), engram::projections()).unwrap()
}

#[derive(Debug, Clone)]
enum Change {
    Put(String, Vec<u8>, bool),
    Delete(String),
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn two_handles_behave_like_one_map(ops in proptest::collection::vec(op(), 1..30)) {
        let dir = tempfile::tempdir().unwrap();
        let mut handles = [open(dir.path()), open(dir.path())];
        let mut model: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        let mut pending: Vec<Change> = Vec::new();
        let mut seq = 0u64;
        for (step, op) in ops.into_iter().enumerate() {
            match op {
                Op::Put(k, v) => pending.push(Change::Put(key(k), v, false)),
                Op::PutKeepingHistory(k, v) => pending.push(Change::Put(key(k), v, true)),
                Op::Delete(k) => pending.push(Change::Delete(key(k))),
                Op::Commit(h, streamed) => {
                    if pending.is_empty() {
                        continue;
                    }
                    let info = if streamed {
                        let mut w = handles[h].begin_batch().unwrap();
                        for c in &pending {
                            match c {
                                Change::Put(k, v, false) => w.put(k, Map::new(), v.clone()).unwrap(),
                                Change::Put(k, v, true) => w.put_keeping_history(k, Map::new(), v.clone()).unwrap(),
                                Change::Delete(k) => w.delete(k).unwrap(),
                            }
                        }
                        w.finish().unwrap()
                    } else {
                        let mut b = WriteBatch::new();
                        for c in &pending {
                            match c {
                                Change::Put(k, v, false) => { b.put(k, Map::new(), v.clone()).unwrap(); }
                                Change::Put(k, v, true) => { b.put_keeping_history(k, Map::new(), v.clone()).unwrap(); }
                                Change::Delete(k) => { b.delete(k).unwrap(); }
                            }
                        }
                        handles[h].commit(&b).unwrap()
                    };
                    // One sequence number per record and one for the commit, never reused.
                    prop_assert_eq!(info.first_seq, seq + 1, "step {}", step);
                    prop_assert_eq!(info.commit_seq, seq + pending.len() as u64 + 1, "step {}", step);
                    seq = info.commit_seq;
                    for c in pending.drain(..) {
                        match c {
                            Change::Put(k, v, _) => { model.insert(k, v); }
                            Change::Delete(k) => { model.remove(&k); }
                        }
                    }
                }
                Op::Abandon(h) => {
                    if pending.is_empty() {
                        continue;
                    }
                    let mut w = handles[h].begin_batch().unwrap();
                    for c in pending.drain(..) {
                        match c {
                            Change::Put(k, v, _) => w.put(&k, Map::new(), v).unwrap(),
                            Change::Delete(k) => w.delete(&k).unwrap(),
                        }
                    }
                    drop(w);
                }
                Op::Reopen(h) => {
                    let fresh = open(dir.path());
                    drop(std::mem::replace(&mut handles[h], fresh));
                }
                Op::Compact(h) => {
                    handles[h].compact().unwrap();
                    // Compaction appends a "compacted" event and its commit.
                    seq += 2;
                }
                Op::Rebuild(h) => {
                    // The handle may have missed the other's compaction: rebuild must
                    // notice the replaced log rather than rebuild from the old one.
                    handles[h].rebuild().unwrap();
                }
            }
            for (h, store) in handles.iter().enumerate() {
                for k in 0..KEYS {
                    let got = store.get(&key(k)).unwrap().map(|r| r.body);
                    prop_assert_eq!(got.as_ref(), model.get(&key(k)), "step {}, handle {}, key {}", step, h, k);
                }
                prop_assert_eq!(store.live_records().unwrap(), model.len() as u64, "step {}, handle {}", step, h);
                prop_assert_eq!(store.meta().unwrap().applied_seq, seq, "step {}, handle {}", step, h);
            }
        }
        drop(handles);
        let report = engram::store::verify(dir.path()).unwrap();
        prop_assert!(report.is_sound(), "{:?}", report);
    }
}

#[test]
fn compacting_a_store_with_nothing_live_keeps_sequence_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut b = WriteBatch::new();
    b.put("file:a", Map::new(), "a").unwrap();
    let first = store.commit(&b).unwrap();
    let mut b = WriteBatch::new();
    b.delete("file:a").unwrap();
    let second = store.commit(&b).unwrap();
    assert_eq!((first.commit_seq, second.commit_seq), (2, 4));
    store.compact().unwrap();
    // The compacted log keeps no record, but it ends with the "compacted" event and
    // its commit, numbered after everything before.
    assert_eq!(
        store.meta().unwrap().applied_seq,
        6,
        "compaction moved the sequence back"
    );
    let mut b = WriteBatch::new();
    b.put("file:b", Map::new(), "b").unwrap();
    let third = store.commit(&b).unwrap();
    assert!(
        third.first_seq > second.commit_seq,
        "sequence numbers reused after compaction: {third:?} after {second:?}"
    );
}

#[test]
fn rebuild_through_a_handle_that_missed_a_compaction_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let a = open(dir.path());
    let b = open(dir.path());
    let mut batch = WriteBatch::new();
    batch.put("file:a", Map::new(), "a").unwrap();
    batch.put("file:dead", Map::new(), "x").unwrap();
    a.commit(&batch).unwrap();
    let mut batch = WriteBatch::new();
    batch.delete("file:dead").unwrap();
    a.commit(&batch).unwrap();
    a.compact().unwrap();
    // B still maps the log that compaction replaced.
    b.rebuild().unwrap();
    let mut batch = WriteBatch::new();
    batch.put("file:b", Map::new(), "acknowledged").unwrap();
    b.commit(&batch).unwrap();
    // The other handle sees the acknowledged value (today: a Corrupt error, since the
    // tracker now describes the unlinked log).
    let seen_by_a = a.get("file:b").map(|r| r.map(|r| r.body));
    drop((a, b));
    let store = open(dir.path());
    assert_eq!(
        store.get("file:b").unwrap().map(|r| r.body),
        Some(b"acknowledged".to_vec()),
        "an acknowledged commit was lost"
    );
    assert_eq!(store.get("file:a").unwrap().unwrap().body, b"a");
    assert_eq!(
        seen_by_a.ok(),
        Some(Some(b"acknowledged".to_vec())),
        "the other handle could not read the acknowledged value"
    );
}
