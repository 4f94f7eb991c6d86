//! Pattern-set definitions on the team backend (`database_url`), against the real
//! server `tools/postgres.sh start` starts (`ENGRAM_TEST_DATABASE_URL`): sets loaded
//! through an engine or the CLI on PostgreSQL are the repository's rows there, listed,
//! replaced and deleted there, invisible to another repository, never in the local
//! store, and scanned locally over the code index all the same.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use engram::embed::default_embedder;
use engram::gate::{AuditLog, Caps, Gate};
use engram::index::IndexOptions;
use engram::mcp::Engine;
use engram::memory::Memories;
use engram::patterns::{PatternSetStore, Patterns};
use serde_json::{json, Map, Value};

use crate::support::pg;

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

fn open(repo: &str) -> engram::memory_pg::PgMemories {
    pg::database()
        .memories(repo, Arc::new(default_embedder()))
        .unwrap()
}

/// The sets `pattern_list` shows that are not built-in, by id.
fn loaded(engine: &Engine) -> Vec<String> {
    let v = engine.call("pattern_list", &Map::new()).unwrap();
    v["sets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["builtin"] == false)
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn mcp_pattern_sets_live_in_postgres_and_scan_the_local_code_index() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("app.py"), "def run(cmd):\n    return eval(cmd)\n").unwrap();
    let repo = pg::unique_repo("patterns");
    let memories = Memories::open(dir.path().join("store")).unwrap();
    let gate = Gate::new(&repo, Some(root.clone()), Vec::new(), Caps::default());
    let engine =
        Engine::new(memories, gate, IndexOptions::default()).with_backend(Arc::new(open(&repo)));

    let v = engine
        .call(
            "pattern_load",
            &args(json!({"id": "pat:team-evals", "patterns": ["eval\\s*\\("],
                         "description": "eval calls", "tags": ["python"]})),
        )
        .unwrap();
    assert_eq!(v["id"], "pat:team-evals");
    assert_eq!(loaded(&engine), ["pat:team-evals"]);

    // In PostgreSQL, under this repository, and not in the local store.
    let team = open(&repo);
    let set = team.get_pattern_set("team-evals").unwrap().unwrap();
    assert_eq!(set.description, "eval calls");
    assert_eq!(set.patterns[0].regex, "eval\\s*\\(");
    assert!(engine
        .memories
        .store()
        .get("pat:team-evals")
        .unwrap()
        .is_none());
    let local_only: Vec<_> = Patterns::new(engine.memories.store())
        .list()
        .unwrap()
        .into_iter()
        .filter(|(_, builtin)| !builtin)
        .collect();
    assert!(local_only.is_empty(), "{local_only:?}");

    // Scanning is local, over the code index, with the definition from PostgreSQL.
    engine
        .call("jit_index_directory", &args(json!({"path": "."})))
        .unwrap();
    let found = engine
        .call("pattern_scan", &args(json!({"set": "team-evals"})))
        .unwrap();
    let matches = found["matches"].as_array().unwrap();
    assert_eq!(matches.len(), 1, "{found}");
    assert_eq!(matches[0]["path"], "app.py");

    // Loading the name again replaces the set (one row); a built-in is shadowed
    // only when asked.
    engine
        .call(
            "pattern_load",
            &args(json!({"id": "team-evals", "patterns": ["exec\\("]})),
        )
        .unwrap();
    assert_eq!(team.list_pattern_sets().unwrap().len(), 1);
    assert_eq!(
        team.get_pattern_set("team-evals")
            .unwrap()
            .unwrap()
            .patterns[0]
            .regex,
        "exec\\("
    );
    assert!(engine
        .call(
            "pattern_load",
            &args(json!({"id": "security-smells", "patterns": ["x+"]})),
        )
        .is_err());
    engine
        .call(
            "pattern_load",
            &args(json!({"id": "security-smells", "patterns": ["x+"], "replace": true})),
        )
        .unwrap();
    assert_eq!(
        loaded(&engine),
        ["pat:security-smells", "pat:team-evals"],
        "a replaced built-in takes its place in the list"
    );

    // Another repository sees none of them, through the backend and through SQL.
    let stranger = pg::unique_repo("patterns-stranger");
    assert!(open(&stranger).list_pattern_sets().unwrap().is_empty());
    assert!(open(&stranger)
        .get_pattern_set("team-evals")
        .unwrap()
        .is_none());
    let raw = pg::Raw::connect();
    let count = "SELECT count(*) FROM engram_pattern_sets";
    assert_eq!(raw.under(Some(&stranger), count), 0);
    assert_eq!(raw.under(None, count), 0);
    assert_eq!(raw.under(Some(&repo), count), 2);
    assert_eq!(
        raw.under(Some(&stranger), "DELETE FROM engram_pattern_sets"),
        0
    );
    assert_eq!(raw.under(Some(&repo), count), 2);

    // Deleting brings the built-in back.
    assert!(team.delete_pattern_set("security-smells").unwrap());
    assert!(!team.delete_pattern_set("security-smells").unwrap());
    assert_eq!(loaded(&engine), ["pat:team-evals"]);

    // The loads were audited in PostgreSQL too.
    let loads = team
        .read_audit(0)
        .unwrap()
        .into_iter()
        .filter(|e| e.op == "pattern_load")
        .count();
    assert_eq!(loads, 4);
}

/// `engram --json ARGS` on `store`, with `ENGRAM_DATABASE_URL` when `url` is given.
fn engram(store: &Path, url: Option<&str>, a: &[&str]) -> (bool, Value, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_engram"));
    cmd.arg("--store")
        .arg(store)
        .arg("--json")
        .args(a)
        .current_dir(store.parent().unwrap())
        .env_remove("ENGRAM_STORE")
        .env_remove("ENGRAM_DATABASE_URL");
    if let Some(u) = url {
        cmd.env("ENGRAM_DATABASE_URL", u);
    }
    let out = cmd.output().unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (
        out.status.success(),
        v,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn listed(v: &Value) -> Vec<String> {
    v["pattern_sets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["builtin"] == false)
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_pattern_commands_use_postgres_with_database_url_set() {
    let dir = tempfile::tempdir().unwrap();
    // The CLI files a store's repository under the store directory's name.
    let name = pg::unique_repo("patterns-cli");
    let store = dir.path().join(&name);
    Memories::open(&store).unwrap();
    let file = dir.path().join("set.toml");
    std::fs::write(&file, "id = \"pat:todos\"\npatterns = ['TODO']\n").unwrap();
    let url = pg::url();
    let team = Some(url.as_str());

    let (ok, v, err) = engram(&store, team, &["pattern", "load", file.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert_eq!(v["name"], "pat:todos");
    let (ok, v, err) = engram(&store, team, &["pattern", "list"]);
    assert!(ok, "{err}");
    assert_eq!(listed(&v), ["pat:todos"]);
    assert!(open(&name).get_pattern_set("todos").unwrap().is_some());
    // Not in the local store.
    let (ok, v, err) = engram(&store, None, &["pattern", "list"]);
    assert!(ok, "{err}");
    assert!(listed(&v).is_empty(), "{v}");

    let (ok, v, err) = engram(&store, team, &["pattern", "delete", "pat:todos"]);
    assert!(ok, "{err}");
    assert_eq!(v["deleted"], true);
    assert!(open(&name).get_pattern_set("todos").unwrap().is_none());
    let (ok, v, _) = engram(&store, team, &["pattern", "delete", "todos"]);
    assert!(!ok);
    assert_eq!(v["deleted"], false);
}

#[test]
fn pattern_delete_works_on_the_local_store_too() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    Memories::open(&store).unwrap();
    let file = dir.path().join("set.json");
    std::fs::write(&file, r#"{"name": "fixmes", "patterns": ["FIXME"]}"#).unwrap();
    let (ok, _, err) = engram(&store, None, &["pattern", "load", file.to_str().unwrap()]);
    assert!(ok, "{err}");
    let (_, v, _) = engram(&store, None, &["pattern", "list"]);
    assert_eq!(listed(&v), ["pat:fixmes"]);
    let (ok, v, err) = engram(&store, None, &["pattern", "delete", "fixmes"]);
    assert!(ok, "{err}");
    assert_eq!(v["deleted"], true);
    let (_, v, _) = engram(&store, None, &["pattern", "list"]);
    assert!(listed(&v).is_empty(), "{v}");
}

/// The memory ids of a scan's matches, in order.
fn match_keys(v: &Value) -> Vec<String> {
    v["matches"]
        .as_array()
        .unwrap_or_else(|| panic!("no matches in {v}"))
        .iter()
        .map(|m| m["key"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn memory_scans_read_the_repositorys_memories_from_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let url = pg::url();
    pg::database(); // migrated
    let team = Some(url.as_str());
    // Two checkouts, two repositories on one database.
    let (name_a, name_b) = (pg::unique_repo("scan-a"), pg::unique_repo("scan-b"));
    let (store_a, store_b) = (dir.path().join(&name_a), dir.path().join(&name_b));
    Memories::open(&store_a).unwrap();
    Memories::open(&store_b).unwrap();
    let file = dir.path().join("set.toml");
    std::fs::write(
        &file,
        "id = \"pat:codenames\"\npatterns = [{ id = \"codename\", regex = 'quokka[a-z]+' }]\n",
    )
    .unwrap();
    for store in [&store_a, &store_b] {
        let (ok, _, err) = engram(store, team, &["pattern", "load", file.to_str().unwrap()]);
        assert!(ok, "{err}");
    }

    // Written through the CLI on PostgreSQL, into repository A only.
    let remember = |text: &str, extra: &[&str]| {
        let mut a = vec!["remember", text];
        a.extend_from_slice(extra);
        let (ok, v, err) = engram(&store_a, team, &a);
        assert!(ok, "{err}");
        v["id"].as_str().unwrap().to_string()
    };
    let billing = remember(
        "the quokkafish rollout waits\nfor the quokkabird freeze",
        &[
            "--task",
            "debug",
            "--context",
            "billing",
            "--context",
            "backend",
        ],
    );
    let auth = remember("quokkaroo owns the login flow", &["--context", "auth"]);
    remember("nothing to see here", &[]);
    // Enough memories that the scan pages through them (500 a page).
    let bulk = dir.path().join("bulk.jsonl");
    let mut lines = String::new();
    for i in 0..600 {
        let text = if i == 599 {
            "a late quokkaling".to_string()
        } else {
            format!("filler {i}")
        };
        lines.push_str(&json!({"text": text}).to_string());
        lines.push('\n');
    }
    std::fs::write(&bulk, lines).unwrap();
    let (ok, _, err) = engram(&store_a, team, &["import", bulk.to_str().unwrap()]);
    assert!(ok, "{err}");

    let fillers = dir.path().join("fillers.toml");
    std::fs::write(
        &fillers,
        "id = \"pat:fillers\"\npatterns = ['filler [0-9]+']\n",
    )
    .unwrap();
    let (ok, _, err) = engram(
        &store_a,
        team,
        &["pattern", "load", fillers.to_str().unwrap()],
    );
    assert!(ok, "{err}");
    let (ok, v, err) = engram(&store_a, team, &["scan", "pat:fillers"]);
    assert!(ok, "{err}");
    let mut keys = match_keys(&v);
    keys.dedup();
    assert_eq!(keys.len(), 599, "every page is read, each memory once");

    // The CLI scan finds them on the server, with positions in the text.
    let (ok, v, err) = engram(&store_a, team, &["scan", "pat:codenames", "--memories"]);
    assert!(ok, "{err}");
    let keys = match_keys(&v);
    assert_eq!(keys.len(), 4, "{v}");
    assert!(keys.contains(&billing) && keys.contains(&auth), "{v}");
    let second = v["matches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["text"] == "quokkabird")
        .unwrap_or_else(|| panic!("{v}"));
    assert_eq!(second["key"], json!(billing));
    assert_eq!(second["line"], 2);
    assert_eq!(second["pattern"], "codename");
    // With no flag it scans memories too; the filters apply on the server.
    let (ok, v, err) = engram(
        &store_a,
        team,
        &["scan", "codenames", "--context", "billing"],
    );
    assert!(ok, "{err}");
    assert_eq!(match_keys(&v), [billing.clone(), billing.clone()], "{v}");
    let (ok, v, err) = engram(&store_a, team, &["scan", "codenames", "--task", "debug"]);
    assert!(ok, "{err}");
    assert_eq!(match_keys(&v).len(), 2, "{v}");
    let (ok, v, err) = engram(&store_a, team, &["scan", "codenames", "--key", &auth]);
    assert!(ok, "{err}");
    assert_eq!(match_keys(&v), [auth.as_str()], "{v}");

    // Repository B and the local store see none of A's memories.
    let (ok, v, err) = engram(&store_b, team, &["scan", "pat:codenames", "--memories"]);
    assert!(ok, "{err}");
    assert!(match_keys(&v).is_empty(), "{v}");
    let (ok, v, err) = engram(&store_b, team, &["scan", "codenames", "--key", &auth]);
    assert!(ok, "{err}");
    assert!(match_keys(&v).is_empty(), "{v}");
    let local = Memories::open(&store_a).unwrap();
    let (ok, v, err) = engram(
        &store_a,
        None,
        &["scan", "pat:security-smells", "--memories"],
    );
    assert!(ok, "{err}");
    assert!(match_keys(&v).is_empty(), "{v}");
    assert_eq!(local.count().unwrap(), 0);
    drop(local);

    // The MCP tools read the same rows.
    let engine = |name: &str, store: &Path| {
        let gate = Gate::new(name, None, Vec::new(), Caps::default());
        Engine::new(
            Memories::open(store).unwrap(),
            gate,
            IndexOptions::default(),
        )
        .with_backend(Arc::new(open(name)))
    };
    let a = engine(&name_a, &store_a);
    let v = a
        .call(
            "pattern_scan_memories",
            &args(json!({"set": "pat:codenames"})),
        )
        .unwrap();
    assert_eq!(match_keys(&v).len(), 4, "{v}");
    let v = a
        .call(
            "pattern_scan_memories",
            &args(json!({"set": "codenames", "context": ["billing", "backend"], "task": "debug"})),
        )
        .unwrap();
    assert_eq!(match_keys(&v), [billing.clone(), billing.clone()], "{v}");
    let v = a
        .call(
            "pattern_scan_memories",
            &args(json!({"set": "codenames", "context": ["billing", "auth"]})),
        )
        .unwrap();
    assert!(match_keys(&v).is_empty(), "every context must match: {v}");
    let v = a
        .call(
            "pattern_scan",
            &args(json!({"set": "codenames", "key": auth})),
        )
        .unwrap();
    assert_eq!(match_keys(&v), [auth.as_str()], "{v}");
    let b = engine(&name_b, &store_b);
    let v = b
        .call(
            "pattern_scan_memories",
            &args(json!({"set": "pat:codenames"})),
        )
        .unwrap();
    assert!(
        match_keys(&v).is_empty(),
        "A's memories scanned from B: {v}"
    );
    let v = b
        .call(
            "pattern_scan",
            &args(json!({"set": "codenames", "key": auth})),
        )
        .unwrap();
    assert!(match_keys(&v).is_empty(), "{v}");
}
