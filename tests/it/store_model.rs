//! Model-based test: random sequences of puts, deletes, commits, reopens, compactions
//! and rebuilds applied to a store and to a `BTreeMap`; they must always agree.

use std::collections::BTreeMap;

use engram::store::{Store, StoreOptions, WriteBatch};
use proptest::prelude::*;
use serde_json::Map;

#[derive(Debug, Clone)]
enum Op {
    Put(u8, Vec<u8>),
    Delete(u8),
    Commit,
    Reopen,
    Compact,
    Rebuild,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..12, proptest::collection::vec(any::<u8>(), 0..200)).prop_map(|(k, v)| Op::Put(k, v)),
        2 => (0u8..12).prop_map(Op::Delete),
        4 => Just(Op::Commit),
        1 => Just(Op::Reopen),
        1 => Just(Op::Compact),
        1 => Just(Op::Rebuild),
    ]
}

fn key(k: u8) -> String {
    format!("file:src/k{k}.rs")
}

fn open(dir: &std::path::Path) -> Store {
    Store::open(dir, StoreOptions::default(), engram::projections()).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn the_store_behaves_like_a_map(ops in proptest::collection::vec(op(), 1..40)) {
        let dir = tempfile::tempdir().unwrap();
        let mut store = open(dir.path());
        let mut model: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        let mut pending: Vec<(String, Option<Vec<u8>>)> = Vec::new();
        for op in ops {
            match op {
                Op::Put(k, v) => pending.push((key(k), Some(v))),
                Op::Delete(k) => pending.push((key(k), None)),
                Op::Commit => {
                    if pending.is_empty() {
                        continue;
                    }
                    let mut b = WriteBatch::new();
                    for (k, v) in pending.drain(..) {
                        match v {
                            Some(v) => { b.put(&k, Map::new(), v.clone()).unwrap(); model.insert(k, v); }
                            None => { b.delete(&k).unwrap(); model.remove(&k); }
                        }
                    }
                    store.commit(&b).unwrap();
                }
                Op::Reopen => {
                    drop(store);
                    store = open(dir.path());
                }
                Op::Compact => { store.compact().unwrap(); }
                Op::Rebuild => { store.rebuild().unwrap(); }
            }
            // Uncommitted changes are invisible; committed ones are exactly the model.
            for k in 0..12 {
                let got = store.get(&key(k)).unwrap().map(|r| r.body);
                prop_assert_eq!(got.as_ref(), model.get(&key(k)), "key {}", k);
            }
            prop_assert_eq!(store.live_records().unwrap(), model.len() as u64);
        }
        drop(store);
        let report = engram::store::verify(dir.path()).unwrap();
        prop_assert!(report.is_sound(), "{:?}", report);
    }
}
