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

use rusqlite::{params, Connection, OptionalExtension};
use serde_json::Value;

use super::graph;
use crate::fts::index_text;
use crate::store::{Change, Projection, Result};

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
        8
    }

    fn create(&self, db: &Connection) -> rusqlite::Result<()> {
        db.execute_batch(
            "CREATE TABLE IF NOT EXISTS code_files (
                key_hash INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, lang TEXT NOT NULL,
                size INTEGER NOT NULL, mtime_ms INTEGER NOT NULL, hash TEXT NOT NULL,
                chunks INTEGER NOT NULL, embedder TEXT NOT NULL, symbols INTEGER NOT NULL,
                imports TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS code_chunks (
                seq INTEGER PRIMARY KEY, key_hash INTEGER NOT NULL UNIQUE, path TEXT NOT NULL,
                chunk_id INTEGER NOT NULL, lang TEXT NOT NULL, start_line INTEGER NOT NULL,
                end_line INTEGER NOT NULL, symbol TEXT);
             CREATE INDEX IF NOT EXISTS code_chunks_by_path ON code_chunks (path, start_line);
             CREATE TABLE IF NOT EXISTS code_symbols (
                seq INTEGER PRIMARY KEY, key_hash INTEGER NOT NULL UNIQUE, path TEXT NOT NULL,
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
                replaces,
                ..
            } => {
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
                            "INSERT INTO code_files (key_hash, path, lang, size, mtime_ms, hash, chunks, embedder, symbols, imports)
                             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
                             ON CONFLICT (key_hash) DO UPDATE SET path = excluded.path, lang = excluded.lang,
                               size = excluded.size, mtime_ms = excluded.mtime_ms, hash = excluded.hash,
                               chunks = excluded.chunks, embedder = excluded.embedder,
                               symbols = excluded.symbols, imports = excluded.imports",
                        )?
                        .execute(params![h, s("path"), s("lang"), n("size"), n("mtime_ms"), s("hash"), n("chunks"), s("embedder"), n("symbols"),
                            meta.get("imports").map(Value::to_string).unwrap_or_else(|| "[]".into())])?;
                    }
                    Some(CHUNK_TYPE) => {
                        let previous = if *replaces {
                            fts_rowid(db, CHUNK_SEQ, h)?
                        } else {
                            None
                        };
                        db.prepare_cached(
                            "INSERT INTO code_chunks (key_hash, path, chunk_id, lang, start_line, end_line, symbol, seq)
                             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                             ON CONFLICT (key_hash) DO UPDATE SET path = excluded.path,
                               chunk_id = excluded.chunk_id, lang = excluded.lang,
                               start_line = excluded.start_line, end_line = excluded.end_line,
                               symbol = excluded.symbol, seq = excluded.seq",
                        )?
                        .execute(params![h, s("path"), n("chunk_id"), s("lang"), n("start_line"), n("end_line"),
                            meta.get("symbol").and_then(Value::as_str), seq])?;
                        if let Some(old) = previous {
                            db.prepare_cached("DELETE FROM code_fts WHERE rowid = ?1")?
                                .execute([old])?;
                        }
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
                        let previous = if *replaces {
                            fts_rowid(db, SYMBOL_SEQ, h)?
                        } else {
                            None
                        };
                        db.prepare_cached(
                            "INSERT INTO code_symbols (key_hash, path, lang, name, qualified_name, kind, start_line, end_line, signature, seq)
                             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
                             ON CONFLICT (key_hash) DO UPDATE SET path = excluded.path, lang = excluded.lang,
                               name = excluded.name, qualified_name = excluded.qualified_name,
                               kind = excluded.kind, start_line = excluded.start_line,
                               end_line = excluded.end_line, signature = excluded.signature,
                               seq = excluded.seq",
                        )?
                        .execute(params![h, s("path"), s("lang"), s("name"), s("qualified_name"), s("kind"),
                            n("start_line"), n("end_line"), s("signature"), seq])?;
                        if let Some(old) = previous {
                            db.prepare_cached("DELETE FROM code_symbols_fts WHERE rowid = ?1")?
                                .execute([old])?;
                        }
                        // Names are matched by their words too (`parse_request` by
                        // `parse request`); signature and doc say what it is.
                        let detail = format!("{}\n{}", s("signature"), s("doc"));
                        db.prepare_cached(
                            "INSERT INTO code_symbols_fts (rowid, name, detail) VALUES (?1, ?2, ?3)",
                        )?
                        .execute(params![seq, index_text(&s("qualified_name")), index_text(&detail)])?;
                    }
                    Some(graph::REFS_TYPE) => {
                        graph::table::put(db, h, &s("path"), &s("lang"), body, *replaces)?;
                    }
                    // The key may have been code before; a new key was nothing.
                    _ if *replaces => delete(db, h)?,
                    _ => {}
                }
            }
            Change::Delete { key_hash, .. } => delete(db, *key_hash as i64)?,
            Change::Event { .. } => {}
        }
        Ok(())
    }
}

/// Remove whatever row `h` has here. Each full-text delete is issued only when the
/// key has a row: most keys passing through are not code at all (memories), and a
/// write to an FTS5 table is far dearer than a lookup.
fn delete(db: &Connection, h: i64) -> Result<()> {
    graph::table::delete(db, h)?;
    if has_row(db, "SELECT 1 FROM code_files WHERE key_hash = ?1", h)? {
        db.prepare_cached("DELETE FROM code_files WHERE key_hash = ?1")?
            .execute([h])?;
    }
    if let Some(fts_row) = fts_rowid(db, CHUNK_SEQ, h)? {
        db.prepare_cached("DELETE FROM code_chunks WHERE key_hash = ?1")?
            .execute([h])?;
        db.prepare_cached("DELETE FROM code_fts WHERE rowid = ?1")?
            .execute([fts_row])?;
    }
    if let Some(fts_row) = fts_rowid(db, SYMBOL_SEQ, h)? {
        db.prepare_cached("DELETE FROM code_symbols WHERE key_hash = ?1")?
            .execute([h])?;
        db.prepare_cached("DELETE FROM code_symbols_fts WHERE rowid = ?1")?
            .execute([fts_row])?;
    }
    Ok(())
}

const CHUNK_SEQ: &str = "SELECT seq FROM code_chunks WHERE key_hash = ?1";
const SYMBOL_SEQ: &str = "SELECT seq FROM code_symbols WHERE key_hash = ?1";

/// The full-text row of the chunk or symbol under key hash `h` (`sql` is
/// [`CHUNK_SEQ`] or [`SYMBOL_SEQ`]), if it has one: the `seq` of the record that wrote
/// it. Full-text rows are keyed by `seq` rather than by key hash so that a batch
/// inserts them in ascending order, which FTS5 appends to its pending index; a
/// descending rowid makes it flush that index first, which with random key hashes
/// happened on every other insert.
fn fts_rowid(db: &Connection, sql: &str, h: i64) -> Result<Option<i64>> {
    Ok(db
        .prepare_cached(sql)?
        .query_row([h], |r| r.get(0))
        .optional()?)
}

fn has_row(db: &Connection, sql: &str, h: i64) -> Result<bool> {
    Ok(db.prepare_cached(sql)?.exists([h])?)
}
