//! The code tables in `tracker.db`, derived from `file:`, `chunk:` and `sym:` records:
//! `code_files` (what was indexed, for incremental re-indexing), `code_chunks` (where
//! each chunk is), `code_fts` (the keyword index over chunk text and path with
//! code-aware tokens), `code_symbols` and `code_symbols_fts` (symbol lookup by name,
//! words of the name, signature and doc), and the code graph's tables from `refs:`
//! records (`graph::table`). Both full-text tables stem English words
//! (FTS5's `porter`, queries alike), so `entries` finds `entry` and `cached` `cache`:
//! on the search eval's tune half doc queries rose from 0.437 to 0.481 MRR@10 (identifier
//! queries are answered by exact names first and did not move). Nothing here is not in
//! the log.

use rusqlite::{params, Connection};
use serde_json::Value;

use super::graph;
use crate::fts::index_text;
use crate::store::{Change, CheckedTable, Projection, Result, RowsOf};

/// Record type tags of indexed files and chunks.
pub const FILE_TYPE: &str = "code_file";
pub const CHUNK_TYPE: &str = "code_chunk";
pub const SYMBOL_TYPE: &str = "code_symbol";

/// Projection of file and chunk records.
pub struct CodeProjection;

impl Projection for CodeProjection {
    fn name(&self) -> &'static str {
        "code"
    }

    fn version(&self) -> u32 {
        // 6: `code_chunks` and `code_symbols` keyed by `seq` (appended in log order),
        // with a unique index on `key_hash`; see the core tables' version 6.
        // 7: a chunk's context line (meta `context`) is indexed before its text.
        // 8: the code graph's tables (`code_ref_files`, `code_calls`, `code_imports`).
        // 9: no index on `key_hash`: every row (files and the graph's too) carries the
        // `seq` of its record, found through `records` (one random-order index for all
        // keys rather than one per table: each rewrote most of its pages every batch).
        // 10: calls carry their receiver's type (`code_calls.recv`), files the
        // extraction's version (`code_ref_files.graph`).
        10
    }

    fn create(&self, db: &Connection) -> rusqlite::Result<()> {
        db.execute_batch(
            "CREATE TABLE IF NOT EXISTS code_files (
                seq INTEGER PRIMARY KEY, key_hash INTEGER NOT NULL, path TEXT NOT NULL UNIQUE,
                lang TEXT NOT NULL,
                size INTEGER NOT NULL, mtime_ms INTEGER NOT NULL, hash TEXT NOT NULL,
                chunks INTEGER NOT NULL, embedder TEXT NOT NULL, symbols INTEGER NOT NULL,
                imports TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS code_chunks (
                seq INTEGER PRIMARY KEY, key_hash INTEGER NOT NULL, path TEXT NOT NULL,
                chunk_id INTEGER NOT NULL, lang TEXT NOT NULL, start_line INTEGER NOT NULL,
                end_line INTEGER NOT NULL, symbol TEXT);
             CREATE INDEX IF NOT EXISTS code_chunks_by_path ON code_chunks (path, start_line);
             CREATE TABLE IF NOT EXISTS code_symbols (
                seq INTEGER PRIMARY KEY, key_hash INTEGER NOT NULL, path TEXT NOT NULL,
                lang TEXT NOT NULL, name TEXT NOT NULL, qualified_name TEXT NOT NULL,
                kind TEXT NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,
                signature TEXT NOT NULL);
             CREATE INDEX IF NOT EXISTS code_symbols_by_path ON code_symbols (path);
             CREATE INDEX IF NOT EXISTS code_symbols_by_name ON code_symbols (name COLLATE NOCASE);
             CREATE INDEX IF NOT EXISTS code_symbols_by_qname ON code_symbols (qualified_name COLLATE NOCASE);
             CREATE VIRTUAL TABLE IF NOT EXISTS code_symbols_fts USING fts5(
                name, detail, content = '', contentless_delete = 1,
                tokenize = 'porter unicode61 remove_diacritics 2');
             CREATE VIRTUAL TABLE IF NOT EXISTS code_fts USING fts5(
                path, text, content = '', contentless_delete = 1,
                tokenize = 'porter unicode61 remove_diacritics 2');",
        )?;
        db.execute_batch(graph::table::CREATE)
    }

    fn checked_tables(&self) -> Vec<CheckedTable> {
        let by_seq = |name| CheckedTable::new(name, RowsOf::Seq("seq"));
        let by_rowid = |name| CheckedTable::new(name, RowsOf::Seq("rowid"));
        vec![
            by_seq("code_files").one_per(FILE_TYPE),
            by_seq("code_chunks").one_per(CHUNK_TYPE),
            by_rowid("code_fts").one_per(CHUNK_TYPE),
            by_seq("code_symbols").one_per(SYMBOL_TYPE),
            by_rowid("code_symbols_fts").one_per(SYMBOL_TYPE),
            by_seq("code_ref_files").one_per(graph::REFS_TYPE),
            CheckedTable::new("code_calls", RowsOf::Seq("file")),
            CheckedTable::new("code_imports", RowsOf::Seq("file")),
        ]
    }

    fn drop_tables(&self, db: &Connection) -> rusqlite::Result<()> {
        db.execute_batch(
            "DROP TABLE IF EXISTS code_files; DROP TABLE IF EXISTS code_chunks; DROP TABLE IF EXISTS code_fts;
             DROP TABLE IF EXISTS code_symbols; DROP TABLE IF EXISTS code_symbols_fts;",
        )?;
        db.execute_batch(graph::table::DROP)
    }

    fn apply(&self, db: &Connection, change: &Change<'_>) -> Result<()> {
        match change {
            Change::Put {
                key_hash,
                seq,
                meta,
                body,
                previous_seq,
                ..
            } => {
                // The rows of the key's previous value go first, whatever it was (the
                // key may have been code before; a new key was nothing).
                if let Some(old) = previous_seq {
                    delete(db, *old as i64)?;
                }
                let h = *key_hash as i64;
                let seq = *seq as i64;
                let s = |k: &str| {
                    meta.get(k)
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                };
                let n = |k: &str| meta.get(k).and_then(Value::as_u64).unwrap_or(0) as i64;
                match meta.get("type").and_then(Value::as_str) {
                    Some(FILE_TYPE) => {
                        db.prepare_cached(
                            "INSERT INTO code_files (seq, key_hash, path, lang, size, mtime_ms, hash, chunks, embedder, symbols, imports)
                             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                        )?
                        .execute(params![seq, h, s("path"), s("lang"), n("size"), n("mtime_ms"), s("hash"), n("chunks"), s("embedder"), n("symbols"),
                            meta.get("imports").map(Value::to_string).unwrap_or_else(|| "[]".into())])?;
                    }
                    Some(CHUNK_TYPE) => {
                        db.prepare_cached(
                            "INSERT INTO code_chunks (seq, key_hash, path, chunk_id, lang, start_line, end_line, symbol)
                             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                        )?
                        .execute(params![seq, h, s("path"), n("chunk_id"), s("lang"), n("start_line"), n("end_line"),
                            meta.get("symbol").and_then(Value::as_str)])?;
                        // The context line (enclosing type, signature) is searched
                        // with the text: a method's lines rarely name their type.
                        let body = String::from_utf8_lossy(body);
                        let text = match meta.get("context").and_then(Value::as_str) {
                            Some(c) if !c.is_empty() => format!("{c}\n{body}"),
                            _ => body.into_owned(),
                        };
                        db.prepare_cached(
                            "INSERT INTO code_fts (rowid, path, text) VALUES (?1, ?2, ?3)",
                        )?
                        .execute(params![
                            seq,
                            index_text(&s("path")),
                            index_text(&text)
                        ])?;
                    }
                    Some(SYMBOL_TYPE) => {
                        db.prepare_cached(
                            "INSERT INTO code_symbols (seq, key_hash, path, lang, name, qualified_name, kind, start_line, end_line, signature)
                             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                        )?
                        .execute(params![seq, h, s("path"), s("lang"), s("name"), s("qualified_name"), s("kind"),
                            n("start_line"), n("end_line"), s("signature")])?;
                        // Names are matched by their words too (`parse_request` by
                        // `parse request`); signature and doc say what it is.
                        let detail = format!("{}\n{}", s("signature"), s("doc"));
                        db.prepare_cached(
                            "INSERT INTO code_symbols_fts (rowid, name, detail) VALUES (?1, ?2, ?3)",
                        )?
                        .execute(params![seq, index_text(&s("qualified_name")), index_text(&detail)])?;
                    }
                    Some(graph::REFS_TYPE) => {
                        let graph = meta.get("graph").and_then(|v| v.as_u64()).unwrap_or(1);
                        let graph = u32::try_from(graph).unwrap_or(u32::MAX);
                        graph::table::put(db, seq, (&s("path"), &s("lang"), graph), body)?;
                    }
                    _ => {}
                }
            }
            Change::Delete {
                previous_seq: Some(old),
                ..
            } => delete(db, *old as i64)?,
            Change::Delete { .. } | Change::Event { .. } => {}
        }
        Ok(())
    }
}

/// Remove whatever rows the record with sequence number `seq` wrote here: every code
/// row carries the `seq` of its record (the live value of its key, as `records` says),
/// so each lookup is by row id. Each full-text delete is issued only when the record
/// has a row: most records passing through are not code at all (memories), and a
/// write to an FTS5 table is far dearer than a lookup.
///
/// Full-text rows are keyed by `seq` too, so that a batch inserts them in ascending
/// order, which FTS5 appends to its pending index; a descending rowid makes it flush
/// that index first, which with random key hashes happened on every other insert.
fn delete(db: &Connection, seq: i64) -> Result<()> {
    graph::table::delete(db, seq)?;
    db.prepare_cached("DELETE FROM code_files WHERE seq = ?1")?
        .execute([seq])?;
    if db
        .prepare_cached("DELETE FROM code_chunks WHERE seq = ?1")?
        .execute([seq])?
        > 0
    {
        db.prepare_cached("DELETE FROM code_fts WHERE rowid = ?1")?
            .execute([seq])?;
    }
    if db
        .prepare_cached("DELETE FROM code_symbols WHERE seq = ?1")?
        .execute([seq])?
        > 0
    {
        db.prepare_cached("DELETE FROM code_symbols_fts WHERE rowid = ?1")?
            .execute([seq])?;
    }
    Ok(())
}
