//! The audit trail's promises: a write tool's event is committed in the same batch as
//! the write (durable together or not at all), read events are group-committed and
//! reach the log without an fsync per read, and secrets never reach an event.

use engram::format::RecordKind;
use engram::gate::{read_audit, Caps, Gate};
use engram::index::IndexOptions;
use engram::mcp::Engine;
use engram::memory::Memories;
use engram::store::{scan_batches, ScanStart};
use serde_json::{json, Map, Value};

fn engine(dir: &std::path::Path) -> Engine {
    let memories = Memories::open(dir.join("store")).unwrap();
    let gate = Gate::new("repo", None, Vec::new(), Caps::default());
    Engine::new(memories, gate, IndexOptions::default())
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

/// For each committed batch: the keys it puts and the ops of the audit events in it.
fn batches(engine: &Engine) -> Vec<(Vec<u64>, Vec<String>)> {
    let snap = engine.memories.store().snapshot().unwrap();
    let mut out = Vec::new();
    scan_batches::<()>(
        snap.bytes(),
        ScanStart {
            offset: engram::format::FILE_HEADER_LEN as u64,
            last_commit: 0,
            last_seq: 0,
        },
        |b| {
            let mut puts = Vec::new();
            let mut events = Vec::new();
            for (_, rec) in b.records() {
                match rec.kind {
                    RecordKind::Put => puts.push(rec.key_hash()),
                    RecordKind::Event => {
                        let meta: Map<String, Value> = serde_json::from_slice(rec.meta).unwrap();
                        events.push(meta["op"].as_str().unwrap_or("").to_string());
                    }
                    _ => {}
                }
            }
            out.push((puts, events));
            Ok(())
        },
    )
    .unwrap();
    out
}

#[test]
fn a_write_and_its_audit_event_are_one_batch() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path());
    let written = engine
        .call(
            "memory_write",
            &args(json!({"text": "deploys go through the staging cluster first"})),
        )
        .unwrap();
    let id = written["id"].as_str().unwrap().to_string();
    let key_hash = engram::key::hash64(&id);
    let all = batches(&engine);
    let with_write: Vec<_> = all.iter().filter(|(p, _)| p.contains(&key_hash)).collect();
    assert_eq!(with_write.len(), 1);
    assert_eq!(with_write[0].1, vec!["memory_write".to_string()], "{all:?}");
    // And only once: no second event for the same call.
    let events: usize = all
        .iter()
        .map(|(_, e)| e.iter().filter(|op| *op == "memory_write").count())
        .sum();
    assert_eq!(events, 1);
}

#[test]
fn read_events_are_group_committed_and_none_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path());
    engine
        .call(
            "memory_write",
            &args(json!({"text": "tracker in WAL mode"})),
        )
        .unwrap();
    let before = engine.memories.store().meta().unwrap().applied_seq;
    for _ in 0..40 {
        engine
            .call("memory_search", &args(json!({"query": "WAL"})))
            .unwrap();
    }
    engine.audit.flush().unwrap();
    let reads = read_audit(engine.memories.store(), 0)
        .unwrap()
        .into_iter()
        .filter(|e| e.op == "memory_search")
        .count();
    assert_eq!(reads, 40);
    // 40 events in far fewer commits than 40 (each commit is one sequence number
    // plus one per record).
    let commits = engine.memories.store().meta().unwrap().applied_seq - before - 40;
    assert!(commits < 40, "{commits} commits for 40 read events");
    drop(engine);
}

#[test]
fn queued_read_events_are_committed_when_the_engine_closes() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path());
    engine
        .call("memory_search", &args(json!({"query": "anything"})))
        .unwrap();
    drop(engine);
    let memories = Memories::open(dir.path().join("store")).unwrap();
    let events = read_audit(memories.store(), 0).unwrap();
    assert!(events.iter().any(|e| e.op == "memory_search"), "{events:?}");
}

#[test]
fn secrets_never_reach_an_audit_event() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path());
    let token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    engine
        .call(
            "memory_search",
            &args(json!({"query": format!("where is {token}")})),
        )
        .unwrap();
    engine
        .call(
            "memory_write",
            &args(json!({"text": format!("token {token}")})),
        )
        .unwrap();
    drop(engine);
    let log = std::fs::read(dir.path().join("store/blob.dat")).unwrap();
    let needle = &token.as_bytes()[4..20];
    assert!(
        !log.windows(needle.len()).any(|w| w == needle),
        "a token reached blob.dat"
    );
}
