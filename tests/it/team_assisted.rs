//! The model-assisted commands on the team backend (`database_url`, the server
//! `tools/postgres.sh start` starts, `ENGRAM_TEST_DATABASE_URL`): `error suggest` and
//! `recall --rerank llm` send the database's entries to the chat model (a scripted
//! server here); `session end --llm-summary --extract`, `session extract` and `error
//! record --screenshot` write what it answers to the database; the calls are audited
//! in the database, not in the local store.

#![cfg(feature = "cli")]

use std::path::Path;
use std::process::{Command, Output};

use engram::memory::Memories;
use llm_server::{Reply, Server};
use serde_json::Value;

use crate::support::llm_server;
use crate::support::pg;

/// `engram --store STORE ARGS… --json`, on the team database when `team` is set,
/// with the scripted chat model when `server` is given.
fn run(store: &Path, team: bool, server: Option<&Server>, args: &[&str]) -> Output {
    run_env(store, team, server, &[], args)
}

/// [`run`] with more environment variables.
fn run_env(
    store: &Path,
    team: bool,
    server: Option<&Server>,
    env: &[(&str, &str)],
    args: &[&str],
) -> Output {
    let home = store.parent().unwrap().join("home");
    let mut c = Command::new(env!("CARGO_BIN_EXE_engram"));
    c.arg("--store").arg(store).args(args).arg("--json");
    for (k, _) in std::env::vars() {
        if k.starts_with("ENGRAM_") {
            c.env_remove(k);
        }
    }
    c.env("HOME", &home).env("XDG_CONFIG_HOME", &home);
    if team {
        c.env("ENGRAM_DATABASE_URL", pg::url());
    }
    if let Some(s) = server {
        s.configure(&mut c, "sk-team-test-key");
    }
    c.envs(env.iter().copied());
    c.output().expect("run engram")
}

fn json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

fn record_error(store: &Path, message: &str, solution: Option<&str>) -> String {
    let mut args = vec![
        "error",
        "record",
        "--type",
        "LinkError",
        "--message",
        message,
    ];
    if let Some(s) = solution {
        args.extend(["--solution", s, "--resolved"]);
    }
    json(&run(store, true, None, &args))["id"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn suggest_and_rerank_read_the_team_database_and_audit_there() {
    pg::database(); // migrated
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join(pg::unique_repo("assisted"));
    Memories::open(&store).unwrap();
    record_error(&store, "undefined symbol foo", Some("link with -lfoo"));
    let eid = record_error(&store, "undefined symbol bar in release", None);

    // Without a model: the most similar solved error's solution, from the database.
    let v = json(&run(&store, true, None, &["error", "suggest", &eid]));
    assert_eq!(v["solution"], "link with -lfoo", "{v}");

    let server = Server::start(vec![Reply::openai(
        "{\"solution\": \"link with -lbar\", \"confidence\": 0.7, \"alternatives\": []}",
    )]);
    let v = json(&run(
        &store,
        true,
        Some(&server),
        &["error", "suggest", &eid],
    ));
    assert_eq!(
        (v["source"].as_str(), v["solution"].as_str()),
        (Some("llm"), Some("link with -lbar")),
        "{v}"
    );
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].body.contains("undefined symbol bar in release"));
    assert!(
        seen[0].body.contains("link with -lfoo"),
        "past errors come from the database"
    );

    let server = Server::start(vec![Reply::openai(
        "Memory 1: Score: 0.1 Reason: no\nMemory 2: Score: 0.95 Reason: same symbol error",
    )]);
    let v = json(&run(
        &store,
        true,
        Some(&server),
        &["recall", "undefined symbol", "--rerank", "llm"],
    ));
    let hits = v["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 1, "{v}");
    assert_eq!(hits[0]["reason"], "same symbol error");
    assert_eq!(hits[0]["score"], 0.95);
    assert_eq!(hits[0]["reranked_by"], "test-model");
    assert!(server.seen()[0].body.contains("undefined symbol"));

    // A dry run prints the request and sends nothing.
    let server = Server::start(vec![]);
    let v = json(&run(
        &store,
        true,
        Some(&server),
        &["error", "suggest", &eid, "--dry-run"],
    ));
    assert_eq!(v["dry_run"], true);
    assert!(v["requests"].to_string().contains("undefined symbol bar"));
    assert!(server.seen().is_empty());

    // The two calls are in the database's audit trail, none in the local store's.
    let audit = json(&run(&store, true, None, &["audit"]));
    let calls = |v: &Value| {
        v["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["op"] == "llm_call")
            .map(|e| e["query"].as_str().unwrap_or("").to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(calls(&audit), ["error_suggest", "rerank"], "{audit}");
    let local = json(&run(&store, false, None, &["audit"]));
    assert!(calls(&local).is_empty(), "{local}");
    let listed = json(&run(&store, false, None, &["list"]));
    assert_eq!(
        listed["total"], 0,
        "nothing went to the local store: {listed}"
    );
}

#[cfg(feature = "llm")]
#[test]
fn mcp_suggest_solution_reads_the_team_database_and_audits_there() {
    use std::sync::Arc;
    use std::time::Duration;

    use engram::assist::{Assistant, Features};
    use engram::embed::default_embedder;
    use engram::gate::{AuditLog, Caps, Gate};
    use engram::index::IndexOptions;
    use engram::llm::{Api, HttpProvider, LlmSettings};
    use engram::mcp::Engine;
    use serde_json::{json, Map};

    let dir = tempfile::tempdir().unwrap();
    let repo = pg::unique_repo("assisted-mcp");
    let team = || {
        Arc::new(
            pg::database()
                .memories(&repo, Arc::new(default_embedder()))
                .unwrap(),
        )
    };
    let server = Server::start(vec![Reply::openai(
        "{\"solution\": \"pin foo to 1.9\", \"confidence\": 0.6, \"alternatives\": [\"vendor it\"]}",
    )]);
    let gate = Gate::new(&repo, None, Vec::new(), Caps::default());
    let mut settings = LlmSettings::new(Api::OpenAi, &server.addr, "test-model");
    settings.max_retries = 0;
    settings.timeout = Duration::from_secs(3);
    let provider = HttpProvider::new(settings).unwrap();
    let vision = provider.for_vision();
    let assistant = Assistant::new(
        Arc::new(provider),
        Arc::new(vision),
        Features::from_names::<&str>(&[]),
        gate.clone(),
    );
    let engine = Engine::new(
        Memories::open(dir.path().join("store")).unwrap(),
        gate,
        IndexOptions::default(),
    )
    .with_assistant(Some(assistant))
    .with_backend(team());
    let call = |name: &str, v: Value| {
        engine
            .call(name, &v.as_object().cloned().unwrap_or_else(Map::new))
            .unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    call(
        "coding_record_error",
        json!({"error_type": "VersionError", "message": "crate foo 2.0 breaks the build",
               "solution": "pin foo to 1.8", "resolved": true}),
    );
    let id = call(
        "coding_record_error",
        json!({"error_type": "VersionError", "message": "crate foo 2.1 breaks the build again"}),
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    let v = call("coding_suggest_solution", json!({"error_id": id}));
    assert_eq!(v["solution"], "pin foo to 1.9", "{v}");
    assert_eq!(v["source"], "llm");
    let body = &server.seen()[0].body;
    assert!(body.contains("crate foo 2.1 breaks the build again"));
    assert!(
        body.contains("pin foo to 1.8"),
        "past errors come from the database"
    );

    // The model call is in the database's audit trail, not the local store's.
    let calls = team()
        .read_audit(0)
        .unwrap()
        .into_iter()
        .filter(|e| e.op == "llm_call")
        .count();
    assert_eq!(calls, 1);
    assert!(engine
        .memories
        .read_audit(0)
        .unwrap()
        .iter()
        .all(|e| e.op != "llm_call"));
    assert_eq!(engine.memories.count().unwrap(), 0);
}

/// A 1x1 PNG.
#[cfg(feature = "llm")]
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

#[cfg(feature = "llm")]
#[test]
fn the_writing_assisted_commands_write_to_the_team_database() {
    use base64::Engine as _;
    pg::database(); // migrated
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join(pg::unique_repo("assisted-write"));
    let other = dir.path().join(pg::unique_repo("assisted-write-b"));
    // A local store with a session of the same id would answer a local read; there
    // is none, and nothing may be written there.
    Memories::open(&store).unwrap();
    let sid = json(&run(
        &store,
        true,
        None,
        &["session", "start", "enable lto"],
    ))["id"]
        .as_str()
        .unwrap()
        .to_string();
    json(&run(
        &store,
        true,
        None,
        &[
            "change",
            "Cargo.toml",
            "--action",
            "edit",
            "--reason",
            "enable lto in release",
            "--session",
            &sid,
        ],
    ));

    let server = Server::start(vec![
        Reply::openai("# Session Summary\n\n## Overview\nLTO on."),
        Reply::openai(
            "{\"items\": [{\"kind\": \"pitfall\", \"text\": \"LTO doubles release link time\"}]}",
        ),
    ]);
    let v = json(&run(
        &store,
        true,
        Some(&server),
        &["session", "end", &sid, "--llm-summary", "--extract"],
    ));
    assert_eq!(
        v["llm_summary"], "# Session Summary\n\n## Overview\nLTO on.",
        "{v}"
    );
    let extracted = v["extracted"].as_array().unwrap();
    assert_eq!(extracted.len(), 1, "{v}");
    let xid = extracted[0]["id"].as_str().unwrap().to_string();
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    assert!(
        seen[0].body.contains("enable lto in release"),
        "the session's records come from the database"
    );
    // Both written to the database: the session's summary and the extracted pitfall.
    let s = json(&run(&store, true, None, &["get", &sid]));
    assert_eq!(
        s["metadata"]["llm_summary_provenance"], "llm_extracted",
        "{s}"
    );
    let x = json(&run(&store, true, None, &["get", &xid]));
    assert_eq!(
        (x["provenance"].as_str(), x["session"].as_str()),
        (Some("llm_extracted"), Some(sid.as_str())),
        "{x}"
    );

    // `session extract` again: the pitfall is known (read back from the database).
    let server = Server::start(vec![Reply::openai(
        "{\"items\": [{\"kind\": \"pitfall\", \"text\": \"LTO doubles release link time\"}]}",
    )]);
    let v = json(&run(
        &store,
        true,
        Some(&server),
        &["session", "extract", &sid],
    ));
    assert_eq!(
        (
            v["stored"].as_array().unwrap().len(),
            v["duplicates"].as_u64()
        ),
        (0, Some(1)),
        "{v}"
    );

    // A screenshot read by the vision model; the error recorded in the database.
    let file = dir.path().join("shot.png");
    std::fs::write(
        &file,
        base64::engine::general_purpose::STANDARD
            .decode(PNG)
            .unwrap(),
    )
    .unwrap();
    let server = Server::start(vec![Reply::openai(
        "{\"error_type\": \"TypeError\", \"message\": \"x is undefined\", \"file\": \"src/app.js\", \"line\": 7}",
    )]);
    let v = json(&run_env(
        &store,
        true,
        Some(&server),
        &[("ENGRAM_LLM_FEATURES", "vision")],
        &[
            "error",
            "record",
            "--type",
            "TypeError",
            "--message",
            "see screenshot",
            "--screenshot",
            file.to_str().unwrap(),
        ],
    ));
    let eid = v["id"].as_str().unwrap().to_string();
    assert_eq!(
        v["metadata"]["screenshot_reading"]["file"], "src/app.js",
        "{v}"
    );
    assert_eq!(v["metadata"]["screenshot_bytes"], 70);
    let e = json(&run(&store, true, None, &["get", &eid]));
    assert_eq!(
        (
            e["metadata"]["file"].as_str(),
            e["metadata"]["line"].as_u64()
        ),
        (Some("src/app.js"), Some(7)),
        "{e}"
    );

    // Four model calls audited in the database, none locally; nothing stored locally.
    let audit = json(&run(&store, true, None, &["audit"]));
    let calls: Vec<String> = audit["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["op"] == "llm_call")
        .map(|e| e["query"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(calls.len(), 4, "{audit}");
    let listed = json(&run(&store, false, None, &["list"]));
    assert_eq!(
        listed["total"], 0,
        "nothing went to the local store: {listed}"
    );
    // Another repository sees none of it.
    let (done, err) = {
        let out = run(&other, true, None, &["get", &sid]);
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    assert!(!done && err.contains("no memory"), "{err}");
}

#[cfg(feature = "llm")]
#[test]
fn mcp_session_end_summarises_and_extracts_on_the_team_database() {
    use std::sync::Arc;
    use std::time::Duration;

    use engram::assist::{Assistant, Features};
    use engram::embed::default_embedder;
    use engram::gate::{Caps, Gate};
    use engram::index::IndexOptions;
    use engram::llm::{Api, HttpProvider, LlmSettings};
    use engram::mcp::Engine;
    use serde_json::{json, Map};

    let dir = tempfile::tempdir().unwrap();
    let repo = pg::unique_repo("assisted-mcp-end");
    let server = Server::start(vec![
        Reply::openai("# Session Summary\n\n## Overview\nCache warmed."),
        Reply::openai(
            "{\"items\": [{\"kind\": \"decision\", \"text\": \"Warm the cache at start\"}]}",
        ),
    ]);
    let gate = Gate::new(&repo, None, Vec::new(), Caps::default());
    let mut settings = LlmSettings::new(Api::OpenAi, &server.addr, "test-model");
    settings.max_retries = 0;
    settings.timeout = Duration::from_secs(3);
    let provider = HttpProvider::new(settings).unwrap();
    let vision = provider.for_vision();
    let assistant = Assistant::new(
        Arc::new(provider),
        Arc::new(vision),
        Features::from_names(&["summary", "extract"]),
        gate.clone(),
    );
    let team = Arc::new(
        pg::database()
            .memories(&repo, Arc::new(default_embedder()))
            .unwrap(),
    );
    let engine = Engine::new(
        Memories::open(dir.path().join("store")).unwrap(),
        gate,
        IndexOptions::default(),
    )
    .with_assistant(Some(assistant))
    .with_backend(team.clone());
    let call = |name: &str, v: Value| {
        engine
            .call(name, &v.as_object().cloned().unwrap_or_else(Map::new))
            .unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let sid = call("coding_start_session", json!({"description": "cache work"}))["id"]
        .as_str()
        .unwrap()
        .to_string();
    call(
        "coding_track_file_change",
        json!({"path": "src/cache.rs", "action": "edit", "reason": "warm the cache", "session": sid}),
    );
    let v = call("coding_end_session", json!({"id": sid}));
    assert!(v.get("warnings").is_none(), "{v}");
    assert!(
        v["llm_summary"].as_str().unwrap().contains("Cache warmed"),
        "{v}"
    );
    let x = v["extracted"][0].as_str().unwrap().to_string();
    assert!(
        server.seen()[0].body.contains("warm the cache"),
        "the session's records come from the database"
    );
    // Written to the database, nothing to the local store.
    use engram::memory::MemoryBackend;
    let s = team.get(&sid).unwrap().unwrap();
    assert_eq!(s.metadata["llm_summary_provenance"], "llm_extracted");
    assert_eq!(team.get(&x).unwrap().unwrap().provenance, "llm_extracted");
    assert_eq!(engine.memories.count().unwrap(), 0);
}
