//! `engram scan secrets` and `engram redact` on the team backend (`database_url`),
//! against the real server `tools/postgres.sh start` starts (`ENGRAM_TEST_DATABASE_URL`):
//! secrets an older engram stored in PostgreSQL (written here around the write path's
//! redaction, by direct SQL) are found in the repository's memories and versions, by
//! id and rule, never by their text, and redact rewrites those rows so that no table
//! holds the text any more; another repository's rows are neither read nor touched.

use std::path::Path;
use std::process::Command;

use engram::memory::{Memories, MemoryBackend, MemoryFilter};
use serde_json::Value;

use crate::support::pg;

const AWS: &str = "AKIAHNHEOABTCPM7PCMI";
const GITHUB: &str = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";

/// `engram --json ARGS` on `store` with `ENGRAM_DATABASE_URL`: success, the JSON
/// printed, and everything printed (to look for the secrets in).
fn engram(store: &Path, a: &[&str]) -> (bool, Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_engram"))
        .arg("--store")
        .arg(store)
        .arg("--json")
        .args(a)
        .current_dir(store.parent().unwrap())
        .env_remove("ENGRAM_STORE")
        .env("ENGRAM_DATABASE_URL", pg::url())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let v = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    let all = format!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    (out.status.success(), v, all)
}

/// Rows of `repo` whose text, metadata or keyword index still hold either secret.
fn rows_holding_secrets(raw: &pg::Raw, repo: &str) -> i64 {
    let mut n = 0;
    for secret in [AWS, GITHUB] {
        let lower = secret.to_lowercase();
        n += raw.under(
            Some(repo),
            &format!(
                "SELECT count(*) FROM engram_memories WHERE text LIKE '%{secret}%'
                   OR doc::text LIKE '%{secret}%' OR tsv::text LIKE '%{lower}%'"
            ),
        );
        n += raw.under(
            Some(repo),
            &format!(
                "SELECT count(*) FROM engram_memory_versions WHERE text LIKE '%{secret}%'
                   OR doc::text LIKE '%{secret}%'"
            ),
        );
    }
    n
}

#[test]
fn scan_secrets_finds_and_redact_removes_secrets_in_the_team_database() {
    let dir = tempfile::tempdir().unwrap();
    pg::database(); // migrated
    let name = pg::unique_repo("secrets");
    let other = pg::unique_repo("secrets-other");
    let store = dir.path().join(&name);
    Memories::open(&store).unwrap();
    let raw = pg::Raw::connect();

    // Written through the write path, which redacts: then made to hold secrets as an
    // older engram would have stored them.
    let (ok, v, all) = engram(&store, &["remember", "deploy with the CI key"]);
    assert!(ok, "{all}");
    let deploy = v["id"].as_str().unwrap().to_string();
    let (ok, _, all) = engram(
        &store,
        &["update", &deploy, "deploy with the CI key, rotated"],
    );
    assert!(ok, "{all}");
    let (ok, v, all) = engram(&store, &["note", "set", "ci-token", "see the vault"]);
    assert!(ok, "{all}");
    let note = v["id"].as_str().unwrap().to_string();
    let (ok, v, all) = engram(&store, &["remember", "nothing secret here"]);
    assert!(ok, "{all}");
    let clean = v["id"].as_str().unwrap().to_string();

    // Version 1 of `deploy` holds an AWS key (history only; the live row is clean).
    assert_eq!(
        raw.under(
            Some(&name),
            &format!(
                "UPDATE engram_memory_versions SET text = 'deploy with {AWS}'
                 WHERE id = '{deploy}' AND version = 1"
            ),
        ),
        1
    );
    // The note holds a GitHub token, live and in its version, text, metadata and
    // keyword index alike.
    for table in ["engram_memories", "engram_memory_versions"] {
        let tsv = if table == "engram_memories" {
            format!(", tsv = to_tsvector('simple', 'token {GITHUB}')")
        } else {
            String::new()
        };
        assert_eq!(
            raw.under(
                Some(&name),
                &format!(
                    "UPDATE {table} SET text = 'token {GITHUB}',
                       doc = jsonb_set(doc::jsonb, '{{metadata,value}}', '\"token {GITHUB}\"')::json{tsv}
                     WHERE id = '{note}'"
                ),
            ),
            1,
            "{table}"
        );
    }
    // Another repository's memory with a secret: not this checkout's to scan or redact.
    let theirs = pg::database()
        .memories(
            &other,
            std::sync::Arc::new(engram::embed::default_embedder()),
        )
        .unwrap();
    let their_id = theirs
        .write(engram::memory::Memory::new("their placeholder"))
        .unwrap()
        .id;
    raw.under(
        Some(&other),
        &format!("UPDATE engram_memories SET text = 'their {AWS}' WHERE id = '{their_id}'"),
    );
    assert_eq!(rows_holding_secrets(&raw, &name), 3);

    // scan secrets: exit 1, the rows by id, table, version and rule, never the text.
    let (ok, v, all) = engram(&store, &["scan", "secrets"]);
    assert!(!ok, "a secret found exits 1: {all}");
    assert!(!all.contains(AWS) && !all.contains(GITHUB), "{all}");
    let rows = v["team_rows"].as_array().unwrap_or_else(|| panic!("{v}"));
    let found: Vec<(String, String, u64, bool)> = rows
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap().to_string(),
                r["table"].as_str().unwrap().to_string(),
                r["version"].as_u64().unwrap(),
                r["live"].as_bool().unwrap(),
            )
        })
        .collect();
    let mut want = vec![
        (
            deploy.clone(),
            "engram_memory_versions".to_string(),
            1,
            false,
        ),
        (note.clone(), "engram_memories".to_string(), 1, true),
        (note.clone(), "engram_memory_versions".to_string(), 1, false),
    ];
    want.sort();
    assert_eq!(found, want, "{v}");
    assert!(rows.iter().all(|r| r["secrets"].as_u64() >= Some(1)));
    let note_row = rows.iter().find(|r| r["id"] == note.as_str()).unwrap();
    assert_eq!(note_row["kind"], "note");
    assert!(
        note_row["rules"].as_object().unwrap().len() == 1,
        "one rule, the GitHub token's: {note_row}"
    );
    assert!(v["secrets"].as_u64().unwrap() >= 4, "{v}");
    assert!(!rows.iter().any(|r| r["id"] == clean.as_str()));
    assert!(!rows.iter().any(|r| r["id"] == their_id.as_str()));
    // The human form says the same, without the text.
    let out = Command::new(env!("CARGO_BIN_EXE_engram"))
        .arg("--store")
        .arg(&store)
        .args(["scan", "secrets"])
        .current_dir(dir.path())
        .env_remove("ENGRAM_STORE")
        .env("ENGRAM_DATABASE_URL", pg::url())
        .output()
        .unwrap();
    let human = String::from_utf8_lossy(&out.stdout);
    assert!(human.contains(&note) && human.contains(&deploy), "{human}");
    assert!(!human.contains(AWS) && !human.contains(GITHUB), "{human}");

    // redact: the rows rewritten in place, the text in no table of this repository.
    let (ok, v, all) = engram(&store, &["redact"]);
    assert!(ok, "{all}");
    assert_eq!(v["team"]["memories_rewritten"], 2, "{v}");
    assert_eq!(v["team"]["rows_rewritten"], 3, "{v}");
    assert_eq!(rows_holding_secrets(&raw, &name), 0);
    let (ok, v, all) = engram(&store, &["scan", "secrets"]);
    assert!(ok, "nothing left: {all}");
    assert_eq!(v["team_rows"].as_array().unwrap().len(), 0, "{v}");

    // Same ids and versions; the history keeps a placeholder where the key was.
    let team = pg::database()
        .memories(
            &name,
            std::sync::Arc::new(engram::embed::default_embedder()),
        )
        .unwrap();
    let history = team.history(&deploy).unwrap();
    assert_eq!(history.len(), 2);
    assert!(
        history[0].text.contains("[REDACTED:"),
        "{}",
        history[0].text
    );
    assert_eq!(history[1].text, "deploy with the CI key, rotated");
    let n = team.note_get("ci-token").unwrap().unwrap();
    assert_eq!(n.id, note);
    assert_eq!(n.version, 1);
    assert!(n.text.contains("[REDACTED:") && !n.text.contains(GITHUB));
    // The redacted note is found by its new words, and no longer by the token's.
    let hits = team.recall("token", &MemoryFilter::default(), 5).unwrap();
    assert!(hits.iter().any(|h| h.memory.id == note));
    assert_eq!(team.count().unwrap(), 3);

    // The other repository's row is as it was.
    assert_eq!(
        raw.under(
            Some(&other),
            &format!("SELECT count(*) FROM engram_memories WHERE text LIKE '%{AWS}%'")
        ),
        1
    );
}
