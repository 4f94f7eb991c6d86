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

fn change(path: &str, session: &str) -> engram::memory::FileChange {
    engram::memory::FileChange {
        path: path.into(),
        action: "edit".into(),
        reason: format!("adjust {path}"),
        session: Some(session.into()),
        ..Default::default()
    }
}

#[test]
fn sessions_summarise_what_they_recorded_and_feed_context_and_patterns() {
    let dir = tempfile::tempdir().unwrap();
    let m = Memories::open(dir.path()).unwrap();
    let s1 = m
        .start_session("fix the login timeout", &["auth".into()])
        .unwrap();
    let c1 = m.track_file_change(&change("src/auth.rs", &s1.id)).unwrap();
    m.track_file_change(&change("src/session.rs", &s1.id))
        .unwrap();
    let mut e = error("timeout after 30 s", "src/auth.rs", Some("raise to 60 s"));
    e.session = Some(s1.id.clone());
    e.resolved_by = Some(c1.id.clone());
    let err = m.record_error(&e).unwrap();
    let mut open_err = error("token expired", "src/session.rs", None);
    open_err.session = Some(s1.id.clone());
    m.record_error(&open_err).unwrap();
    m.record_decision(&Decision {
        decision: "Keep sessions server-side".into(),
        rationale: "revocation".into(),
        tags: vec!["auth".into()],
        session: Some(s1.id.clone()),
        related_files: vec!["src/session.rs".into()],
        ..Decision::default()
    })
    .unwrap();
    let ended = m.end_session(&s1.id, true).unwrap();
    let summary = &ended.text;
    for want in [
        "succeeded",
        "fix the login timeout",
        "files changed (2)",
        "edit src/auth.rs",
        "errors fixed (1)",
        "raise to 60 s",
        "errors unresolved (1)",
        "token expired",
        "decisions (1)",
        "Keep sessions server-side",
    ] {
        assert!(summary.contains(want), "summary lacks {want:?}:\n{summary}");
    }
    assert_eq!(
        m.end_session(&s1.id, true).unwrap().text,
        *summary,
        "the summary is deterministic"
    );
    assert!(
        m.end_session(&err.id, true).is_err(),
        "an error is not a session"
    );

    let s2 = m.start_session("second pass", &[]).unwrap();
    m.track_file_change(&change("src/auth.rs", &s2.id)).unwrap();
    m.track_file_change(&change("src/session.rs", &s2.id))
        .unwrap();
    m.track_file_change(&change("README.md", &s2.id)).unwrap();

    let p = m.analyze_patterns().unwrap();
    assert_eq!(p.hot_files[0], ("src/auth.rs".to_string(), 2));
    assert_eq!(
        p.co_changes[0],
        ("src/auth.rs".to_string(), "src/session.rs".to_string(), 2)
    );
    assert_eq!(p.recurring_errors.iter().map(|(_, n)| n).sum::<u64>(), 2);
    assert_eq!(p.decision_tags.values().next().unwrap()["auth"], 1);

    let mut pitfall = engram::memory::Memory::new("never log session tokens");
    pitfall.insights = vec!["pitfall".into()];
    m.write(pitfall).unwrap();
    let ctx = m.project_context(4096).unwrap();
    for want in [
        "## Recent sessions",
        "## Open pitfalls",
        "never log session tokens",
        "## Most changed files",
        "src/auth.rs (2 changes)",
        "## Unresolved errors",
        "token expired",
        "## Key decisions",
    ] {
        assert!(ctx.contains(want), "context lacks {want:?}:\n{ctx}");
    }
    assert!(
        !ctx.contains("timeout after"),
        "a resolved error is not listed as unresolved:\n{ctx}"
    );
    for budget in [0, 10, 60, 200, 500] {
        let small = m.project_context(budget).unwrap();
        assert!(
            small.len() <= budget,
            "{} bytes over a budget of {budget}",
            small.len()
        );
        assert!(
            ctx.starts_with(&small),
            "a smaller budget cuts the same text"
        );
    }

    // Edges: session → change → file, error → change, decision → file.
    let one = m.related(&s1.id, 1).unwrap();
    assert!(one.iter().any(|r| r.key == c1.id && r.via == "includes"));
    let two = m.related(&err.id, 2).unwrap();
    assert!(two
        .iter()
        .any(|r| r.key == c1.id && r.via == "resolved_by" && r.hops == 1));
    assert!(two
        .iter()
        .any(|r| r.key == "file:src/auth.rs" && r.hops == 2));
    let from_file = m.related("file:src/session.rs", 1).unwrap();
    assert!(
        from_file.iter().any(|r| r.via == "relates_to⁻¹"),
        "{from_file:?}"
    );
    assert!(m.related(&s1.id, 4).is_err());
    assert!(m
        .track_file_change(&engram::memory::FileChange {
            action: "paint".into(),
            ..change("x", &s1.id)
        })
        .is_err());
}

#[test]
fn every_kind_round_trips_through_jsonl_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let a = Memories::open(dir.path().join("a")).unwrap();
    let s = a.start_session("round trip", &["x".into()]).unwrap();
    a.track_file_change(&change("src/lib.rs", &s.id)).unwrap();
    a.record_error(&error("boom 1", "src/lib.rs", Some("fix")))
        .unwrap();
    a.record_error(&error("boom 2", "src/lib.rs", None))
        .unwrap();
    a.record_decision(&Decision {
        decision: "d".into(),
        rationale: "r".into(),
        ..Decision::default()
    })
    .unwrap();
    a.note_set("n", "v", None).unwrap();
    a.end_session(&s.id, false).unwrap();
    let mut first = Vec::new();
    // Two recordings of one error are one entry.
    assert_eq!(a.export(&mut first).unwrap(), 5);
    let file = dir.path().join("all.jsonl");
    std::fs::write(&file, &first).unwrap();

    let b = Memories::open(dir.path().join("b")).unwrap();
    b.import_file(&file).unwrap();
    let mut second = Vec::new();
    b.export(&mut second).unwrap();
    assert_eq!(
        String::from_utf8(first).unwrap(),
        String::from_utf8(second).unwrap()
    );
    // Derived relationships come back with the entries.
    assert_eq!(b.note_get("n").unwrap().unwrap().text, "v");
    assert_eq!(b.analyze_patterns().unwrap().recurring_errors[0].1, 2);
    assert!(!b.related(&s.id, 1).unwrap().is_empty());
}
