//! The seeds' own files through the real `engram` binary: the Galaxybrain PatternSet
//! (JSON and TOML, detected by content), memory JSONL from Galaxybrain (003) and
//! memory_lib (004), and `engram key lookup`.

use std::path::Path;

use serde_json::Value;

use engram_cli::{engram, ok_json, stderr};

use crate::support::engram_cli;

/// Seed 003 §1.1, verbatim.
const SEED_SET_JSON: &str = r#"{
  "id": "pat:security-smells",
  "description": "Detect common security anti-patterns",
  "patterns": [
    "eval\\s*\\(",
    "exec\\s*\\(",
    "subprocess\\.call.*shell\\s*=\\s*True",
    "password\\s*=\\s*['\"][^'\"]+['\"]"
  ],
  "tags": ["security", "code-smell"]
}"#;

/// The same set in TOML (003 says "JSON/TOML"), literal strings as a TOML user writes.
const SEED_SET_TOML: &str = r#"
id = "pat:security-smells"
description = "Detect common security anti-patterns"
patterns = [
  'eval\s*\(',
  'exec\s*\(',
  'subprocess\.call.*shell\s*=\s*True',
  '''password\s*=\s*['"][^'"]+['"]''',
]
tags = ["security", "code-smell"]
"#;

const SEED_REGEXES: [&str; 4] = [
    r"eval\s*\(",
    r"exec\s*\(",
    r"subprocess\.call.*shell\s*=\s*True",
    r#"password\s*=\s*['"][^'"]+['"]"#,
];

const SMELLY_PY: &str = r#"import subprocess

def run(cmd, expr):
    value = eval(expr)
    exec (compile(expr, "x", "exec"))
    subprocess.call(cmd, shell=True)
    return value

def also(expr):
    # eval ( in a comment counts too
    return eval  (expr)

password = "x"
"#;

/// The seed's set over a one-file repository: as many matches per pattern as the
/// `regex` crate counts in the file.
fn scan_matches_plain_regex_count(store: &Path, tmp: &Path) {
    let repo = tmp.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(repo.join("smelly.py"), SMELLY_PY).unwrap();
    ok_json(store, &["index", repo.to_str().unwrap()]);
    let v = ok_json(store, &["scan", "pat:security-smells", "--code"]);
    let matches = v["matches"].as_array().unwrap();
    for (i, re) in SEED_REGEXES.iter().enumerate() {
        let want = regex::Regex::new(re).unwrap().find_iter(SMELLY_PY).count();
        let got = matches
            .iter()
            .filter(|m| m["pattern"] == format!("p{i}").as_str())
            .count();
        assert!(want > 0, "the fixture exercises pattern {i}");
        assert_eq!(got, want, "pattern p{i} {re}: {matches:#?}");
        for m in matches
            .iter()
            .filter(|m| m["pattern"] == format!("p{i}").as_str())
        {
            assert_eq!(m["pattern_set"], "pat:security-smells");
            assert_eq!(m["path"], "smelly.py");
        }
    }
    assert_eq!(
        matches.len(),
        SEED_REGEXES
            .iter()
            .map(|re| regex::Regex::new(re).unwrap().find_iter(SMELLY_PY).count())
            .sum::<usize>()
    );
}

#[test]
fn the_seeds_pattern_set_json_loads_with_replace_and_scans_like_a_regex() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    // Not named .json: the content decides.
    let file = tmp.path().join("security-smells.set");
    std::fs::write(&file, SEED_SET_JSON).unwrap();

    // Without --replace the built-in name is refused, and the message names the flag.
    let out = engram(&store, &["pattern", "load", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("--replace"), "{}", stderr(&out));

    let v = ok_json(
        &store,
        &["pattern", "load", file.to_str().unwrap(), "--replace"],
    );
    assert_eq!(v["name"], "pat:security-smells");
    assert_eq!(v["patterns"], 4);

    // The loaded set shadows the built-in in the list: one entry, not built-in.
    let list = ok_json(&store, &["pattern", "list"]);
    let smells: Vec<_> = list["pattern_sets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["name"] == "pat:security-smells")
        .collect();
    assert_eq!(smells.len(), 1, "{list:#}");
    assert_eq!(smells[0]["builtin"], false);
    assert_eq!(
        smells[0]["patterns"],
        serde_json::json!(["p0", "p1", "p2", "p3"])
    );
    assert_eq!(
        smells[0]["tags"],
        serde_json::json!(["security", "code-smell"])
    );

    scan_matches_plain_regex_count(&store, tmp.path());
}

#[test]
fn the_seeds_pattern_set_as_toml_without_a_toml_extension() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let file = tmp.path().join("set.txt");
    std::fs::write(&file, SEED_SET_TOML).unwrap();
    let v = ok_json(
        &store,
        &["pattern", "load", file.to_str().unwrap(), "--replace"],
    );
    assert_eq!(v["name"], "pat:security-smells");
    scan_matches_plain_regex_count(&store, tmp.path());

    // A misspelt field is still refused, with the file named.
    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, r#"{"id":"pat:mine","patterns":["a"],"tag":["x"]}"#).unwrap();
    let out = engram(&store, &["pattern", "load", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("unknown field `tag`"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("bad.json"), "{}", stderr(&out));
}

#[test]
fn the_redaction_set_is_never_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let file = tmp.path().join("s.json");
    std::fs::write(&file, r#"{"id":"pat:secrets","patterns":["nothing"]}"#).unwrap();
    let out = engram(
        &store,
        &["pattern", "load", file.to_str().unwrap(), "--replace"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("cannot be replaced"),
        "{}",
        stderr(&out)
    );
}

fn hash_of(store: &Path, key: &str) -> u64 {
    ok_json(store, &["key", "hash", key])["hash64"]
        .as_u64()
        .unwrap()
}

/// A store with one indexed file, `src/auth.py`; returns its file key's hash.
fn indexed(store: &Path, tmp: &Path) -> u64 {
    let repo = tmp.join("repo");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::write(
        repo.join("src/auth.py"),
        "def login(user):\n    return user\n",
    )
    .unwrap();
    ok_json(store, &["index", repo.to_str().unwrap()]);
    hash_of(store, "file:src/auth.py")
}

fn export_lines(store: &Path, tmp: &Path, name: &str) -> Vec<Value> {
    let file = tmp.join(name);
    ok_json(store, &["export", file.to_str().unwrap()]);
    std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn seed_memory_lines_import_and_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let file_hash = indexed(&store, tmp.path());
    let mem_hash = hash_of(&store, "mem:a1b2c3d4");
    let uuid = "550e8400-e29b-41d4-a716-446655440000";
    let lines = [
        // Galaxybrain 003 §3.2, with a hash of an indexed key (signed, as SQLite shows
        // it, in the second line) and the entry's own key_hash.
        format!(
            r#"{{"id":"mem:a1b2c3d4","key_hash":{mem_hash},"task":"task:debug","insights":["insight:pitfall"],"context":["context:frontend","context:auth"],"symbol_keys":[{file_hash}],"text":"Token refresh races with logout","tags":["auth"],"created_at":"2025-01-15T10:30:00Z"}}"#
        ),
        format!(
            r#"{{"task":"task:implement_feature","context":["context:auth"],"symbol_keys":[{}],"text":"login returns the user","created_at":1736937060.5,"updated_at":1736937120}}"#,
            file_hash as i64
        ),
        String::new(),
        // memory_lib 004: a plain memory and a non-code memory.
        format!(
            r#"{{"id":"{uuid}","text":"Use Redis for sessions","metadata":{{"source":"meeting"}},"timestamp":"2025-01-16T09:00:00.123456"}}"#
        ),
        r#"{"id":"6f1c2b9e-1111-4000-8000-000000000002","type":"non-code","category":"documentation","title":"API Authentication","content":"Tokens expire after one hour","file_path":"src/auth.py","timestamp":"2025-01-17T08:00:00+00:00","metadata":null}"#.to_string(),
    ];
    let jsonl = tmp.path().join("seed.jsonl");
    std::fs::write(&jsonl, lines.join("\n") + "\n").unwrap();
    let r = ok_json(&store, &["import", jsonl.to_str().unwrap()]);
    assert_eq!(r["imported"], 4, "{r}");
    assert_eq!(r["skipped_blank"], 1, "{r}");

    let got = export_lines(&store, tmp.path(), "out1.jsonl");
    assert_eq!(got.len(), 4, "{got:#?}");
    let a = &got[0];
    assert_eq!(a["id"], "mem:a1b2c3d4");
    assert_eq!(a["task"], "debug");
    assert_eq!(a["insights"], serde_json::json!(["pitfall"]));
    assert_eq!(a["contexts"], serde_json::json!(["frontend", "auth"]));
    assert_eq!(a["symbols"], serde_json::json!(["file:src/auth.py"]));
    assert_eq!(a["created_ms"], 1_736_937_000_000u64);
    assert_eq!(a["updated_ms"], 1_736_937_000_000u64);
    // Export is engram's spelling: none of the seed's names.
    for seed_name in [
        "context",
        "symbol_keys",
        "created_at",
        "key_hash",
        "timestamp",
        "type",
    ] {
        assert!(a.get(seed_name).is_none(), "{seed_name} in {a}");
    }
    let b = &got[1];
    assert_eq!(b["symbols"], serde_json::json!(["file:src/auth.py"]));
    assert_eq!(
        (b["created_ms"].as_u64(), b["updated_ms"].as_u64()),
        (Some(1_736_937_060_500), Some(1_736_937_120_000))
    );
    let c = &got[2];
    let want_c = format!(
        "mem:{}",
        &format!("{:016x}", engram::key::hash64(uuid))[..8]
    );
    assert_eq!(c["id"], want_c.as_str());
    assert_eq!(c["metadata"]["legacy_id"], uuid);
    assert_eq!(c["metadata"]["source"], "meeting");
    assert_eq!(c["created_ms"], 1_737_018_000_123u64);
    let d = &got[3];
    assert_eq!(d["text"], "Tokens expire after one hour");
    assert_eq!(d["metadata"]["title"], "API Authentication");
    assert_eq!(d["metadata"]["category"], "documentation");
    assert_eq!(d["metadata"]["file_path"], "src/auth.py");
    assert_eq!(
        d["metadata"]["legacy_id"],
        "6f1c2b9e-1111-4000-8000-000000000002"
    );
    assert_eq!(d["symbols"], serde_json::json!(["file:src/auth.py"]));

    // The memory is findable by the seed's own filters.
    let listed = ok_json(
        &store,
        &["list", "--task", "task:debug", "--context", "context:auth"],
    );
    assert!(listed.to_string().contains("mem:a1b2c3d4"), "{listed}");

    // Re-importing the seed file replaces the same four (legacy ids map to the same
    // ids), and the export imports into a fresh store unchanged.
    let r = ok_json(&store, &["import", jsonl.to_str().unwrap()]);
    assert_eq!(r["replaced"], 3, "{r}"); // the line without an id gets a new one
    let store2 = tmp.path().join("store2");
    let out1 = tmp.path().join("out1.jsonl");
    let r = ok_json(&store2, &["import", out1.to_str().unwrap()]);
    assert_eq!(r["imported"], 4);
    let again = export_lines(&store2, tmp.path(), "out2.jsonl");
    let strip = |v: &Vec<Value>| -> Vec<Value> {
        v.iter()
            .map(|m| {
                let mut m = m.clone();
                m.as_object_mut().unwrap().remove("version");
                m
            })
            .collect()
    };
    assert_eq!(strip(&again), strip(&got));
}

#[test]
fn bad_seed_lines_are_refused_with_their_numbers() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let file_hash = indexed(&store, tmp.path());
    let lines = [
        format!(r#"{{"text":"fine","symbol_keys":[{file_hash}]}}"#),
        r#"{"text":"x","symbol_keys":[12345678901234]}"#.to_string(),
        r#"{"id":"mem:a1b2c3d4","key_hash":42,"text":"x"}"#.to_string(),
        r#"{"type":"code","file_path":"src/utils.py","entity_name":"f","code_snippet":"def f(): pass"}"#.to_string(),
        r#"{"text":"x","created_at":"15/01/2025"}"#.to_string(),
        r#"{"text":"x","colour":"red"}"#.to_string(),
    ];
    let jsonl = tmp.path().join("bad.jsonl");
    std::fs::write(&jsonl, lines.join("\n")).unwrap();
    let out = engram(&store, &["import", jsonl.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("5 bad line(s), nothing imported"), "{err}");
    assert!(!err.contains("line 1:"), "{err}");
    assert!(
        err.contains("line 2: symbol_keys[0]: no live key has hash64 12345678901234"),
        "{err}"
    );
    assert!(err.contains("line 3: key_hash 42 is not hash64"), "{err}");
    assert!(
        err.contains("line 4: ") && err.contains("index the source instead"),
        "{err}"
    );
    assert!(err.contains("line 5: created_at: "), "{err}");
    assert!(err.contains("line 6: unknown field `colour`"), "{err}");
    // All or nothing: the good first line was not imported either.
    assert!(!ok_json(&store, &["list"]).to_string().contains("fine"));
}

#[test]
fn key_lookup_finds_the_key_behind_a_hash() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let h = indexed(&store, tmp.path());
    let v = ok_json(&store, &["key", "lookup", &h.to_string()]);
    assert_eq!(v["key"], "file:src/auth.py");
    assert_eq!(v["hash64"], h);
    // The signed spelling SQLite shows works too, also in plain output.
    let out = engram(&store, &["key", "lookup", &(h as i64).to_string()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "file:src/auth.py"
    );

    let out = engram(&store, &["key", "lookup", "12345678901234"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no live key has hash64 12345678901234"),
        "{}",
        stderr(&out)
    );
    let out = engram(&store, &["key", "lookup", "12345678901234", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["key"], Value::Null);
    let out = engram(&store, &["key", "lookup", "abc"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("not a hash64"), "{}", stderr(&out));
}
