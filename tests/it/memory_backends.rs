//! One behavioural suite for every memory backend, written against the
//! `MemoryBackend` trait and run against the local store and PostgreSQL (the server
//! `tools/postgres.sh start` starts; `ENGRAM_TEST_DATABASE_URL` names it, and without
//! it the PostgreSQL half fails rather than skips). Each test uses a repository of its
//! own, so the tests run in parallel.

use std::collections::BTreeSet;

use engram::memory::{
    ActiveSession, Decision, ErrorReport, FileChange, Memories, Memory, MemoryBackend, MemoryError,
    MemoryFilter,
};
use serde_json::json;

use crate::support::pg;

const SECRET: &str = "ghp_Zq8wLr2TmV9xKc4YpB7nJd3HsF6gQa1Ue5Wi";

/// A local store in a temporary directory (kept alive beside it).
struct Local {
    _dir: tempfile::TempDir,
    memories: Memories,
}

fn local() -> Local {
    let dir = tempfile::tempdir().unwrap();
    let memories = Memories::open(dir.path()).unwrap();
    Local {
        _dir: dir,
        memories,
    }
}

/// Run `check` against both backends, naming the failing one.
macro_rules! both {
    ($local:ident, $pg:ident, $check:ident) => {
        #[test]
        fn $local() {
            let l = local();
            $check(&l.memories);
        }

        #[test]
        fn $pg() {
            let m = pg::memories(stringify!($check));
            $check(&m);
        }
    };
}

fn tagged(text: &str, tags: &[&str]) -> Memory {
    let mut m = Memory::new(text);
    m.tags = tags.iter().map(|t| t.to_string()).collect();
    m
}

// ---------------------------------------------------------------------------------

fn crud_and_versions(b: &dyn MemoryBackend) {
    assert_eq!(b.count().unwrap(), 0);
    let mut m = tagged("Use WAL mode for tracker.db", &["sqlite"]);
    m.task = Some("Implement-Feature".into());
    m.insights = vec!["decision".into(), "Decision".into()];
    m.metadata
        .insert("why".into(), json!({"speed": 2, "ratio": 0.25}));
    let first = b.write(m).unwrap();
    assert!(
        first.id.starts_with("mem:") && first.id.len() == 12,
        "{}",
        first.id
    );
    assert_eq!(first.version, 1);
    assert_eq!(first.task.as_deref(), Some("implement_feature"));
    assert_eq!(first.insights, ["decision"]);
    assert!(first.created_ms > 0 && first.created_ms == first.updated_ms);
    assert_eq!(b.get(&first.id).unwrap().as_ref(), Some(&first));
    // The eight hex digits alone name it too.
    assert_eq!(b.get(&first.id[4..]).unwrap().as_ref(), Some(&first));
    assert_eq!(b.count().unwrap(), 1);

    let second = b
        .update(
            &first.id,
            tagged("Use WAL mode; checkpoint on close", &["sqlite", "wal"]),
        )
        .unwrap();
    assert_eq!(second.version, 2);
    assert_eq!(second.id, first.id);
    assert_eq!(second.created_ms, first.created_ms);
    assert!(second.updated_ms >= first.updated_ms);
    let third = b.update(&first.id, Memory::new("third text")).unwrap();
    assert_eq!(third.version, 3);
    let history = b.history(&first.id).unwrap();
    let versions: Vec<u64> = history.iter().map(|m| m.version).collect();
    assert_eq!(versions, [1, 2, 3]);
    assert_eq!(history[0], first);
    assert_eq!(history[1].text, "Use WAL mode; checkpoint on close");
    assert_eq!(history[2], b.get(&first.id).unwrap().unwrap());

    // A given id must be free; an update needs a memory.
    let mut dup = Memory::new("again");
    dup.id = first.id.clone();
    assert!(matches!(b.write(dup), Err(MemoryError::Invalid(_))));
    assert!(matches!(
        b.update("mem:00000000", Memory::new("x")),
        Err(MemoryError::NotFound(_))
    ));
    assert!(b.get("not-an-id").is_err());
    assert!(b.write(Memory::new("   ")).is_err());
    let mut bad = Memory::new("bad taxonomy");
    bad.task = Some("juggling".into());
    assert!(matches!(b.write(bad), Err(MemoryError::Rejected(_))));

    let kept = b.remember("another one", &["x".into()], None).unwrap();
    assert_eq!(b.count().unwrap(), 2);
    assert!(b.forget(&first.id).unwrap());
    assert!(!b.forget(&first.id).unwrap());
    assert_eq!(b.get(&first.id).unwrap(), None);
    assert!(b.history(&first.id).unwrap().is_empty());
    assert_eq!(b.count().unwrap(), 1);
    assert_eq!(b.get(&kept.id).unwrap().unwrap().text, "another one");
}
both!(crud_local, crud_postgres, crud_and_versions);

fn secrets_are_redacted_before_storing(b: &dyn MemoryBackend) {
    let m = b
        .remember(&format!("deploy token {SECRET}"), &[], None)
        .unwrap();
    assert!(m.redacted >= 1);
    let stored = b.get(&m.id).unwrap().unwrap();
    assert!(
        stored.text.starts_with("deploy token [REDACTED:"),
        "{}",
        stored.text
    );
    let mut out = Vec::new();
    b.export(&mut out).unwrap();
    assert!(!String::from_utf8(out).unwrap().contains(SECRET));
    let n = b
        .note_set("deploy", &format!("use {SECRET}"), None)
        .unwrap();
    assert!(!n.text.contains(SECRET));
}
both!(
    redact_local,
    redact_postgres,
    secrets_are_redacted_before_storing
);

fn filters_and_taxonomy(b: &dyn MemoryBackend) {
    let mut a = tagged("auth tokens expire after an hour", &["auth", "tokens"]);
    a.task = Some("debug".into());
    a.contexts = vec!["auth".into(), "backend".into()];
    a.insights = vec!["pitfall".into()];
    a.session = Some("sess-1".into());
    let a = b.write(a).unwrap();
    let mut c = tagged("billing runs nightly", &["billing"]);
    c.contexts = vec!["billing".into()];
    c.insights = vec!["constraint".into(), "pitfall".into()];
    let c = b.write(c).unwrap();
    let d = b.write(tagged("plain memory", &["auth"])).unwrap();

    let ids = |f: MemoryFilter| -> Vec<String> {
        b.list_filtered(&f.normalised().unwrap(), 100, 0)
            .unwrap()
            .into_iter()
            .map(|m| m.id)
            .collect()
    };
    // Most recently updated first.
    assert_eq!(
        ids(MemoryFilter::default()),
        [d.id.as_str(), c.id.as_str(), a.id.as_str()]
    );
    assert_eq!(
        ids(MemoryFilter {
            tags: vec!["auth".into()],
            ..Default::default()
        }),
        [d.id.as_str(), a.id.as_str()]
    );
    assert_eq!(
        ids(MemoryFilter {
            tags: vec!["auth".into(), "tokens".into()],
            ..Default::default()
        }),
        [a.id.as_str()]
    );
    assert_eq!(
        ids(MemoryFilter {
            insights: vec!["Pitfall".into()],
            ..Default::default()
        }),
        [c.id.as_str(), a.id.as_str()]
    );
    assert_eq!(
        ids(MemoryFilter {
            contexts: vec!["auth".into(), "backend".into()],
            task: Some("debug".into()),
            ..Default::default()
        }),
        [a.id.as_str()]
    );
    assert_eq!(
        ids(MemoryFilter {
            session: Some("sess-1".into()),
            ..Default::default()
        }),
        [a.id.as_str()]
    );
    assert_eq!(
        ids(MemoryFilter {
            kind: Some("memory".into()),
            since_ms: Some(c.updated_ms),
            ..Default::default()
        }),
        [d.id.as_str(), c.id.as_str()]
    );
    assert!(ids(MemoryFilter {
        kind: Some("note".into()),
        ..Default::default()
    })
    .is_empty());
    // Paging.
    let page: Vec<String> = b
        .list_filtered(&MemoryFilter::default(), 1, 1)
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(page, [c.id.as_str()]);
    // Recall honours the filter too.
    let hits = b
        .recall(
            "auth",
            &MemoryFilter {
                insights: vec!["pitfall".into()],
                ..Default::default()
            },
            10,
        )
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].memory.id, a.id);
}
both!(filters_local, filters_postgres, filters_and_taxonomy);

/// The fixed corpus recall is ranked over, and the queries with their expected top
/// hit (by text).
const CORPUS: &[(&str, &[&str])] = &[
    ("The tracker database runs SQLite in WAL mode", &["sqlite"]),
    ("parseHttpRequest rejects bodies over 1 MiB", &["http"]),
    ("Deploys go through the staging cluster first", &["deploy"]),
    (
        "The billing job retries failed charges three times",
        &["billing"],
    ),
    (
        "Use tokio::task::spawn_blocking for store calls from async handlers",
        &["async"],
    ),
    (
        "Vector search uses cosine similarity over normalised embeddings",
        &["search"],
    ),
    (
        "Secrets are redacted before anything reaches the log",
        &["security"],
    ),
    (
        "The HTTP server authenticates bearer tokens stored hashed",
        &["http", "auth"],
    ),
];

const QUERIES: &[(&str, usize)] = &[
    ("sqlite wal", 0),
    ("parse http request", 1),
    ("staging deploy", 2),
    ("billing charges retries", 3),
    ("spawn_blocking async", 4),
    ("cosine similarity embeddings", 5),
    ("redacted secrets", 6),
    ("bearer tokens hashed", 7),
];

/// Texts of the top three hits of every query.
fn rankings(b: &dyn MemoryBackend) -> Vec<Vec<String>> {
    for (text, tags) in CORPUS {
        b.write(tagged(text, tags)).unwrap();
    }
    QUERIES
        .iter()
        .map(|(q, want)| {
            let hits = b.recall(q, &MemoryFilter::default(), 3).unwrap();
            assert!(!hits.is_empty(), "{q}: no hit from {}", b.describe());
            assert_eq!(
                hits[0].memory.text,
                CORPUS[*want].0,
                "{q} on {}",
                b.describe()
            );
            assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
            hits.into_iter().map(|h| h.memory.text).collect()
        })
        .collect()
}

#[test]
fn recall_ranks_the_fixed_corpus_alike_on_both_backends() {
    let l = local();
    let p = pg::memories("ranking");
    let local_top = rankings(&l.memories);
    let pg_top = rankings(&p);
    for ((q, _), (a, b)) in QUERIES.iter().zip(local_top.iter().zip(&pg_top)) {
        assert_eq!(a[0], b[0], "top hit of {q:?}");
    }
    // Nothing for words no memory has; an empty query finds nothing.
    assert!(p
        .recall("zyxwvut", &MemoryFilter::default(), 5)
        .unwrap()
        .iter()
        .all(|h| !h.memory.text.contains("zyxwvut")));
    assert!(
        MemoryBackend::recall(&l.memories, "", &MemoryFilter::default(), 5)
            .unwrap()
            .is_empty()
    );
    assert!(p
        .recall("", &MemoryFilter::default(), 5)
        .unwrap()
        .is_empty());
}

fn notes(b: &dyn MemoryBackend) {
    assert_eq!(b.note_get("style").unwrap(), None);
    let first = b.note_set("style", "tabs", None).unwrap();
    assert_eq!(first.kind, "note");
    assert_eq!(first.version, 1);
    let second = b
        .note_set(" style ", "spaces", Some("agent_observed"))
        .unwrap();
    assert_eq!(second.id, first.id);
    assert_eq!(second.version, 2);
    assert_eq!(second.provenance, "agent_observed");
    assert_eq!(b.note_get("style").unwrap().unwrap().text, "spaces");
    b.note_set("lint", "clippy -D warnings", None).unwrap();
    let names: BTreeSet<String> = b
        .note_list()
        .unwrap()
        .iter()
        .map(|n| n.metadata["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        names,
        BTreeSet::from(["lint".to_string(), "style".to_string()])
    );
    assert_eq!(b.history(&first.id).unwrap().len(), 2);
    assert!(b.note_delete("style").unwrap());
    assert!(!b.note_delete("style").unwrap());
    assert_eq!(b.note_get("style").unwrap(), None);
    assert!(b.note_set("", "x", None).is_err());
    // A deleted note's name starts afresh.
    let again = b.note_set("style", "tabs again", None).unwrap();
    assert_ne!(again.id, first.id);
    assert_eq!(again.version, 1);
}
both!(notes_local, notes_postgres, notes);

// ---------------------------------------------------------------------------------

/// `texts_after` pages every memory once, in id order, with the filter applied; an
/// update or a write during the walk neither repeats nor skips a memory live all along.
fn text_pages(b: &dyn MemoryBackend) {
    assert!(b
        .texts_after(&MemoryFilter::default(), None, 10)
        .unwrap()
        .is_empty());
    let mut ids = Vec::new();
    for i in 0..7 {
        let mut m = tagged(
            &format!("page text {i}"),
            if i % 2 == 0 { &["even"] } else { &[] },
        );
        if i == 3 {
            m.task = Some("debug".into());
        }
        ids.push(b.write(m).unwrap().id);
    }
    let six = ids[6].clone();
    ids.sort();
    let all = MemoryFilter::default();
    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = b.texts_after(&all, after.as_deref(), 3).unwrap();
        assert!(page.len() <= 3);
        for t in &page {
            let m = b.get(&t.id).unwrap().unwrap();
            assert_eq!(t.text, m.text);
            seen.push(t.id.clone());
        }
        if seen.len() == page.len() {
            // Changes in the middle of the walk.
            b.update(&six, tagged("page text six, updated", &["even"]))
                .unwrap();
            b.write(Memory::new("written meanwhile")).unwrap();
        }
        match page.last() {
            Some(last) if page.len() == 3 => after = Some(last.id.clone()),
            _ => break,
        }
    }
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(seen, sorted, "in id order, each once");
    for id in &ids {
        assert!(seen.contains(id), "{id} skipped");
    }
    let even = MemoryFilter {
        tags: vec!["even".into()],
        ..MemoryFilter::default()
    };
    assert_eq!(b.texts_after(&even, None, 100).unwrap().len(), 4);
    let debug = MemoryFilter {
        task: Some("debug".into()),
        ..MemoryFilter::default()
    };
    let found = b.texts_after(&debug, None, 100).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].text, "page text 3");
    let last = ids.last().unwrap();
    assert!(b
        .texts_after(&debug, Some(last.as_str()), 100)
        .unwrap()
        .iter()
        .all(|t| t.id > *last));
}

both!(text_pages_local, text_pages_postgres, text_pages);

fn coding_records(b: &dyn MemoryBackend) {
    let session = b
        .start_session("fix the flaky upload test", &["ci".into()])
        .unwrap();
    assert_eq!(session.kind, "session");
    let err = |n: u32| ErrorReport {
        error_type: "TimeoutError".into(),
        message: format!("upload of part {n} timed out after 30s"),
        file: Some("src/upload.rs".into()),
        session: Some(session.id.clone()),
        ..Default::default()
    };
    let e1 = b.record_error(&err(1), &[], None).unwrap();
    assert_eq!(e1.metadata["frequency"], 1);
    let e2 = b.record_error(&err(7), &["flaky".into()], None).unwrap();
    assert_eq!(e2.id, e1.id);
    assert_eq!(e2.metadata["frequency"], 2);
    assert_eq!(e2.tags, ["flaky"]);
    let mut fixed = err(9);
    fixed.solution = Some("raise the part timeout to 120s".into());
    fixed.resolved = true;
    let e3 = b.record_error(&fixed, &[], None).unwrap();
    assert_eq!(e3.id, e1.id);
    assert_eq!(e3.metadata["frequency"], 3);
    assert_eq!(e3.metadata["resolved"], true);
    assert!(e3.text.contains("solution: raise the part timeout"));
    // Later occurrences keep the solution.
    let e4 = b.record_error(&err(2), &[], None).unwrap();
    assert_eq!(e4.metadata["frequency"], 4);
    assert_eq!(e4.metadata["solution"], "raise the part timeout to 120s");
    assert_eq!(e4.version, 4);
    // Another error is another entry.
    let other = b
        .record_error(
            &ErrorReport {
                error_type: "PanicError".into(),
                message: "index out of bounds".into(),
                ..Default::default()
            },
            &[],
            None,
        )
        .unwrap();
    assert_ne!(other.id, e1.id);
    assert_eq!(other.metadata["frequency"], 1);
    assert!(b.record_error(&ErrorReport::default(), &[], None).is_err());

    let change = b
        .track_file_change(
            &FileChange {
                path: "src/upload.rs".into(),
                action: "edit".into(),
                reason: "longer part timeout".into(),
                related_files: vec!["tests/upload.rs".into()],
                start_line: Some(10),
                end_line: Some(20),
                session: Some(session.id.clone()),
                ..Default::default()
            },
            None,
        )
        .unwrap();
    assert_eq!(change.kind, "file_change");
    assert!(b
        .track_file_change(
            &FileChange {
                path: "a".into(),
                action: "juggle".into(),
                reason: "r".into(),
                ..Default::default()
            },
            None
        )
        .is_err());
    let decision = b
        .record_decision(
            &Decision {
                decision: "Retry uploads per part".into(),
                rationale: "a part is cheap to resend".into(),
                alternatives: vec!["retry the whole file".into()],
                related_files: vec!["src/upload.rs".into()],
                confidence: Some(0.8),
                session: Some(session.id.clone()),
                ..Default::default()
            },
            None,
        )
        .unwrap();
    assert_eq!(decision.insights, ["decision"]);
    assert_eq!(decision.metadata["confidence"], 0.8);

    let ended = b
        .end_session(&session.id, true, Some("green again"))
        .unwrap();
    assert_eq!(ended.version, 2);
    assert_eq!(ended.metadata["status"], "ended");
    assert!(ended.text.contains("succeeded"), "{}", ended.text);
    assert!(ended.text.contains("files changed (1)"), "{}", ended.text);
    assert!(ended
        .text
        .contains("edit src/upload.rs — longer part timeout"));
    assert!(ended.text.contains("errors fixed (1)"), "{}", ended.text);
    assert!(ended.text.contains("decisions (1)"), "{}", ended.text);
    assert!(ended.text.contains("summary given: green again"));
    assert!(matches!(
        b.end_session(&change.id, true, None),
        Err(MemoryError::Invalid(_))
    ));
    let errors = b
        .list_filtered(
            &MemoryFilter {
                kind: Some("error".into()),
                ..Default::default()
            },
            10,
            0,
        )
        .unwrap();
    assert_eq!(errors.len(), 2);
}
both!(coding_local, coding_postgres, coding_records);

fn change_to(path: &str) -> FileChange {
    FileChange {
        path: path.into(),
        action: "edit".into(),
        reason: format!("adjust {path}"),
        ..Default::default()
    }
}

/// Records without a session id join the active session: the caller's own while it
/// is open, else the one open session; none when none is open.
fn sessions_collect_themselves(b: &dyn MemoryBackend) {
    let loose = b.track_file_change(&change_to("src/a.rs"), None).unwrap();
    assert_eq!(loose.session, None, "no session is open");
    assert_eq!(b.active_session(None).unwrap(), ActiveSession::Nothing);

    let s1 = b.start_session("first", &[]).unwrap();
    let joined = [
        b.track_file_change(&change_to("src/a.rs"), None).unwrap(),
        b.record_error(
            &ErrorReport {
                error_type: "E".into(),
                message: "boom".into(),
                solution: Some("guard it".into()),
                ..Default::default()
            },
            &[],
            None,
        )
        .unwrap(),
        b.record_decision(
            &Decision {
                decision: "keep it simple".into(),
                ..Default::default()
            },
            None,
        )
        .unwrap(),
    ];
    for r in &joined {
        assert_eq!(r.session.as_deref(), Some(s1.id.as_str()), "{r:?}");
    }

    let s2 = b.start_session("second", &[]).unwrap();
    let none = b.track_file_change(&change_to("src/b.rs"), None).unwrap();
    assert_eq!(
        none.session, None,
        "two are open and the caller started neither"
    );
    let mine = b
        .track_file_change(&change_to("src/b.rs"), Some(&s1.id))
        .unwrap();
    assert_eq!(mine.session.as_deref(), Some(s1.id.as_str()));
    assert!(matches!(
        b.active_session(None).unwrap(),
        ActiveSession::Several(open) if open.len() == 2
    ));
    let refused = b.end_active_session(None, true, None).unwrap_err();
    assert!(
        refused.to_string().contains("2 coding sessions are active"),
        "{refused}"
    );

    let ended = b.end_active_session(Some(&s1.id), true, None).unwrap();
    assert_eq!(ended.id, s1.id);
    assert_eq!(
        ended.metadata["files_touched"],
        json!(["src/a.rs", "src/b.rs"])
    );
    assert_eq!(ended.metadata["errors_encountered"], 1);
    assert_eq!(ended.metadata["errors_fixed"], 1);
    assert_eq!(ended.metadata["decisions_made"], 1);
    assert!(ended.text.contains("files changed (2)"), "{}", ended.text);
    assert!(ended.text.contains("errors fixed (1)"), "{}", ended.text);
    // s1 ended: its caller's records join the one still open.
    let late = b
        .track_file_change(&change_to("src/c.rs"), Some(&s1.id))
        .unwrap();
    assert_eq!(late.session.as_deref(), Some(s2.id.as_str()));
    assert_eq!(b.end_active_session(None, true, None).unwrap().id, s2.id);
    assert_eq!(b.active_session(None).unwrap(), ActiveSession::Nothing);
}
both!(
    sessions_join_local,
    sessions_join_postgres,
    sessions_collect_themselves
);

fn edges(b: &dyn MemoryBackend) {
    let session = b.start_session("edges", &[]).unwrap();
    let change = b
        .track_file_change(
            &FileChange {
                path: "src/a.rs".into(),
                action: "edit".into(),
                reason: "fix".into(),
                session: Some(session.id.clone()),
                ..Default::default()
            },
            None,
        )
        .unwrap();
    let error = b
        .record_error(
            &ErrorReport {
                error_type: "E".into(),
                message: "boom".into(),
                resolved_by: Some(change.id.clone()),
                session: Some(session.id.clone()),
                ..Default::default()
            },
            &[],
            None,
        )
        .unwrap();
    let one: BTreeSet<(String, String)> = b
        .related(&session.id, 1)
        .unwrap()
        .into_iter()
        .map(|r| (r.key, r.via))
        .collect();
    assert_eq!(
        one,
        BTreeSet::from([
            (change.id.clone(), "includes".to_string()),
            (error.id.clone(), "includes".to_string()),
        ])
    );
    let two = b.related(&session.id, 2).unwrap();
    let file = two.iter().find(|r| r.key == "file:src/a.rs").unwrap();
    assert_eq!((file.hops, file.via.as_str()), (2, "affects"));
    assert_eq!(file.from, change.id);
    let back = b.related("file:src/a.rs", 1).unwrap();
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].via, "affects⁻¹");
    let from_error = b.related(&error.id, 1).unwrap();
    assert!(from_error
        .iter()
        .any(|r| r.key == change.id && r.via == "resolved_by"));
    assert!(b.related(&session.id, 4).is_err());
    // Forgetting an entry takes its edges.
    b.forget(&change.id).unwrap();
    assert!(b.related("file:src/a.rs", 1).unwrap().is_empty());
}
both!(edges_local, edges_postgres, edges);

// ---------------------------------------------------------------------------------
// Moving between backends.

/// A store with something of everything: versions, taxonomy, notes, errors counted,
/// sessions, changes, decisions, edges, metadata of every JSON type.
fn fill(b: &dyn MemoryBackend) {
    let mut m = tagged("Use WAL mode for tracker.db", &["sqlite", "perf"]);
    m.task = Some("optimize".into());
    m.insights = vec!["decision".into(), "tradeoff".into()];
    m.contexts = vec!["backend".into(), "data".into()];
    m.provenance = "agent_observed".into();
    m.trust = Some(0.65);
    m.symbols = vec!["file:src/store/tracker.rs".into()];
    m.metadata.insert(
        "detail".into(),
        json!({"z": 1, "a": [true, null, 2.5, "x"], "big": 18446744073709551615u64, "neg": -3}),
    );
    let m = b.write(m).unwrap();
    b.update(
        &m.id,
        tagged("Use WAL mode; checkpoint on close", &["sqlite"]),
    )
    .unwrap();
    b.note_set("style", "tabs", None).unwrap();
    b.note_set("style", "spaces", None).unwrap();
    let s = b
        .start_session("port to postgres", &["team".into()])
        .unwrap();
    let c = b
        .track_file_change(
            &FileChange {
                path: "src/memory_pg/mod.rs".into(),
                action: "create".into(),
                reason: "the backend".into(),
                session: Some(s.id.clone()),
                ..Default::default()
            },
            None,
        )
        .unwrap();
    for n in 0..3 {
        b.record_error(
            &ErrorReport {
                error_type: "ConnectError".into(),
                message: format!("connection refused on port {n}"),
                resolved_by: Some(c.id.clone()),
                session: Some(s.id.clone()),
                ..Default::default()
            },
            &[],
            None,
        )
        .unwrap();
    }
    b.record_decision(
        &Decision {
            decision: "RLS per repository".into(),
            rationale: "isolation in the database".into(),
            confidence: Some(0.9),
            ..Default::default()
        },
        None,
    )
    .unwrap();
    b.end_session(&s.id, true, None).unwrap();
    b.remember("naïve unicode ✓ and \"quotes\"\nnew line", &[], None)
        .unwrap();
}

fn export(b: &dyn MemoryBackend) -> Vec<u8> {
    let mut out = Vec::new();
    b.export(&mut out).unwrap();
    out
}

fn related_all(b: &dyn MemoryBackend, export: &[u8]) -> Vec<(String, Vec<(String, String)>)> {
    String::from_utf8_lossy(export)
        .lines()
        .map(|l| {
            let id = serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string();
            let mut rel: Vec<(String, String)> = b
                .related(&id, 2)
                .unwrap()
                .into_iter()
                .map(|r| (r.key, r.via))
                .collect();
            rel.sort();
            (id, rel)
        })
        .collect()
}

#[test]
fn export_import_round_trip_local_to_postgres_to_local_is_byte_equal() {
    let a = local();
    fill(&a.memories);
    let first = export(&a.memories);
    let dir = tempfile::tempdir().unwrap();
    let file1 = dir.path().join("a.jsonl");
    std::fs::write(&file1, &first).unwrap();
    assert!(first.len() > 1000 && first.iter().filter(|b| **b == b'\n').count() == 7);

    let p = pg::memories("roundtrip");
    let report = p.import_file(&file1).unwrap();
    assert_eq!(report.imported, 7);
    assert_eq!(report.replaced, 0);
    let second = export(&p);
    assert_eq!(
        String::from_utf8_lossy(&second),
        String::from_utf8_lossy(&first),
        "postgres export differs from the local one"
    );
    let file2 = dir.path().join("b.jsonl");
    std::fs::write(&file2, &second).unwrap();

    let c = local();
    c.memories.import_file(&file2).unwrap();
    let third = export(&c.memories);
    assert_eq!(
        String::from_utf8_lossy(&third),
        String::from_utf8_lossy(&first),
        "local export after the round trip differs"
    );

    // The same entries behave the same: notes, counters, edges, recall.
    for b in [&a.memories as &dyn MemoryBackend, &p, &c.memories] {
        assert_eq!(b.note_get("style").unwrap().unwrap().text, "spaces");
        let e = b
            .record_error(
                &ErrorReport {
                    error_type: "ConnectError".into(),
                    message: "connection refused on port 99".into(),
                    ..Default::default()
                },
                &[],
                None,
            )
            .unwrap();
        assert_eq!(e.metadata["frequency"], 4, "{}", b.describe());
        let n = b.note_set("style", "tabs", None).unwrap();
        assert_eq!(n.version, 3, "{}", b.describe());
    }
    let edges_a = related_all(&a.memories, &first);
    assert_eq!(edges_a, related_all(&p, &first));
    assert_eq!(edges_a, related_all(&c.memories, &first));
    assert!(edges_a.iter().any(|(_, r)| !r.is_empty()));

    // Importing the same file again replaces, never duplicates.
    let again = p.import_file(&file1).unwrap();
    assert_eq!((again.imported, again.replaced), (7, 7));
    assert_eq!(p.count().unwrap(), 7);
}

#[test]
fn a_bad_line_imports_nothing_on_either_backend() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.jsonl");
    std::fs::write(
        &file,
        "{\"text\": \"fine\"}\n{\"text\": \"x\", \"colour\": 1}\n",
    )
    .unwrap();
    let l = local();
    let p = pg::memories("badline");
    for b in [&l.memories as &dyn MemoryBackend, &p] {
        let err = b.import_file(&file).unwrap_err().to_string();
        assert!(err.contains("line 2"), "{err}");
        assert_eq!(b.count().unwrap(), 0);
    }
}

// ---------------------------------------------------------------------------------

/// Two sessions' coding records, the same on every backend.
fn coding_history(b: &dyn MemoryBackend) {
    for (files, error) in [
        (&["src/upload.py", "src/retry.py"][..], "UploadTimeout"),
        (&["src/upload.py", "src/auth.py"][..], "UploadTimeout"),
    ] {
        let s = b.start_session("upload work", &[]).unwrap();
        for f in files {
            b.track_file_change(
                &FileChange {
                    path: f.to_string(),
                    action: "edit".into(),
                    reason: "retries".into(),
                    session: Some(s.id.clone()),
                    ..FileChange::default()
                },
                None,
            )
            .unwrap();
        }
        let e = ErrorReport {
            error_type: error.into(),
            message: "upload timed out".into(),
            ..ErrorReport::default()
        };
        b.record_error(&e, &[], None).unwrap();
    }
    let mut m = Memory::new("uploads retry at most three times");
    m.insights = vec!["pitfall".into()];
    b.write(m).unwrap();
}

/// The project context and pattern analysis read entries through the trait alone,
/// so both backends answer alike.
#[test]
fn context_and_analysis_agree_on_both_backends() {
    let l = local();
    let p = pg::memories("context_and_analysis");
    coding_history(&l.memories);
    coding_history(&p);
    let local = engram::memory::analyze_patterns_of(&l.memories).unwrap();
    let team = engram::memory::analyze_patterns_of(&p).unwrap();
    assert_eq!(local, team);
    assert_eq!(local.recurring_errors, [("UploadTimeout".to_string(), 2)]);
    assert_eq!(local.hot_files[0], ("src/upload.py".to_string(), 2));
    for b in [&l.memories as &dyn MemoryBackend, &p] {
        let text = engram::memory::project_context_of(b, 4096, &|_| None).unwrap();
        for want in [
            "## Recent sessions\n- session: upload work",
            "## Open pitfalls\n- uploads retry at most three times [mem:",
            "## Most changed files\n- src/upload.py (2 changes)",
            "## Unresolved errors\n- UploadTimeout: upload timed out (seen 2x) [mem:",
        ] {
            assert!(
                text.contains(want),
                "{}: {want:?} missing from {text}",
                b.describe()
            );
        }
    }
}

// ---------------------------------------------------------------------------------
// Every memory command of the CLI on both backends: one command body, so the same
// output (JSON of the same shape, the same text once ids and times are set aside).

#[cfg(feature = "cli")]
mod commands {
    use std::path::Path;
    use std::process::Command;

    use serde_json::{json, Value};

    use super::pg;
    use crate::support::team_cli;

    const NET_V1: &str = "class Session:\n    def request(self, method, url):\n        return self.send(method, url)\n\n    def send(self, method, url):\n        return None\n";
    const NET_V2: &str = "class Session:\n    def request(self, method, url, retries=2):\n        for _ in range(retries):\n            r = self.send(method, url)\n        return r\n\n    def send(self, method, url):\n        return None\n";

    /// A JSON value's shape: objects by their keys, arrays by the distinct shapes of
    /// their elements, leaves by their type (ids, times and scores differ between
    /// runs, and so does the order of entries tied on a time).
    fn shape(v: &Value) -> Value {
        match v {
            Value::Object(o) => {
                Value::Object(o.iter().map(|(k, v)| (k.clone(), shape(v))).collect())
            }
            Value::Array(a) => {
                let mut shapes: Vec<Value> = a.iter().map(shape).collect();
                shapes.sort_by_key(|s| s.to_string());
                shapes.dedup();
                json!(shapes)
            }
            Value::String(_) => json!("string"),
            Value::Number(_) => json!("number"),
            Value::Bool(_) => json!("bool"),
            Value::Null => Value::Null,
        }
    }

    /// Text with ids, times and scores replaced, its lines sorted, to compare the
    /// backends' text output (the order of stale entries follows their times, which
    /// differ, and recall's scores are each backend's own).
    fn normalised(text: &str) -> String {
        let id = regex::Regex::new(r"mem:[0-9a-f]{8}").unwrap();
        let time = regex::Regex::new(r"\d{4}-\d\d-\d\dT[0-9:.]+Z").unwrap();
        let score = regex::Regex::new(r"^\d+\.\d{4}").unwrap();
        let text = id.replace_all(text, "mem:ID");
        let text = time.replace_all(&text, "TIME");
        let mut lines: Vec<String> = text
            .lines()
            .map(|l| score.replace(l, "SCORE").into_owned())
            .collect();
        lines.sort();
        lines.join("\n")
    }

    /// `engram --store STORE ARGS…` without --json, on the team database when `team`
    /// is set: (success, stdout).
    fn text(store: &Path, team: bool, args: &[&str]) -> (bool, String) {
        let home = store.parent().unwrap().join("home");
        let mut c = Command::new(env!("CARGO_BIN_EXE_engram"));
        c.arg("--store").arg(store).args(args);
        for (k, _) in std::env::vars() {
            if k.starts_with("ENGRAM_") {
                c.env_remove(k);
            }
        }
        c.env("HOME", &home).env("XDG_CONFIG_HOME", &home);
        if team {
            c.env("ENGRAM_DATABASE_URL", pg::url());
        }
        let out = c.output().expect("run engram");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }

    /// One run of a command: its name, success, JSON output and text output.
    struct Ran {
        what: String,
        done: bool,
        json: Value,
        text: String,
    }

    /// Runs every memory command in turn on `store` (the team database when `team`
    /// is set), the code of `repo` indexed into the local store, as a user would.
    fn script(store: &Path, repo: &Path, team: bool) -> Vec<Ran> {
        let mut ran = Vec::new();
        let run = |ran: &mut Vec<Ran>, args: &[&str], with_text: bool| -> Value {
            let (done, json, err) = team_cli::engram(store, team, args);
            // The text form of a command that writes is not run again (a second write
            // would change what later commands see); reads are.
            let text = if with_text {
                let (t_done, t) = text(store, team, args);
                assert_eq!(t_done, done, "{args:?}: text and JSON runs disagree: {err}");
                t
            } else {
                String::new()
            };
            ran.push(Ran {
                what: args.join(" "),
                done,
                json: json.clone(),
                text,
            });
            json
        };
        let id = |v: &Value| v["id"].as_str().unwrap_or_default().to_string();
        let root = repo.to_str().unwrap();
        std::fs::write(repo.join("src/net.py"), NET_V1).unwrap();
        team_cli::ok(store, false, &["index", root]);

        let a = id(&run(
            &mut ran,
            &[
                "remember",
                "Session.request sends once; callers retry",
                "--insight",
                "pitfall",
                "--tag",
                "net",
            ],
            false,
        ));
        let b = id(&run(
            &mut ran,
            &[
                "remember",
                "uploads retry at most three times",
                "--tag",
                "upload",
            ],
            false,
        ));
        run(
            &mut ran,
            &[
                "update",
                &b,
                "uploads retry at most four times",
                "--tag",
                "upload",
            ],
            false,
        );
        run(&mut ran, &["history", &b], true);
        run(&mut ran, &["get", &a], true);
        run(&mut ran, &["list"], true);
        run(
            &mut ran,
            &["list", "--tag", "net", "--insight", "pitfall"],
            true,
        );
        run(&mut ran, &["recall", "uploads retry"], true);
        run(
            &mut ran,
            &["recall", "uploads retry", "--tag", "upload", "-k", "1"],
            true,
        );
        run(
            &mut ran,
            &["recall", "uploads retry", "--rerank", "llm"],
            true,
        );
        run(&mut ran, &["recall", "uploads retry", "--dry-run"], true);
        run(&mut ran, &["note", "set", "style", "tabs"], false);
        run(&mut ran, &["note", "get", "style"], true);
        run(&mut ran, &["note", "list"], true);
        run(&mut ran, &["note", "delete", "style"], false);
        run(&mut ran, &["note", "get", "style"], true);
        let s = id(&run(
            &mut ran,
            &["session", "start", "fix uploads", "--tag", "ci"],
            false,
        ));
        run(
            &mut ran,
            &[
                "change",
                "src/net.py",
                "--action",
                "edit",
                "--reason",
                "retry",
                "--lines",
                "1-5",
                "--session",
                &s,
            ],
            false,
        );
        run(
            &mut ran,
            &[
                "change",
                "src/net.py",
                "--action",
                "edit",
                "--reason",
                "x",
                "--lines",
                "five",
            ],
            true,
        );
        let e = id(&run(
            &mut ran,
            &[
                "error",
                "record",
                "--type",
                "UploadTimeout",
                "--message",
                "upload timed out",
                "--solution",
                "retry per part",
                "--session",
                &s,
            ],
            false,
        ));
        run(
            &mut ran,
            &[
                "error",
                "record",
                "--type",
                "UploadTimeout",
                "--message",
                "upload timed out",
            ],
            false,
        );
        run(&mut ran, &["error", "search", "upload timed out"], true);
        run(&mut ran, &["error", "suggest", &e], true);
        run(
            &mut ran,
            &[
                "decision",
                "retry per part",
                "--rationale",
                "a part is cheap",
                "--file",
                "src/net.py",
                "--session",
                &s,
            ],
            false,
        );
        run(&mut ran, &["related", &s], true);
        run(&mut ran, &["session", "end", &s], false);
        run(&mut ran, &["analyze"], true);
        run(&mut ran, &["context"], true);
        run(&mut ran, &["stale"], true);

        // The code changes: the pitfall about Session.request is stale.
        std::fs::write(repo.join("src/net.py"), NET_V2).unwrap();
        team_cli::ok(store, false, &["index", root]);
        run(&mut ran, &["stale"], true);
        run(&mut ran, &["get", &a], true);
        run(&mut ran, &["list", "--tag", "net"], true);
        run(&mut ran, &["context"], true);
        run(&mut ran, &["confirm", &a], false);
        run(&mut ran, &["stale"], true);

        let file = store
            .parent()
            .unwrap()
            .join(format!("{}.jsonl", if team { "team" } else { "local" }));
        run(&mut ran, &["export", file.to_str().unwrap()], false);
        run(&mut ran, &["forget", &b], false);
        run(&mut ran, &["forget", &b], false);
        run(&mut ran, &["get", &b], false);
        run(&mut ran, &["import", file.to_str().unwrap()], false);
        run(&mut ran, &["get", &b], true);
        ran
    }

    #[test]
    fn every_memory_command_answers_alike_on_both_backends() {
        pg::database(); // migrated
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        std::fs::create_dir_all(repo.join("src")).unwrap();
        // The team backend files a store's memories under the store directory's name.
        let local_store = tmp.path().join(pg::unique_repo("commands-local"));
        let team_store = tmp.path().join(pg::unique_repo("commands-team"));
        let local = script(&local_store, &repo, false);
        let team = script(&team_store, &repo, true);
        assert_eq!(local.len(), team.len());
        for (l, t) in local.iter().zip(&team) {
            assert_eq!(
                l.done, t.done,
                "{}: local {} team {}",
                l.what, l.json, t.json
            );
            assert_eq!(
                shape(&l.json),
                shape(&t.json),
                "{}: local {}\nteam {}",
                l.what,
                l.json,
                t.json
            );
            assert_eq!(normalised(&l.text), normalised(&t.text), "{}", l.what);
        }
        let by = |ran: &[Ran], what: &str| -> Vec<Value> {
            ran.iter()
                .filter(|r| r.what == what)
                .map(|r| r.json.clone())
                .collect()
        };
        // What the commands did, checked once on each backend.
        for ran in [&local, &team] {
            let failed: Vec<&str> = ran
                .iter()
                .filter(|r| !r.done)
                .map(|r| r.what.as_str())
                .collect();
            assert_eq!(failed.len(), 5, "{failed:?}");
            assert!(failed.iter().any(|f| f.contains("--dry-run")));
            assert!(failed.iter().any(|f| f.contains("--lines five")));
            let stale = by(ran, "stale");
            assert_eq!(
                stale[0]["stale"],
                json!([]),
                "fresh while the code is unchanged"
            );
            // The pitfall about Session.request, and the change and the decision about
            // its file.
            let texts: Vec<&str> = stale[1]["stale"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["memory"]["text"].as_str().unwrap())
                .collect();
            assert_eq!(texts.len(), 3, "{}", stale[1]);
            assert!(texts.contains(&"Session.request sends once; callers retry"));
            let pitfall = ran[0].json["id"].as_str().unwrap();
            let got = &by(ran, &format!("get {pitfall}"))[1];
            assert_eq!(got["stale"][0]["reason"], "changed", "{got}");
            let left: Vec<&Value> = stale[2]["stale"].as_array().unwrap().iter().collect();
            assert_eq!(left.len(), 2, "{}", stale[2]);
            assert!(
                left.iter().all(|s| s["memory"]["id"] != pitfall),
                "fresh again once confirmed: {}",
                stale[2]
            );
            let recall = &by(ran, "recall uploads retry")[0]["hits"];
            assert!(
                recall[0]["text"].as_str().unwrap().contains("four times"),
                "{recall}"
            );
            let notes = by(ran, "note list");
            assert_eq!(notes[0]["notes"][0]["text"], "tabs");
            let analysis = &by(ran, "analyze")[0];
            assert_eq!(
                analysis["recurring_errors"],
                json!([["UploadTimeout", 2]]),
                "{analysis}"
            );
        }
    }
}
