//! The index bench's SQLite baseline: SQLite inserting the rows a cold index wrote.
//!
//! The rows are read back from an indexed store: every file, chunk and symbol record
//! (key, metadata as JSON, body), each chunk's vector, and the full-text columns
//! engram indexes (a chunk's path and text; a symbol's qualified name, and its
//! signature and doc). SQLite (WAL, `synchronous=FULL`, the durability of engram's
//! default `always`) inserts them into one table keyed by the record's key, plus two
//! contentless FTS5 tables with engram's tokenizer, `batch` rows a transaction.
//!
//! The baseline is charged only for storing: it gets the rows already walked, read,
//! parsed, chunked and embedded. engram's side is the whole `index` from the files.

use engram::embed::Embedder;
use engram::store::Store;
use std::time::Instant;

/// What a record adds to the full-text index.
pub enum Fts {
    None,
    /// A chunk: its path and text.
    Chunk {
        path: String,
        text: String,
    },
    /// A symbol: its qualified name, and its signature and doc.
    Symbol {
        name: String,
        detail: String,
    },
}

/// One record as the baseline inserts it.
pub struct Row {
    key: String,
    meta: String,
    body: Vec<u8>,
    vector: Option<Vec<u8>>,
    fts: Fts,
}

/// Every code record `store` holds (files, chunks, symbols), with each chunk's
/// vector from the store's embedder.
pub fn indexed_rows(store: &Store) -> Vec<Row> {
    let hashes: Vec<i64> = store
        .with_tracker(|db| {
            let mut stmt = db.prepare(
                "SELECT key_hash FROM code_files UNION ALL SELECT key_hash FROM code_chunks
                 UNION ALL SELECT key_hash FROM code_symbols",
            )?;
            let rows = stmt.query_map([], |r| r.get(0))?;
            Ok(rows.collect::<rusqlite::Result<Vec<i64>>>()?)
        })
        .expect("code keys");
    let mut rows = Vec::with_capacity(hashes.len());
    for h in hashes {
        let key = store
            .key_for_hash(h as u64)
            .expect("key")
            .expect("a tracked key");
        let rec = store.get(&key).expect("get").expect("a live record");
        let s = |f: &str| {
            rec.meta
                .get(f)
                .and_then(|v| v.as_str())
                .unwrap_or("")
                .to_string()
        };
        let fts = match rec.meta.get("type").and_then(|v| v.as_str()) {
            Some(engram::index::CHUNK_TYPE) => Fts::Chunk {
                path: s("path"),
                text: String::from_utf8_lossy(&rec.body).into_owned(),
            },
            Some(engram::index::SYMBOL_TYPE) => Fts::Symbol {
                name: s("qualified_name"),
                detail: format!("{}\n{}", s("signature"), s("doc")),
            },
            _ => Fts::None,
        };
        rows.push(Row {
            meta: serde_json::Value::Object(rec.meta).to_string(),
            key,
            body: rec.body,
            vector: None,
            fts,
        });
    }
    // The chunks' vectors, computed here so the baseline only stores them.
    let embedder = engram::embed::default_embedder();
    let chunk_rows: Vec<usize> = (0..rows.len())
        .filter(|&i| matches!(rows[i].fts, Fts::Chunk { .. }))
        .collect();
    for batch in chunk_rows.chunks(256) {
        let texts: Vec<&str> = batch
            .iter()
            .map(|&i| match &rows[i].fts {
                Fts::Chunk { text, .. } => text.as_str(),
                _ => unreachable!("only chunk rows are batched"),
            })
            .collect();
        let vectors = embedder.embed(&texts).expect("embed");
        for (&i, v) in batch.iter().zip(vectors) {
            rows[i].vector = Some(v.iter().flat_map(|x| x.to_le_bytes()).collect());
        }
    }
    rows
}

/// How many rows of each kind, for the bench's line.
pub fn counts(rows: &[Row]) -> (usize, usize, usize) {
    let chunks = rows
        .iter()
        .filter(|r| matches!(r.fts, Fts::Chunk { .. }))
        .count();
    let symbols = rows
        .iter()
        .filter(|r| matches!(r.fts, Fts::Symbol { .. }))
        .count();
    (rows.len() - chunks - symbols, chunks, symbols)
}

/// Seconds for SQLite (WAL, synchronous=FULL) to insert `rows`, `batch` a transaction,
/// into a new database under `dir`.
pub fn insert_rows(dir: &std::path::Path, rows: &[Row], batch: usize) -> f64 {
    let mut db = rusqlite::Connection::open(dir.join("baseline.db")).expect("open sqlite");
    db.pragma_update(None, "journal_mode", "WAL").expect("wal");
    db.pragma_update(None, "synchronous", "FULL").expect("sync");
    db.execute_batch(
        "CREATE TABLE records (key TEXT PRIMARY KEY, meta TEXT NOT NULL, body BLOB NOT NULL, vector BLOB);
         CREATE VIRTUAL TABLE chunks_fts USING fts5(path, text, content = '',
            tokenize = 'porter unicode61 remove_diacritics 2');
         CREATE VIRTUAL TABLE symbols_fts USING fts5(name, detail, content = '',
            tokenize = 'porter unicode61 remove_diacritics 2');",
    )
    .expect("schema");
    let start = Instant::now();
    for part in rows.chunks(batch) {
        let tx = db.transaction().expect("tx");
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO records (key, meta, body, vector) VALUES (?1, ?2, ?3, ?4)",
                )
                .expect("prepare");
            let mut chunk_fts = tx
                .prepare_cached("INSERT INTO chunks_fts (rowid, path, text) VALUES (?1, ?2, ?3)")
                .expect("prepare chunk fts");
            let mut symbol_fts = tx
                .prepare_cached("INSERT INTO symbols_fts (rowid, name, detail) VALUES (?1, ?2, ?3)")
                .expect("prepare symbol fts");
            for r in part {
                insert
                    .execute(rusqlite::params![r.key, r.meta, r.body, r.vector])
                    .expect("insert");
                let rowid = tx.last_insert_rowid();
                match &r.fts {
                    Fts::Chunk { path, text } => chunk_fts
                        .execute(rusqlite::params![rowid, path, text])
                        .expect("chunk fts"),
                    Fts::Symbol { name, detail } => symbol_fts
                        .execute(rusqlite::params![rowid, name, detail])
                        .expect("symbol fts"),
                    Fts::None => 0,
                };
            }
        }
        tx.commit().expect("commit");
    }
    let secs = start.elapsed().as_secs_f64();
    let count: i64 = db
        .query_row("SELECT count(*) FROM records", [], |r| r.get(0))
        .expect("count");
    assert_eq!(count as usize, rows.len(), "every row inserted");
    secs
}
