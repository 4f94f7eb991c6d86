//! Structured memory entries: taxonomy, validation, versions and their history.

use engram::memory::{Memories, Memory};

#[test]
fn taxonomy_values_are_normalised_and_unknown_ones_refused() {
    let dir = tempfile::tempdir().unwrap();
    let m = Memories::open(dir.path()).unwrap();
    let mut e = Memory::new("Retry the payment webhook at most 3 times");
    e.task = Some("task:bugfix".into());
    e.insights = vec![
        "decision".into(),
        "insight:constraint".into(),
        "decision".into(),
    ];
    e.contexts = vec!["billing".into(), "x-payments".into()];
    e.symbols = vec!["sym:src/pay.rs#retry:function:10:30".into()];
    e.provenance = "agent-observed".into();
    let stored = m.write(e).unwrap();
    assert_eq!(stored.task.as_deref(), Some("bugfix"));
    assert_eq!(stored.insights, ["decision", "constraint"]);
    assert_eq!(stored.contexts, ["billing", "x-payments"]);
    assert_eq!(stored.provenance, "agent_observed");
    assert!((stored.effective_trust() - 0.8).abs() < 1e-9);
    assert_eq!(m.get(&stored.id).unwrap().unwrap(), stored);

    for (field, bad) in [
        ("task", "dance"),
        ("insight", "hunch"),
        ("context", "kitchen"),
    ] {
        let mut e = Memory::new("x");
        match field {
            "task" => e.task = Some(bad.into()),
            "insight" => e.insights = vec![bad.into()],
            _ => e.contexts = vec![bad.into()],
        }
        let err = m.write(e).unwrap_err().to_string();
        assert!(err.contains(bad) && err.contains("valid:"), "{err}");
    }
    let err = m.write(Memory::new("   ")).unwrap_err().to_string();
    assert!(err.contains("empty"), "{err}");
    let err = m
        .write(Memory::new("x".repeat(10 << 20)))
        .unwrap_err()
        .to_string();
    assert!(err.contains("at most"), "{err}");
    let mut e = Memory::new("x");
    e.symbols = vec!["mem:a1b2c3d4".into()];
    assert!(m.write(e).is_err());
    assert_eq!(m.count().unwrap(), 1, "refused writes store nothing");
}

#[test]
fn updates_make_versions_and_history_survives_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let m = Memories::open(dir.path()).unwrap();
    let v1 = m
        .remember("cache TTL is 60 s", &["cache".into()], None)
        .unwrap();
    let other = m.remember("unrelated", &[], None).unwrap();
    let v2 = m.update(&v1.id, Memory::new("cache TTL is 300 s")).unwrap();
    let v3 = m
        .update(&v1.id, Memory::new("cache TTL is 600 s after the incident"))
        .unwrap();
    assert_eq!((v2.version, v3.version), (2, 3));
    assert_eq!(v3.created_ms, v1.created_ms);
    assert!(m.update("mem:00000000", Memory::new("x")).is_err());

    let texts = |m: &Memories| -> Vec<String> {
        m.history(&v1.id)
            .unwrap()
            .into_iter()
            .map(|v| v.text)
            .collect()
    };
    let want = [
        "cache TTL is 60 s",
        "cache TTL is 300 s",
        "cache TTL is 600 s after the incident",
    ];
    assert_eq!(texts(&m), want);
    assert_eq!(
        m.recall("300", 5).unwrap().len(),
        0,
        "only the live version is searched"
    );

    m.store().compact().unwrap();
    assert_eq!(
        texts(&m),
        want,
        "compaction keeps the history of a live memory"
    );
    m.store().rebuild().unwrap();
    assert_eq!(texts(&m), want);

    m.forget(&v1.id).unwrap();
    m.store().compact().unwrap();
    assert!(m.history(&v1.id).unwrap().is_empty());
    assert_eq!(m.history(&other.id).unwrap().len(), 1);
    assert!(engram::store::verify(dir.path()).unwrap().is_sound());
}

#[test]
fn notes_are_named_versioned_values() {
    let dir = tempfile::tempdir().unwrap();
    let m = Memories::open(dir.path()).unwrap();
    assert!(m.note_get("build").unwrap().is_none());
    let a = m.note_set("build", "cargo build --release", None).unwrap();
    m.note_set("test cmd", "./tools/test.sh", Some("agent_observed"))
        .unwrap();
    let b = m.note_set("build", "make release", None).unwrap();
    assert_eq!(a.id, b.id, "setting a note again updates it");
    assert_eq!(b.version, 2);
    assert_eq!(m.note_get("build").unwrap().unwrap().text, "make release");
    assert_eq!(m.history(&b.id).unwrap().len(), 2);
    let names: Vec<String> = m
        .note_list()
        .unwrap()
        .iter()
        .map(|n| engram::memory::note_name(n).unwrap().to_string())
        .collect();
    assert_eq!(names, ["build", "test cmd"]);
    // Notes are entries of kind "note": filters see them apart from plain memories.
    m.remember("a plain memory", &[], None).unwrap();
    let f = engram::memory::MemoryFilter {
        kind: Some("memory".into()),
        ..Default::default()
    };
    assert_eq!(m.list_filtered(&f, 10, 0).unwrap().len(), 1);
    assert!(m.note_delete("build").unwrap());
    assert!(!m.note_delete("build").unwrap());
    assert!(m.note_get("build").unwrap().is_none());
    assert!(m.note_set("", "x", None).is_err());
    assert!(m.note_set("bad\nname", "x", None).is_err());
    let f = engram::memory::MemoryFilter {
        kind: Some("gossip".into()),
        ..Default::default()
    };
    assert!(f.normalised().is_err());
}

#[test]
fn symbol_references_are_checked_once_a_code_index_exists() {
    let dir = tempfile::tempdir().unwrap();
    let m = Memories::open(dir.path()).unwrap();
    let sym = "sym:src/a.rs#run:function:1:9";
    let mut e = Memory::new("run() must stay idempotent");
    e.symbols = vec![sym.into()];
    m.write(e.clone()).unwrap(); // no code index yet: accepted as given
    let mut b = engram::store::WriteBatch::new();
    b.put(sym, serde_json::Map::new(), "fn run() {}").unwrap();
    m.store().commit(&b).unwrap();
    m.write(e).unwrap();
    let mut bad = Memory::new("about a symbol that does not exist");
    bad.symbols = vec!["sym:src/a.rs#walk:function:1:9".into()];
    let err = m.write(bad).unwrap_err().to_string();
    assert!(
        err.contains("not in the code index") && err.contains("walk"),
        "{err}"
    );
}
