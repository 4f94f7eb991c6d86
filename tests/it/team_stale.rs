//! Staleness on the team backend (`database_url`, the server `tools/postgres.sh
//! start` starts, `ENGRAM_TEST_DATABASE_URL`): a memory written to PostgreSQL is
//! anchored to the local code index, is stale once that code changes, and fresh
//! again after `confirm`, all on the database's rows. The local store holds only the
//! code (and a decoy memory about the same function, which a read of the local store
//! would show); another repository sees none of it.

#![cfg(all(feature = "cli", feature = "mcp"))]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use engram::embed::default_embedder;
use engram::gate::{Caps, Gate};
use engram::index::IndexOptions;
use engram::mcp::Engine;
use engram::memory::Memories;
use engram::stale::LocalCodeAnchors;
use serde_json::{json, Map, Value};
use team_cli::{engram, ok};

use crate::support::pg;
use crate::support::team_cli;

const NET_V1: &str = "\
class Session:
    def request(self, method, url):
        r = self.send(method, url)
        return r

    def send(self, method, url):
        return None
";

const NET_V2: &str = "\
class Session:
    def request(self, method, url, retries=2):
        for _ in range(retries):
            r = self.send(method, url)
        return r

    def send(self, method, url):
        return None
";

/// The ids `engram stale` lists.
fn stale_ids(store: &Path) -> Vec<String> {
    ok(store, true, &["stale"])["stale"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["memory"]["id"].as_str().unwrap().to_string())
        .collect()
}

/// A checkout with `src/net.py` and two stores (two repositories) that indexed it.
fn setup() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    pg::database(); // migrated
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::write(repo.join("src/net.py"), NET_V1).unwrap();
    // The CLI files a store's memories under the store directory's name.
    let a = tmp.path().join(pg::unique_repo("stale-a"));
    let b = tmp.path().join(pg::unique_repo("stale-b"));
    for s in [&a, &b] {
        ok(s, false, &["index", repo.to_str().unwrap()]);
    }
    (tmp, repo, a, b)
}

#[test]
fn team_memories_go_stale_against_the_local_code_index_and_confirm_on_the_database() {
    let (_tmp, repo, a, b) = setup();
    // A decoy in A's local store about the same function: reading the local store
    // instead of the database would list it.
    let decoy = ok(&a, false, &["remember", "Session.request local decoy"])["id"]
        .as_str()
        .unwrap()
        .to_string();
    let m = ok(
        &a,
        true,
        &[
            "remember",
            "Session.request sends once; callers retry",
            "--insight",
            "pitfall",
        ],
    );
    let id = m["id"].as_str().unwrap().to_string();
    assert_ne!(id, decoy);
    let anchors = m["anchors"].as_array().expect("anchored on write");
    assert!(
        anchors.iter().any(|x| x["key"]
            .as_str()
            .unwrap()
            .starts_with("sym:src/net.py#Session.request:method:")),
        "{m}"
    );
    assert!(
        stale_ids(&a).is_empty(),
        "fresh while the code is unchanged"
    );

    std::fs::write(repo.join("src/net.py"), NET_V2).unwrap();
    for s in [&a, &b] {
        ok(s, false, &["index", repo.to_str().unwrap()]);
    }

    let v = ok(&a, true, &["stale"]);
    let list = v["stale"].as_array().unwrap();
    assert_eq!(
        stale_ids(&a),
        vec![id.clone()],
        "the database's row only: {v}"
    );
    let mark = &list[0]["stale"][0];
    assert_eq!(
        mark["target"], "sym:src/net.py#Session.request:method",
        "{v}"
    );
    assert_eq!(mark["reason"], "changed", "{v}");
    assert!(
        mark["summary"].as_str().unwrap().contains("+1 lines"),
        "{v}"
    );
    assert!(mark["since_ms"].as_u64().unwrap() > 0);
    let got = ok(&a, true, &["get", &id]);
    assert_eq!(got["stale"][0]["reason"], "changed", "{got}");
    // The local store's own staleness still sees only its decoy.
    let local = ok(&a, false, &["stale"]);
    assert_eq!(local["stale"][0]["memory"]["id"], decoy.as_str(), "{local}");
    assert_eq!(local["stale"].as_array().unwrap().len(), 1);

    // The project context tags the database's pitfall stale.
    let ctx = ok(&a, true, &["context"]);
    let text = ctx["context"].as_str().unwrap();
    assert!(
        text.contains(&format!(
            "[{id}] [stale: sym src/net.py#Session.request:method changed"
        )),
        "{text}"
    );
    assert!(!text.contains("local decoy"), "{text}");

    // Repository B shares the code but not A's memories.
    assert!(stale_ids(&b).is_empty());
    let (done, _, err) = engram(&b, true, &["confirm", &id]);
    assert!(
        !done && err.contains(&id),
        "B cannot confirm A's memory: {err}"
    );

    let c = ok(&a, true, &["confirm", &id]);
    assert_eq!(c["memory"]["version"], 2, "{c}");
    assert_eq!(c["stale"], json!([]), "{c}");
    assert!(stale_ids(&a).is_empty(), "fresh after confirm");
    // The new version is the database's: its anchor holds the new body's hash.
    let got = ok(&a, true, &["get", &id]);
    assert_eq!(got["version"], 2);
    assert_ne!(got["anchors"], m["anchors"], "re-anchored");
    // Confirm needs the local code index, and says so when there is none.
    let empty = a.parent().unwrap().join(pg::unique_repo("stale-none"));
    let (done, _, err) = engram(&empty, true, &["confirm", &id]);
    assert!(!done && err.contains("engram index first"), "{err}");
    let (done, v, err) = engram(&empty, true, &["stale"]);
    assert!(done && v["stale"] == json!([]), "{v} {err}");
    assert!(err.contains("no local code index"), "{err}");
}

/// The `stale` field of each memory `engram list` prints, by id.
fn listed_marks(store: &Path, team: bool) -> Vec<(String, Value)> {
    let v = ok(store, team, &["list"]);
    v["memories"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|m| {
            let marks = m
                .get("stale")
                .cloned()
                .unwrap_or_else(|| panic!("no stale field: {m}"));
            (m["id"].as_str().unwrap().to_string(), marks)
        })
        .collect()
}

#[test]
fn team_list_carries_the_stale_marks_the_local_list_does() {
    let (_tmp, repo, a, _b) = setup();
    let anchored = ok(&a, true, &["remember", "Session.request sends once"])["id"]
        .as_str()
        .unwrap()
        .to_string();
    let plain = ok(
        &a,
        true,
        &["remember", "the release train leaves on Fridays"],
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    // The local list's shape, for comparison: every memory has `stale`.
    let decoy = ok(&a, false, &["remember", "Session.request local decoy"])["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(listed_marks(&a, false), vec![(decoy.clone(), json!([]))]);
    let fresh = listed_marks(&a, true);
    assert_eq!(
        fresh,
        vec![(plain.clone(), json!([])), (anchored.clone(), json!([]))],
        "fresh while the code is unchanged, the database's rows only"
    );

    std::fs::write(repo.join("src/net.py"), NET_V2).unwrap();
    ok(&a, false, &["index", repo.to_str().unwrap()]);
    let marked = listed_marks(&a, true);
    assert_eq!(marked.len(), 2);
    assert_eq!(marked[0], (plain.clone(), json!([])));
    assert_eq!(marked[1].0, anchored);
    let mark = &marked[1].1[0];
    assert_eq!(
        mark["target"], "sym:src/net.py#Session.request:method",
        "{mark}"
    );
    assert_eq!(mark["reason"], "changed", "{mark}");
    // The same marks `get` shows, and the local list marks its own decoy the same way.
    assert_eq!(ok(&a, true, &["get", &anchored])["stale"], marked[1].1);
    assert_eq!(listed_marks(&a, false)[0].1[0]["reason"], "changed");

    // Without a local code index nothing is marked, and the field is still there.
    let empty = a.parent().unwrap().join(pg::unique_repo("stale-list-none"));
    ok(&empty, true, &["remember", "Session.request elsewhere"]);
    let none = listed_marks(&empty, true);
    assert_eq!(none.len(), 1);
    assert_eq!(none[0].1, json!([]));
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

/// An engine over `store`'s code index with its memory tools on repository `repo`
/// of the team database, anchored to that index (as `engram serve` opens it).
fn engine(store: &Path, root: &Path, repo: &str) -> Engine {
    let memories = Memories::open(store).unwrap();
    let gate = Gate::new(repo, Some(root.to_path_buf()), Vec::new(), Caps::default());
    let engine = Engine::new(memories, gate, IndexOptions::default());
    let backend = pg::database()
        .memories(repo, Arc::new(default_embedder()))
        .unwrap()
        .with_anchors(Arc::new(LocalCodeAnchors::new(engine.memories.clone())));
    engine.with_backend(Arc::new(backend))
}

#[test]
fn mcp_staleness_tools_work_on_the_team_backend() {
    pg::database();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("repo");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/net.py"), NET_V1).unwrap();
    let store = tmp.path().join("store");
    let (ra, rb) = (
        pg::unique_repo("mcp-stale-a"),
        pg::unique_repo("mcp-stale-b"),
    );
    let a = engine(&store, &root, &ra);
    let index = |e: &Engine| {
        engram::index::index(e.memories.store(), &root, &IndexOptions::default()).unwrap();
    };
    index(&a);
    // A decoy in the local store, anchored and stale there after the change.
    let decoy = a
        .memories
        .write(engram::memory::Memory::new("Session.request decoy"))
        .unwrap();
    let v = a
        .call(
            "memory_write_structured",
            &args(json!({"text": "Session.request does not retry", "insights": ["pitfall"]})),
        )
        .unwrap();
    let id = v["id"].as_str().unwrap().to_string();
    let got = a.call("memory_get", &args(json!({"id": id}))).unwrap();
    assert_eq!(got["memory"]["stale"], json!([]), "{got}");

    std::fs::write(root.join("src/net.py"), NET_V2).unwrap();
    index(&a);
    let v = a.call("memory_stale", &Map::new()).unwrap();
    let ids: Vec<&str> = v["stale"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        vec![id.as_str()],
        "the database's row, not {}: {v}",
        decoy.id
    );
    assert_eq!(v["stale"][0]["stale"][0]["reason"], "changed");
    let got = a.call("memory_get", &args(json!({"id": id}))).unwrap();
    assert_eq!(got["memory"]["stale"][0]["reason"], "changed", "{got}");
    let found = a
        .call(
            "memory_search",
            &args(json!({"query": "Session.request retry"})),
        )
        .unwrap();
    let hits = found["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 1, "the database's memory only: {found}");
    assert_eq!(
        (
            hits[0]["key"].as_str(),
            hits[0]["stale"][0]["reason"].as_str()
        ),
        (Some(id.as_str()), Some("changed")),
        "{found}"
    );
    // Filters only (no query): the same marks as a local search's hits carry.
    let listed = a
        .call("memory_search_structured", &args(json!({"top_k": 5})))
        .unwrap();
    let hit = listed["hits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["key"] == id.as_str())
        .unwrap_or_else(|| panic!("{id} in {listed}"));
    assert_eq!(hit["stale"][0]["reason"], "changed", "{listed}");
    let ctx = a
        .call(
            "coding_get_project_context",
            &args(json!({"focus": "Session.request"})),
        )
        .unwrap();
    let text = ctx["context"].as_str().unwrap();
    assert!(
        text.contains(&format!("[{id}]"))
            && text.contains("[stale: sym src/net.py#Session.request"),
        "{text}"
    );
    assert!(!text.contains("decoy"), "{text}");

    // Repository B, on the same code index, sees none of A's memories.
    let b = engine(&store, &root, &rb);
    let v = b.call("memory_stale", &Map::new()).unwrap();
    assert_eq!(v["stale"], json!([]), "{v}");
    assert!(b.call("memory_confirm", &args(json!({"id": id}))).is_err());

    let v = a.call("memory_confirm", &args(json!({"id": id}))).unwrap();
    assert_eq!(
        (v["confirmed"].as_bool(), v["version"].as_u64()),
        (Some(true), Some(2)),
        "{v}"
    );
    assert_eq!(v["memory"]["stale"], json!([]), "{v}");
    let v = a.call("memory_stale", &Map::new()).unwrap();
    assert_eq!(v["stale"], json!([]), "{v}");
    assert_eq!(a.backend().get(&id).unwrap().unwrap().version, 2);
}
