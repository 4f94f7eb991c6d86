//! The MCP tools a chat model helps, over a local server: summaries and extraction at
//! `coding_end_session`, screenshots at `coding_record_error` (hash and size stored,
//! never the image), `coding_suggest_solution`, compression of the project context,
//! and reranking in `enrich_prompt` — each with its answer when the model fails.

#![cfg(feature = "llm")]

use std::time::Duration;

use engram::assist::{Assistant, Features};
use engram::gate::{Caps, Gate};
use engram::index::IndexOptions;
use engram::llm::{Api, HttpProvider, LlmSettings};
use engram::mcp::{normalise, tools, Engine, Profile};
use engram::memory::Memories;
use llm_server::{Reply, Server};
use serde_json::{json, Map, Value};

use crate::support::llm_server;

const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

fn engine(dir: &std::path::Path, server: Option<&Server>, features: &[&str]) -> Engine {
    let memories = Memories::open(dir.join("store")).unwrap();
    let gate = Gate::new("repo", None, Vec::new(), Caps::default());
    let assistant = server.map(|s| {
        let mut set = LlmSettings::new(Api::OpenAi, &s.addr, "test-model");
        set.max_retries = 0;
        set.timeout = Duration::from_secs(3);
        let p = HttpProvider::new(set).unwrap();
        let v = p.for_vision();
        Assistant::new(
            std::sync::Arc::new(p),
            std::sync::Arc::new(v),
            Features::from_names(features),
            gate.clone(),
        )
    });
    Engine::new(memories, gate, IndexOptions::default()).with_assistant(assistant)
}

/// A call as the server makes it: normalised, checked, then run.
fn call(e: &Engine, name: &str, args: Value) -> Result<Value, String> {
    let listed: Vec<&str> = tools::tools_for(Profile::All)
        .iter()
        .map(|t| t.name)
        .collect();
    let args: Map<String, Value> = args.as_object().cloned().unwrap();
    let p = normalise::prepare(e, name, &listed, args)?;
    e.call_as(p.spec.name, &p.args, None)
}

fn ok(e: &Engine, name: &str, args: Value) -> Value {
    call(e, name, args).unwrap_or_else(|m| panic!("{name}: {m}"))
}

#[test]
fn end_session_adds_the_models_summary_and_extraction() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![Reply::openai(
        "# Session Summary\n{\"items\": [{\"kind\": \"pitfall\", \"text\": \"The cache must be warmed before benchmarks\"}]}",
    )]);
    let e = engine(dir.path(), Some(&server), &["summary", "extract"]);
    let sid = ok(
        &e,
        "coding_start_session",
        json!({"description": "benchmarks"}),
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    ok(
        &e,
        "coding_track_file_change",
        json!({"path": "benches/a.rs", "action": "edit", "reason": "warm the cache", "session": sid}),
    );
    let v = ok(&e, "coding_end_session", json!({"id": sid}));
    assert!(
        v["summary"].as_str().unwrap().contains("benches/a.rs"),
        "{v}"
    );
    assert!(v["llm_summary"]
        .as_str()
        .unwrap()
        .starts_with("# Session Summary"));
    assert_eq!(v["extracted"].as_array().unwrap().len(), 1);
    assert!(v.get("warnings").is_none());
    assert_eq!(server.seen().len(), 2);

    // The same with the model down: the deterministic answer and warnings.
    let down = Server::start(vec![Reply::json(500, "{}")]);
    let e = engine(&dir.path().join("2"), Some(&down), &["summary", "extract"]);
    let sid = ok(&e, "coding_start_session", json!({"description": "again"}))["id"]
        .as_str()
        .unwrap()
        .to_string();
    let v = ok(&e, "coding_end_session", json!({"id": sid}));
    assert!(v["llm_summary"].is_null());
    assert_eq!(v["warnings"].as_array().unwrap().len(), 2);
}

#[test]
fn a_screenshot_is_read_and_only_its_hash_and_size_are_stored() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![Reply::openai(
        "{\"error_type\": \"TypeError\", \"message\": \"x is undefined\", \"file\": \"src/app.js\", \"line\": 7, \"stack_trace\": \"at f (src/app.js:7)\"}",
    )]);
    let e = engine(dir.path(), Some(&server), &["vision"]);
    let v = ok(
        &e,
        "coding_record_error",
        json!({"error_type": "TypeError", "message": "see screenshot", "screenshot_base64": PNG}),
    );
    assert_eq!(v["screenshot_reading"]["file"], "src/app.js");
    assert_eq!(v["screenshot_reading"]["provenance"], "llm_extracted");
    let m = e.memories.get(v["id"].as_str().unwrap()).unwrap().unwrap();
    let stored = serde_json::to_string(&m).unwrap();
    assert!(
        !stored.contains(PNG) && !stored.contains(&PNG[..40]),
        "{stored}"
    );
    assert!(m.metadata["screenshot"]
        .as_str()
        .unwrap()
        .starts_with("sha256:"));
    assert_eq!(m.metadata["screenshot_bytes"], 70);
    assert_eq!(
        (m.metadata["file"].as_str(), m.metadata["line"].as_u64()),
        (Some("src/app.js"), Some(7))
    );
    let body = server.seen()[0].json();
    assert!(body["messages"][1]["content"][1]["image_url"]["url"]
        .as_str()
        .unwrap()
        .contains(PNG));

    // Without a model the image is still never stored.
    let e = engine(&dir.path().join("2"), None, &[]);
    let v = ok(
        &e,
        "coding_record_error",
        json!({"error_type": "E", "message": "m", "screenshot_base64": PNG}),
    );
    let m = e.memories.get(v["id"].as_str().unwrap()).unwrap().unwrap();
    assert!(!serde_json::to_string(&m).unwrap().contains(&PNG[..40]));
    assert!(m.metadata["screenshot"]
        .as_str()
        .unwrap()
        .starts_with("sha256:"));
    // Not an image: its size and hash only.
    let junk = "QUFB".repeat(100);
    let v = ok(
        &e,
        "coding_record_error",
        json!({"error_type": "E2", "message": "m2", "screenshot_base64": junk}),
    );
    let m = e.memories.get(v["id"].as_str().unwrap()).unwrap().unwrap();
    let shown = m.metadata["screenshot"].as_str().unwrap();
    assert!(
        !shown.contains("QUFBQUFB") && shown.contains("400 characters"),
        "{shown}"
    );
}

#[test]
fn suggest_solution_with_and_without_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![Reply::openai(
        "{\"solution\": \"pin the version\", \"confidence\": 2.5, \"alternatives\": \"vendor it\"}",
    )]);
    let e = engine(dir.path(), Some(&server), &[]);
    ok(
        &e,
        "coding_record_error",
        json!({"error_type": "VersionError", "message": "crate foo 2.0 breaks build", "solution": "pin foo to 1.9"}),
    );
    let id = ok(
        &e,
        "coding_record_error",
        json!({"error_type": "VersionError", "message": "crate foo 2.1 breaks the build again"}),
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    let v = ok(&e, "coding_suggest_solution", json!({"error_id": id}));
    assert_eq!(v["solution"], "pin the version");
    assert_eq!(v["confidence"], 1.0, "clamped into 0..1");
    assert_eq!(v["alternatives"], json!(["vendor it"]));
    // dry_run: the exact request, and nothing sent.
    let sent = server.seen().len();
    let v = ok(
        &e,
        "coding_suggest_solution",
        json!({"error_id": id, "dry_run": true}),
    );
    assert_eq!(v["dry_run"], true);
    let body = v["requests"][0]["request"]["body"]
        .as_str()
        .unwrap_or_default();
    assert!(body.contains("crate foo 2.1 breaks the build again"), "{v}");
    assert_eq!(server.seen().len(), sent, "a dry run sent a request");
    let down = Server::start(vec![Reply::json(200, "{broken")]);
    let e = engine(&dir.path().join("3"), Some(&down), &[]);
    ok(
        &e,
        "coding_record_error",
        json!({"error_type": "VersionError", "message": "crate foo 2.0 breaks build", "solution": "pin foo to 1.9"}),
    );
    let id = ok(
        &e,
        "coding_record_error",
        json!({"error_type": "VersionError", "message": "crate foo 2.1 breaks the build again"}),
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    let v = ok(&e, "coding_suggest_solution", json!({"id": id}));
    assert_eq!(
        (v["source"].as_str(), v["solution"].as_str()),
        (Some("past_solution"), Some("pin foo to 1.9"))
    );
    assert!(v["warnings"][0]
        .as_str()
        .unwrap()
        .contains("could not be read"));
}

#[test]
fn project_context_compresses_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![Reply::openai(&"x".repeat(5000))]);
    let e = engine(dir.path(), Some(&server), &[]);
    ok(
        &e,
        "memory_write_structured",
        json!({"text": "never block the event loop", "insights": ["pitfall"]}),
    );
    let v = ok(
        &e,
        "coding_get_project_context",
        json!({"compress": "brief", "budget": 300}),
    );
    assert_eq!(v["compressed"], true);
    assert!(v["context"].as_str().unwrap().len() <= 300);
    let v = ok(&e, "coding_get_project_context", json!({}));
    assert!(
        v.get("compressed").is_none(),
        "off unless asked or configured"
    );
    assert_eq!(server.seen().len(), 1);
    assert!(call(
        &e,
        "coding_get_project_context",
        json!({"compress": "tiny"})
    )
    .is_err());
}

#[test]
fn enrich_prompt_reranks_memories_when_configured() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![Reply::openai(
        "Memory 1: Score: 0.1 Reason: off topic\nMemory 2: Score: 0.9 Reason: on topic",
    )]);
    let e = engine(dir.path(), Some(&server), &["rerank"]);
    ok(
        &e,
        "memory_write",
        json!({"text": "retry storms: add jitter to the retry backoff"}),
    );
    ok(
        &e,
        "memory_write",
        json!({"text": "retry the upload with exponential backoff"}),
    );
    let v = ok(&e, "enrich_prompt", json!({"prompt": "retry backoff"}));
    let ctx = v["context"].as_str().unwrap();
    assert_eq!(server.seen().len(), 1);
    assert_eq!(ctx.matches("[memory:").count(), 1, "{ctx}");

    // Without the feature, no call.
    let quiet = Server::start(vec![Reply::openai("never")]);
    let e = engine(&dir.path().join("2"), Some(&quiet), &[]);
    ok(
        &e,
        "memory_write",
        json!({"text": "retry the upload with exponential backoff"}),
    );
    ok(&e, "enrich_prompt", json!({"prompt": "retry backoff"}));
    assert!(quiet.seen().is_empty());

    // A failing model: the fused order, both memories.
    let down = Server::start(vec![Reply::json(502, "bad gateway")]);
    let e = engine(&dir.path().join("3"), Some(&down), &["rerank"]);
    ok(
        &e,
        "memory_write",
        json!({"text": "retry storms: add jitter to the retry backoff"}),
    );
    ok(
        &e,
        "memory_write",
        json!({"text": "retry the upload with exponential backoff"}),
    );
    let v = ok(&e, "enrich_prompt", json!({"prompt": "retry backoff"}));
    assert_eq!(
        v["context"].as_str().unwrap().matches("[memory:").count(),
        2
    );
    assert_eq!(down.seen().len(), 1);
}
