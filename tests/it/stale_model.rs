//! Staleness against a model: random edits to referenced files (bodies changed and
//! changed back, functions renamed, deleted and restored, lines inserted above,
//! files deleted and restored, memories written and confirmed), each followed by a
//! real re-index of a real repository into a real store; after every step the stale
//! memories and their reasons are exactly what the model says, and after a rebuild
//! too. Plus the MCP tools `memory_stale`, `memory_confirm` and the `stale` field of
//! memory results, through the engine the server runs.

use std::collections::BTreeMap;
use std::path::Path;

use engram::gate::{Caps, Gate};
use engram::index::{index, IndexOptions};
use engram::mcp::Engine;
use engram::memory::{Memories, Memory};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

const FILES: usize = 2;
const SLOTS_PER_FILE: usize = 3;
const SLOTS: usize = FILES * SLOTS_PER_FILE;

#[derive(Debug, Clone)]
enum Op {
    Edit(usize),
    Revert(usize),
    Rename(usize),
    Delete(usize),
    Restore(usize),
    Pad(usize),
    DeleteFile(usize),
    RestoreFile(usize),
    Remember(usize),
    Confirm(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..SLOTS).prop_map(Op::Edit),
        2 => (0..SLOTS).prop_map(Op::Revert),
        2 => (0..SLOTS).prop_map(Op::Rename),
        1 => (0..SLOTS).prop_map(Op::Delete),
        1 => (0..SLOTS).prop_map(Op::Restore),
        2 => (0..FILES).prop_map(Op::Pad),
        1 => (0..FILES).prop_map(Op::DeleteFile),
        1 => (0..FILES).prop_map(Op::RestoreFile),
        4 => (0..SLOTS).prop_map(Op::Remember),
        2 => (0..8usize).prop_map(Op::Confirm),
    ]
}

/// One function of the repository.
#[derive(Debug, Clone)]
struct Slot {
    name: String,
    version: u32,
    present: bool,
}

/// A memory: its id, the name its text references, and its anchor (slot, version).
type Remembered = (String, String, Option<(usize, u32)>);

/// What the repository is, and what each memory was anchored to.
struct Model {
    slots: Vec<Slot>,
    pads: [usize; FILES],
    file_gone: [bool; FILES],
    renames: u32,
    /// Writes of the repository so far.
    writes: u64,
    /// Memory id → the name its text references, and its anchor (slot, version).
    memories: Vec<Remembered>,
}

fn original_name(slot: usize) -> String {
    format!("fn_s{slot}")
}

impl Model {
    fn new() -> Model {
        Model {
            slots: (0..SLOTS)
                .map(|s| Slot {
                    name: original_name(s),
                    version: 0,
                    present: true,
                })
                .collect(),
            pads: [0; FILES],
            file_gone: [false; FILES],
            renames: 0,
            writes: 0,
            memories: Vec::new(),
        }
    }

    fn visible(&self, slot: usize) -> bool {
        self.slots[slot].present && !self.file_gone[slot / SLOTS_PER_FILE]
    }

    /// The visible slot named `name`.
    fn named(&self, name: &str) -> Option<usize> {
        (0..SLOTS).find(|&s| self.visible(s) && self.slots[s].name == name)
    }

    /// Write the repository. Each file gets a modification time later than any
    /// before: an edit that keeps the size within the file system's timestamp
    /// granularity would otherwise look unchanged to the incremental index.
    fn write(&mut self, repo: &Path) {
        self.writes += 1;
        let mtime =
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000 + self.writes);
        for f in 0..FILES {
            let path = repo.join(format!("m{f}.py"));
            if self.file_gone[f] {
                let _ = std::fs::remove_file(&path);
                continue;
            }
            let mut text = "# padding\n".repeat(self.pads[f]);
            for s in f * SLOTS_PER_FILE..(f + 1) * SLOTS_PER_FILE {
                let slot = &self.slots[s];
                if slot.present {
                    // A body unique to (slot, version), never holding a name.
                    text.push_str(&format!(
                        "def {}(x):\n    return x + {}\n\n",
                        slot.name,
                        s as u32 * 1000 + slot.version
                    ));
                }
            }
            std::fs::write(&path, text).unwrap();
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(mtime)
                .unwrap();
        }
    }

    /// Memory id → reason, for every memory the model says is stale.
    fn expected(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for (id, name, anchor) in &self.memories {
            let Some((slot, version)) = *anchor else {
                continue;
            };
            let reason = if self.named(name) == Some(slot) {
                if self.slots[slot].version == version {
                    continue;
                }
                "changed"
            } else if self.visible(slot) && self.slots[slot].version == version {
                "renamed"
            } else {
                "deleted"
            };
            out.insert(id.clone(), reason.to_string());
        }
        out
    }
}

/// Memory id → reason of its (single) mark, as engram says.
fn actual(memories: &Memories) -> BTreeMap<String, String> {
    engram::stale::list(memories, 1000)
        .unwrap()
        .into_iter()
        .map(|s| {
            assert_eq!(s.stale.len(), 1, "{s:?}");
            (s.memory.id, s.stale[0].reason.as_str().to_string())
        })
        .collect()
}

fn reindex(memories: &Memories, repo: &Path) {
    index(memories.store(), repo, &IndexOptions::default()).unwrap();
}

fn apply(model: &mut Model, memories: &Memories, op: &Op) {
    match *op {
        Op::Edit(s) => model.slots[s].version += 1,
        Op::Revert(s) => model.slots[s].version = 0,
        Op::Rename(s) => {
            model.renames += 1;
            model.slots[s].name = format!("fn_r{}", model.renames);
        }
        Op::Delete(s) => model.slots[s].present = false,
        Op::Restore(s) => {
            if !model.slots[s].present {
                model.slots[s] = Slot {
                    name: original_name(s),
                    version: 0,
                    present: true,
                };
            }
        }
        Op::Pad(f) => model.pads[f] += 1,
        Op::DeleteFile(f) => model.file_gone[f] = true,
        Op::RestoreFile(f) => model.file_gone[f] = false,
        Op::Remember(s) => {
            let name = model.slots[s].name.clone();
            let m = memories
                .write(Memory::new(format!("`{name}` must stay pure")))
                .unwrap();
            let anchor = model
                .named(&name)
                .map(|slot| (slot, model.slots[slot].version));
            assert_eq!(m.anchors.len(), usize::from(anchor.is_some()), "{m:?}");
            model.memories.push((m.id, name, anchor));
        }
        Op::Confirm(i) => {
            if model.memories.is_empty() {
                return;
            }
            let i = i % model.memories.len();
            let (id, name, _) = model.memories[i].clone();
            engram::stale::confirm(memories, &id).unwrap();
            let anchor = model
                .named(&name)
                .map(|slot| (slot, model.slots[slot].version));
            model.memories[i].2 = anchor;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn stale_memories_are_exactly_those_whose_code_moved_on(ops in proptest::collection::vec(op(), 1..16)) {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        let memories = Memories::open(tmp.path().join("store")).unwrap();
        let mut model = Model::new();
        model.write(&repo);
        reindex(&memories, &repo);
        for (n, op) in ops.iter().enumerate() {
            apply(&mut model, &memories, op);
            model.write(&repo);
            reindex(&memories, &repo);
            prop_assert_eq!(actual(&memories), model.expected(), "after op {} {:?}", n, op);
        }
        memories.store().rebuild().unwrap();
        prop_assert_eq!(actual(&memories), model.expected(), "after rebuild");
    }
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

#[test]
fn mcp_tools_list_confirm_and_show_stale_memories() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(
        repo.join("net.py"),
        "def fetch(url):\n    return url\n\ndef parse(text):\n    return text\n",
    )
    .unwrap();
    let memories = Memories::open(tmp.path().join("store")).unwrap();
    reindex(&memories, &repo);
    let gate = Gate::new("repo", Some(repo.clone()), Vec::new(), Caps::default());
    let engine = Engine::new(memories, gate, IndexOptions::default());
    let id = engine
        .call(
            "memory_write_structured",
            &args(json!({"text": "`fetch` never retries", "insights": ["pitfall"]})),
        )
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let listed = engine.call("memory_stale", &args(json!({}))).unwrap();
    assert_eq!(listed["stale"], json!([]));

    std::fs::write(
        repo.join("net.py"),
        "def fetch(url):\n    return url.strip()\n\ndef parse(text):\n    return text\n",
    )
    .unwrap();
    reindex(&engine.memories, &repo);

    let listed = engine.call("memory_stale", &args(json!({}))).unwrap();
    assert_eq!(listed["stale"][0]["id"], id.as_str(), "{listed}");
    assert_eq!(listed["stale"][0]["stale"][0]["reason"], "changed");
    let got = engine
        .call("memory_get", &args(json!({"id": id.as_str()})))
        .unwrap();
    assert_eq!(
        got["memory"]["stale"][0]["target"],
        "sym:net.py#fetch:function"
    );
    let hits = engine
        .call("memory_search", &args(json!({"query": "fetch retries"})))
        .unwrap();
    assert_eq!(hits["hits"][0]["stale"][0]["reason"], "changed", "{hits}");
    let listed = engine
        .call("memory_list_structured", &args(json!({})))
        .unwrap();
    assert_eq!(listed["memories"][0]["stale"][0]["reason"], "changed");
    let context = engine
        .call("coding_get_project_context", &args(json!({})))
        .unwrap();
    assert!(
        context["context"]
            .as_str()
            .unwrap()
            .contains("[stale: sym net.py#fetch:function changed"),
        "{context}"
    );

    let confirmed = engine
        .call("memory_confirm", &args(json!({"id": id.as_str()})))
        .unwrap();
    assert_eq!(confirmed["version"], 2);
    assert_eq!(confirmed["memory"]["stale"], json!([]));
    let listed = engine.call("memory_stale", &args(json!({}))).unwrap();
    assert_eq!(listed["stale"], json!([]));
    assert!(engine
        .call("memory_confirm", &args(json!({"id": "mem:ffffffff"})))
        .is_err());
}
