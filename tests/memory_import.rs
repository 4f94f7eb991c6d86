//! The local import as it writes now: the vectors, embedded in chunks on a thread of
//! their own, each chunk's written after the next chunk's puts, all applied to the
//! tracker while they are written.

use std::io::Write;

use engram::memory::{Memories, Memory};

/// More lines than two of the import's embedding chunks (1,024 texts each).
const LINES: usize = 2_100;

fn line(id: &str, text: &str) -> String {
    let mut m = Memory::new(text);
    m.id = id.into();
    serde_json::to_string(&m).unwrap()
}

/// A line repeating an id within the chunk after its first line: its put reaches the
/// log before the first line's vector would, so that vector must not be written: it
/// would outlive the later put. The later text embeds to nothing, so no later vector
/// replaces it either.
#[test]
fn an_id_repeated_in_the_next_chunk_keeps_no_vector_of_its_earlier_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.jsonl");
    let mut f = std::fs::File::create(&path).unwrap();
    let first = "note 10 about the parser of topic3";
    let later = "--- ... ---";
    for i in 0..LINES {
        if i == 1500 {
            writeln!(f, "{}", line("mem:0000000a", later)).unwrap();
        }
        let text = format!("note {i} about the parser of topic{}", i % 7);
        writeln!(f, "{}", line(&format!("mem:{i:08x}"), &text)).unwrap();
    }
    drop(f);
    let m = Memories::open(dir.path().join("store")).unwrap();
    let report = m.import_file(&path).unwrap();
    assert_eq!((report.imported, report.replaced), (LINES as u64 + 1, 1));
    assert_eq!(m.get("mem:0000000a").unwrap().unwrap().text, later);
    assert!(m.embedder().embed(&[later]).unwrap()[0]
        .iter()
        .all(|x| *x == 0.0));
    assert_eq!(
        m.store().vector_spaces().unwrap()[0].count,
        LINES as u64 - 1
    );
    let top = |text: &str| {
        let query = &m.embedder().embed(&[text]).unwrap()[0];
        let hits = m
            .store()
            .vector_search(m.embedder().name(), query, 1)
            .unwrap();
        (hits[0].key.clone(), hits[0].score)
    };
    let (key, score) = top(first);
    assert!(
        key != "mem:0000000a" || score < 0.999,
        "the first line's vector outlived its put"
    );
    let report = engram::store::verify(&dir.path().join("store")).unwrap();
    assert!(
        report.is_sound() && report.warnings.is_empty(),
        "{report:?}"
    );
}

#[test]
fn an_import_stores_every_vector_and_a_repeated_id_keeps_its_last_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.jsonl");
    let mut f = std::fs::File::create(&path).unwrap();
    for i in 0..LINES {
        let text = format!("note {i} about the parser of topic{}", i % 7);
        writeln!(f, "{}", line(&format!("mem:{i:08x}"), &text)).unwrap();
    }
    // The same id again, last: its text and its vector are the ones kept.
    let last = "zebra crossings need a longer green phase";
    writeln!(f, "{}", line("mem:00000005", last)).unwrap();
    drop(f);

    let m = Memories::open(dir.path().join("store")).unwrap();
    let report = m.import_file(&path).unwrap();
    assert_eq!((report.imported, report.replaced), (LINES as u64 + 1, 1));
    assert_eq!(m.count().unwrap(), LINES as u64);
    assert_eq!(m.get("mem:00000005").unwrap().unwrap().text, last);
    assert_eq!(
        m.get("mem:00000833").unwrap().unwrap().text,
        format!("note {} about the parser of topic{}", 0x833, 0x833 % 7)
    );

    // One live vector a memory, the repeated one's made from its last text.
    let spaces = m.store().vector_spaces().unwrap();
    assert_eq!(spaces.len(), 1);
    assert_eq!(spaces[0].count, LINES as u64);
    let query = &m.embedder().embed(&[last]).unwrap()[0];
    let hits = m
        .store()
        .vector_search(m.embedder().name(), query, 1)
        .unwrap();
    assert_eq!(hits[0].key, "mem:00000005");
    assert!(hits[0].score > 0.999, "{}", hits[0].score);

    // The tracker the import filled is the one the log replays to.
    drop(m);
    for f in ["tracker.db", "tracker.db-wal", "tracker.db-shm"] {
        let _ = std::fs::remove_file(dir.path().join("store").join(f));
    }
    let m = Memories::open(dir.path().join("store")).unwrap();
    assert_eq!(m.count().unwrap(), LINES as u64);
    assert_eq!(m.store().vector_spaces().unwrap()[0].count, LINES as u64);
    assert_eq!(
        m.recall("zebra crossings", 1).unwrap()[0].memory.id,
        "mem:00000005"
    );
}
