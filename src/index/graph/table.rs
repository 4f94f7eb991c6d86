//! The code graph's tables in `tracker.db`, part of the code projection: one row per
//! file with a `refs:` record (`code_ref_files`), one per call (`code_calls`) and one
//! per imported name (`code_imports`), each tagged with the sequence number of the
//! record that wrote it so a put replaces and a tombstone removes exactly that file's
//! rows. A tag in log order puts a batch's rows at the right-most pages of the `file`
//! indexes; the key hash it replaced scattered them over all their pages.
//! Nothing here is not in the log.

use rusqlite::{params, Connection};

use super::record;
use crate::store::Result;

pub(crate) const CREATE: &str = "
    CREATE TABLE IF NOT EXISTS code_ref_files (
        seq INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, lang TEXT NOT NULL,
        graph INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS code_calls (
        file INTEGER NOT NULL, path TEXT NOT NULL, name TEXT NOT NULL, qual TEXT NOT NULL,
        line INTEGER NOT NULL, col INTEGER NOT NULL, kind TEXT NOT NULL, caller TEXT,
        recv TEXT);
    CREATE INDEX IF NOT EXISTS code_calls_by_file ON code_calls (file);
    CREATE INDEX IF NOT EXISTS code_calls_by_name ON code_calls (name);
    CREATE INDEX IF NOT EXISTS code_calls_by_caller ON code_calls (caller);
    CREATE TABLE IF NOT EXISTS code_imports (
        file INTEGER NOT NULL, path TEXT NOT NULL, module TEXT NOT NULL, name TEXT,
        bind TEXT, line INTEGER NOT NULL);
    CREATE INDEX IF NOT EXISTS code_imports_by_file ON code_imports (file);
    CREATE INDEX IF NOT EXISTS code_imports_by_path ON code_imports (path);
    CREATE INDEX IF NOT EXISTS code_imports_by_name ON code_imports (name);";

pub(crate) const DROP: &str = "DROP TABLE IF EXISTS code_ref_files;
    DROP TABLE IF EXISTS code_calls; DROP TABLE IF EXISTS code_imports;";

/// Project a `code_refs` record put with sequence number `seq` (the rows of the
/// key's previous value are gone already: see `CodeProjection::apply`); `graph` is
/// its metadata's [`record::GRAPH_VERSION`] (1 when absent).
pub(crate) fn put(
    db: &Connection,
    seq: i64,
    (path, lang, graph): (&str, &str, u32),
    body: &[u8],
) -> Result<()> {
    let body = record::parse(body);
    db.prepare_cached(
        "INSERT INTO code_ref_files (seq, path, lang, graph) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![seq, path, lang, graph])?;
    let mut call = db.prepare_cached(
        "INSERT INTO code_calls (file, path, name, qual, line, col, kind, caller, recv)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    for c in &body.calls {
        call.execute(params![
            seq,
            path,
            c.name,
            c.qual,
            c.line as i64,
            c.column as i64,
            c.kind,
            c.symbol,
            c.recv
        ])?;
    }
    let mut import = db.prepare_cached(
        "INSERT INTO code_imports (file, path, module, name, bind, line)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for i in &body.imports {
        import.execute(params![seq, path, i.module, i.name, i.bind, i.line as i64])?;
    }
    Ok(())
}

/// Remove the rows the record with sequence number `seq` wrote, if it wrote any.
pub(crate) fn delete(db: &Connection, seq: i64) -> Result<()> {
    let had = db
        .prepare_cached("DELETE FROM code_ref_files WHERE seq = ?1")?
        .execute([seq])?;
    if had > 0 {
        db.prepare_cached("DELETE FROM code_calls WHERE file = ?1")?
            .execute([seq])?;
        db.prepare_cached("DELETE FROM code_imports WHERE file = ?1")?
            .execute([seq])?;
    }
    Ok(())
}

/// Paths that have a `refs:` record of this build's extraction: a file indexed
/// before the graph existed, or before its record learned what this one knows
/// ([`record::GRAPH_VERSION`]), is indexed again.
pub(crate) fn graphed_paths(db: &Connection) -> Result<std::collections::HashSet<String>> {
    let mut stmt = db.prepare("SELECT path FROM code_ref_files WHERE graph >= ?1")?;
    let rows = stmt.query_map([record::GRAPH_VERSION], |r| r.get::<_, String>(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
