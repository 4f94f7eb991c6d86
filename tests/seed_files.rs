//! The seeds' own files through the real `engram` binary: the Galaxybrain PatternSet
//! (JSON and TOML, detected by content), memory JSONL from Galaxybrain (003) and
//! memory_lib (004), and `engram key lookup`.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn engram(store: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_engram"))
        .arg("--store")
        .arg(store)
        .args(args)
        .env_remove("ENGRAM_STORE")
        .output()
        .expect("run engram")
}

fn ok_json(store: &Path, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = engram(store, &all);
    assert!(
        out.status.success(),
        "engram {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "engram {args:?}: not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

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
        for m in matches.iter().filter(|m| m["pattern"] == format!("p{i}").as_str()) {
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

    let v = ok_json(&store, &["pattern", "load", file.to_str().unwrap(), "--replace"]);
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
    assert_eq!(smells[0]["patterns"], serde_json::json!(["p0", "p1", "p2", "p3"]));
    assert_eq!(smells[0]["tags"], serde_json::json!(["security", "code-smell"]));

    scan_matches_plain_regex_count(&store, tmp.path());
}

#[test]
fn the_seeds_pattern_set_as_toml_without_a_toml_extension() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let file = tmp.path().join("set.txt");
    std::fs::write(&file, SEED_SET_TOML).unwrap();
    let v = ok_json(&store, &["pattern", "load", file.to_str().unwrap(), "--replace"]);
    assert_eq!(v["name"], "pat:security-smells");
    scan_matches_plain_regex_count(&store, tmp.path());

    // A misspelt field is still refused, with the file named.
    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, r#"{"id":"pat:mine","patterns":["a"],"tag":["x"]}"#).unwrap();
    let out = engram(&store, &["pattern", "load", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("unknown field `tag`"), "{}", stderr(&out));
    assert!(stderr(&out).contains("bad.json"), "{}", stderr(&out));
}

#[test]
fn the_redaction_set_is_never_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let file = tmp.path().join("s.json");
    std::fs::write(&file, r#"{"id":"pat:secrets","patterns":["nothing"]}"#).unwrap();
    let out = engram(&store, &["pattern", "load", file.to_str().unwrap(), "--replace"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("cannot be replaced"), "{}", stderr(&out));
}
