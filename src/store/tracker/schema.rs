//! The tracker's schema: making its tables, and knowing with one read when they are
//! already this build's.
//!
//! Every writable open used to run the whole schema (`CREATE … IF NOT EXISTS` of the
//! core tables and every projection's, thirteen statements and more through SQLite's
//! parser) to find that nothing was missing. A tracker whose schema this build made
//! carries a mark in its `meta` table: a hash of the core DDL and the projections'
//! names and versions, and how many entries `sqlite_master` held once it was made.
//! An open reads the mark and the count in one statement; only a tracker without the
//! mark, with another mark or with an entry missing (or any error reading them) runs
//! the DDL, exactly as before. The mark says nothing about rows: damage, another
//! store's tracker, a tracker behind the log are found where they were (bookkeeping,
//! `quick_check`), since the DDL never read a row either.
//!
//! This module must never drop or rewrite rows: it creates what is missing.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use super::{schema_fingerprint, Projection};
use crate::key::hash64;
use crate::store::error::{Result, StoreError};

/// The core tables; the projections add theirs.
const CORE_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS records (
    seq INTEGER PRIMARY KEY, key_hash INTEGER NOT NULL UNIQUE, key TEXT NOT NULL,
    offset INTEGER NOT NULL, length INTEGER NOT NULL, timestamp_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS vectors (
    key_hash INTEGER NOT NULL, embedder TEXT NOT NULL, offset INTEGER NOT NULL,
    dim INTEGER NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (key_hash, embedder)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS embedders (
    name TEXT PRIMARY KEY, dim INTEGER NOT NULL, count INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
";

/// The `meta` row holding the schema's mark.
const MARK_ROW: &str = "schema_ddl";

/// The mark of the schema `projections` make with the core tables, without the
/// count: the core DDL's text is hashed, so an edit to it that forgot to bump the
/// core version still runs the DDL.
fn mark_of(projections: &[&dyn Projection]) -> String {
    let mut text = String::from(CORE_SCHEMA);
    text.push_str(&schema_fingerprint(projections));
    format!("{:016x}", hash64(&text))
}

/// The mark this build expects, and the tracker's mark and `sqlite_master`'s count,
/// read in one statement. `None` on any error (no `meta` table, a damaged file):
/// then the DDL runs and meets the error as it always did.
fn read_mark(db: &Connection) -> Option<(Option<String>, i64)> {
    db.prepare_cached(
        "SELECT (SELECT value FROM meta WHERE name = 'schema_ddl'), (SELECT count(*) FROM sqlite_master)",
    )
    .and_then(|mut s| s.query_row([], |r| Ok((r.get(0)?, r.get(1)?))))
    .ok()
}

/// Whether the tracker behind `db` holds this build's schema, whole, as made by
/// [`create_schema`] or [`reset`] (one read).
fn is_current(db: &Connection, projections: &[&dyn Projection]) -> bool {
    let Some((Some(mark), count)) = read_mark(db) else {
        return false;
    };
    mark == format!("{}:{count}", mark_of(projections))
}

/// Make the schema where it is not this build's, whole; `true` when the database
/// held no schema at all before (see [`create_schema`]).
pub(super) fn ensure(db: &mut Connection, projections: &[&dyn Projection]) -> Result<bool> {
    if is_current(db, projections) {
        return Ok(false);
    }
    // Tables that exist already need no write: `CREATE … IF NOT EXISTS` of an existing
    // one only reads. So the schema is first made in a DEFERRED transaction, and an
    // open never waits for a writer's transaction, however long (a streamed batch
    // applied while it is written holds one for the whole batch). When something is
    // missing the upgrade to a write fails at once with BUSY if another connection
    // writes, and it is done again in one IMMEDIATE transaction, so processes opening
    // a new store at once queue on the busy handler.
    match create_schema(db, projections, TransactionBehavior::Deferred) {
        Err(StoreError::Sqlite(rusqlite::Error::SqliteFailure(e, _)))
            if e.code == rusqlite::ErrorCode::DatabaseBusy =>
        {
            create_schema(db, projections, TransactionBehavior::Immediate)
        }
        other => other,
    }
}

/// Create what is missing, in one transaction; `true` when the database held no
/// schema at all before (read in the same transaction, so no other process's tables
/// can be among what it then holds). Leaves the mark when it was not there, so the
/// next open skips this.
pub(crate) fn create_schema(
    db: &mut Connection,
    projections: &[&dyn Projection],
    behavior: TransactionBehavior,
) -> Result<bool> {
    let tx = db.transaction_with_behavior(behavior)?;
    let empty: bool = tx.query_row("SELECT count(*) = 0 FROM sqlite_master", [], |r| r.get(0))?;
    make_tables(&tx, projections)?;
    write_mark(&tx, projections)?;
    tx.commit()?;
    Ok(empty)
}

fn make_tables(db: &Connection, projections: &[&dyn Projection]) -> Result<()> {
    db.execute_batch(CORE_SCHEMA)?;
    for p in projections {
        p.create(db)?;
    }
    Ok(())
}

/// Write the mark of the schema as it now is, unless it is there already: an open
/// of a complete tracker must stay a read (see `tracker::open_reporting`).
fn write_mark(db: &Connection, projections: &[&dyn Projection]) -> Result<()> {
    let count: i64 = db.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
    let mark = format!("{}:{count}", mark_of(projections));
    let old: Option<String> = db
        .query_row("SELECT value FROM meta WHERE name = ?1", [MARK_ROW], |r| {
            r.get(0)
        })
        .optional()?;
    if old.as_deref() != Some(mark.as_str()) {
        db.execute(
            "INSERT OR REPLACE INTO meta (name, value) VALUES (?1, ?2)",
            [MARK_ROW, mark.as_str()],
        )?;
    }
    Ok(())
}

/// Drop every table (core and projections) and create them empty, marked.
pub fn reset(db: &Connection, projections: &[&dyn Projection]) -> Result<()> {
    db.execute_batch(
        "DROP TABLE IF EXISTS records; DROP TABLE IF EXISTS vectors; DROP TABLE IF EXISTS embedders; DROP TABLE IF EXISTS meta;",
    )?;
    for p in projections {
        p.drop_tables(db)?;
    }
    make_tables(db, projections)?;
    write_mark(db, projections)
}

#[cfg(test)]
mod tests;
