//! Errors that recur are counted, not duplicated; solutions come first; decisions keep
//! their rationale.

use engram::memory::{normalise_message, Decision, ErrorReport, Memories};
use serde_json::Value;

fn error(message: &str, file: &str, solution: Option<&str>) -> ErrorReport {
    ErrorReport {
        error_type: "TypeError".into(),
        message: message.into(),
        file: Some(file.into()),
        line: Some(42),
        solution: solution.map(String::from),
        ..ErrorReport::default()
    }
}

#[test]
fn recurring_errors_increment_their_frequency() {
    let dir = tempfile::tempdir().unwrap();
    let m = Memories::open(dir.path()).unwrap();
    let first = m
        .record_error(&error(
            "cannot read property 'id' of undefined at 0x7ffd12",
            "src/app.js",
            None,
        ))
        .unwrap();
    assert_eq!(first.metadata["frequency"], 1);
    // Same error, other values: a recurrence.
    let again = m
        .record_error(&error(
            "Cannot read property 'name' of undefined at 0x7ffe99",
            "src/app.js",
            Some("guard with ?."),
        ))
        .unwrap();
    assert_eq!(again.id, first.id);
    assert_eq!(again.metadata["frequency"], 2);
    assert_eq!(again.metadata["solution"], "guard with ?.");
    let third = m
        .record_error(&error(
            "cannot read property 'x' of undefined at 0x1",
            "src/app.js",
            None,
        ))
        .unwrap();
    assert_eq!(third.metadata["frequency"], 3);
    assert_eq!(
        third.metadata["solution"], "guard with ?.",
        "a known solution is kept"
    );
    // Another file is another error.
    let other = m
        .record_error(&error(
            "cannot read property 'id' of undefined",
            "src/other.js",
            None,
        ))
        .unwrap();
    assert_ne!(other.id, first.id);
    assert_eq!(m.history(&first.id).unwrap().len(), 3);

    // Search: the one with a solution first.
    let hits = m
        .search_errors("cannot read property undefined", 10)
        .unwrap();
    assert_eq!(hits.len(), 2);
    assert_eq!(hits[0].memory.id, first.id);
    assert!(hits[0].memory.metadata.contains_key("solution"));
    assert!(m.record_error(&ErrorReport::default()).is_err());
}

#[test]
fn messages_normalise_away_what_varies() {
    assert_eq!(
        normalise_message("Timeout  after 3000 ms on \"db-1\" (0xdeadBEEF)"),
        "timeout after <n> ms on <str> (<hex>)"
    );
}

#[test]
fn decisions_are_entries_with_their_rationale() {
    let dir = tempfile::tempdir().unwrap();
    let m = Memories::open(dir.path()).unwrap();
    let d = m
        .record_decision(&Decision {
            decision: "Use SQLite FTS5 for keyword search".into(),
            rationale: "embedded, no server, BM25 built in".into(),
            alternatives: vec!["tantivy".into(), "Elasticsearch".into()],
            related_files: vec!["src/memory/projection.rs".into()],
            confidence: Some(0.8),
            ..Decision::default()
        })
        .unwrap();
    assert_eq!(d.kind, "decision");
    assert_eq!(d.insights, ["decision"]);
    assert_eq!(
        d.metadata["alternatives"],
        serde_json::json!(["tantivy", "Elasticsearch"])
    );
    assert_eq!(d.symbols, ["file:src/memory/projection.rs"]);
    let hits = m.recall("tantivy", 5).unwrap();
    assert_eq!(hits[0].memory.id, d.id);
    assert!(matches!(
        hits[0].memory.metadata.get("confidence"),
        Some(Value::Number(_))
    ));
    assert!(m
        .record_decision(&Decision {
            decision: "x".into(),
            confidence: Some(2.0),
            ..Decision::default()
        })
        .is_err());
}
