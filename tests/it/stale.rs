//! Memories that know when their code changed, end to end through the `engram`
//! binary on real stores: a memory about a function is stale after the function's
//! body changes and fresh again after `confirm`; a deleted file, a rename with an
//! unchanged body and `rebuild` (`format-spec/staleness.md`).

use std::path::Path;

use serde_json::Value;

use engram_cli::{engram, ok_json};

use crate::support::engram_cli;

const NET_V1: &str = "\
class Session:
    def request(self, method, url):
        r = self.send(method, url)
        return r

    def send(self, method, url):
        return None


def helper(x):
    y = x * 2
    return y + 1
";

fn write(repo: &Path, rel: &str, text: &str) {
    let p = repo.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn index(store: &Path, repo: &Path) -> Value {
    ok_json(store, &["index", repo.to_str().unwrap()])
}

/// `engram stale --json`'s list.
fn stale(store: &Path) -> Vec<Value> {
    ok_json(store, &["stale"])["stale"]
        .as_array()
        .expect("stale is a list")
        .clone()
}

/// A repository with `src/net.py` indexed into a fresh store.
fn setup() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let store = tmp.path().join("store");
    write(&repo, "src/net.py", NET_V1);
    index(&store, &repo);
    (tmp, repo, store)
}

#[test]
fn a_memory_about_a_function_is_stale_after_its_body_changes_and_fresh_after_confirm() {
    let (_tmp, repo, store) = setup();
    let m = ok_json(
        &store,
        &["remember", "Session.request must retry twice on timeouts"],
    );
    let id = m["id"].as_str().unwrap().to_string();
    let anchors = m["anchors"].as_array().expect("anchors written");
    assert_eq!(anchors.len(), 1, "{m}");
    assert_eq!(
        anchors[0]["key"],
        "sym:src/net.py#Session.request:method:2:4"
    );
    assert!(stale(&store).is_empty());

    // Lines above the function move it; its body is the same: still fresh.
    write(&repo, "src/net.py", &format!("import os\n\n{NET_V1}"));
    index(&store, &repo);
    assert!(stale(&store).is_empty(), "{:?}", stale(&store));

    // The body changes: stale, with what changed.
    write(
        &repo,
        "src/net.py",
        &format!("import os\n\n{NET_V1}").replace(
            "    def request(self, method, url):\n        r = self.send(method, url)\n",
            "    def request(self, method, url, retries=2):\n        r = self.send(method, url)\n        r = r or self.send(method, url)\n",
        ),
    );
    index(&store, &repo);
    let s = stale(&store);
    assert_eq!(s.len(), 1, "{s:?}");
    assert_eq!(s[0]["memory"]["id"], id.as_str());
    let mark = &s[0]["stale"][0];
    assert_eq!(mark["reason"], "changed");
    assert_eq!(mark["target"], "sym:src/net.py#Session.request:method");
    assert_eq!(mark["lines_before"], 3);
    assert_eq!(mark["lines_after"], 4);
    assert_eq!(mark["signature_before"], "def request(self, method, url)");
    assert_eq!(
        mark["signature_after"],
        "def request(self, method, url, retries=2)"
    );
    assert!(mark["summary"].as_str().unwrap().contains("+1 lines"));
    assert!(mark["since_ms"].as_u64().unwrap() > 0);
    // Nothing is deleted: the memory is still there, unchanged, and says it is stale.
    let got = ok_json(&store, &["get", &id]);
    assert_eq!(got["text"], "Session.request must retry twice on timeouts");
    assert_eq!(got["stale"][0]["reason"], "changed");
    assert_eq!(
        ok_json(&store, &["list"])["memories"][0]["stale"][0]["reason"],
        "changed"
    );
    let plain = String::from_utf8(engram(&store, &["get", &id]).stdout).unwrap();
    assert!(
        plain.contains("[stale: sym src/net.py#Session.request:method changed"),
        "{plain}"
    );
    let plain = engram(&store, &["stale"]);
    let text = String::from_utf8(plain.stdout).unwrap();
    assert!(
        text.contains("sym src/net.py#Session.request:method changed"),
        "{text}"
    );

    let c = ok_json(&store, &["confirm", &id]);
    assert_eq!(c["memory"]["version"], 2);
    assert_eq!(c["stale"], serde_json::json!([]));
    assert!(stale(&store).is_empty());

    // `engram update` re-anchors too.
    write(&repo, "src/net.py", NET_V1);
    index(&store, &repo);
    assert_eq!(stale(&store).len(), 1);
    ok_json(
        &store,
        &["update", &id, "Session.request must retry twice, always"],
    );
    assert!(stale(&store).is_empty());
}

#[test]
fn a_memory_referencing_a_deleted_file_says_so() {
    let (_tmp, repo, store) = setup();
    write(
        &repo,
        "src/util.py",
        "def clamp(v):\n    return max(0, v)\n",
    );
    index(&store, &repo);
    let by_key = ok_json(
        &store,
        &[
            "remember",
            "util is vendored",
            "--symbol",
            "file:src/util.py",
        ],
    );
    let by_line = ok_json(&store, &["remember", "src/util.py:2 clamps below only"]);
    assert_eq!(
        by_line["anchors"][0]["key"],
        "sym:src/util.py#clamp:function:1:2"
    );
    std::fs::remove_file(repo.join("src/util.py")).unwrap();
    index(&store, &repo);
    let s = stale(&store);
    assert_eq!(s.len(), 2, "{s:?}");
    for entry in &s {
        let mark = &entry["stale"][0];
        assert_eq!(mark["reason"], "deleted", "{entry}");
        assert!(mark.get("now_key").is_none());
    }
    let file = s
        .iter()
        .find(|e| e["memory"]["id"] == by_key["id"])
        .unwrap();
    assert_eq!(file["stale"][0]["target"], "file:src/util.py");
    assert!(String::from_utf8(engram(&store, &["stale"]).stdout)
        .unwrap()
        .contains("file src/util.py deleted"));
    // Forgetting a stale memory takes its marks with it.
    ok_json(&store, &["forget", by_key["id"].as_str().unwrap()]);
    let s = stale(&store);
    assert_eq!(s.len(), 1, "{s:?}");
    assert_eq!(s[0]["memory"]["id"], by_line["id"]);
}

#[test]
fn a_rename_with_an_unchanged_body_is_recognised() {
    let (_tmp, repo, store) = setup();
    let m = ok_json(&store, &["remember", "`helper` doubles then adds one"]);
    assert_eq!(
        m["anchors"][0]["key"],
        "sym:src/net.py#helper:function:10:12"
    );
    write(
        &repo,
        "src/net.py",
        &NET_V1.replace("def helper", "def assist"),
    );
    index(&store, &repo);
    let s = stale(&store);
    assert_eq!(s.len(), 1, "{s:?}");
    let mark = &s[0]["stale"][0];
    assert_eq!(mark["reason"], "renamed");
    assert_eq!(mark["now_key"], "sym:src/net.py#assist:function:10:12");
    // A rename whose body also changed is a deletion.
    write(
        &repo,
        "src/net.py",
        &NET_V1
            .replace("def helper", "def other")
            .replace("x * 2", "x * 3"),
    );
    index(&store, &repo);
    assert_eq!(stale(&store)[0]["stale"][0]["reason"], "deleted");
}

#[test]
fn rebuild_gives_the_same_answers() {
    let (_tmp, repo, store) = setup();
    ok_json(
        &store,
        &["remember", "Session.request is the one entry point"],
    );
    ok_json(&store, &["remember", "`helper` is pure"]);
    ok_json(&store, &["remember", "Session.send never raises"]);
    let fresh = ok_json(&store, &["remember", "src/net.py:7 returns None"]);
    write(
        &repo,
        "src/net.py",
        &NET_V1
            .replace("def helper", "def assist")
            .replace("r = self.send(method, url)", "r = self.send(url, method)"),
    );
    index(&store, &repo);
    ok_json(&store, &["confirm", fresh["id"].as_str().unwrap()]);
    let before = stale(&store);
    assert_eq!(before.len(), 2, "{before:?}");
    ok_json(&store, &["rebuild"]);
    assert_eq!(stale(&store), before);
    // Deleting tracker.db rebuilds it on the next open, the same again.
    std::fs::remove_file(store.join("tracker.db")).unwrap();
    let _ = std::fs::remove_file(store.join("tracker.db-wal"));
    let _ = std::fs::remove_file(store.join("tracker.db-shm"));
    assert_eq!(stale(&store), before);
    // Compaction drops superseded code records; which memories are stale, and why,
    // stays (a since may move later: format-spec/staleness.md).
    // Sorted: the list's order follows since, which compaction may move.
    let why = |list: Vec<Value>| -> Vec<(String, String, String)> {
        let mut all: Vec<(String, String, String)> = list
            .iter()
            .flat_map(|e| {
                e["stale"].as_array().unwrap().iter().map(|m| {
                    (
                        e["memory"]["id"].to_string(),
                        m["target"].to_string(),
                        m["reason"].to_string(),
                    )
                })
            })
            .collect();
        all.sort();
        all
    };
    ok_json(&store, &["compact"]);
    ok_json(&store, &["rebuild"]);
    assert_eq!(why(stale(&store)), why(before));
}

/// A tracker of the layout before the seq-keyed code tables (code projection 8, stale
/// 2: `stale_code` and `code_ref_files` named their record by key hash, the chunk and
/// symbol tables had a unique index on it) is rebuilt on open, and answers as before.
#[test]
fn a_tracker_of_the_hash_keyed_layout_is_rebuilt_and_answers_the_same() {
    let (_tmp, repo, store) = setup();
    ok_json(&store, &["remember", "`helper` is pure"]);
    ok_json(&store, &["remember", "Session.send never raises"]);
    write(
        &repo,
        "src/net.py",
        &NET_V1.replace("return None", "return 0"),
    );
    index(&store, &repo);
    let answers = |store: &Path| {
        let keys = |v: Value, list: &str| -> Vec<String> {
            v[list]
                .as_array()
                .unwrap_or_else(|| panic!("{list} in {v}"))
                .iter()
                .map(|h| h["key"].as_str().unwrap_or_default().to_string())
                .collect()
        };
        (
            stale(store),
            keys(ok_json(store, &["search", "request send"]), "hits"),
            ok_json(store, &["callees", "Session.request"]),
        )
    };
    let before = answers(&store);
    assert_eq!(before.0.len(), 1, "{:?}", before.0);
    assert!(!before.1.is_empty(), "{:?}", before.1);
    // Back to the old layout and fingerprint, as an older build left it.
    let db = rusqlite::Connection::open(store.join("tracker.db")).unwrap();
    db.execute_batch(
        "ALTER TABLE stale_code RENAME COLUMN seq TO key_hash;
         CREATE INDEX stale_code_by_key ON stale_code (key_hash);
         ALTER TABLE code_ref_files RENAME COLUMN seq TO key_hash;
         CREATE UNIQUE INDEX old_chunks_by_key ON code_chunks (key_hash);
         UPDATE meta SET value = replace(replace(value, ';code:10', ';code:8'), ';stale:3', ';stale:2')
          WHERE name = 'identity';",
    )
    .unwrap();
    let identity = |db: &rusqlite::Connection| -> String {
        db.query_row("SELECT value FROM meta WHERE name = 'identity'", [], |r| {
            r.get(0)
        })
        .unwrap()
    };
    assert!(identity(&db).contains(";code:8"), "{}", identity(&db));
    drop(db);
    assert_eq!(answers(&store), before);
    let db = rusqlite::Connection::open(store.join("tracker.db")).unwrap();
    assert!(identity(&db).contains(";code:10"), "{}", identity(&db));
    let columns: Vec<String> = db
        .prepare("SELECT name FROM pragma_table_info('stale_code')")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(columns.contains(&"seq".to_string()), "{columns:?}");
    let old_index: i64 = db
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE name IN ('stale_code_by_key', 'old_chunks_by_key')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(old_index, 0);
}

#[test]
fn recall_search_context_and_enrich_show_stale_memories_below_fresh_ones() {
    let (_tmp, repo, store) = setup();
    // The stale one is the newer: recency alone would rank it first.
    let fresh_id = ok_json(
        &store,
        &[
            "remember",
            "Pitfall: Session.send never retries",
            "--insight",
            "pitfall",
        ],
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    let stale_id = ok_json(
        &store,
        &[
            "remember",
            "Pitfall: Session.request never retries",
            "--insight",
            "pitfall",
        ],
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    write(
        &repo,
        "src/net.py",
        &NET_V1.replace("        return r\n", "        return r or None\n"),
    );
    index(&store, &repo);

    for args in [
        &["recall", "Pitfall never retries"][..],
        &["search", "Pitfall never retries", "--kind", "memory"][..],
    ] {
        let hits = ok_json(&store, args)["hits"].as_array().unwrap().clone();
        let ids: Vec<&str> = hits.iter().map(|h| h["key"].as_str().unwrap()).collect();
        assert_eq!(
            ids,
            [fresh_id.as_str(), stale_id.as_str()],
            "{args:?}: {hits:?}"
        );
        assert_eq!(hits[0]["stale"], serde_json::json!([]));
        assert_eq!(hits[1]["stale"][0]["reason"], "changed");
    }

    let context = ok_json(&store, &["context"])["context"]
        .as_str()
        .unwrap()
        .to_string();
    let fresh_at = context.find(&fresh_id).unwrap();
    let stale_at = context.find(&stale_id).unwrap();
    assert!(fresh_at < stale_at, "{context}");
    assert!(
        context.contains(&format!(
            "[{stale_id}] [stale: sym src/net.py#Session.request:method changed just now]"
        )),
        "{context}"
    );

    let enriched = ok_json(&store, &["enrich", "Pitfall never retries"]);
    let text = enriched["context"].as_str().unwrap();
    assert!(
        text.contains(&format!(
            "[memory: {stale_id}] [stale: sym src/net.py#Session.request:method changed"
        )),
        "{text}"
    );
    assert!(text.find(&fresh_id).unwrap() < text.find(&stale_id).unwrap());
}

/// `engram index --watch` marks staleness within its debounce: the pass that
/// re-indexes the edited file is the one that makes the memory stale.
#[test]
fn watch_marks_staleness_as_it_reindexes() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    use std::sync::mpsc;
    use std::time::Duration;

    let (_tmp, repo, store) = setup();
    let id = ok_json(&store, &["remember", "`helper` doubles then adds one"])["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_engram"))
        .arg("--store")
        .arg(&store)
        .args(["--json", "index", "--watch"])
        .arg(&repo)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn engram index --watch");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, lines) = mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx
                .send(serde_json::from_str(&line).unwrap_or(Value::Null))
                .is_err()
            {
                break;
            }
        }
    });
    let next = || {
        lines
            .recv_timeout(Duration::from_secs(20))
            .expect("engram index --watch printed nothing within 20 s")
    };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        next(); // the initial pass
        assert!(next()["watching"].is_string());
        write(&repo, "src/net.py", &NET_V1.replace("x * 2", "x * 4"));
        while next()["files_indexed"] != 1 {}
        let s = stale(&store);
        assert_eq!(s.len(), 1, "{s:?}");
        assert_eq!(s[0]["memory"]["id"], id.as_str());
        assert_eq!(s[0]["stale"][0]["reason"], "changed");
    }));
    let _ = child.kill();
    let _ = child.wait();
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

#[test]
fn imported_memories_are_anchored_and_keep_the_anchors_they_bring() {
    let (tmp, repo, store) = setup();
    let file = tmp.path().join("in.jsonl");
    std::fs::write(
        &file,
        "{\"text\": \"`helper` doubles then adds one\"}\n\
         {\"text\": \"Session.send is a stub\", \"anchors\": [{\"key\": \"sym:src/net.py#Session.send:method:6:7\", \"hash\": \"0000000000000000\"}]}\n",
    )
    .unwrap();
    ok_json(&store, &["import", file.to_str().unwrap()]);
    // The second line's anchor does not match the code here: stale at once.
    let s = stale(&store);
    assert_eq!(s.len(), 1, "{s:?}");
    assert_eq!(s[0]["memory"]["text"], "Session.send is a stub");
    write(&repo, "src/net.py", &NET_V1.replace("x * 2", "x * 5"));
    index(&store, &repo);
    let s = stale(&store);
    assert_eq!(s.len(), 2, "{s:?}");
    assert_eq!(s[0]["memory"]["text"], "`helper` doubles then adds one");
}

#[test]
fn a_rename_prefers_the_same_file_over_an_identical_body_elsewhere() {
    let (_tmp, repo, store) = setup();
    // `src/a.py` holds the same body under another name, and its targets sort before
    // `src/net.py`'s: only the same-file rule makes the rename point into net.py.
    write(
        &repo,
        "src/a.py",
        "def twin(x):\n    y = x * 2\n    return y + 1\n",
    );
    index(&store, &repo);
    ok_json(&store, &["remember", "`helper` doubles then adds one"]);
    write(
        &repo,
        "src/net.py",
        &NET_V1.replace("def helper", "def assist"),
    );
    index(&store, &repo);
    let s = stale(&store);
    assert_eq!(s.len(), 1, "{s:?}");
    let mark = &s[0]["stale"][0];
    assert_eq!(mark["reason"], "renamed");
    assert_eq!(mark["now_key"], "sym:src/net.py#assist:function:10:12");
    // With the body gone from net.py, the twin elsewhere is where it went.
    write(
        &repo,
        "src/net.py",
        &NET_V1.replace("def helper(x):\n    y = x * 2\n    return y + 1\n", ""),
    );
    index(&store, &repo);
    let mark = &stale(&store)[0]["stale"][0];
    assert_eq!(mark["reason"], "renamed");
    assert_eq!(mark["now_key"], "sym:src/a.py#twin:function:1:3");
}

#[test]
fn confirm_follows_a_symbol_anchor_whose_lines_moved_or_whose_name_changed() {
    let (_tmp, repo, store) = setup();
    let key = "sym:src/net.py#Session.request:method:2:4";
    let m = ok_json(
        &store,
        &["remember", "request must retry once", "--symbol", key],
    );
    let id = m["id"].as_str().unwrap().to_string();

    // Two lines above the class: the method's lines move, its body does not.
    write(
        &repo,
        "src/net.py",
        &format!("import os\nimport sys\n{NET_V1}"),
    );
    index(&store, &repo);
    assert!(stale(&store).is_empty(), "moved lines are not a change");
    let c = ok_json(&store, &["confirm", &id]);
    assert_eq!(
        c["memory"]["symbols"][0], "sym:src/net.py#Session.request:method:4:6",
        "{c}"
    );

    // Renamed with the same body: reported renamed, and confirm moves the memory
    // to the new name.
    write(
        &repo,
        "src/net.py",
        &format!(
            "import os\nimport sys\n{}",
            NET_V1.replace("def request", "def fetch")
        ),
    );
    index(&store, &repo);
    let s = stale(&store);
    assert_eq!(s[0]["stale"][0]["reason"], "renamed", "{s:?}");
    let c = ok_json(&store, &["confirm", &id]);
    assert_eq!(
        c["memory"]["symbols"][0], "sym:src/net.py#Session.fetch:method:4:6",
        "{c}"
    );
    assert!(stale(&store).is_empty());
}

/// Issue 40: a path with a token in it is stored in the code index's redacted form on
/// the memory side too (a file change's path, a `file:` or `sym:` reference, the
/// anchors made from them): no piece of the token reaches the store, and the
/// anchors still name the file's records, so staleness follows the file.
#[test]
fn a_token_in_a_memory_s_path_is_redacted_as_the_index_stores_it_and_stale_still_works() {
    const TOKEN: &str = "ghp_Zq8wLr2TmV9xKc4YpB7nJd3HsF6gQa1Ue5Wi";
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let store = tmp.path().join("store");
    let real = format!("tools/{TOKEN}.py");
    write(&repo, &real, "def clamp(v):\n    return max(0, v)\n");
    index(&store, &repo);
    let change = ok_json(
        &store,
        &[
            "change",
            &real,
            "--action",
            "edit",
            "--reason",
            "clamp at zero",
        ],
    );
    let by_symbol = ok_json(
        &store,
        &[
            "remember",
            "clamp is vendored",
            "--symbol",
            &format!("sym:{real}#clamp:function:1:2"),
        ],
    );
    let stored_key = |m: &Value, prefix: &str| -> String {
        let anchors = m["anchors"].as_array().cloned().unwrap_or_default();
        let key = anchors
            .iter()
            .filter_map(|a| a["key"].as_str())
            .find(|k| k.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix} anchor: {m}"))
            .to_string();
        assert!(
            key.starts_with(&format!("{prefix}tools/[REDACTED:github_token~")),
            "{key}"
        );
        key
    };
    stored_key(&change, "file:");
    assert!(change["metadata"]["path"]
        .as_str()
        .unwrap()
        .starts_with("tools/[REDACTED:github_token~"));
    stored_key(&by_symbol, "sym:");
    assert!(stale(&store).is_empty(), "{:?}", stale(&store));

    // The file changes: both memories are stale, about the redacted path.
    write(&repo, &real, "def clamp(v, lo=0):\n    return max(lo, v)\n");
    index(&store, &repo);
    let s = stale(&store);
    assert_eq!(s.len(), 2, "{s:?}");
    for entry in &s {
        assert_eq!(entry["stale"][0]["reason"], "changed", "{entry}");
    }

    // Every file under the store, its subdirectories too.
    let (mut raw, mut dirs) = (Vec::new(), vec![store.clone()]);
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if let Ok(bytes) = std::fs::read(&p) {
                raw.push((p.display().to_string(), bytes));
            }
        }
    }
    for piece in TOKEN.as_bytes().windows(10) {
        for (name, bytes) in &raw {
            assert!(
                !bytes.windows(10).any(|w| w == piece),
                "{:?} of the token is in {name}",
                String::from_utf8_lossy(piece)
            );
        }
    }
}
