//! The `memories` query tables in `tracker.db`, derived from memory records.
//!
//! `memories` holds one row per live memory for listing and filtering;
//! `memories_fts` is the FTS5 keyword index over text and tags, with code-aware
//! tokens (see [`crate::fts::index_text`]), its rows keyed by the `seq` of the record
//! that wrote the memory's current value (`memories.seq`). Both are rebuilt from the log whenever
//! the version below changes; nothing is stored here that is not in the log.

use rusqlite::{params, Connection, OptionalExtension};
use serde_json::Value;

use super::model::{MEMORY_TYPE, PLAIN_KIND};
use crate::fts::index_text;
use crate::store::{Change, CheckedTable, Projection, Result, RowsOf};

/// How many bytes of pending terms `memories_fts` holds in memory before writing them
/// out as a new segment (FTS5's `hashsize`; its default is 1 MiB). An import of 20,000
/// memories of 1 KiB, one transaction, flushed about 20 segments and spent a third of
/// its full-text time flushing and merging them; 8 MiB made the same inserts about 18%
/// faster in a plain FTS5 table (32 MiB was no better). Only a large batch fills it:
/// the pending terms are written at every commit whatever their size.
const FTS_PENDING_BYTES: i64 = 8 << 20;

/// Projection of memory records into `memories` and `memories_fts`.
pub struct MemoryProjection;

impl Projection for MemoryProjection {
    fn name(&self) -> &'static str {
        "memories"
    }

    fn version(&self) -> u32 {
        // 8: no second copy of the text in `memories`; labels keyed by `seq`.
        // 9: `memories` keyed by `seq`, with a unique index on `key_hash`.
        9
    }

    fn create(&self, db: &Connection) -> rusqlite::Result<()> {
        let fresh: bool = db.query_row(
            "SELECT NOT EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'memories_fts')",
            [],
            |r| r.get(0),
        )?;
        db.execute_batch(
            "CREATE TABLE IF NOT EXISTS memories (
                seq INTEGER PRIMARY KEY, key_hash INTEGER NOT NULL UNIQUE, id TEXT NOT NULL,
                tags TEXT NOT NULL, metadata TEXT NOT NULL,
                created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL);
             CREATE INDEX IF NOT EXISTS memories_by_update ON memories (updated_ms, seq);
             CREATE TABLE IF NOT EXISTS memory_versions (
                key_hash INTEGER NOT NULL, seq INTEGER NOT NULL, offset INTEGER NOT NULL,
                PRIMARY KEY (key_hash, seq)) WITHOUT ROWID;
             CREATE TABLE IF NOT EXISTS memory_labels (
                label TEXT NOT NULL, seq INTEGER NOT NULL,
                PRIMARY KEY (label, seq)) WITHOUT ROWID;
             CREATE INDEX IF NOT EXISTS memory_labels_by_seq ON memory_labels (seq);
             CREATE TABLE IF NOT EXISTS memory_edges (
                src TEXT NOT NULL, rel TEXT NOT NULL, dst TEXT NOT NULL, owner INTEGER NOT NULL,
                PRIMARY KEY (src, rel, dst, owner)) WITHOUT ROWID;
             CREATE INDEX IF NOT EXISTS memory_edges_by_dst ON memory_edges (dst);
             CREATE INDEX IF NOT EXISTS memory_edges_by_owner ON memory_edges (owner);
             CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
                text, tags, content = '', contentless_delete = 1,
                tokenize = 'unicode61 remove_diacritics 2');",
        )?;
        if fresh {
            // Set once, when the table is made: every open runs `create`, and a write
            // there would cost each open a WAL frame.
            db.execute(
                "INSERT INTO memories_fts (memories_fts, rank) VALUES ('hashsize', ?1)",
                [FTS_PENDING_BYTES],
            )?;
        }
        Ok(())
    }

    fn checked_tables(&self) -> Vec<CheckedTable> {
        vec![
            CheckedTable::new("memories", RowsOf::Seq("seq")).one_per(MEMORY_TYPE),
            CheckedTable::new("memories_fts", RowsOf::Seq("rowid")).one_per(MEMORY_TYPE),
            CheckedTable::new("memory_labels", RowsOf::Seq("seq")),
            CheckedTable::new("memory_edges", RowsOf::KeyHash("owner")),
            // Every value a live memory had keeps its row (history).
            CheckedTable::new("memory_versions", RowsOf::KeyHash("key_hash")).history(),
        ]
    }

    fn drop_tables(&self, db: &Connection) -> rusqlite::Result<()> {
        db.execute_batch(
            "DROP TABLE IF EXISTS memories; DROP TABLE IF EXISTS memories_fts; DROP TABLE IF EXISTS memory_versions; DROP TABLE IF EXISTS memory_labels; DROP TABLE IF EXISTS memory_edges;",
        )
    }

    fn apply(&self, db: &Connection, change: &Change<'_>) -> Result<()> {
        match change {
            Change::Put {
                key,
                key_hash,
                seq,
                meta,
                body,
                offset,
                replaces,
                ..
            } => {
                let h = *key_hash as i64;
                if meta.get("type").and_then(Value::as_str) != Some(MEMORY_TYPE) {
                    // The key may have held a memory before; it no longer does.
                    if *replaces {
                        delete(db, h)?;
                    }
                    return Ok(());
                }
                // `from_utf8` first: it checks ASCII a word at a time, where the lossy
                // walk (2% of an import's applying thread) goes byte by byte.
                let text = match std::str::from_utf8(body) {
                    Ok(text) => std::borrow::Cow::Borrowed(text),
                    Err(_) => String::from_utf8_lossy(body),
                };
                let tags: Vec<&str> = meta
                    .get("tags")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                // Serialised from the record's map, not from a copy of it.
                let metadata = meta
                    .get("metadata")
                    .map_or_else(|| "{}".to_string(), Value::to_string);
                let num = |k: &str| meta.get(k).and_then(Value::as_u64).unwrap_or(0) as i64;
                let previous = if *replaces { fts_rowid(db, h)? } else { None };
                db.prepare_cached(
                    "INSERT INTO memories (key_hash, id, tags, metadata, created_ms, updated_ms, seq)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                     ON CONFLICT (key_hash) DO UPDATE SET id = excluded.id,
                       tags = excluded.tags, metadata = excluded.metadata,
                       created_ms = excluded.created_ms, updated_ms = excluded.updated_ms,
                       seq = excluded.seq",
                )?
                .execute(params![
                    h,
                    key,
                    serde_json::to_string(&tags).unwrap_or_else(|_| "[]".into()),
                    metadata,
                    num("created_ms"),
                    num("updated_ms"),
                    *seq as i64
                ])?;
                db.prepare_cached(
                    "INSERT INTO memory_versions (key_hash, seq, offset) VALUES (?1, ?2, ?3)
                     ON CONFLICT (key_hash, seq) DO UPDATE SET offset = excluded.offset",
                )?
                .execute(params![h, *seq as i64, *offset as i64])?;
                // A new memory has no old labels or edges to clear.
                if let Some(old) = previous {
                    db.prepare_cached("DELETE FROM memory_labels WHERE seq = ?1")?
                        .execute([old])?;
                    db.prepare_cached("DELETE FROM memory_edges WHERE owner = ?1")?
                        .execute([h])?;
                }
                write_labels(db, *seq as i64, meta)?;
                write_edges(db, h, key, meta)?;
                if let Some(old) = previous {
                    db.prepare_cached("DELETE FROM memories_fts WHERE rowid = ?1")?
                        .execute([old])?;
                }
                db.prepare_cached(
                    "INSERT INTO memories_fts (rowid, text, tags) VALUES (?1, ?2, ?3)",
                )?
                .execute(params![
                    *seq as i64,
                    index_text(&text),
                    index_text(&tags.join(" "))
                ])?;
            }
            Change::Delete { key_hash, .. } => delete(db, *key_hash as i64)?,
            Change::Event { .. } => {}
        }
        Ok(())
    }
}

/// One row per filterable value: `kind:decision` (none for a plain memory),
/// `task:debug`, `insight:decision`, `context:auth`, `tag:sqlite`, `session:…`.
/// Insert the labels of the memory whose current value the record `seq` wrote (its old
/// ones are already gone). Keyed by `seq` rather than by key hash, a batch appends to
/// the end of each label's range and of the `seq` index instead of splitting pages at
/// random places in both.
fn write_labels(db: &Connection, seq: i64, meta: &serde_json::Map<String, Value>) -> Result<()> {
    let mut labels: Vec<String> = Vec::with_capacity(8);
    let kind = meta
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or(PLAIN_KIND);
    // A plain memory, most of them, gets no kind label: its row was a fifth of an
    // import's label work. The filter finds it as the entry without one.
    if kind != PLAIN_KIND {
        labels.push(format!("kind:{kind}"));
    }
    // Typed entries are looked up by a field: a note by its name, an error by the
    // signature its recurrences share.
    let lookup = match kind {
        "note" => Some(("note", "name")),
        "error" => Some(("errsig", "signature")),
        _ => None,
    };
    if let Some((prefix, field)) = lookup {
        let value = meta
            .get("metadata")
            .and_then(|m| m.get(field))
            .and_then(Value::as_str);
        if let Some(value) = value {
            labels.push(format!("{prefix}:{value}"));
        }
    }
    // Not `provenance`: nothing filters by it, and every memory has one, so its row
    // was a fifth of an import's label work for nothing.
    for (field, prefix) in [("task", "task"), ("session", "session")] {
        if let Some(v) = meta.get(field).and_then(Value::as_str) {
            labels.push(format!("{prefix}:{v}"));
        }
    }
    for (field, prefix) in [
        ("insights", "insight"),
        ("contexts", "context"),
        ("tags", "tag"),
    ] {
        for v in meta
            .get(field)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(v) = v.as_str() {
                labels.push(format!("{prefix}:{v}"));
            }
        }
    }
    // One statement for a memory's labels (up to LABELS_AT_ONCE at a time): each
    // statement run costs more than the row it inserts.
    for group in labels.chunks(LABELS_AT_ONCE) {
        let mut insert = db.prepare_cached(labels_insert(group.len()))?;
        for (i, label) in group.iter().enumerate() {
            insert.raw_bind_parameter(2 * i + 1, label)?;
            insert.raw_bind_parameter(2 * i + 2, seq)?;
        }
        insert.raw_execute()?;
    }
    Ok(())
}

/// Labels one insert statement takes at most.
const LABELS_AT_ONCE: usize = 8;

/// The insert of `n` labels (1 to [`LABELS_AT_ONCE`]).
fn labels_insert(n: usize) -> &'static str {
    const SQL: [&str; LABELS_AT_ONCE] = [
        "INSERT OR IGNORE INTO memory_labels (label, seq) VALUES (?,?)",
        "INSERT OR IGNORE INTO memory_labels (label, seq) VALUES (?,?),(?,?)",
        "INSERT OR IGNORE INTO memory_labels (label, seq) VALUES (?,?),(?,?),(?,?)",
        "INSERT OR IGNORE INTO memory_labels (label, seq) VALUES (?,?),(?,?),(?,?),(?,?)",
        "INSERT OR IGNORE INTO memory_labels (label, seq) VALUES (?,?),(?,?),(?,?),(?,?),(?,?)",
        "INSERT OR IGNORE INTO memory_labels (label, seq) VALUES (?,?),(?,?),(?,?),(?,?),(?,?),(?,?)",
        "INSERT OR IGNORE INTO memory_labels (label, seq) VALUES (?,?),(?,?),(?,?),(?,?),(?,?),(?,?),(?,?)",
        "INSERT OR IGNORE INTO memory_labels (label, seq) VALUES (?,?),(?,?),(?,?),(?,?),(?,?),(?,?),(?,?),(?,?)",
    ];
    SQL[n.clamp(1, LABELS_AT_ONCE) - 1]
}

/// Relationships an entry states: its session includes it; it mentions, affects or
/// relates to the keys in `symbols`; an error is resolved by a change.
fn write_edges(
    db: &Connection,
    h: i64,
    id: &str,
    meta: &serde_json::Map<String, Value>,
) -> Result<()> {
    let mut insert = db.prepare_cached(
        "INSERT OR IGNORE INTO memory_edges (src, rel, dst, owner) VALUES (?1, ?2, ?3, ?4)",
    )?;
    if let Some(s) = meta.get("session").and_then(Value::as_str) {
        insert.execute(params![s, "includes", id, h])?;
    }
    let rel = match meta.get("kind").and_then(Value::as_str) {
        Some("file_change") => "affects",
        Some("decision") => "relates_to",
        _ => "mentions",
    };
    for sym in meta
        .get("symbols")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(sym) = sym.as_str() {
            insert.execute(params![id, rel, sym, h])?;
        }
    }
    if let Some(by) = meta
        .get("metadata")
        .and_then(|m| m.get("resolved_by"))
        .and_then(Value::as_str)
    {
        insert.execute(params![id, "resolved_by", by, h])?;
    }
    Ok(())
}

/// Remove the memory `h`, if it is one. Most keys passing through are not memories
/// (code chunks, symbols), so one lookup saves them five deletes, one of them in a
/// full-text index. A memory's labels, edges and versions exist only while its row does.
fn delete(db: &Connection, h: i64) -> Result<()> {
    let Some(fts_row) = fts_rowid(db, h)? else {
        return Ok(());
    };
    db.prepare_cached("DELETE FROM memory_edges WHERE owner = ?1")?
        .execute([h])?;
    db.prepare_cached("DELETE FROM memories WHERE key_hash = ?1")?
        .execute([h])?;
    db.prepare_cached("DELETE FROM memory_versions WHERE key_hash = ?1")?
        .execute([h])?;
    db.prepare_cached("DELETE FROM memory_labels WHERE seq = ?1")?
        .execute([fts_row])?;
    db.prepare_cached("DELETE FROM memories_fts WHERE rowid = ?1")?
        .execute([fts_row])?;
    Ok(())
}

/// The `memories_fts` row of the memory under key hash `h`, if there is one: the
/// `seq` of the record that wrote its current value. Keying full-text rows by `seq`
/// rather than by key hash means a batch inserts them in ascending order, which FTS5
/// appends to its pending index; a descending rowid makes it flush that index to disk
/// first, which with random key hashes happened on every other insert.
fn fts_rowid(db: &Connection, h: i64) -> Result<Option<i64>> {
    Ok(db
        .prepare_cached("SELECT seq FROM memories WHERE key_hash = ?1")?
        .query_row([h], |r| r.get(0))
        .optional()?)
}
