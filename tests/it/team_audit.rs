//! The audit trail on the team backend (`database_url`), against the real server
//! `tools/postgres.sh start` starts (`ENGRAM_TEST_DATABASE_URL`): the events of calls
//! through an engine on PostgreSQL are in the repository's rows there, readable back
//! (through the engine and `engram audit`), invisible to another repository's
//! setting, append-only, and never in the local store's log; a write's event is
//! committed in the write's own transaction.

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use engram::embed::default_embedder;
use engram::gate::{read_audit, AuditEvent, AuditLog, Caps, Gate};
use engram::index::IndexOptions;
use engram::mcp::{normalise, tools, Engine, Profile};
use engram::memory::Memories;
use serde_json::{json, Map, Value};

use crate::support::llm_server;
use crate::support::pg;

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

/// An engine over a fresh local store, its memory tools and audit trail on a fresh
/// repository of the test database; with that repository's name.
fn team_engine(dir: &std::path::Path, label: &str) -> (Engine, String) {
    let repo = pg::unique_repo(label);
    let memories = Memories::open(dir.join("store")).unwrap();
    let gate = Gate::new(&repo, None, Vec::new(), Caps::default());
    let backend = pg::database()
        .memories(&repo, Arc::new(default_embedder()))
        .unwrap();
    let engine =
        Engine::new(memories, gate, IndexOptions::default()).with_backend(Arc::new(backend));
    (engine, repo)
}

fn open(repo: &str) -> engram::memory_pg::PgMemories {
    pg::database()
        .memories(repo, Arc::new(default_embedder()))
        .unwrap()
}

#[test]
fn team_calls_are_audited_in_postgres_per_repository_and_not_locally() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, repo) = team_engine(dir.path(), "audit");
    let token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    let written = engine
        .call_as(
            "memory_write",
            &args(json!({"text": "deploys go through staging first"})),
            Some("ana"),
        )
        .unwrap();
    assert!(written["id"].as_str().unwrap().starts_with("mem:"));
    engine
        .call("set_note", &args(json!({"name": "owner", "value": "ops"})))
        .unwrap();
    engine
        .call(
            "memory_search",
            &args(json!({"query": format!("staging {token}")})),
        )
        .unwrap();
    assert!(engine
        .call("memory_get", &args(json!({"id": "mem:0000beef"})))
        .is_err());
    engine.audit_refused("no_such_tool", "unknown tool");

    // The write's event is committed before the call returns: readable at once,
    // through another handle on the repository, before any flush.
    let other_handle = open(&repo);
    let early = other_handle.read_audit(0).unwrap();
    let ops: Vec<&str> = early.iter().map(|e| e.op.as_str()).collect();
    assert!(
        ops.contains(&"memory_write") && ops.contains(&"set_note"),
        "{ops:?}"
    );

    engine.audit.flush().unwrap();
    let events = engine.audit.read(0).unwrap();
    let ops: Vec<&str> = events.iter().map(|e| e.op.as_str()).collect();
    assert_eq!(
        ops,
        [
            "memory_write",
            "set_note",
            "memory_search",
            "memory_get",
            "no_such_tool"
        ],
        "{events:?}"
    );
    let write = &events[0];
    assert_eq!(write.repo, repo);
    assert_eq!(write.user_id.as_deref(), Some("ana"));
    assert_eq!(write.results, 1);
    assert!(write.time_ms > 0);
    let search = &events[2];
    let q = search.query.as_deref().unwrap();
    assert!(
        q.starts_with("staging ") && !q.contains(&token[4..20]),
        "{q}"
    );
    assert!(events[3].error.is_some());
    assert_eq!(events[4].error.as_deref(), Some("unknown tool"));
    // Oldest first, and `since` filters.
    assert!(events.windows(2).all(|w| w[0].time_ms <= w[1].time_ms));
    let last = events.last().unwrap().time_ms;
    assert!(other_handle.read_audit(last + 1).unwrap().is_empty());
    assert!(!other_handle.read_audit(last).unwrap().is_empty());

    // Nothing of this in the local store's log.
    assert!(read_audit(engine.memories.store(), 0).unwrap().is_empty());

    // Another repository sees none of it, through the backend and through SQL.
    let stranger = pg::unique_repo("audit-stranger");
    assert!(open(&stranger).read_audit(0).unwrap().is_empty());
    let raw = pg::Raw::connect();
    assert_eq!(
        raw.under(Some(&stranger), "SELECT count(*) FROM engram_audit"),
        0
    );
    assert_eq!(
        raw.under(
            Some(&stranger),
            &format!(
                "SELECT count(*) FROM engram_audit WHERE repo = '{}'",
                repo.replace('\'', "''")
            )
        ),
        0
    );
    assert_eq!(raw.under(None, "SELECT count(*) FROM engram_audit"), 0);
    assert_eq!(
        raw.under(Some(&repo), "SELECT count(*) FROM engram_audit"),
        5
    );
    // Append-only: the repository's own setting neither changes nor deletes a row.
    assert_eq!(
        raw.under(Some(&repo), "UPDATE engram_audit SET op = 'forged'"),
        0
    );
    assert_eq!(raw.under(Some(&repo), "DELETE FROM engram_audit"), 0);
    assert_eq!(engine.audit.read(0).unwrap(), events);
}

#[test]
fn queued_team_events_are_committed_when_the_engine_closes() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, repo) = team_engine(dir.path(), "audit-close");
    engine
        .call("memory_search", &args(json!({"query": "anything"})))
        .unwrap();
    drop(engine);
    let events = open(&repo).read_audit(0).unwrap();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].op, "memory_search");
    let memories = Memories::open(dir.path().join("store")).unwrap();
    assert!(read_audit(memories.store(), 0).unwrap().is_empty());
}

#[test]
fn engram_audit_reads_the_team_trail_with_database_url_set() {
    let dir = tempfile::tempdir().unwrap();
    // The CLI files a store's repository under the store directory's name.
    let name = pg::unique_repo("audit-cli");
    let store = dir.path().join(&name);
    let engram = |url: Option<&str>| engram_json(dir.path(), &store, "audit", url);
    // Initialise the local store (and see it has no events).
    Memories::open(&store).unwrap();
    assert_eq!(engram(None)["events"], json!([]));
    open(&name)
        .append_audit(&[AuditEvent {
            time_ms: 1_700_000_000_000,
            op: "code_search".into(),
            query: Some("retry policy".into()),
            results: 3,
            ..AuditEvent::default()
        }])
        .unwrap();
    let v = engram(Some(&pg::url()));
    let events = v["events"].as_array().unwrap();
    assert_eq!(events.len(), 1, "{v}");
    assert_eq!(events[0]["op"], "code_search");
    assert_eq!(events[0]["query"], "retry policy");
    assert_eq!(events[0]["results"], 3);
    // And the local store still has none.
    assert_eq!(engram(None)["events"], json!([]));

    // `engram stats` counts the chat-model calls of the team trail.
    open(&name)
        .append_audit(&[AuditEvent {
            op: "llm_call".into(),
            results: 1,
            llm: Some(engram::gate::LlmCall {
                purpose: "rerank".into(),
                model: "m".into(),
                bytes_sent: 1200,
                input_tokens: 300,
                output_tokens: 20,
                outcome: "ok".into(),
                ..Default::default()
            }),
            ..AuditEvent::default()
        }
        .prepared()
        .unwrap()])
        .unwrap();
    let stats = |url: Option<&str>| engram_json(dir.path(), &store, "stats", url);
    let team = stats(Some(&pg::url()));
    assert_eq!(team["llm"]["calls"], 1, "{team}");
    assert_eq!(team["llm"]["bytes_sent"], 1200, "{team}");
    assert_eq!(stats(None)["llm"]["calls"], 0);
}

#[test]
fn a_schema_1_database_is_migrated_to_the_audit_and_pattern_set_tables() {
    use engram::memory_pg::{PgDatabase, MIGRATIONS};
    use engram::patterns::{PatternSet, PatternSetStore};

    let name = pg::unique_repo("upgrade").replace('-', "_");
    let admin = pg::Raw::connect();
    admin.batch(&format!("CREATE DATABASE {name}"));
    let url = {
        let u = pg::url();
        format!("{}/{name}", u.rsplit_once('/').unwrap().0)
    };
    {
        // As an engram of schema 1 left it, with a memory in it.
        let old = pg::Raw::connect_to(&url);
        old.batch(&format!(
            "CREATE TABLE engram_schema_migrations (version integer PRIMARY KEY,
                 name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());
             {}
             INSERT INTO engram_schema_migrations (version, name) VALUES (1, '0001_memories');",
            MIGRATIONS[0].sql
        ));
        old.under(
            Some("r"),
            "INSERT INTO engram_memories (repo, id, kind, text, version, created_ms, updated_ms, doc, tsv)
             VALUES ('r', 'mem:00000001', 'memory', 'x', 1, 0, 0, '{}', ''::tsvector)",
        );
        let db = PgDatabase::connect(&url).unwrap();
        let st = db.status().unwrap();
        assert_eq!(st.current, 1);
        assert_eq!(st.pending, ["0002_audit", "0003_pattern_sets"]);
        let applied: Vec<&str> = db.migrate().unwrap().iter().map(|m| m.name).collect();
        assert_eq!(applied, ["0002_audit", "0003_pattern_sets"]);
        assert!(db.status().unwrap().pending.is_empty());
        assert_eq!(
            old.under(Some("r"), "SELECT count(*) FROM engram_memories"),
            1
        );

        let m = db.memories("r", Arc::new(default_embedder())).unwrap();
        // Appended as given: stamped and redacted on the way in all the same.
        let token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
        m.append_audit(&[AuditEvent {
            op: "code_search".into(),
            query: Some(format!("where is {token}")),
            ..AuditEvent::default()
        }])
        .unwrap();
        let back = m.read_audit(0).unwrap();
        assert_eq!(back.len(), 1);
        assert!(back[0].time_ms > 0);
        let q = back[0].query.as_deref().unwrap();
        assert!(
            q.starts_with("where is ") && !q.contains(&token[4..20]),
            "{q}"
        );
        let set = PatternSet::parse_detect("id = \"pat:after\"\npatterns = ['x+']\n").unwrap();
        m.put_pattern_set(&set).unwrap();
        assert_eq!(m.list_pattern_sets().unwrap(), [set]);
    }
    admin.batch(&format!("DROP DATABASE {name} WITH (FORCE)"));
}

#[test]
fn a_chat_model_call_on_the_team_path_is_audited_in_postgres() {
    const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
    let dir = tempfile::tempdir().unwrap();
    let server = llm_server::Server::start(vec![llm_server::Reply::openai(
        "{\"error_type\": \"TypeError\", \"message\": \"x is undefined\", \"file\": \"src/app.js\", \"line\": 7}",
    )]);
    let repo = pg::unique_repo("audit-llm");
    let memories = Memories::open(dir.path().join("store")).unwrap();
    let gate = Gate::new(&repo, None, Vec::new(), Caps::default());
    let mut set =
        engram::llm::LlmSettings::new(engram::llm::Api::OpenAi, &server.addr, "test-model");
    set.max_retries = 0;
    set.timeout = Duration::from_secs(3);
    let p = engram::llm::HttpProvider::new(set).unwrap();
    let v = p.for_vision();
    let assistant = engram::assist::Assistant::new(
        Arc::new(p),
        Arc::new(v),
        engram::assist::Features::from_names(&["vision"]),
        gate.clone(),
    );
    // As `engram serve` builds it: the assistant first, then the team backend.
    let engine = Engine::new(memories, gate, IndexOptions::default())
        .with_assistant(Some(assistant))
        .with_backend(Arc::new(open(&repo)));
    let listed: Vec<&str> = tools::tools_for(Profile::All)
        .iter()
        .map(|t| t.name)
        .collect();
    let prepared = normalise::prepare(
        &engine,
        "coding_record_error",
        &listed,
        args(json!({"error_type": "TypeError", "message": "see screenshot", "screenshot_base64": PNG})),
    )
    .unwrap();
    let v = engine
        .call_as(prepared.spec.name, &prepared.args, None)
        .unwrap();
    assert_eq!(v["screenshot_reading"]["file"], "src/app.js", "{v}");

    let events = open(&repo).read_audit(0).unwrap();
    let llm: Vec<&AuditEvent> = events.iter().filter(|e| e.op == "llm_call").collect();
    assert_eq!(llm.len(), 1, "{events:?}");
    let call = llm[0].llm.as_ref().unwrap();
    assert_eq!(call.outcome, "ok");
    assert_eq!(call.model, "test-model");
    assert!(call.bytes_sent > 0);
    assert!(events.iter().any(|e| e.op == "coding_record_error"));
    assert!(read_audit(engine.memories.store(), 0).unwrap().is_empty());
}

#[test]
fn a_team_writes_event_is_committed_in_the_writes_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, repo) = team_engine(dir.path(), "audit-tx");
    let write = |text: &str| {
        engine
            .call("memory_write", &args(json!({"text": text})))
            .unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let kept = write("one transaction");
    let note = engine
        .call("set_note", &args(json!({"name": "tx", "value": "same"})))
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    // A write that fails: its event (with the error) is appended on its own.
    assert!(engine
        .call(
            "memory_update",
            &args(json!({"id": "mem:0000beef", "text": "nothing to update"}))
        )
        .is_err());
    let gone = write("written, then deleted");
    engine
        .call("memory_delete", &args(json!({"id": gone})))
        .unwrap();

    // Rows written by one transaction share its id (xmin).
    let raw = pg::Raw::connect();
    let same_tx = |op: &str, mem: &str| {
        raw.under(
            Some(&repo),
            &format!(
                "SELECT count(*) FROM engram_audit a JOIN engram_memories m
                 ON m.repo = a.repo AND m.xmin = a.xmin
                 WHERE a.op = '{op}' AND m.id = '{mem}'"
            ),
        )
    };
    assert_eq!(same_tx("memory_write", &kept), 1);
    assert_eq!(same_tx("set_note", &note), 1);
    assert_eq!(same_tx("memory_write", &note), 0);

    // Once each: none lost, none doubled; nothing locally.
    let events = open(&repo).read_audit(0).unwrap();
    let ops: Vec<&str> = events.iter().map(|e| e.op.as_str()).collect();
    assert_eq!(
        ops,
        [
            "memory_write",
            "set_note",
            "memory_update",
            "memory_write",
            "memory_delete"
        ],
        "{events:?}"
    );
    assert!(events[2].error.is_some(), "{:?}", events[2]);
    assert!(events
        .iter()
        .enumerate()
        .all(|(i, e)| i == 2 || e.error.is_none()));
    assert!(read_audit(engine.memories.store(), 0).unwrap().is_empty());
}

/// `engram --json COMMAND` on `store`, run in `cwd`, with `ENGRAM_DATABASE_URL` set to
/// `url` or unset; its JSON output (the command must succeed).
fn engram_json(
    cwd: &std::path::Path,
    store: &std::path::Path,
    command: &str,
    url: Option<&str>,
) -> Value {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_engram"));
    cmd.arg("--store")
        .arg(store)
        .args(["--json", command])
        .current_dir(cwd)
        .env_remove("ENGRAM_STORE")
        .env_remove("ENGRAM_DATABASE_URL");
    if let Some(u) = url {
        cmd.env("ENGRAM_DATABASE_URL", u);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "engram {command}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<Value>(&out.stdout).unwrap()
}
