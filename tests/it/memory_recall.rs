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

/// The plain statement's `(id, score)` for `fts` among the memories holding `label`
/// (any when `None`), best first.
fn reference_scored(
    db: &Connection,
    fts: &str,
    label: Option<&str>,
    k: usize,
) -> Vec<(String, f64)> {
    let cond = if label.is_some() {
        "AND m.seq IN (SELECT seq FROM memory_labels WHERE label = ?3)"
    } else {
        "AND ?3 IS NULL"
    };
    let mut stmt = db
        .prepare(&format!(
            "SELECT m.id, bm25(memories_fts, 1.0, 2.0) AS r FROM memories_fts
             JOIN memories m ON m.seq = memories_fts.rowid
             WHERE memories_fts MATCH ?1 {cond} ORDER BY r, m.seq DESC LIMIT ?2"
        ))
        .unwrap();
    stmt.query_map(rusqlite::params![fts, k as i64, label], |r| {
        Ok((r.get::<_, String>(0)?, -r.get::<_, f64>(1)?))
    })
    .unwrap()
    .collect::<rusqlite::Result<_>>()
    .unwrap()
}

/// Many queries over a generated store of a few thousand memories (skewed vocabulary,
/// lengths from 2 to 40 words, tags, tasks, updated and forgotten entries): recall's
/// top 10, ids and scores to the bit, equals the exhaustive statement's for every one,
/// with and without a filter, before and after more writes.
#[test]
fn recall_top_ten_equals_the_exhaustive_ranking_over_many_queries() {
    const VOCAB: &[&str] = &[
        "cache",
        "timeout",
        "retry",
        "token",
        "session",
        "index",
        "parser",
        "schema",
        "deploy",
        "billing",
        "webhook",
        "migration",
        "latency",
        "queue",
        "lock",
        "auth",
        "vector",
        "search",
        "memory",
        "config",
        "flaky",
        "jitter",
        "backoff",
        "shard",
        "replica",
        "tenant",
        "quota",
        "cursor",
        "batch",
        "ledger",
    ];
    const TASKS: &[&str] = &["debug", "refactor", "optimize"];
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move |n: usize| -> usize {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n as u64) as usize
    };
    // Skewed: low indexes far more often.
    fn word(next: &mut dyn FnMut(usize) -> usize) -> &'static str {
        VOCAB[next(VOCAB.len()).min(next(VOCAB.len()))]
    }
    let dir = tempfile::tempdir().unwrap();
    let m = Memories::open(dir.path()).unwrap();
    let entry = |next: &mut dyn FnMut(usize) -> usize, i: usize| -> Memory {
        let n = 2 + next(39);
        let text: Vec<&str> = (0..n).map(|_| word(next)).collect();
        let mut e = Memory::new(format!("{} n{i}", text.join(" ")));
        if next(3) == 0 {
            e.tags = vec![word(next).to_string()];
        }
        e.task = Some(TASKS[next(TASKS.len())].to_string());
        e
    };
    let jsonl = dir.path().join("m.jsonl");
    let mut lines = String::new();
    for i in 0..3000 {
        let e = entry(&mut next, i);
        lines.push_str(&serde_json::to_string(&e).unwrap());
        lines.push('\n');
    }
    std::fs::write(&jsonl, lines).unwrap();
    m.import_file(&jsonl).unwrap();
    let db = Connection::open_with_flags(
        dir.path().join("tracker.db"),
        OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    let debug = MemoryFilter {
        task: Some("debug".into()),
        ..MemoryFilter::default()
    };
    let mut compared = 0;
    for round in 0..2 {
        if round == 1 {
            // Writes between queries: new entries, an update, a forgotten one.
            let ids: Vec<String> = m.list(50, 0).unwrap().into_iter().map(|e| e.id).collect();
            for i in 0..40 {
                m.write(entry(&mut next, 10_000 + i)).unwrap();
            }
            m.update(&ids[0], entry(&mut next, 20_000)).unwrap();
            m.forget(&ids[1]).unwrap();
        }
        for q in 0..150 {
            let words: Vec<&str> = (0..1 + next(3)).map(|_| word(&mut next)).collect();
            let mut uniq: Vec<&str> = Vec::new();
            for w in &words {
                if !uniq.contains(w) {
                    uniq.push(w);
                }
            }
            let query = words.join(" ");
            let quoted: Vec<String> = uniq.iter().map(|w| format!("\"{w}\"")).collect();
            let (all, any) = (quoted.join(" AND "), quoted.join(" OR "));
            let (filter, label) = if q % 3 == 0 {
                (debug.clone(), Some("task:debug"))
            } else {
                (MemoryFilter::default(), None)
            };
            let all_hits = reference_scored(&db, &all, label, 10);
            let want = if all_hits.len() >= 10 || all == any {
                all_hits
            } else {
                reference_scored(&db, &any, label, 10)
            };
            let got: Vec<(String, f64)> = m
                .recall_filtered(&query, &filter, 10)
                .unwrap()
                .into_iter()
                .map(|h| (h.memory.id, h.score))
                .collect();
            assert_eq!(
                got, want,
                "round {round}, query {query:?}, filter {label:?}"
            );
            compared += 1;
        }
    }
    assert_eq!(compared, 300);
}
