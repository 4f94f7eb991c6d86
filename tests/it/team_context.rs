//! The project context, pattern analysis and `enrich_prompt` on the team backend
//! (`database_url`, the server `tools/postgres.sh start` starts,
//! `ENGRAM_TEST_DATABASE_URL`), through the CLI (`engram context`, `analyze`,
//! `enrich`) and the MCP tools (`coding_get_project_context`,
//! `coding_analyze_patterns`, `enrich_prompt`): each answers from the repository's
//! rows in PostgreSQL. The local store holds decoys with the same words, which a read
//! of the local store would show; another repository sees none of A's rows.

#![cfg(all(feature = "cli", feature = "mcp"))]

use std::path::Path;
use std::sync::Arc;

use engram::embed::default_embedder;
use engram::gate::{Caps, Gate};
use engram::index::IndexOptions;
use engram::mcp::Engine;
use engram::memory::{ErrorReport, FileChange, Memories, Memory, MemoryBackend};
use serde_json::{json, Map, Value};
use team_cli::{engram as run, ok};

use crate::support::pg;
use crate::support::team_cli;

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

/// Decoys in the local store: an error, a change, a pitfall and a note with the
/// words the team rows use, so reading the local store shows in every answer.
fn local_decoys(memories: &dyn MemoryBackend) {
    let e = ErrorReport {
        error_type: "LocalDecoyError".into(),
        message: "upload retry decoy timed out".into(),
        ..ErrorReport::default()
    };
    memories.record_error(&e, &[], None).unwrap();
    memories
        .track_file_change(
            &FileChange {
                path: "local_decoy.py".into(),
                action: "edit".into(),
                reason: "upload retry decoy".into(),
                ..FileChange::default()
            },
            None,
        )
        .unwrap();
    let mut m = Memory::new("uploads retry decoy from the local store");
    m.insights = vec!["pitfall".into()];
    memories.write(m).unwrap();
    memories
        .note_set("upload-decoy", "uploads retry decoy note", None)
        .unwrap();
}

#[test]
fn context_analyze_and_enrich_read_the_team_database_from_the_cli() {
    pg::database(); // migrated
    let tmp = tempfile::tempdir().unwrap();
    // The CLI files a store's memories under the store directory's name.
    let a = tmp.path().join(pg::unique_repo("context-a"));
    let b = tmp.path().join(pg::unique_repo("context-b"));
    local_decoys(&Memories::open(&a).unwrap());

    for _ in 0..2 {
        ok(
            &a,
            true,
            &[
                "error",
                "record",
                "--type",
                "UploadTimeout",
                "--message",
                "upload timed out after 30 s",
            ],
        );
    }
    let s = id(&ok(&a, true, &["session", "start", "upload retries"]));
    for f in ["src/upload.py", "src/retry.py"] {
        ok(
            &a,
            true,
            &[
                "change",
                f,
                "--action",
                "edit",
                "--reason",
                "retry uploads",
                "--session",
                &s,
            ],
        );
    }
    ok(
        &a,
        true,
        &["decision", "retry uploads with backoff", "--tag", "infra"],
    );
    let pitfall = id(&ok(
        &a,
        true,
        &[
            "remember",
            "uploads retry at most three times",
            "--insight",
            "pitfall",
        ],
    ));

    let r = ok(&a, true, &["analyze"]);
    assert_eq!(r["recurring_errors"], json!([["UploadTimeout", 2]]), "{r}");
    assert_eq!(
        r["co_changes"],
        json!([["src/retry.py", "src/upload.py", 1]]),
        "{r}"
    );
    let hot: Vec<&str> = r["hot_files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h[0].as_str().unwrap())
        .collect();
    assert_eq!(hot.len(), 2, "{r}");
    assert!(!hot.contains(&"local_decoy.py"), "{r}");

    let c = ok(&a, true, &["context"]);
    let text = c["context"].as_str().unwrap();
    for want in [
        "## Recent sessions",
        "upload retries",
        &format!("[{pitfall}]"),
        "upload timed out after 30 s (seen 2x)",
        "retry uploads with backoff",
        "src/upload.py (1 changes)",
    ] {
        assert!(text.contains(want), "{want:?} missing: {text}");
    }
    assert!(!text.contains("decoy"), "{text}");

    let e = ok(&a, true, &["enrich", "how do uploads retry"]);
    let text = e["context"].as_str().unwrap();
    assert!(text.contains(&format!("[memory: {pitfall}]")), "{text}");
    assert!(!text.contains("decoy"), "{text}");

    // `engram search` reads code only: the local store's memories are not the team's.
    let local = ok(&a, false, &["search", "uploads retry decoy"]);
    assert!(
        local.to_string().contains("decoy"),
        "the local store has them: {local}"
    );
    let found = ok(&a, true, &["search", "uploads retry decoy"]);
    assert!(!found.to_string().contains("decoy"), "{found}");
    let (done, _, err) = run(&a, true, &["search", "uploads", "--kind", "memory"]);
    assert!(!done && err.contains("engram recall"), "{err}");

    // Repository B sees none of it.
    let r = ok(&b, true, &["analyze"]);
    assert_eq!(r["recurring_errors"], json!([]), "{r}");
    assert_eq!(r["hot_files"], json!([]), "{r}");
    assert_eq!(ok(&b, true, &["context"])["context"], "");
    let e = ok(&b, true, &["enrich", "how do uploads retry"]);
    assert!(
        !e["context"].as_str().unwrap().contains("uploads retry"),
        "{e}"
    );
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

/// An engine over the local store in `dir` with its memory tools on repository
/// `repo` of the team database.
fn engine(dir: &Path, repo: &str) -> Engine {
    let memories = Memories::open(dir.join("store")).unwrap();
    let gate = Gate::new(repo, Some(dir.to_path_buf()), Vec::new(), Caps::default());
    let backend = pg::database()
        .memories(repo, Arc::new(default_embedder()))
        .unwrap();
    Engine::new(memories, gate, IndexOptions::default()).with_backend(Arc::new(backend))
}

#[test]
fn mcp_context_analysis_and_enrich_prompt_read_the_team_database() {
    pg::database();
    let tmp = tempfile::tempdir().unwrap();
    let (ra, rb) = (
        pg::unique_repo("mcp-context-a"),
        pg::unique_repo("mcp-context-b"),
    );
    let a = engine(tmp.path(), &ra);
    local_decoys(&*a.memories);

    for _ in 0..3 {
        a.call(
            "coding_record_error",
            &args(json!({"error_type": "UploadTimeout", "message": "upload timed out"})),
        )
        .unwrap();
    }
    let s = a
        .call(
            "coding_start_session",
            &args(json!({"description": "upload work"})),
        )
        .unwrap();
    let s = s["session_id"]
        .as_str()
        .or(s["id"].as_str())
        .unwrap()
        .to_string();
    for f in ["src/upload.py", "src/retry.py"] {
        a.call(
            "coding_track_file_change",
            &args(json!({"path": f, "action": "edit", "reason": "retry uploads", "session": s})),
        )
        .unwrap();
    }
    let v = a
        .call(
            "memory_write_structured",
            &args(json!({"text": "uploads retry at most three times", "insights": ["pitfall"]})),
        )
        .unwrap();
    let pitfall = id(&v);
    a.backend()
        .note_set("upload-policy", "uploads retry with backoff", None)
        .unwrap();

    let r = a.call("coding_analyze_patterns", &Map::new()).unwrap();
    assert_eq!(r["recurring_errors"], json!([["UploadTimeout", 3]]), "{r}");
    assert_eq!(
        r["co_changes"],
        json!([["src/retry.py", "src/upload.py", 1]]),
        "{r}"
    );

    let c = a
        .call(
            "coding_get_project_context",
            &args(json!({"focus": "uploads retry"})),
        )
        .unwrap();
    let text = c["context"].as_str().unwrap();
    assert!(
        text.contains("## Focus: uploads retry") && text.contains(&format!("[{pitfall}]")),
        "{text}"
    );
    assert!(text.contains("upload timed out (seen 3x)"), "{text}");
    assert!(!text.contains("decoy"), "{text}");

    let e = a
        .call(
            "enrich_prompt",
            &args(json!({"prompt": "how do uploads retry", "budget": 4000})),
        )
        .unwrap();
    let text = e["context"].as_str().unwrap();
    assert!(text.contains(&format!("[memory: {pitfall}]")), "{text}");
    assert!(
        text.contains("uploads retry with backoff"),
        "the team note: {text}"
    );
    assert!(!text.contains("decoy"), "{text}");

    let b = engine(tmp.path(), &rb);
    let r = b.call("coding_analyze_patterns", &Map::new()).unwrap();
    assert_eq!(
        (r["recurring_errors"].clone(), r["hot_files"].clone()),
        (json!([]), json!([])),
        "{r}"
    );
    let c = b
        .call(
            "coding_get_project_context",
            &args(json!({"focus": "uploads retry"})),
        )
        .unwrap();
    assert_eq!(c["context"], "", "{c}");
    let e = b
        .call(
            "enrich_prompt",
            &args(json!({"prompt": "how do uploads retry", "budget": 4000})),
        )
        .unwrap();
    assert!(
        !e["context"].as_str().unwrap().contains("uploads retry"),
        "{e}"
    );
}
