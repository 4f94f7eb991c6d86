//! `bm25_top` against FTS5's own `bm25()`.

use super::*;

fn db_with_rows(rows: &[(i64, &str, &str)]) -> Connection {
    let db = Connection::open_in_memory().unwrap();
    register(&db).unwrap();
    db.execute_batch(
        "CREATE VIRTUAL TABLE t USING fts5(a, b, content = '', contentless_delete = 1);
         CREATE TABLE meta (id INTEGER PRIMARY KEY, lang TEXT);",
    )
    .unwrap();
    for (id, a, b) in rows {
        db.execute(
            "INSERT INTO t (rowid, a, b) VALUES (?1, ?2, ?3)",
            rusqlite::params![id, a, b],
        )
        .unwrap();
        let lang = if id % 3 == 0 { "x" } else { "y" };
        db.execute(
            "INSERT INTO meta VALUES (?1, ?2)",
            rusqlite::params![id, lang],
        )
        .unwrap();
    }
    db
}

fn ranked(db: &Connection, func: &str, query: &str, filter: bool, limit: i64) -> Vec<(i64, f64)> {
    let (join, cond) = if filter {
        ("JOIN meta m ON m.id = t.rowid", " AND m.lang = 'y'")
    } else {
        ("", "")
    };
    let args = if func == "bm25" {
        "t, 4.0, 1.0".to_string()
    } else {
        format!("t, {limit}, 't', ?1, 4.0, 1.0")
    };
    let sql = format!(
        "SELECT t.rowid, {func}({args}) AS rank FROM t {join} WHERE t MATCH ?1{cond}
         ORDER BY rank, t.rowid DESC LIMIT {limit}"
    );
    let mut stmt = db.prepare(&sql).unwrap();
    let rows = stmt
        .query_map([query], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap();
    rows.collect::<rusqlite::Result<Vec<_>>>().unwrap()
}

/// A table of rows of many lengths and term counts, made by a fixed generator.
fn corpus_db() -> Connection {
    let words = [
        "alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta",
    ];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let rows: Vec<(i64, String, String)> = (1..=600)
        .map(|id| {
            let mut text = |max: u64| {
                let n = next() % max;
                (0..n)
                    .map(|_| words[(next() % words.len() as u64) as usize])
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            (id, text(4), text(60))
        })
        .collect();
    let rows: Vec<(i64, &str, &str)> = rows
        .iter()
        .map(|(i, a, b)| (*i, a.as_str(), b.as_str()))
        .collect();
    db_with_rows(&rows)
}

#[test]
fn the_best_rows_and_their_scores_are_bm25s() {
    let db = corpus_db();
    let queries = [
        r#""alpha""#,
        r#""alpha" OR "beta""#,
        r#""alpha" AND "gamma""#,
        r#""beta gamma" OR "eta""#,
        r#"("theta" OR "zeta") AND "eps""#,
        // Not as engram writes them: ranked without kept counts.
        "theta OR zeta OR eps",
    ];
    // Twice: the second round uses the counts the first kept.
    for _round in 0..2 {
        for query in queries {
            for filter in [false, true] {
                for limit in [1, 5, 40, 1000] {
                    let want = ranked(&db, "bm25", query, filter, limit);
                    let got = ranked(&db, BM25_TOP, query, filter, limit);
                    assert!(!want.is_empty(), "{query}: no rows");
                    assert_eq!(got, want, "{query}, filter {filter}, limit {limit}");
                }
            }
        }
    }
}

#[test]
fn rows_that_cannot_make_the_cut_are_not_measured() {
    // The point of the function: most rows of a common word get their bound. Seen
    // through the values: a bound is the score at the least length the row can
    // have, rarely its real one, so rows given their bound differ from bm25's value.
    let db = corpus_db();
    let all = |func: &str, limit: i64| -> Vec<(i64, f64)> {
        let args = if func == "bm25" {
            "t, 4.0, 1.0".into()
        } else {
            format!("t, {limit}, NULL, NULL, 4.0, 1.0")
        };
        let sql =
            format!("SELECT rowid, {func}({args}) FROM t WHERE t MATCH 'alpha' ORDER BY rowid");
        let mut stmt = db.prepare(&sql).unwrap();
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
        rows.collect::<rusqlite::Result<Vec<_>>>().unwrap()
    };
    let exact = all("bm25", 0);
    let top = all(BM25_TOP, 5);
    assert_eq!(exact.len(), top.len());
    let bounded = exact.iter().zip(&top).filter(|(e, t)| e.1 != t.1).count();
    // (In this corpus 30% of them; over a common word in real code, most.)
    assert!(
        bounded * 5 > exact.len(),
        "{bounded} of {} rows bounded",
        exact.len()
    );
    // A bound is a score at least the exact one: as a rank, never above it.
    for (e, t) in exact.iter().zip(&top) {
        assert!(t.1 <= e.1, "row {}: bound {} above exact {}", e.0, t.1, e.1);
    }
    // Limit 0 ranks every row exactly.
    assert_eq!(all(BM25_TOP, 0), exact);
}

#[test]
fn kept_counts_are_dropped_when_the_database_changes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    let open = || {
        let db = Connection::open(&path).unwrap();
        db.pragma_update(None, "journal_mode", "WAL").unwrap();
        register(&db).unwrap();
        db
    };
    let (a, b) = (open(), open());
    a.execute_batch(
        "CREATE VIRTUAL TABLE t USING fts5(a, b, content = '', contentless_delete = 1);
         CREATE TABLE meta (id INTEGER PRIMARY KEY, lang TEXT);",
    )
    .unwrap();
    let insert = |db: &Connection, id: i64, text: &str| {
        db.execute(
            "INSERT INTO t (rowid, a, b) VALUES (?1, '', ?2)",
            rusqlite::params![id, text],
        )
        .unwrap();
    };
    for id in 1..=50 {
        insert(
            &a,
            id,
            if id % 5 == 0 {
                "alpha beta"
            } else {
                "beta gamma gamma"
            },
        );
    }
    let query = r#""alpha" OR "gamma""#;
    let same = |db: &Connection, when: &str| {
        assert_eq!(
            ranked(db, BM25_TOP, query, false, 10),
            ranked(db, "bm25", query, false, 10),
            "{when}"
        );
    };
    same(&a, "first");
    // Another connection's commit makes "alpha" common: its IDF falls.
    for id in 51..=120 {
        insert(&b, id, "alpha alpha");
    }
    same(&a, "after another connection's commit");
    // This connection's own change, inside a transaction not yet committed.
    a.execute_batch("BEGIN").unwrap();
    for id in 121..=200 {
        insert(&a, id, "gamma");
    }
    same(&a, "inside a transaction");
    a.execute_batch("ROLLBACK").unwrap();
    same(&a, "after its rollback");
}

#[test]
fn phrases_are_read_as_written() {
    assert_eq!(
        quoted_phrases(r#"("parsehttp" OR ("parse" AND "http")) AND "a""b""#),
        ["parsehttp", "parse", "http", "a\"b"]
    );
    assert!(quoted_phrases("alpha OR beta").is_empty());
}
