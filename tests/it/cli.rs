//! The `engram` binary end to end: every command, `--json` output, and bad input.

use std::process::Command;

use serde_json::Value;

use engram_cli::{engram, ok_json, stderr};

use crate::support::engram_cli;

#[test]
fn memory_commands_round_trip_with_json() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let a = ok_json(
        &store,
        &[
            "remember",
            "tracker.db uses WAL so readers never block",
            "--tag",
            "sqlite",
            "--tag",
            "decision",
        ],
    );
    let id = a["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("mem:") && id.len() == 12);
    assert_eq!(a["tags"], serde_json::json!(["sqlite", "decision"]));

    // Plain output of remember is the id alone.
    let out = engram(
        &store,
        &["remember", "parseHttpRequest rejects bodies over 1 MiB"],
    );
    assert!(out.status.success());
    let id2 = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert!(id2.starts_with("mem:"));

    let got = ok_json(&store, &["get", &id]);
    assert_eq!(got["text"], "tracker.db uses WAL so readers never block");
    let got = ok_json(&store, &["get", id.trim_start_matches("mem:")]);
    assert_eq!(got["id"], id.as_str());

    let hits = ok_json(&store, &["recall", "parse http request"]);
    assert_eq!(hits["hits"][0]["key"], id2.as_str());
    assert_eq!(hits["hits"][0]["kind"], "memory");
    let hits = ok_json(&store, &["recall", "NEAR(\"x\" * OR -"]);
    assert_eq!(hits["hits"].as_array().unwrap().len(), 0);

    let list = ok_json(&store, &["list", "--limit", "1"]);
    assert_eq!(list["memories"].as_array().unwrap().len(), 1);
    assert_eq!(list["total"], 2);

    let stats = ok_json(&store, &["stats"]);
    assert_eq!(stats["memories"], 2);
    // Per memory: its put, its vector and the commit.
    assert_eq!(stats["records"], 6);
    assert!(stats["blob_bytes"].as_u64().unwrap() > 64);

    let f = ok_json(&store, &["forget", &id]);
    assert_eq!(f["forgotten"], true);
    let out = engram(&store, &["forget", &id]);
    assert!(!out.status.success());
    let out = engram(&store, &["get", &id]);
    assert!(!out.status.success() && stderr(&out).contains("no memory"));

    let v = ok_json(&store, &["verify"]);
    assert_eq!(v["sound"], true);
    let d = ok_json(&store, &["dump", "--kind", "tombstone"]);
    assert_eq!(d["records"].as_array().unwrap().len(), 1);
    let d = ok_json(&store, &["dump", "--key", &id2]);
    assert_eq!(
        d["records"][0]["body"],
        "parseHttpRequest rejects bodies over 1 MiB"
    );
    let off = d["records"][0]["offset"].as_u64().unwrap().to_string();
    let d = ok_json(&store, &["dump", "--offset", &off]);
    assert_eq!(d["records"][0]["kind"], "put");

    let c = ok_json(&store, &["compact"]);
    assert_eq!(c["generation"], 2);
    let r = ok_json(&store, &["rebuild"]);
    assert_eq!(r["memories"], 1);
    assert_eq!(
        ok_json(&store, &["get", &id2])["text"],
        "parseHttpRequest rejects bodies over 1 MiB"
    );
    assert_eq!(ok_json(&store, &["verify"])["sound"], true);

    let k = ok_json(&store, &["key", "hash", "file:src/main.py"]);
    assert_eq!(k["hash64"], 9629542200085099360u64);
}

#[test]
fn export_then_import_reproduces_the_memories() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    ok_json(
        &a,
        &["remember", "first", "--metadata", "{\"source\":\"review\"}"],
    );
    ok_json(&a, &["remember", "second", "--tag", "x"]);
    let file = tmp.path().join("m.jsonl");
    assert!(engram(&a, &["export", file.to_str().unwrap()])
        .status
        .success());
    let rep = ok_json(&b, &["import", file.to_str().unwrap()]);
    assert_eq!(rep["imported"], 2);
    let out_a = engram(&a, &["export"]);
    let out_b = engram(&b, &["export"]);
    assert_eq!(
        String::from_utf8_lossy(&out_a.stdout),
        String::from_utf8_lossy(&out_b.stdout)
    );
    assert_eq!(String::from_utf8_lossy(&out_a.stdout).lines().count(), 2);
}

#[test]
fn bad_import_lines_are_reported_by_number_and_nothing_is_imported() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("s");
    let file = tmp.path().join("bad.jsonl");
    let mut text = String::from("{\"text\":\"good one\"}\n\n{\"text\": 5}\n{\"text\":\"ok\",\"id\":\"mem:XYZ\"}\nnot json\n");
    text.push_str("{\"text\":\"fine\",\"tags\":[1]}\n");
    std::fs::write(&file, text.as_bytes()).unwrap();
    let mut bytes = std::fs::read(&file).unwrap();
    bytes.extend_from_slice(b"{\"text\":\"\xff\xfe\"}\n");
    std::fs::write(&file, bytes).unwrap();
    let out = engram(&store, &["import", file.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = stderr(&out);
    for line in ["line 3", "line 4", "line 5", "line 6", "line 7"] {
        assert!(err.contains(line), "missing {line} in {err}");
    }
    assert!(
        !err.contains("line 1:") && !err.contains("line 2:"),
        "{err}"
    );
    assert_eq!(ok_json(&store, &["stats"])["memories"], 0);
}

#[test]
fn foreign_and_newer_directories_are_refused_clearly() {
    let tmp = tempfile::tempdir().unwrap();
    // A directory with somebody else's files.
    let foreign = tmp.path().join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), "mine").unwrap();
    let out = engram(&foreign, &["remember", "x"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("not an engram store"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read_dir(&foreign).unwrap().count(),
        1,
        "nothing may be written into it"
    );

    // A blob.dat that is not ours.
    let junk = tmp.path().join("junk");
    std::fs::create_dir(&junk).unwrap();
    std::fs::write(junk.join("blob.dat"), vec![b'z'; 200]).unwrap();
    let out = engram(&junk, &["list"]);
    assert!(stderr(&out).contains("not an engram"), "{}", stderr(&out));

    // A store of a newer format version.
    let newer = tmp.path().join("newer");
    ok_json(&newer, &["remember", "x"]);
    let blob = newer.join("blob.dat");
    let mut bytes = std::fs::read(&blob).unwrap();
    bytes[8..12].copy_from_slice(&3u32.to_le_bytes()); // 2 is a sealed store's
    let crc = crc32fast::hash(&bytes[..60]);
    bytes[60..64].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&blob, &bytes).unwrap();
    let before = std::fs::read(&blob).unwrap();
    let out = engram(&newer, &["list"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("newer engram") && err.contains("version 3"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&blob).unwrap(),
        before,
        "a newer store must not be touched"
    );
    let out = engram(&newer, &["verify"]);
    assert!(!out.status.success());
}

#[test]
fn a_store_without_its_log_is_refused_by_every_command_and_left_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("s");
    for i in 0..5 {
        ok_json(
            &store,
            &[
                "remember",
                &format!("memory number {i} about tracker pages"),
            ],
        );
    }
    std::fs::remove_file(store.join("blob.dat")).unwrap();
    let tracker = std::fs::read(store.join("tracker.db")).unwrap();
    let commands: [&[&str]; 9] = [
        &["recall", "tracker"],
        &["search", "tracker"],
        &["remember", "a new memory"],
        &["list"],
        &["stats"],
        &["verify"],
        &["rebuild"],
        &["dump"],
        &["init"],
    ];
    for args in commands {
        let out = engram(&store, args);
        let err = stderr(&out);
        assert!(!out.status.success(), "engram {args:?} succeeded: {err}");
        assert!(
            err.contains("no blob.dat") && err.contains("restore blob.dat from a backup"),
            "engram {args:?}: {err}"
        );
        assert!(
            !store.join("blob.dat").exists(),
            "engram {args:?} made a log"
        );
        assert_eq!(
            std::fs::read(store.join("tracker.db")).unwrap(),
            tracker,
            "engram {args:?} changed tracker.db"
        );
    }

    // A LOCK alone holds no data, and is what a creator beside us leaves between
    // creating and locking it (eight servers starting on one new store): the first
    // write makes the log there.
    let lock_only = tmp.path().join("lock-only");
    std::fs::create_dir(&lock_only).unwrap();
    std::fs::write(lock_only.join("LOCK"), "").unwrap();
    let out = engram(&lock_only, &["remember", "x"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(lock_only.join("blob.dat").exists());
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert_eq!(ok_json(&empty, &["init"])["created"], true);
    assert!(empty.join("blob.dat").exists());
    assert!(!engram(&empty, &["init"]).status.success(), "init twice");
    ok_json(&empty, &["remember", "the first memory"]);
}

#[test]
fn verify_names_the_offset_of_a_damaged_record() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("s");
    ok_json(&store, &["remember", "first memory"]);
    ok_json(&store, &["remember", "second memory"]);
    let blob = store.join("blob.dat");
    let mut bytes = std::fs::read(&blob).unwrap();
    // Flip a byte inside the first record's body (header is 64 bytes, record header 48).
    bytes[64 + 48 + 3] ^= 0x20;
    std::fs::write(&blob, &bytes).unwrap();
    let out = engram(&store, &["verify"]);
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("offset 64"), "{text}");
}

/// Every file of a directory with its bytes, to show a command changed none of them.
fn dir_bytes(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn salvage_keeps_every_batch_but_the_damaged_one_and_leaves_the_store_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("s");
    let texts: Vec<String> = (0..50)
        .map(|i| format!("salvage memory number {i:02} about module {i}"))
        .collect();
    let ids: Vec<String> = texts
        .iter()
        .map(|t| {
            ok_json(&store, &["remember", t])["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let blob = store.join("blob.dat");
    let mut bytes = std::fs::read(&blob).unwrap();
    let needle = texts[25].as_bytes();
    let at = bytes
        .windows(needle.len())
        .position(|w| w == needle)
        .unwrap();
    bytes[at + 4] ^= 0x20;
    std::fs::write(&blob, &bytes).unwrap();

    let out = engram(&store, &["verify", "--json"]);
    assert!(!out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["sound"], false);
    let before = dir_bytes(&store);

    let new = tmp.path().join("new");
    let r = ok_json(&store, &["salvage", "--into", new.to_str().unwrap()]);
    assert_eq!(r["batches_kept"], 49, "{r}");
    assert_eq!(r["batches_lost"], 1, "{r}");
    assert_eq!(r["memories"], 49, "{r}");
    assert_eq!(r["lost_keys"], serde_json::json!([ids[25]]), "{r}");
    let d = &r["damaged"][0];
    let (start, end) = (d["start"].as_u64().unwrap(), d["end"].as_u64().unwrap());
    assert!(start <= at as u64 && (at as u64) < end, "{d}");
    assert_eq!(d["lost"][0]["key"], ids[25].as_str());
    assert_eq!(d["lost"][0]["checksum_ok"], false);

    for (i, (id, text)) in ids.iter().zip(&texts).enumerate() {
        let out = engram(&new, &["get", id, "--json"]);
        if i == 25 {
            assert!(
                !out.status.success(),
                "the damaged memory is not in the new store"
            );
            continue;
        }
        assert!(out.status.success(), "{id}: {}", stderr(&out));
        let got: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(got["text"], text.as_str());
    }
    assert_eq!(ok_json(&new, &["verify"])["sound"], true);
    assert_eq!(
        dir_bytes(&store),
        before,
        "the damaged store is left as it was"
    );

    // A non-empty target is refused, and the human report names what was lost.
    let out = engram(&store, &["salvage", "--into", new.to_str().unwrap()]);
    assert!(!out.status.success() && stderr(&out).contains("not empty"));
    let out = engram(
        &store,
        &["salvage", "--into", store.join("sub").to_str().unwrap()],
    );
    assert!(!out.status.success() && stderr(&out).contains("inside the damaged store"));
    let other = tmp.path().join("other");
    let out = engram(&store, &["salvage", "--into", other.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("salvaged 49 batches") && text.contains(&ids[25]),
        "{text}"
    );
    assert_eq!(dir_bytes(&store), before);
}

#[test]
fn a_tracker_with_zeroed_pages_is_unsound_and_rebuild_replaces_it_without_reading_it() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("s");
    let file = tmp.path().join("m.jsonl");
    let lines: Vec<String> = (0..3000)
        .map(|i| {
            format!(
                "{{\"text\":\"memory {i}: the tracker keeps page {} of table {} in the cache\",\"tags\":[\"t{}\"]}}",
                i * 7,
                i % 13,
                i % 5
            )
        })
        .collect();
    std::fs::write(&file, lines.join("\n")).unwrap();
    assert_eq!(
        ok_json(&store, &["import", file.to_str().unwrap()])["imported"],
        3000
    );
    assert_eq!(ok_json(&store, &["verify"])["sound"], true);
    // The last connection's close checkpointed the WAL: the pages are in tracker.db.
    let wal = std::fs::metadata(store.join("tracker.db-wal")).map_or(0, |m| m.len());
    assert_eq!(wal, 0, "the tracker's pages are still in its WAL");
    let tracker = store.join("tracker.db");
    let mut bytes = std::fs::read(&tracker).unwrap();
    assert!(bytes.len() > 1 << 20, "tracker of {} bytes", bytes.len());
    let middle = bytes.len() / 2 / 4096 * 4096;
    bytes[middle..middle + (64 << 10)].fill(0);
    std::fs::write(&tracker, &bytes).unwrap();

    let out = engram(&store, &["verify", "--json"]);
    assert!(!out.status.success(), "verify passed a damaged tracker");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["sound"], false);
    let what = v["problems"][0]["what"].as_str().unwrap_or_default();
    assert!(
        v["problems"][0]["file"] == "tracker.db"
            && what.contains("damaged")
            && what.contains("engram rebuild"),
        "{v}"
    );

    let r = ok_json(&store, &["rebuild"]);
    assert_eq!(r["memories"], 3000);
    assert_eq!(ok_json(&store, &["verify"])["sound"], true);
    assert_eq!(ok_json(&store, &["stats"])["memories"], 3000);
    let hits = ok_json(&store, &["recall", "memory 2999 page 20993"]);
    assert!(hits.to_string().contains("memory 2999:"), "{hits}");
    let left: Vec<_> = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("rebuild"))
        .collect();
    assert!(left.is_empty(), "{left:?}");

    // A tracker whose first page is gone is no database at all: replaced by a file.
    let mut bytes = std::fs::read(&tracker).unwrap();
    bytes[..4096].fill(0);
    std::fs::write(&tracker, &bytes).unwrap();
    let _ = std::fs::remove_file(store.join("tracker.db-wal"));
    assert!(!engram(&store, &["verify"]).status.success());
    let out = engram(&store, &["stats"]);
    assert!(
        !out.status.success() && stderr(&out).contains("engram rebuild"),
        "{}",
        stderr(&out)
    );
    assert_eq!(ok_json(&store, &["rebuild"])["memories"], 3000);
    assert_eq!(ok_json(&store, &["verify"])["sound"], true);
}

/// One SQL statement on a store's tracker, as a damaged or meddled-with file would be.
fn tracker_sql(store: &std::path::Path, sql: &str) -> usize {
    let db = rusqlite::Connection::open(store.join("tracker.db")).unwrap();
    db.execute(sql, []).unwrap()
}

/// `verify --json` of a store whose tracker was changed: unsound, naming the table
/// (and `what`) and saying to rebuild; then `rebuild` makes it sound again.
fn unsound_naming(store: &std::path::Path, table: &str, what: &str) {
    let out = engram(store, &["verify", "--json"]);
    assert!(!out.status.success(), "verify passed a changed {table}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let named = v["problems"].as_array().unwrap().iter().any(|p| {
        let w = p["what"].as_str().unwrap_or_default();
        p["file"] == "tracker.db"
            && w.contains(&format!("table {table}:"))
            && w.contains(what)
            && w.contains("engram rebuild")
    });
    assert!(named, "no problem names {table} and {what}: {v}");
    ok_json(store, &["rebuild"]);
    assert_eq!(ok_json(store, &["verify"])["sound"], true, "after rebuild");
}

#[test]
fn verify_compares_the_projections_tables_with_the_log_and_rebuild_mends_them() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let store = tmp.path().join("s");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::write(
        repo.join("src/util.py"),
        "import os\n\ndef clamp(v):\n    return max(0, v)\n\nclass Box:\n    def size(self):\n        return clamp(os.sep)\n",
    )
    .unwrap();
    ok_json(&store, &["index", repo.to_str().unwrap()]);
    let anchored = ok_json(
        &store,
        &[
            "remember",
            "util is vendored",
            "--symbol",
            "file:src/util.py",
        ],
    );
    let tagged = ok_json(
        &store,
        &[
            "remember",
            "clamp never returns below zero",
            "--tag",
            "math",
        ],
    );
    for i in 0..20 {
        ok_json(&store, &["remember", &format!("filler memory {i}")]);
    }
    assert_eq!(ok_json(&store, &["verify"])["sound"], true);

    // A row changed in place: the count is right, the sampled row is not.
    let id = tagged["id"].as_str().unwrap();
    let n = tracker_sql(
        &store,
        &format!("UPDATE memories SET tags = '[\"forged\"]' WHERE id = '{id}'"),
    );
    assert_eq!(n, 1);
    unsound_naming(&store, "memories", id);

    // A row deleted: its table's count and the sampled key both say so.
    let n = tracker_sql(&store, "DELETE FROM code_symbols WHERE name = 'clamp'");
    assert_eq!(n, 1);
    unsound_naming(&store, "code_symbols", "sym:src/util.py#clamp:function");

    // A full-text row gone, an anchor's row changed, a label added.
    let db = rusqlite::Connection::open(store.join("tracker.db")).unwrap();
    let seq: i64 = db
        .query_row(
            "SELECT seq FROM memories WHERE id = ?1",
            [tagged["id"].as_str().unwrap()],
            |r| r.get(0),
        )
        .unwrap();
    drop(db);
    tracker_sql(
        &store,
        &format!("DELETE FROM memories_fts WHERE rowid = {seq}"),
    );
    unsound_naming(&store, "memories_fts", id);
    let anchored_id = anchored["id"].as_str().unwrap();
    let n = tracker_sql(
        &store,
        &format!("UPDATE stale_anchors SET hash = 'feed' WHERE mem_id = '{anchored_id}'"),
    );
    assert_eq!(n, 1);
    unsound_naming(&store, "stale_anchors", anchored_id);
    tracker_sql(
        &store,
        "INSERT INTO memory_labels (label, seq) VALUES ('tag:forged', 999999)",
    );
    unsound_naming(&store, "memory_labels", "999999");
}

#[test]
fn config_show_names_each_value_and_its_source_and_bad_config_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    std::fs::write(&file, "secret_action = \"exclude\"\ntools = \"memory\"\n").unwrap();
    let run = |envs: &[(&str, &str)]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_engram"));
        cmd.args(["--json", "config", "show"])
            .env("ENGRAM_CONFIG", &file)
            .env_remove("ENGRAM_STORE")
            .env_remove("ENGRAM_TOOLS");
        for (k, v) in envs {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    };
    let out = run(&[("ENGRAM_TOOLS", "coding")]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let get = |name: &str| {
        v["settings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("no setting {name}"))
            .clone()
    };
    assert_eq!(get("secret_action")["value"], "exclude");
    assert!(get("secret_action")["source"]
        .as_str()
        .unwrap()
        .starts_with("file "));
    assert_eq!(get("tools")["value"], "coding");
    assert_eq!(get("tools")["source"], "env ENGRAM_TOOLS");
    assert_eq!(get("chunk_cap_bytes")["value"], "8192");
    assert_eq!(get("chunk_cap_bytes")["source"], "default");

    let out = run(&[("ENGRAM_DURABILITY", "sometimes")]);
    assert!(!out.status.success());
    std::fs::write(&file, "max_file_bytes = \"lots\"\n").unwrap();
    let out = run(&[]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("max_file_bytes"), "{}", stderr(&out));
}

/// The compiled secret rules are cached under the data directory so a CLI write does
/// not pay for compiling them; a cache that is damaged, or written by something else,
/// must never weaken redaction.
#[test]
fn the_cached_secret_rules_redact_like_fresh_ones_and_a_damaged_cache_is_recompiled() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let token = "ghp_Zq8xV2mN4bR7tY1wK9pL3sD6fG0hJ5cE2aXu";
    let remember = |n: u32| {
        let out = Command::new(env!("CARGO_BIN_EXE_engram"))
            .arg("--store")
            .arg(dir.path())
            .args(["remember", &format!("deploy note {n}: token {token}")])
            .env("ENGRAM_HOME", home.path())
            .env_remove("ENGRAM_STORE")
            .output()
            .expect("run engram");
        assert!(out.status.success(), "{}", stderr(&out));
    };
    let leaked = || {
        let blob = std::fs::read(dir.path().join("blob.dat")).unwrap();
        blob.windows(12)
            .any(|w| token.as_bytes().windows(12).any(|t| t == w))
    };
    remember(1);
    let cached: Vec<_> = std::fs::read_dir(home.path().join("cache"))
        .expect("a cache directory under ENGRAM_HOME")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "hsdb"))
        .collect();
    assert_eq!(cached.len(), 1, "{cached:?}");
    remember(2); // from the cache
    assert!(!leaked(), "a token reached blob.dat");
    // Damage the cache: the next write compiles the rules again and still redacts.
    let mut bytes = std::fs::read(&cached[0]).unwrap();
    let mid = bytes.len() / 2;
    bytes.truncate(mid);
    std::fs::write(&cached[0], &bytes).unwrap();
    remember(3);
    assert!(
        !leaked(),
        "a token reached blob.dat after the cache was damaged"
    );
    let listed = ok_json(dir.path(), &["list"]);
    let texts: Vec<&str> = listed["memories"]
        .as_array()
        .expect("memories")
        .iter()
        .filter_map(|m| m["text"].as_str())
        .collect();
    assert_eq!(texts.len(), 3, "{listed}");
    assert!(
        texts
            .iter()
            .all(|t| t.ends_with("token [REDACTED:github_token]")),
        "{texts:?}"
    );
}

/// `engram update` changes what it is told and keeps every other field, as the MCP
/// tool memory_update does; `history` shows each version's time as ISO 8601.
#[test]
fn update_keeps_the_fields_it_is_not_told_to_change() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("s");
    let first = ok_json(
        &store,
        &[
            "remember",
            "retries are capped at three",
            "--tag",
            "net",
            "--task",
            "bugfix",
            "--insight",
            "constraint",
            "--context",
            "backend",
            "--symbol",
            "file:src/net.py",
            "--provenance",
            "agent_observed",
            "--trust",
            "0.4",
            "--metadata",
            "{\"source\":\"review\"}",
        ],
    );
    let id = first["id"].as_str().unwrap().to_string();
    let kept = |m: &Value| {
        for field in [
            "task",
            "insights",
            "contexts",
            "symbols",
            "provenance",
            "trust",
        ] {
            assert_eq!(m[field], first[field], "{field} changed: {m}");
        }
    };

    let second = ok_json(&store, &["update", &id, "retries are capped at four"]);
    assert_eq!(second["version"], 2);
    assert_eq!(second["text"], "retries are capped at four");
    assert_eq!(second["tags"], serde_json::json!(["net"]));
    assert_eq!(second["metadata"]["source"], "review");
    kept(&second);

    // No text: only the fields given change; metadata given is added to the old.
    let third = ok_json(
        &store,
        &[
            "update",
            &id,
            "--tag",
            "retry",
            "--metadata",
            "{\"reviewer\":\"ana\"}",
        ],
    );
    assert_eq!(third["version"], 3);
    assert_eq!(third["text"], "retries are capped at four");
    assert_eq!(third["tags"], serde_json::json!(["retry"]));
    assert_eq!(third["metadata"]["source"], "review");
    assert_eq!(third["metadata"]["reviewer"], "ana");
    kept(&third);
    kept(&ok_json(&store, &["get", &id]));

    let out = engram(&store, &["update", "mem:0000dead", "x"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("no memory mem:0000dead"),
        "{}",
        stderr(&out)
    );

    // People read ISO 8601 times; JSON keeps the milliseconds.
    let history = engram(&store, &["history", &id]);
    assert!(history.status.success(), "{}", stderr(&history));
    let text = String::from_utf8_lossy(&history.stdout);
    let iso = regex::Regex::new(r"(?m)^version 3 at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$").unwrap();
    assert!(iso.is_match(&text), "{text}");
    let versions = ok_json(&store, &["history", &id]);
    assert!(versions["versions"][0]["updated_ms"].as_u64().unwrap() > 1_700_000_000_000);
}

/// A reader that closes stdout before engram writes (`engram list | head -0`) ends the
/// command quietly with status 0, not `error: Broken pipe`.
#[test]
fn a_closed_stdout_ends_quietly_with_status_zero() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("s");
    for n in 0..3 {
        ok_json(&store, &["remember", &format!("memory number {n}")]);
    }
    for args in [&["list"][..], &["list", "--json"], &["export"]] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(env!("CARGO_BIN_EXE_engram"))
            .arg("--store")
            .arg(&store)
            .args(args)
            .env_remove("ENGRAM_STORE")
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
            .wait_with_output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{args:?}");
    }
}

#[test]
fn records_without_a_session_join_the_open_one_and_its_end_counts_them() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let sid = ok_json(&store, &["session", "start", "speed up the build"])["id"]
        .as_str()
        .unwrap()
        .to_string();
    let records = [
        ok_json(
            &store,
            &[
                "change",
                "Cargo.toml",
                "--action",
                "edit",
                "--reason",
                "enable lto",
            ],
        ),
        ok_json(
            &store,
            &[
                "error",
                "record",
                "--type",
                "LinkError",
                "--message",
                "undefined symbol foo",
                "--solution",
                "link with -lfoo",
            ],
        ),
        ok_json(
            &store,
            &["decision", "Link with lld", "--rationale", "faster"],
        ),
    ];
    for r in &records {
        assert_eq!(r["session"], sid.as_str(), "{r}");
    }
    // No id: the one open session; its counts are its summary's.
    let end = ok_json(&store, &["session", "end"]);
    let session = &end["session"];
    assert_eq!(session["id"], sid.as_str());
    assert_eq!(
        session["metadata"]["files_touched"],
        serde_json::json!(["Cargo.toml"])
    );
    assert_eq!(session["metadata"]["errors_fixed"], 1);
    assert_eq!(session["metadata"]["errors_encountered"], 1);
    assert_eq!(session["metadata"]["decisions_made"], 1);
    let text = session["text"].as_str().unwrap();
    assert!(
        text.contains("files changed (1)") && text.contains("errors fixed (1)"),
        "{text}"
    );

    let out = engram(&store, &["session", "end"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("no active coding session"),
        "{}",
        stderr(&out)
    );
    let loose = ok_json(
        &store,
        &[
            "change",
            "Cargo.toml",
            "--action",
            "edit",
            "--reason",
            "after",
        ],
    );
    assert!(loose.get("session").is_none(), "{loose}");
}
