//! `engram scan secrets` finds what an older engram let through, in every record of
//! the log, and `engram redact` removes it: afterwards no piece of the secret is in
//! any file of the store directory.

use std::path::Path;
use std::process::Command;

use engram::memory::{Memories, Memory};
use engram::store::WriteBatch;
use serde_json::{json, Map, Value};

const SECRET: &str = "ghp_Zq8wLr2TmV9xKc4YpB7nJd3HsF6gQa1Ue5Wi";
const PRIVATE_BODY: &str = "MIIEowIBAAKCAQEAq9sR2kX7vLmP4tYw8zNcHb3JfG6eQd1UoIa5Sr0Tl";

fn engram(store: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_engram"))
        .arg("--store")
        .arg(store)
        .args(args)
        .env_remove("ENGRAM_STORE")
        .output()
        .unwrap()
}

/// Every 8-byte piece of `secret` found in any file under `dir`.
fn pieces_on_disk(dir: &Path, secret: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(pieces_on_disk(&path, secret));
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        for piece in secret.as_bytes().windows(8) {
            if bytes.windows(8).any(|w| w == piece) {
                found.push(format!("{}", path.display()));
                break;
            }
        }
    }
    found
}

/// A store as an older engram left it: the secret verbatim in a live memory, in a
/// version history keeps, in a superseded record, and in an audit event.
fn legacy_store(dir: &Path) -> String {
    let memories = Memories::open(dir).unwrap();
    let store = memories.store();
    let mut m = Memory::new(format!("deploy token {SECRET}"));
    m.id = "mem:00c0ffee".into();
    m.validate().unwrap();
    let mut b = WriteBatch::new();
    b.put_keeping_history(&m.id, m.to_meta(), m.text.as_bytes())
        .unwrap();
    store.commit(&b).unwrap();
    let mut v2 = m.clone();
    v2.text = format!("key block:\n-----BEGIN RSA PRIVATE KEY-----\n{PRIVATE_BODY}\n-----END RSA PRIVATE KEY-----\n");
    v2.version = 2;
    let mut b = WriteBatch::new();
    b.put_keeping_history(&m.id, v2.to_meta(), v2.text.as_bytes())
        .unwrap();
    let mut meta = Map::new();
    meta.insert("path".into(), json!("notes.txt"));
    b.put("file:notes.txt", meta.clone(), format!("old {SECRET}"))
        .unwrap();
    let mut event = Map::new();
    event.insert("event".into(), json!("audit"));
    event.insert("op".into(), json!("memory_search"));
    event.insert("query".into(), json!(format!("find {SECRET}")));
    b.event(event, Vec::new()).unwrap();
    store.commit(&b).unwrap();
    let mut b = WriteBatch::new();
    b.put("file:notes.txt", meta, "nothing secret now").unwrap();
    store.commit(&b).unwrap();
    m.id
}

#[test]
fn scan_finds_every_stored_secret_and_redact_removes_every_byte_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let id = legacy_store(&store);
    assert!(!pieces_on_disk(&store, SECRET).is_empty());

    let out = engram(&store, &["scan", "secrets", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let found: Value = serde_json::from_slice(&out.stdout).unwrap();
    let records = found["records"].as_array().unwrap();
    let kinds: Vec<(&str, bool)> = records
        .iter()
        .map(|r| (r["kind"].as_str().unwrap(), r["live"].as_bool().unwrap()))
        .collect();
    // The first version (kept), the second (live), the superseded file and the event.
    assert_eq!(records.len(), 4, "{found}");
    assert!(kinds.contains(&("event", false)) && kinds.contains(&("put", true)));
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        !printed.contains(&SECRET[4..12]),
        "the scan echoed a secret"
    );

    let out = engram(&store, &["redact", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["records_rewritten"], 3, "{report}");

    assert_eq!(pieces_on_disk(&store, SECRET), Vec::<String>::new());
    assert_eq!(pieces_on_disk(&store, PRIVATE_BODY), Vec::<String>::new());
    let out = engram(&store, &["scan", "secrets"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    // What was stored is still there, minus the secrets.
    let memories = Memories::open(&store).unwrap();
    let history = memories.history(&id).unwrap();
    assert_eq!(history.len(), 2);
    assert!(history[0].text.starts_with("deploy token [REDACTED:"));
    assert_eq!(history[1].version, 2);
    drop(memories);
    assert!(engram::store::verify(&store).unwrap().is_sound());
}

/// Issue 40: a URL password holding a raw `#` (`Zq8#mP2vL9xR`) was no match, so it
/// was stored in clear and `scan secrets` reported nothing. Now an older store's copy
/// is reported and redacted, and a new `remember` never writes it.
#[test]
fn a_url_password_with_a_raw_hash_is_found_redacted_and_never_stored() {
    const URL: &str = "postgres://admin:Zq8#mP2vL9xR@db.example.com:5432/app";
    const PASSWORD: &str = "Zq8#mP2vL9xR";
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    {
        let memories = Memories::open(&store).unwrap();
        let mut m = Memory::new(format!("the app connects with {URL}"));
        m.id = "mem:0badc0de".into();
        m.validate().unwrap();
        let mut b = WriteBatch::new();
        b.put_keeping_history(&m.id, m.to_meta(), m.text.as_bytes())
            .unwrap();
        memories.store().commit(&b).unwrap();
    }
    assert!(!pieces_on_disk(&store, PASSWORD).is_empty());
    let out = engram(&store, &["scan", "secrets", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let found: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(found["secrets"], 1, "{found}");
    let out = engram(&store, &["redact", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(pieces_on_disk(&store, PASSWORD), Vec::<String>::new());

    let fresh = dir.path().join("fresh");
    let out = engram(&fresh, &["remember", &format!("prod db: {URL}")]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(pieces_on_disk(&fresh, PASSWORD), Vec::<String>::new());
    assert!(
        !pieces_on_disk(&fresh, "db.example.com").is_empty(),
        "the host is kept"
    );
}
