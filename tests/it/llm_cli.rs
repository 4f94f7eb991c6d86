//! The LLM features through the `engram` binary: off without a model, on with one
//! (configured only through `ENGRAM_LLM_*`), `--dry-run` sending nothing, a failing
//! model degrading to the result without it, and the calls counted in `engram stats`.

#![cfg(feature = "cli")]

use std::path::Path;
use std::process::{Command, Output};

use llm_server::{Reply, Server};
use serde_json::Value;

use crate::support::llm_server;

const KEY: &str = "sk-cli-test-key";

/// `engram --store STORE ARGS… --json` with only the given `ENGRAM_LLM_*` settings.
fn run(store: &Path, server: Option<&Server>, extra: &[(&str, &str)], args: &[&str]) -> Output {
    let home = store.parent().unwrap().join("home");
    let mut c = Command::new(env!("CARGO_BIN_EXE_engram"));
    c.arg("--store").arg(store).args(args).arg("--json");
    for (k, _) in std::env::vars() {
        if k.starts_with("ENGRAM_") {
            c.env_remove(k);
        }
    }
    c.env("HOME", &home).env("XDG_CONFIG_HOME", &home);
    if let Some(s) = server {
        s.configure(&mut c, KEY);
    }
    for (k, v) in extra {
        c.env(k, v);
    }
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

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A store with a session holding a change and an error, and a solved past error.
fn setup(store: &Path) -> (String, String) {
    let s = json(&run(
        store,
        None,
        &[],
        &["session", "start", "speed up the build"],
    ));
    let sid = s["id"].as_str().unwrap().to_string();
    json(&run(
        store,
        None,
        &[],
        &[
            "change",
            "Cargo.toml",
            "--action",
            "edit",
            "--reason",
            "enable lto",
            "--session",
            &sid,
        ],
    ));
    json(&run(
        store,
        None,
        &[],
        &[
            "error",
            "record",
            "--type",
            "LinkError",
            "--message",
            "undefined symbol foo",
            "--solution",
            "link with -lfoo",
            "--resolved",
        ],
    ));
    let e = json(&run(
        store,
        None,
        &[],
        &[
            "error",
            "record",
            "--type",
            "LinkError",
            "--message",
            "undefined symbol bar in release",
            "--session",
            &sid,
        ],
    ));
    (sid, e["id"].as_str().unwrap().to_string())
}

#[test]
fn without_a_model_everything_works_and_nothing_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let (sid, eid) = setup(&store);
    let v = json(&run(&store, None, &[], &["error", "suggest", &eid]));
    assert_eq!(v["source"], "past_solution");
    assert_eq!(v["solution"], "link with -lfoo");
    let out = run(
        &store,
        None,
        &[],
        &["recall", "undefined symbol", "--rerank", "llm"],
    );
    assert!(
        stderr(&out).contains("none is configured"),
        "{}",
        stderr(&out)
    );
    assert!(!json(&out)["hits"].as_array().unwrap().is_empty());
    let v = json(&run(&store, None, &[], &["session", "end", &sid]));
    assert!(v["llm_summary"].is_null());
    assert!(v["session"]["text"]
        .as_str()
        .unwrap()
        .contains("Cargo.toml"));
    let out = run(&store, None, &[], &["error", "suggest", &eid, "--dry-run"]);
    assert!(
        !out.status.success(),
        "a dry run without a model has nothing to show"
    );
    let v = json(&run(&store, None, &[], &["stats"]));
    assert_eq!(v["llm"]["calls"], 0);
}

#[test]
fn a_configured_model_summarises_suggests_reranks_and_is_counted() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let (sid, eid) = setup(&store);
    let server = Server::start(vec![Reply::openai(
        "# Session Summary\n\n## Overview\nLTO on.",
    )]);
    let v = json(&run(
        &store,
        Some(&server),
        &[],
        &["session", "end", &sid, "--llm-summary"],
    ));
    assert_eq!(
        v["llm_summary"],
        "# Session Summary\n\n## Overview\nLTO on."
    );
    assert_eq!(
        v["session"]["metadata"]["llm_summary_provenance"],
        "llm_extracted"
    );
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert!(seen[0].body.contains("enable lto"));

    let server = Server::start(vec![Reply::openai(
        "{\"solution\": \"link with -lbar\", \"confidence\": 0.7, \"alternatives\": []}",
    )]);
    let v = json(&run(
        &store,
        Some(&server),
        &[],
        &["error", "suggest", &eid],
    ));
    assert_eq!(
        (v["source"].as_str(), v["solution"].as_str()),
        (Some("llm"), Some("link with -lbar"))
    );
    assert_eq!(v["confidence"], 0.7);

    let server = Server::start(vec![Reply::openai(
        "Memory 1: Score: 0.1 Reason: no\nMemory 2: Score: 0.95 Reason: same symbol error",
    )]);
    let v = json(&run(
        &store,
        Some(&server),
        &[],
        &["recall", "undefined symbol", "--rerank", "llm"],
    ));
    let hits = v["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 1, "{v}");
    assert_eq!(hits[0]["reason"], "same symbol error");
    assert_eq!(hits[0]["score"], 0.95);

    let server = Server::start(vec![Reply::openai("- LTO is on")]);
    let v = json(&run(
        &store,
        Some(&server),
        &[],
        &["context", "--compress", "brief", "--budget", "100"],
    ));
    assert_eq!(
        (v["compressed"].as_bool(), v["context"].as_str()),
        (Some(true), Some("- LTO is on"))
    );

    let v = json(&run(&store, None, &[], &["stats"]));
    assert_eq!(v["llm"]["calls"], 4);
    assert_eq!(v["llm"]["input_tokens"], 44);
    let audit = json(&run(&store, None, &[], &["audit"]));
    let calls: Vec<&Value> = audit["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["op"] == "llm_call")
        .collect();
    assert_eq!(calls.len(), 4);
    assert_eq!(calls[0]["llm"]["model"], "test-model");
    assert!(calls.iter().all(|c| !c.to_string().contains(KEY)));
}

#[test]
fn a_failing_model_degrades_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let (sid, eid) = setup(&store);
    let server = Server::start(vec![Reply::json(503, "{\"error\":\"overloaded\"}")]);
    let out = run(
        &store,
        Some(&server),
        &[("ENGRAM_LLM_FEATURES", "summary,extract")],
        &["session", "end", &sid],
    );
    assert!(
        stderr(&out).contains("WARN") && stderr(&out).contains("503"),
        "{}",
        stderr(&out)
    );
    let v = json(&out);
    assert!(v["llm_summary"].is_null());
    assert!(v["session"]["text"]
        .as_str()
        .unwrap()
        .contains("Cargo.toml"));
    assert_eq!(v["warnings"].as_array().unwrap().len(), 2);
    let v = json(&run(
        &store,
        Some(&server),
        &[],
        &["error", "suggest", &eid],
    ));
    assert_eq!(v["source"], "past_solution");
    assert!(v["warnings"][0].as_str().unwrap().contains("503"));
    let v = json(&run(&store, None, &[], &["stats"]));
    assert_eq!(v["llm"]["failed"], 3);
}

#[test]
fn a_dry_run_prints_the_exact_request_and_sends_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let (sid, eid) = setup(&store);
    let server = Server::start(vec![Reply::openai("never")]);
    let v = json(&run(
        &store,
        Some(&server),
        &[],
        &["error", "suggest", &eid, "--dry-run"],
    ));
    assert_eq!(v["dry_run"], true);
    let req = &v["requests"][0]["request"];
    assert_eq!(req["url"], format!("{}/chat/completions", server.addr));
    assert!(req["body"]
        .as_str()
        .unwrap()
        .contains("undefined symbol bar"));
    assert!(!v.to_string().contains(KEY));
    let v = json(&run(
        &store,
        Some(&server),
        &[],
        &["session", "end", &sid, "--llm-summary", "--dry-run"],
    ));
    assert_eq!(v["requests"][0]["purpose"], "session_summary");
    assert!(server.seen().is_empty());
    // Nothing ended either.
    let s = json(&run(&store, None, &[], &["get", &sid]));
    assert_eq!(s["metadata"]["status"], "active");
    // The human form is the HTTP request itself.
    let out = run(
        &store,
        Some(&server),
        &[],
        &["error", "suggest", &eid, "--dry-run"],
    );
    let _ = out;
    let mut c = Command::new(env!("CARGO_BIN_EXE_engram"));
    let text = c
        .arg("--store")
        .arg(&store)
        .args(["error", "suggest", &eid, "--dry-run"])
        .env("HOME", dir.path())
        .env("XDG_CONFIG_HOME", dir.path())
        .env("ENGRAM_LLM_MODEL", "m")
        .env("ENGRAM_LLM_BASE_URL", &server.addr)
        .env("ENGRAM_LLM_API_KEY", KEY)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("POST http://") && text.contains("authorization: Bearer ***"),
        "{text}"
    );
    assert!(!text.contains(KEY));
    assert!(server.seen().is_empty());
}

#[test]
fn a_screenshot_file_is_stored_as_hash_and_size() {
    use base64::Engine as _;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let png = base64::engine::general_purpose::STANDARD
        .decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
        .unwrap();
    let file = dir.path().join("shot.png");
    std::fs::write(&file, &png).unwrap();
    let v = json(&run(
        &store,
        None,
        &[],
        &[
            "error",
            "record",
            "--type",
            "E",
            "--message",
            "m",
            "--screenshot",
            file.to_str().unwrap(),
        ],
    ));
    let shown = v["metadata"]["screenshot"].as_str().unwrap();
    assert!(
        shown.starts_with("sha256:") && shown.contains("70 bytes, image/png"),
        "{shown}"
    );
    assert_eq!(v["metadata"]["screenshot_bytes"], 70);
    // A path that cannot be read is kept as given, with a warning; the error is recorded.
    let out = run(
        &store,
        None,
        &[],
        &[
            "error",
            "record",
            "--type",
            "E2",
            "--message",
            "m2",
            "--screenshot",
            "elsewhere/shot.png",
        ],
    );
    assert!(stderr(&out).contains("screenshot not read"));
    assert_eq!(json(&out)["metadata"]["screenshot"], "elsewhere/shot.png");
}
