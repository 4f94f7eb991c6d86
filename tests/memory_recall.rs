//! Keyword recall over memories ranks like the plain BM25 statement over the same
//! tracker, read here straight from `tracker.db`: the best of the memories holding
//! every word of the query when there are enough of them, else the best of those
//! holding any word; ties to the memory written last; with or without a filter.

use engram::memory::{Memories, Memory, MemoryFilter};
use proptest::prelude::*;
use rusqlite::{Connection, OpenFlags};

const WORDS: &[&str] = &["cache", "retry", "token", "queue", "lock", "schema"];

/// The ids of the plain statement's top `k` for the FTS5 expression `fts`.
fn reference(db: &Connection, fts: &str, k: usize) -> Vec<String> {
    let mut stmt = db
        .prepare(
            "SELECT m.id FROM memories_fts JOIN memories m ON m.seq = memories_fts.rowid
             WHERE memories_fts MATCH ?1
             ORDER BY bm25(memories_fts, 1.0, 2.0), m.seq DESC LIMIT ?2",
        )
        .unwrap();
    stmt.query_map(rusqlite::params![fts, k as i64], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

fn count(db: &Connection, fts: &str) -> usize {
    db.query_row(
        "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?1",
        [fts],
        |r| r.get::<_, i64>(0),
    )
    .unwrap() as usize
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn recall_matches_the_plain_ranking(
        texts in proptest::collection::vec(
            (proptest::collection::vec(0..WORDS.len(), 1..6), proptest::option::of(0..WORDS.len())),
            1..40,
        ),
        q in (0..WORDS.len(), 0..WORDS.len()),
        k in 1usize..8,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let m = Memories::open(dir.path()).unwrap();
        for (words, tag) in &texts {
            let text: Vec<&str> = words.iter().map(|&w| WORDS[w]).collect();
            let mut e = Memory::new(text.join(" "));
            e.tags = tag.iter().map(|&t| WORDS[t].to_string()).collect();
            m.write(e).unwrap();
        }
        let (a, b) = (WORDS[q.0], WORDS[q.1]);
        let query = format!("{a} {b}");
        let db = Connection::open_with_flags(
            dir.path().join("tracker.db"),
            OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap();
        let all = format!("\"{a}\" AND \"{b}\"");
        let any = format!("\"{a}\" OR \"{b}\"");
        let want = if a == b || count(&db, &all) >= k {
            reference(&db, &all, k)
        } else {
            reference(&db, &any, k)
        };
        let got: Vec<String> = m.recall(&query, k).unwrap().into_iter().map(|h| h.memory.id).collect();
        prop_assert_eq!(&got, &want, "query {:?}, top {}", query, k);
        // A filter every memory passes takes the joined path; same answer.
        let everything = MemoryFilter { since_ms: Some(0), ..MemoryFilter::default() };
        let filtered: Vec<String> = m
            .recall_filtered(&query, &everything, k)
            .unwrap()
            .into_iter()
            .map(|h| h.memory.id)
            .collect();
        prop_assert_eq!(&filtered, &want, "filtered, query {:?}, top {}", query, k);
    }
}

#[test]
fn memories_holding_every_word_come_first_only_when_there_are_enough() {
    let dir = tempfile::tempdir().unwrap();
    let m = Memories::open(dir.path()).unwrap();
    // One memory says `retry` many times in few words: plain BM25 ranks it above
    // the ones holding both words.
    let loud = m.write(Memory::new("retry retry retry")).unwrap();
    let both: Vec<String> = (0..3)
        .map(|i| {
            m.write(Memory::new(format!(
                "the billing job will retry a timeout in queue {i} with backoff and jitter"
            )))
            .unwrap()
            .id
        })
        .collect();
    let ids = |k| -> Vec<String> {
        m.recall("retry timeout", k)
            .unwrap()
            .into_iter()
            .map(|h| h.memory.id)
            .collect()
    };
    // Three hold both words: a top 3 is theirs, newest first on equal scores.
    let mut newest_first = both.clone();
    newest_first.reverse();
    assert_eq!(ids(3), newest_first);
    // A top 4 cannot be filled by them: the any-word ranking, loud one first.
    let four = ids(4);
    assert_eq!(four.len(), 4);
    assert_eq!(four[0], loud.id);
}
