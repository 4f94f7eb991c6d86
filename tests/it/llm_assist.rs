//! The LLM features over a local chat-model server: each feature's request shape, its
//! result stored with the right provenance, every fault degrading to the result
//! without a model, and no secret from the inputs in any request body.

#![cfg(feature = "llm")]

use std::sync::Arc;
use std::time::Duration;

use engram::assist::{Assistant, Features, Level};
use engram::gate::{read_audit, Caps, Gate};
use engram::llm::{Api, HttpProvider, LlmSettings};
use engram::memory::{Decision, ErrorReport, FileChange, Memories, Memory};
use llm_server::{Reply, Server};

use crate::support::llm_server;

const AWS: &str = "AKIAHNHEOABTCPM7PCMI";
const GITHUB: &str = "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789";

fn assistant(server: &Server, api: Api, features: Features) -> Assistant {
    let mut s = LlmSettings::new(api, &server.addr, "test-model");
    s.api_key = Some("sk-test".into());
    s.timeout = Duration::from_secs(2);
    s.max_retries = 0;
    s.backoff = Duration::from_millis(5);
    let p = HttpProvider::new(s).unwrap();
    let v = p.for_vision();
    Assistant::new(
        Arc::new(p),
        Arc::new(v),
        features,
        Gate::new("r", None, vec![], Caps::default()),
    )
}

fn all() -> Features {
    Features::from_names(&["all"])
}

fn store() -> (tempfile::TempDir, Memories) {
    let dir = tempfile::tempdir().unwrap();
    let m = Memories::open(dir.path()).unwrap();
    (dir, m)
}

/// A session with a change, an error (with a solution) and a decision.
fn session(m: &Memories) -> Memory {
    let s = m.start_session("add retries to the client", &[]).unwrap();
    m.track_file_change(&FileChange {
        path: "src/client.rs".into(),
        action: "edit".into(),
        reason: "retry on 429 with backoff".into(),
        session: Some(s.id.clone()),
        ..FileChange::default()
    })
    .unwrap();
    m.record_error(&ErrorReport {
        error_type: "TimeoutError".into(),
        message: "request timed out after 30s".into(),
        solution: Some("raise the timeout for uploads".into()),
        resolved: true,
        session: Some(s.id.clone()),
        ..ErrorReport::default()
    })
    .unwrap();
    m.record_decision(&Decision {
        decision: "Honour Retry-After before our own backoff".into(),
        rationale: "servers know their load".into(),
        session: Some(s.id.clone()),
        ..Decision::default()
    })
    .unwrap();
    s
}

fn no_secret_sent(server: &Server) {
    for r in server.seen() {
        for secret in [AWS, GITHUB, "sk-test-not-sent"] {
            assert!(!r.body.contains(secret), "a secret was sent: {}", r.body);
        }
    }
}

fn user_text(server: &Server, i: usize) -> String {
    let body = server.seen()[i].json();
    let msgs = body["messages"].as_array().unwrap().clone();
    let last = msgs.last().unwrap();
    match &last["content"] {
        serde_json::Value::String(s) => s.clone(),
        other => other[0]["text"].as_str().unwrap_or("").to_string(),
    }
}

#[test]
fn session_summary_request_shape_and_storage() {
    let (_d, m) = store();
    let s = session(&m);
    m.end_session(&s.id, true).unwrap();
    let server = Server::start(vec![Reply::openai(
        "```markdown\n# Session Summary\n\n## Overview\nRetries added.\n```",
    )]);
    let a = assistant(&server, Api::OpenAi, all());
    let updated = a.summarize_session(&m, &s.id).unwrap();
    let body = server.seen()[0].json();
    assert!(body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("expert software engineering assistant"));
    let user = user_text(&server, 0);
    for want in [
        "## Session Information",
        "add retries to the client",
        "src/client.rs",
        "TimeoutError",
        "Retry-After",
        "1. Session Overview",
        "5. Recommendations",
    ] {
        assert!(user.contains(want), "missing {want:?} in {user}");
    }
    assert_eq!(
        body["temperature"].as_f64().map(|t| (t * 10.0).round()),
        Some(3.0)
    );
    // Beside the deterministic summary, not instead of it.
    assert_eq!(
        updated.metadata["llm_summary"],
        "# Session Summary\n\n## Overview\nRetries added."
    );
    assert_eq!(updated.metadata["llm_summary_provenance"], "llm_extracted");
    assert!(updated.metadata["summary"]
        .as_str()
        .unwrap()
        .contains("src/client.rs"));
    // The call is audited: model, bytes and tokens, never the text.
    let events = read_audit(m.store(), 0).unwrap();
    let call = events.iter().find_map(|e| e.llm.as_ref()).unwrap();
    assert_eq!(call.purpose, "session_summary");
    assert_eq!(call.outcome, "ok");
    assert_eq!((call.input_tokens, call.output_tokens), (11, 7));
    assert_eq!(call.bytes_sent as usize, server.seen()[0].body.len());
    let t = engram::assist::totals(&events);
    assert_eq!((t.calls, t.failed), (1, 0));
}

#[test]
fn rerank_scores_filters_and_orders_in_batches() {
    let (_d, m) = store();
    let a1 = m
        .remember("Use WAL mode for tracker.db", &[], None)
        .unwrap();
    let a2 = m.remember("The CI runs on two cores", &[], None).unwrap();
    let a3 = m
        .remember("tracker.db is rebuilt from blob.dat", &[], None)
        .unwrap();
    // Batches run at once, so every batch gets the same answer (the second batch has
    // one memory: its "Memory 2" line names nothing and is ignored).
    let server = Server::start(vec![Reply::anthropic(
        "Memory 1: Score: 0.9 Reason: about tracker.db\nMemory 2: Score: 0.2 Reason: unrelated",
    )]);
    let mut a = assistant(&server, Api::Anthropic, all());
    a.rerank.batch_size = 2;
    let query = format!("tracker.db settings, key {AWS}");
    let scored = a
        .rerank(&m, &query, &[a1.clone(), a2.clone(), a3.clone()])
        .unwrap();
    assert_eq!(server.seen().len(), 2, "two batches");
    assert_eq!(
        scored.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
        [a1.id.as_str(), a3.id.as_str()]
    );
    assert_eq!(scored[0].reason, "about tracker.db");
    assert!(scored.iter().all(|s| (0.0..=1.0).contains(&s.score)));
    let user = user_text(&server, 0);
    assert!(
        user.contains("Memory 1:") && user.contains("Score: <number 0-1>"),
        "{user}"
    );
    assert!(user.contains("[REDACTED:"), "{user}");
    no_secret_sent(&server);
}

#[test]
fn suggestion_from_the_model_and_without_it() {
    let (_d, m) = store();
    let past = m
        .record_error(&ErrorReport {
            error_type: "ConnectionRefused".into(),
            message: "connect to 127.0.0.1:5432 refused".into(),
            file: Some("src/db.rs".into()),
            solution: Some("start postgres before the tests".into()),
            resolved: true,
            ..ErrorReport::default()
        })
        .unwrap();
    let now = m
        .record_error(&ErrorReport {
            error_type: "ConnectionRefused".into(),
            message: "connect to 127.0.0.1:5433 refused while migrating".into(),
            file: Some("src/migrate.rs".into()),
            ..ErrorReport::default()
        })
        .unwrap();
    let server = Server::start(vec![Reply::openai(
        "Sure:\n{\"solution\": \"start postgres on 5433\", \"confidence\": 0.85, \"alternatives\": [\"point the migration at 5432\"], \"reasoning\": \"same as before\"}",
    )]);
    let a = assistant(&server, Api::OpenAi, Features::default());
    let (s, warning) = engram::assist::suggest(Some(&a), &m, &m, &now.id).unwrap();
    assert!(warning.is_none());
    assert_eq!(s.source, "llm");
    assert_eq!(s.solution, "start postgres on 5433");
    assert_eq!(s.confidence, Some(0.85));
    assert_eq!(s.alternatives, ["point the migration at 5432"]);
    assert!(s.similar.contains(&past.id));
    let user = user_text(&server, 0);
    assert!(user.contains("## Current error") && user.contains("5433 refused while migrating"));
    assert!(
        user.contains("Solution: start postgres before the tests"),
        "{user}"
    );

    // A failing model: the past solution, with a warning.
    let down = Server::start(vec![Reply::json(500, "{}")]);
    let a = assistant(&down, Api::OpenAi, Features::default());
    let (s, warning) = engram::assist::suggest(Some(&a), &m, &m, &now.id).unwrap();
    assert_eq!(s.source, "past_solution");
    assert_eq!(s.solution, "start postgres before the tests");
    assert!(warning.unwrap().contains("500"));
    // No model at all: the same, silently.
    let (s, warning) = engram::assist::suggest(None, &m, &m, &now.id).unwrap();
    assert_eq!((s.source, warning), ("past_solution", None));
}

#[test]
fn extraction_stores_llm_extracted_memories_without_duplicates() {
    let (_d, m) = store();
    let s = session(&m);
    m.remember("Honour Retry-After before our own backoff", &[], None)
        .unwrap();
    let server = Server::start(vec![Reply::openai(
        "{\"items\": [\
          {\"kind\": \"decision\", \"text\": \"Honour Retry-After before our own backoff\"},\
          {\"kind\": \"pitfall\", \"text\": \"Uploads time out at the default 30s timeout\"},\
          {\"kind\": \"preferences\", \"text\": \"Prefer exponential backoff capped at one minute\"},\
          {\"kind\": \"rumour\", \"text\": \"ignored\"}]}",
    )]);
    let a = assistant(&server, Api::OpenAi, all());
    let x = a.extract_knowledge(&m, &s.id).unwrap();
    assert_eq!(x.duplicates, 1);
    assert_eq!(x.stored.len(), 2);
    for mem in &x.stored {
        assert_eq!(mem.provenance, "llm_extracted");
        assert!(
            mem.effective_trust() < 0.8,
            "lower trust than an agent's observation"
        );
        assert_eq!(mem.session.as_deref(), Some(s.id.as_str()));
        assert!(mem.tags.contains(&"llm-extracted".to_string()));
    }
    assert_eq!(x.stored[0].insights, ["pitfall"]);
    assert_eq!(x.stored[1].insights, ["constraint"]);
    // A second run sees what it stored: nothing new.
    let server2 = Server::start(vec![Reply::openai(
        "{\"items\": [{\"kind\": \"pitfall\", \"text\": \"Uploads time out at the default 30s timeout\"}]}",
    )]);
    let a = assistant(&server2, Api::OpenAi, all());
    let x = a.extract_knowledge(&m, &s.id).unwrap();
    assert_eq!((x.stored.len(), x.duplicates), (0, 1));
    // What was extracted is not sent back as evidence of the session.
    assert!(!user_text(&server2, 0).contains("default 30s timeout"));
}

#[test]
fn compression_stays_within_the_budget_at_each_level() {
    let (_d, m) = store();
    let context = format!(
        "## Key decisions\n- use WAL\n- token {GITHUB}\n{}",
        "- filler line\n".repeat(200)
    );
    for (level, word) in [
        (Level::Brief, "BRIEF"),
        (Level::Detailed, "DETAILED"),
        (Level::Comprehensive, "COMPREHENSIVE"),
    ] {
        let server = Server::start(vec![Reply::anthropic(&"compressed ".repeat(100))]);
        let a = assistant(&server, Api::Anthropic, all());
        let out = a.compress_context(&m, &context, level, 200).unwrap();
        assert!(out.len() <= 200, "{}", out.len());
        assert!(out.starts_with("compressed"));
        let user = user_text(&server, 0);
        assert!(
            user.contains(word) && user.contains("at most 200 bytes"),
            "{user}"
        );
        no_secret_sent(&server);
    }
}

#[test]
fn screenshots_are_read_by_the_vision_model_and_stored_as_hash_and_size() {
    let (_d, m) = store();
    // A 1x1 PNG.
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
    let shot = engram::assist::screenshot_from(png, |_| Err("no paths".into())).unwrap();
    assert_eq!(shot.media_type, "image/png");
    assert_eq!(shot.bytes, 70);
    assert!(shot.reference().starts_with("sha256:"));
    let server = Server::start(vec![Reply::openai(
        "{\"error_type\": \"TypeError\", \"message\": \"x is undefined\", \"file\": \"src/app.js\", \"line\": 12, \"stack_trace\": null}",
    )]);
    let mut s = LlmSettings::new(Api::OpenAi, &server.addr, "text-model");
    s.vision_model = Some("vision-model".into());
    s.max_retries = 0;
    let p = HttpProvider::new(s).unwrap();
    let v = p.for_vision();
    let a = Assistant::new(
        Arc::new(p),
        Arc::new(v),
        all(),
        Gate::new("r", None, vec![], Caps::default()),
    );
    let f = a.read_screenshot(&m, &shot).unwrap();
    assert_eq!(f.error_type.as_deref(), Some("TypeError"));
    assert_eq!((f.file.as_deref(), f.line), (Some("src/app.js"), Some(12)));
    assert_eq!(f.stack_trace, None);
    let body = server.seen()[0].json();
    assert_eq!(body["model"], "vision-model");
    let part = &body["messages"][1]["content"][1];
    assert_eq!(part["type"], "image_url");
    assert!(part["image_url"]["url"].as_str().unwrap().ends_with(png));
}

/// Every fault, for every feature: an error (the caller's cue to use the result
/// without a model), never a panic, never a stored model result.
#[test]
fn every_fault_degrades() {
    let faults = || {
        vec![
            Reply::json(500, "{\"error\":\"boom\"}"),
            Reply::json(429, "{}").header("retry-after", "3600"),
            Reply::json(200, "{not json"),
            Reply::openai("cut short").truncated(),
            Reply::openai("late").delayed(Duration::from_secs(4)),
            Reply::openai(""),
        ]
    };
    let (_d, m) = store();
    let s = session(&m);
    let mem = m.remember("a memory", &[], None).unwrap();
    let err = m
        .record_error(&ErrorReport {
            error_type: "E".into(),
            message: "m".into(),
            ..ErrorReport::default()
        })
        .unwrap();
    for fault in faults() {
        let server = Server::start(vec![fault.clone()]);
        let a = assistant(&server, Api::OpenAi, all());
        assert!(a.summarize_session(&m, &s.id).is_err(), "{fault:?}");
        assert!(
            a.rerank(&m, "q", std::slice::from_ref(&mem)).is_err(),
            "{fault:?}"
        );
        assert!(a.suggest_solution(&m, &m, &err.id).is_err(), "{fault:?}");
        assert!(a.extract_knowledge(&m, &s.id).is_err(), "{fault:?}");
        assert!(
            a.compress_context(&m, "ctx", Level::Brief, 100).is_err(),
            "{fault:?}"
        );
    }
    let after = m.get(&s.id).unwrap().unwrap();
    assert!(!after.metadata.contains_key("llm_summary"));
    assert!(m
        .list(100, 0)
        .unwrap()
        .iter()
        .all(|x| x.provenance != "llm_extracted"));
    let t = engram::assist::totals(&read_audit(m.store(), 0).unwrap());
    assert!(t.calls > 0 && t.failed > 0);
}

#[test]
fn a_dry_run_prepares_and_sends_nothing() {
    let (_d, m) = store();
    let s = session(&m);
    let server = Server::start(vec![Reply::openai("never")]);
    let a = assistant(&server, Api::OpenAi, all()).dry_run(true);
    assert!(matches!(
        a.summarize_session(&m, &s.id),
        Err(engram::assist::AssistError::DryRun)
    ));
    let p = a.prepared();
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].purpose, "session_summary");
    assert!(p[0].request.body.contains("## Session Information"));
    assert!(p[0]
        .request
        .to_string()
        .contains("authorization: Bearer ***"));
    assert!(server.seen().is_empty());
    assert!(read_audit(m.store(), 0)
        .unwrap()
        .iter()
        .all(|e| e.llm.is_none()));
}

#[test]
fn features_work_over_streamed_replies_in_both_formats() {
    let (_d, m) = store();
    let s = session(&m);
    for (api, reply) in [
        (
            Api::OpenAi,
            Reply::openai_stream("# Session Summary\nstreamed"),
        ),
        (
            Api::Anthropic,
            Reply::anthropic_stream("# Session Summary\nstreamed"),
        ),
    ] {
        let server = Server::start(vec![reply]);
        let mut set = LlmSettings::new(api, &server.addr, "test-model");
        set.stream = true;
        set.max_retries = 0;
        let p = HttpProvider::new(set).unwrap();
        let v = p.for_vision();
        let a = Assistant::new(
            Arc::new(p),
            Arc::new(v),
            all(),
            Gate::new("r", None, vec![], Caps::default()),
        );
        let updated = a.summarize_session(&m, &s.id).unwrap();
        assert_eq!(
            updated.metadata["llm_summary"],
            "# Session Summary\nstreamed"
        );
        assert_eq!(server.seen()[0].json()["stream"], true);
    }
}
