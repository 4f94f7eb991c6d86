//! Model-based test of memory history across forget, re-create and compaction: a
//! memory's history is exactly the versions written since it was last created, and
//! compacting never brings back the versions a forget removed.

use std::collections::BTreeMap;

use engram::memory::{Memories, Memory};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    /// Write memory `.0` with an explicit id (refused while it exists).
    Create(u8),
    Update(u8),
    Forget(u8),
    Compact,
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u8..3).prop_map(Op::Create),
        4 => (0u8..3).prop_map(Op::Update),
        2 => (0u8..3).prop_map(Op::Forget),
        1 => Just(Op::Compact),
        1 => Just(Op::Reopen),
    ]
}

fn id(k: u8) -> String {
    format!("mem:0000000{k}")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn history_is_exactly_the_versions_since_the_last_create(ops in proptest::collection::vec(op(), 1..25)) {
        let dir = tempfile::tempdir().unwrap();
        let mut memories = Memories::open(dir.path()).unwrap();
        let mut model: BTreeMap<u8, Vec<String>> = BTreeMap::new();
        for (step, op) in ops.into_iter().enumerate() {
            let text = format!("text written at step {step}");
            match op {
                Op::Create(k) => {
                    let mut m = Memory::new(text.clone());
                    m.id = id(k);
                    let r = memories.write(m);
                    prop_assert_eq!(r.is_ok(), !model.contains_key(&k), "step {}", step);
                    model.entry(k).or_insert_with(|| vec![text]);
                }
                Op::Update(k) => {
                    let r = memories.update(&id(k), Memory::new(text.clone()));
                    prop_assert_eq!(r.is_ok(), model.contains_key(&k), "step {}", step);
                    if let Some(h) = model.get_mut(&k) {
                        h.push(text);
                    }
                }
                Op::Forget(k) => {
                    prop_assert_eq!(memories.forget(&id(k)).unwrap(), model.remove(&k).is_some());
                }
                Op::Compact => {
                    memories.store().compact().unwrap();
                }
                Op::Reopen => {
                    drop(memories);
                    memories = Memories::open(dir.path()).unwrap();
                }
            }
            for k in 0..3u8 {
                let history: Vec<String> = memories.history(&id(k)).unwrap().into_iter().map(|m| m.text).collect();
                let expected = model.get(&k).cloned().unwrap_or_default();
                prop_assert_eq!(&history, &expected, "step {}, memory {}", step, k);
                let versions: Vec<u64> = memories.history(&id(k)).unwrap().iter().map(|m| m.version).collect();
                prop_assert_eq!(versions, (1..=expected.len() as u64).collect::<Vec<_>>(), "step {}, memory {}", step, k);
            }
        }
    }
}

#[test]
fn compaction_drops_the_history_of_a_forgotten_then_recreated_memory() {
    let dir = tempfile::tempdir().unwrap();
    let memories = Memories::open(dir.path()).unwrap();
    let mut m = Memory::new("first life, version one");
    m.id = "mem:0000abcd".into();
    memories.write(m.clone()).unwrap();
    memories
        .update(&m.id, Memory::new("first life, version two"))
        .unwrap();
    assert!(memories.forget(&m.id).unwrap());
    m.text = "second life".into();
    memories.write(m.clone()).unwrap();
    let before: Vec<String> = memories
        .history(&m.id)
        .unwrap()
        .into_iter()
        .map(|m| m.text)
        .collect();
    memories.store().compact().unwrap();
    let after: Vec<String> = memories
        .history(&m.id)
        .unwrap()
        .into_iter()
        .map(|m| m.text)
        .collect();
    assert_eq!(before, vec!["second life".to_string()]);
    assert_eq!(after, before, "compaction changed the history");
}
