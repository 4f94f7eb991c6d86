//! `engram stale --impact`: a memory anchored to a function is *possibly affected*
//! when a function it calls changed since the memory was anchored, reported apart
//! from stale (the function itself changed). End to end through the `engram` binary
//! on a real Python repository and store, and through the MCP engine's
//! `memory_stale` (`format-spec/staleness.md`, "Callee anchors").

use std::path::Path;

use serde_json::{json, Map, Value};

use engram_cli::{engram, ok_json};

use crate::support::engram_cli;

const UTIL: &str = "\
def base_rate():
    return 0.2


def rate(region):
    r = base_rate()
    return r + 0.01


def shipping(weight):
    return weight * 3
";

const APP: &str = "\
from pkg.util import rate


def total(price, region):
    t = price * (1 + rate(region))
    return round(t, 2)


def unrelated():
    return 0
";

fn write(repo: &Path, rel: &str, text: &str) {
    let p = repo.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn index(store: &Path, repo: &Path) {
    ok_json(store, &["index", repo.to_str().unwrap()]);
}

/// A repository with `pkg/util.py` and `pkg/app.py` indexed into a fresh store.
fn setup() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let store = tmp.path().join("store");
    write(&repo, "pkg/__init__.py", "");
    write(&repo, "pkg/util.py", UTIL);
    write(&repo, "pkg/app.py", APP);
    index(&store, &repo);
    (tmp, repo, store)
}

fn list(v: &Value, field: &str) -> Vec<Value> {
    v[field]
        .as_array()
        .unwrap_or_else(|| panic!("{field} is a list: {v}"))
        .clone()
}

/// `engram stale --impact --json` (with more arguments).
fn impact(store: &Path, more: &[&str]) -> Value {
    let mut a = vec!["stale", "--impact"];
    a.extend_from_slice(more);
    ok_json(store, &a)
}

/// (memory id, anchored target, [(callee name, path, depth, reason)]) of each affected
/// entry.
type Row = (String, String, Vec<(String, String, u64, String)>);

fn affected(v: &Value) -> Vec<Row> {
    list(v, "affected")
        .iter()
        .map(|a| {
            let via = a["via"]
                .as_array()
                .unwrap_or_else(|| panic!("via is a list: {a}"))
                .iter()
                .map(|x| {
                    assert!(x["line"].as_u64().unwrap_or(0) > 0, "{x}");
                    (
                        x["symbol"].as_str().unwrap_or("?").to_string(),
                        x["path"].as_str().unwrap_or("?").to_string(),
                        x["depth"].as_u64().unwrap_or(0),
                        x["reason"].as_str().unwrap_or("?").to_string(),
                    )
                })
                .collect();
            (
                a["memory"]["id"].as_str().unwrap_or("?").to_string(),
                a["target"].as_str().unwrap_or("?").to_string(),
                via,
            )
        })
        .collect()
}

fn via(name: &str, path: &str, depth: u64, reason: &str) -> (String, String, u64, String) {
    (name.into(), path.into(), depth, reason.into())
}

#[test]
fn a_changed_callee_makes_a_memory_possibly_affected_not_stale() {
    let (_tmp, repo, store) = setup();
    let m = ok_json(&store, &["remember", "`total` rounds after the rate"]);
    let id = m["id"].as_str().unwrap().to_string();
    assert_eq!(
        m["anchors"][0]["key"], "sym:pkg/app.py#total:function:4:6",
        "{m}"
    );
    // The callees as they were when the memory was written: `rate` (imported) at
    // depth 1, `base_rate` at depth 2; a library call (`round`) is no callee.
    let callees = list(&m, "callees");
    let names: Vec<(&str, u64)> = callees
        .iter()
        .map(|c| (c["key"].as_str().unwrap(), c["depth"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        names,
        vec![
            ("sym:pkg/util.py#rate:function:5:7", 1),
            ("sym:pkg/util.py#base_rate:function:1:2", 2)
        ],
        "{m}"
    );
    let v = impact(&store, &[]);
    assert_eq!(v["stale"], json!([]), "{v}");
    assert_eq!(v["affected"], json!([]), "{v}");

    // An unrelated change (another function of the callee's file, lines above the
    // callee moved) affects nothing.
    write(
        &repo,
        "pkg/util.py",
        &format!("import math\n\n{UTIL}").replace("weight * 3", "weight * 4 + 1"),
    );
    index(&store, &repo);
    let v = impact(&store, &[]);
    assert_eq!(v["affected"], json!([]), "{v}");
    assert_eq!(v["stale"], json!([]), "{v}");

    // The callee's body changes: possibly affected via `rate`, and not stale.
    write(
        &repo,
        "pkg/util.py",
        &UTIL.replace("return r + 0.01", "return r + 0.05"),
    );
    index(&store, &repo);
    let v = impact(&store, &[]);
    assert_eq!(v["stale"], json!([]), "{v}");
    assert_eq!(
        affected(&v),
        vec![(
            id.clone(),
            "sym:pkg/app.py#total:function".to_string(),
            vec![via("rate", "pkg/util.py", 1, "changed")]
        )],
        "{v}"
    );
    assert_eq!(v["affected"][0]["symbol"], "total", "{v}");
    assert_eq!(v["affected"][0]["via"][0]["line"], 5, "{v}");
    // Plain `stale` is as it was: nothing, and no other field.
    assert_eq!(ok_json(&store, &["stale"]), json!({"stale": []}));
    let text = String::from_utf8(engram(&store, &["stale", "--impact"]).stdout).unwrap();
    assert!(text.contains("possibly affected"), "{text}");
    assert!(text.contains("via rate (pkg/util.py:5) changed"), "{text}");
    let text = String::from_utf8(engram(&store, &["stale"]).stdout).unwrap();
    assert!(!text.contains("affected"), "{text}");

    // The same after a rebuild of the tracker from the log.
    ok_json(&store, &["rebuild"]);
    assert_eq!(impact(&store, &[]), v);

    // Confirming re-anchors the callees too: nothing left.
    ok_json(&store, &["confirm", &id]);
    let v = impact(&store, &[]);
    assert_eq!(v["affected"], json!([]), "{v}");

    // The function itself changes: stale, and not also listed as affected.
    write(
        &repo,
        "pkg/app.py",
        &APP.replace("return round(t, 2)", "return round(t, 3)"),
    );
    index(&store, &repo);
    let v = impact(&store, &[]);
    assert_eq!(list(&v, "stale").len(), 1, "{v}");
    assert_eq!(v["stale"][0]["memory"]["id"], id.as_str());
    assert_eq!(
        v["stale"][0]["stale"][0]["target"],
        "sym:pkg/app.py#total:function"
    );
    assert_eq!(v["affected"], json!([]), "{v}");
}

#[test]
fn depth_two_follows_the_callees_of_callees_only_when_asked() {
    let (_tmp, repo, store) = setup();
    let m = ok_json(&store, &["remember", "`total` rounds after the rate"]);
    let id = m["id"].as_str().unwrap().to_string();
    write(
        &repo,
        "pkg/util.py",
        &UTIL.replace("return 0.2", "return 0.25"),
    );
    index(&store, &repo);
    assert_eq!(impact(&store, &[])["affected"], json!([]));
    let v = impact(&store, &["--depth", "2"]);
    assert_eq!(
        affected(&v),
        vec![(
            id,
            "sym:pkg/app.py#total:function".to_string(),
            vec![via("base_rate", "pkg/util.py", 2, "changed")]
        )],
        "{v}"
    );
    // A depth outside 1..2 is refused with what is accepted.
    let out = engram(&store, &["stale", "--impact", "--depth", "5"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--depth"), "{err}");
}

#[test]
fn a_deleted_callee_is_reported_as_deleted() {
    let (_tmp, repo, store) = setup();
    let m = ok_json(&store, &["remember", "`total` rounds after the rate"]);
    let id = m["id"].as_str().unwrap().to_string();
    write(
        &repo,
        "pkg/util.py",
        "def base_rate():\n    return 0.2\n\n\ndef shipping(weight):\n    return weight * 3\n",
    );
    index(&store, &repo);
    let v = impact(&store, &[]);
    let rows = affected(&v);
    assert_eq!(rows.len(), 1, "{v}");
    assert_eq!(rows[0].0, id);
    assert_eq!(rows[0].2, vec![via("rate", "pkg/util.py", 1, "deleted")]);
}

#[test]
fn a_memory_anchored_before_callee_anchors_existed_reports_nothing_and_says_so() {
    let (tmp, repo, store) = setup();
    // The anchor of `total` as this code has it, brought by an imported line without
    // callee anchors: what a memory written by an engram before them holds.
    let probe = ok_json(&store, &["remember", "`total` is the probe"]);
    let anchor = probe["anchors"][0].clone();
    ok_json(&store, &["forget", probe["id"].as_str().unwrap()]);
    let file = tmp.path().join("in.jsonl");
    std::fs::write(
        &file,
        format!(
            "{}\n",
            json!({"text": "`total` rounds after the rate", "anchors": [anchor]})
        ),
    )
    .unwrap();
    ok_json(&store, &["import", file.to_str().unwrap()]);
    let old = ok_json(&store, &["list"])["memories"][0].clone();
    assert!(old.get("callees").is_none(), "{old}");
    let old_id = old["id"].as_str().unwrap().to_string();

    write(
        &repo,
        "pkg/util.py",
        &UTIL.replace("return r + 0.01", "return r + 0.05"),
    );
    index(&store, &repo);
    let v = impact(&store, &[]);
    assert_eq!(v["stale"], json!([]), "{v}");
    assert_eq!(v["affected"], json!([]), "{v}");
    assert_eq!(v["unchecked"], json!([old_id.as_str()]), "{v}");
    let text = String::from_utf8(engram(&store, &["stale", "--impact"]).stdout).unwrap();
    assert!(text.contains("anchored before callee anchors"), "{text}");

    // `confirm` records its callees as the code is now: the change before is not
    // reported, and the next one is.
    ok_json(&store, &["confirm", &old_id]);
    let v = impact(&store, &[]);
    assert_eq!(v["unchecked"], json!([]), "{v}");
    assert_eq!(v["affected"], json!([]), "{v}");
    write(&repo, "pkg/util.py", UTIL);
    index(&store, &repo);
    assert_eq!(affected(&impact(&store, &[])).len(), 1);
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

#[test]
fn mcp_memory_stale_takes_impact() {
    use engram::gate::{Caps, Gate};
    use engram::index::{index, IndexOptions};
    use engram::mcp::Engine;
    use engram::memory::Memories;

    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    write(&repo, "pkg/__init__.py", "");
    write(&repo, "pkg/util.py", UTIL);
    write(&repo, "pkg/app.py", APP);
    let memories = Memories::open(tmp.path().join("store")).unwrap();
    index(memories.store(), &repo, &IndexOptions::default()).unwrap();
    let gate = Gate::new("repo", Some(repo.clone()), Vec::new(), Caps::default());
    let engine = Engine::new(memories, gate, IndexOptions::default());
    let id = engine
        .call(
            "memory_write_structured",
            &args(json!({"text": "`total` rounds after the rate", "insights": ["pitfall"]})),
        )
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    write(
        &repo,
        "pkg/util.py",
        &UTIL.replace("return r + 0.01", "return r + 0.05"),
    );
    index(engine.memories.store(), &repo, &IndexOptions::default()).unwrap();

    let plain = engine.call("memory_stale", &args(json!({}))).unwrap();
    assert_eq!(plain["stale"], json!([]), "{plain}");
    assert!(plain.get("affected").is_none(), "{plain}");
    let v = engine
        .call("memory_stale", &args(json!({"impact": true})))
        .unwrap();
    assert_eq!(v["stale"], json!([]), "{v}");
    assert_eq!(v["affected"][0]["id"], id.as_str(), "{v}");
    assert_eq!(v["affected"][0]["target"], "sym:pkg/app.py#total:function");
    assert_eq!(v["affected"][0]["via"][0]["symbol"], "rate");
    assert_eq!(v["affected"][0]["via"][0]["reason"], "changed");
    assert!(engine
        .call("memory_stale", &args(json!({"impact": true, "depth": 7})))
        .is_err());
    // Callee anchors are bookkeeping: not spent from an agent's reply budget.
    let got = engine
        .call("memory_get", &args(json!({"id": id.as_str()})))
        .unwrap();
    assert_eq!(got["memory"]["id"], id.as_str(), "{got}");
    assert!(got["memory"].get("callees").is_none(), "{got}");
    assert!(got["memory"].get("anchors").is_some(), "{got}");
}

#[test]
fn verify_checks_callee_anchors_and_rebuild_mends_them() {
    let (tmp, _repo, store) = setup();
    let m = ok_json(&store, &["remember", "`total` rounds after the rate"]);
    let id = m["id"].as_str().unwrap().to_string();
    // An older memory's unchecked row is checked as well.
    let file = tmp.path().join("in.jsonl");
    let line = json!({"text": "`total` is old", "anchors": [m["anchors"][0].clone()]});
    std::fs::write(&file, format!("{line}\n")).unwrap();
    ok_json(&store, &["import", file.to_str().unwrap()]);
    assert_eq!(ok_json(&store, &["verify"])["sound"], true);

    let db = rusqlite::Connection::open(store.join("tracker.db")).unwrap();
    let n = db
        .execute(
            "UPDATE stale_callees SET hash = 'feed' WHERE mem_id = ?1 AND depth = 1",
            [id.as_str()],
        )
        .unwrap();
    assert_eq!(n, 1);
    drop(db);
    let out = engram(&store, &["verify", "--json"]);
    assert!(
        !out.status.success(),
        "verify passed a changed stale_callees"
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let named = v["problems"].as_array().unwrap().iter().any(|p| {
        let w = p["what"].as_str().unwrap_or_default();
        w.contains("table stale_callees:") && w.contains(id.as_str())
    });
    assert!(named, "no problem names stale_callees and {id}: {v}");
    ok_json(&store, &["rebuild"]);
    assert_eq!(ok_json(&store, &["verify"])["sound"], true);
    // Forgetting a memory removes its rows.
    ok_json(&store, &["forget", &id]);
    let db = rusqlite::Connection::open(store.join("tracker.db")).unwrap();
    let left: i64 = db
        .query_row("SELECT count(*) FROM stale_callees", [], |r| r.get(0))
        .unwrap();
    assert_eq!(left, 0);
    let unchecked: i64 = db
        .query_row("SELECT count(*) FROM stale_unchecked", [], |r| r.get(0))
        .unwrap();
    assert_eq!(unchecked, 1);
}
