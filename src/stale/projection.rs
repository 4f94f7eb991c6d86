//! The `stale` tables in `tracker.db`: the current state of every code target, the
//! anchors of live memories, the marks of anchors whose code is no longer as
//! anchored, and the callee anchors of live memories (judged when asked, by
//! `impact.rs`). Derived from code and memory records in log order, as
//! `format-spec/staleness.md` says; nothing here is not in the log, and every time kept
//! is a record's timestamp, so a rebuild gives the same tables.

use rusqlite::{params, Connection, OptionalExtension};
use serde_json::{Map, Value};

use super::target_of;
use crate::index::{FILE_TYPE, SYMBOL_TYPE};
use crate::key::hash64;
use crate::memory::{Anchor, CalleeAnchor};
use crate::store::{Change, CheckedTable, Projection, Result, RowsOf};

/// Projection of code and memory records into `stale_code`, `stale_anchors`,
/// `stale_marks`, `stale_callees` and `stale_unchecked`.
pub struct StaleProjection;

impl Projection for StaleProjection {
    fn name(&self) -> &'static str {
        "stale"
    }

    fn version(&self) -> u32 {
        // 3: a `stale_code` row names its record by `seq` (joined to `records` by row
        // id), not by key hash: the index that hash needed took each batch's rows at
        // random places and rewrote most of its pages every batch. 4: the callee
        // anchors of memories (`stale_callees`), and which memories were anchored
        // before they were recorded (`stale_unchecked`).
        4
    }

    fn create(&self, db: &Connection) -> rusqlite::Result<()> {
        db.execute_batch(
            "CREATE TABLE IF NOT EXISTS stale_code (
                target TEXT NOT NULL UNIQUE, seq INTEGER NOT NULL,
                hash TEXT NOT NULL, signature TEXT NOT NULL, lines INTEGER NOT NULL,
                kind TEXT NOT NULL);
             CREATE INDEX IF NOT EXISTS stale_code_by_hash ON stale_code (hash);
             CREATE TABLE IF NOT EXISTS stale_anchors (
                mem_hash INTEGER NOT NULL, mem_id TEXT NOT NULL, target TEXT NOT NULL,
                key TEXT NOT NULL, hash TEXT NOT NULL, signature TEXT NOT NULL,
                lines INTEGER NOT NULL, PRIMARY KEY (mem_hash, target)) WITHOUT ROWID;
             CREATE INDEX IF NOT EXISTS stale_anchors_by_target ON stale_anchors (target);
             CREATE INDEX IF NOT EXISTS stale_anchors_by_hash ON stale_anchors (hash);
             CREATE TABLE IF NOT EXISTS stale_marks (
                mem_hash INTEGER NOT NULL, mem_id TEXT NOT NULL, target TEXT NOT NULL,
                reason TEXT NOT NULL, since_ms INTEGER NOT NULL, now_key TEXT,
                now_target TEXT, signature TEXT, lines INTEGER,
                PRIMARY KEY (mem_hash, target)) WITHOUT ROWID;
             CREATE INDEX IF NOT EXISTS stale_marks_by_since ON stale_marks (since_ms);
             CREATE INDEX IF NOT EXISTS stale_marks_by_now ON stale_marks (now_target);
             CREATE TABLE IF NOT EXISTS stale_callees (
                mem_hash INTEGER NOT NULL, mem_id TEXT NOT NULL, of_target TEXT NOT NULL,
                target TEXT NOT NULL, key TEXT NOT NULL, hash TEXT NOT NULL,
                depth INTEGER NOT NULL, confidence TEXT NOT NULL,
                PRIMARY KEY (mem_hash, of_target, target)) WITHOUT ROWID;
             CREATE TABLE IF NOT EXISTS stale_unchecked (
                mem_hash INTEGER PRIMARY KEY, mem_id TEXT NOT NULL);",
        )
    }

    fn checked_tables(&self) -> Vec<CheckedTable> {
        vec![
            // A target's row is its latest code record's, which another key with the
            // same target may have taken over: tied to live records, not sampled.
            CheckedTable::new("stale_code", RowsOf::Seq("seq")).not_sampled(),
            CheckedTable::new("stale_anchors", RowsOf::KeyHash("mem_hash")),
            // Marks follow from the order of records: tied to live memories only.
            CheckedTable::new("stale_marks", RowsOf::KeyHash("mem_hash")).not_sampled(),
            CheckedTable::new("stale_callees", RowsOf::KeyHash("mem_hash")),
            CheckedTable::new("stale_unchecked", RowsOf::KeyHash("mem_hash")),
        ]
    }

    fn drop_tables(&self, db: &Connection) -> rusqlite::Result<()> {
        db.execute_batch(
            "DROP TABLE IF EXISTS stale_code; DROP TABLE IF EXISTS stale_anchors;
             DROP TABLE IF EXISTS stale_marks; DROP TABLE IF EXISTS stale_callees;
             DROP TABLE IF EXISTS stale_unchecked;",
        )
    }

    fn apply(&self, db: &Connection, change: &Change<'_>) -> Result<()> {
        match change {
            Change::Put {
                key,
                key_hash,
                seq,
                timestamp_ms,
                meta,
                replaces,
                ..
            } => match meta.get("type").and_then(Value::as_str) {
                Some(SYMBOL_TYPE) | Some(FILE_TYPE) => {
                    put_code(db, key, *seq as i64, meta, *timestamp_ms as i64)
                }
                Some(crate::memory::MEMORY_TYPE) => put_memory(
                    db,
                    key,
                    *key_hash as i64,
                    meta,
                    *timestamp_ms as i64,
                    *replaces,
                ),
                _ => Ok(()),
            },
            Change::Delete {
                key_hash,
                timestamp_ms,
                previous_seq,
                key,
                ..
            } => delete(
                db,
                *key_hash as i64,
                key.zip(*previous_seq),
                *timestamp_ms as i64,
            ),
            Change::Event { .. } => Ok(()),
        }
    }
}

/// A code record's state: its hash, signature and length.
fn code_state(meta: &Map<String, Value>, is_file: bool) -> (String, String, i64) {
    let s = |k: &str| meta.get(k).and_then(Value::as_str).unwrap_or("");
    let n = |k: &str| meta.get(k).and_then(Value::as_i64).unwrap_or(0);
    if is_file {
        return (s("hash").to_string(), String::new(), n("lines"));
    }
    let lines = (n("end_line") - n("start_line") + 1).max(0);
    let hash = match meta.get("body_hash").and_then(Value::as_str) {
        Some(h) => h.to_string(),
        // Written before symbols had body hashes: the signature and length stand in.
        None => format!("{:016x}", hash64(&format!("{}\n{lines}", s("signature")))),
    };
    (hash, s("signature").to_string(), lines)
}

fn put_code(db: &Connection, key: &str, seq: i64, meta: &Map<String, Value>, t: i64) -> Result<()> {
    let Some(target) = target_of(key) else {
        return Ok(());
    };
    let (hash, signature, lines) = code_state(meta, target.kind == "file");
    db.prepare_cached(
        "INSERT INTO stale_code (target, seq, hash, signature, lines, kind)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (target) DO UPDATE SET seq = excluded.seq,
           hash = excluded.hash, signature = excluded.signature, lines = excluded.lines",
    )?
    .execute(params![
        target.target,
        seq,
        hash,
        signature,
        lines,
        target.kind
    ])?;
    // Anchors on the target; anchors marked deleted with this hash (a rename?);
    // anchors marked renamed to this target (it may no longer match).
    let mut due = select_pairs(
        db,
        "SELECT mem_hash, target FROM stale_anchors WHERE target = ?1",
        &target.target,
    )?;
    due.extend(select_pairs(
        db,
        "SELECT a.mem_hash, a.target FROM stale_anchors a JOIN stale_marks m
           ON m.mem_hash = a.mem_hash AND m.target = a.target
         WHERE a.hash = ?1 AND m.reason = 'deleted'",
        &hash,
    )?);
    due.extend(renamed_to(db, &target.target)?);
    evaluate_all(db, due, t)
}

fn renamed_to(db: &Connection, target: &str) -> Result<Vec<(i64, String)>> {
    select_pairs(
        db,
        "SELECT mem_hash, target FROM stale_marks WHERE now_target = ?1 AND reason = 'renamed'",
        target,
    )
}

fn select_pairs(db: &Connection, sql: &str, arg: &str) -> Result<Vec<(i64, String)>> {
    let mut stmt = db.prepare_cached(sql)?;
    let rows = stmt.query_map([arg], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

fn evaluate_all(db: &Connection, mut due: Vec<(i64, String)>, t: i64) -> Result<()> {
    due.sort();
    due.dedup();
    for (m, target) in due {
        evaluate(db, m, &target, t)?;
    }
    Ok(())
}

/// `replaces`: whether the key had a live value before; a new memory has no old
/// anchors or marks to look up and clear.
fn put_memory(
    db: &Connection,
    id: &str,
    h: i64,
    meta: &Map<String, Value>,
    t: i64,
    replaces: bool,
) -> Result<()> {
    let anchors: Vec<Anchor> = match meta.get("anchors") {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|v| serde_json::from_value::<Anchor>(v.clone()).ok())
            .filter(|a| a.validate().is_ok())
            .collect(),
        _ => Vec::new(),
    };
    let mut old = Vec::new();
    if replaces {
        let mut stmt =
            db.prepare_cached("SELECT target, hash FROM stale_anchors WHERE mem_hash = ?1")?;
        let rows = stmt.query_map([h], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        })?;
        old = rows.collect::<rusqlite::Result<Vec<_>>>()?;
        db.prepare_cached("DELETE FROM stale_anchors WHERE mem_hash = ?1")?
            .execute([h])?;
    }
    put_callees(db, id, h, meta, &anchors, replaces)?;
    let mut due = Vec::new();
    for a in &anchors {
        let Some(target) = target_of(&a.key) else {
            continue;
        };
        db.prepare_cached(
            "INSERT OR REPLACE INTO stale_anchors (mem_hash, mem_id, target, key, hash, signature, lines)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?
        .execute(params![
            h,
            id,
            target.target,
            a.key,
            a.hash,
            a.signature.as_deref().unwrap_or(""),
            a.lines.unwrap_or(0).min(i64::MAX as u64) as i64
        ])?;
        due.push((h, target.target));
    }
    // A mark stays (keeping its since) only where the anchor is the same as before.
    for (target, hash) in old {
        let kept = anchors
            .iter()
            .any(|a| a.hash == hash && target_of(&a.key).is_some_and(|t| t.target == target));
        if !kept {
            db.prepare_cached("DELETE FROM stale_marks WHERE mem_hash = ?1 AND target = ?2")?
                .execute(params![h, target])?;
        }
    }
    evaluate_all(db, due, t)
}

/// A memory's rows in `stale_callees` (its callee anchors of one of its anchors), or
/// its row in `stale_unchecked` when it has a `sym:` anchor and no `callees` field
/// (written before callee anchors were recorded).
fn put_callees(
    db: &Connection,
    id: &str,
    h: i64,
    meta: &Map<String, Value>,
    anchors: &[Anchor],
    replaces: bool,
) -> Result<()> {
    if replaces {
        db.prepare_cached("DELETE FROM stale_callees WHERE mem_hash = ?1")?
            .execute([h])?;
        db.prepare_cached("DELETE FROM stale_unchecked WHERE mem_hash = ?1")?
            .execute([h])?;
    }
    let Some(Value::Array(callees)) = meta.get("callees") else {
        if anchors.iter().any(|a| a.key.starts_with("sym:")) {
            db.prepare_cached(
                "INSERT OR REPLACE INTO stale_unchecked (mem_hash, mem_id) VALUES (?1, ?2)",
            )?
            .execute(params![h, id])?;
        }
        return Ok(());
    };
    let mut insert = db.prepare_cached(
        "INSERT OR IGNORE INTO stale_callees
           (mem_hash, mem_id, of_target, target, key, hash, depth, confidence)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for c in callees
        .iter()
        .filter_map(|v| serde_json::from_value::<CalleeAnchor>(v.clone()).ok())
        .filter(|c| c.validate().is_ok())
    {
        let (Some(of), Some(target)) = (target_of(&c.of), target_of(&c.key)) else {
            continue;
        };
        let anchored = anchors
            .iter()
            .any(|a| target_of(&a.key).is_some_and(|t| t.target == of.target));
        if !anchored {
            continue;
        }
        insert.execute(params![
            h,
            id,
            of.target,
            target.target,
            c.key,
            c.hash,
            c.depth,
            c.confidence
        ])?;
    }
    Ok(())
}

/// `live`: the key deleted and the sequence number of its value, when it was live.
/// Its target's row goes only if that value wrote it last: a symbol moved to other
/// lines is a new key, and the target's row is the new key's by then.
fn delete(db: &Connection, h: i64, live: Option<(&str, u64)>, t: i64) -> Result<()> {
    let target = live.and_then(|(key, seq)| Some((target_of(key)?.target, seq as i64)));
    let removed = match &target {
        Some((target, seq)) => {
            db.prepare_cached("DELETE FROM stale_code WHERE target = ?1 AND seq = ?2")?
                .execute(params![target, seq])?
                > 0
        }
        None => false,
    };
    if let (true, Some((target, _))) = (removed, target) {
        let mut due = select_pairs(
            db,
            "SELECT mem_hash, target FROM stale_anchors WHERE target = ?1",
            &target,
        )?;
        due.extend(renamed_to(db, &target)?);
        return evaluate_all(db, due, t);
    }
    if db
        .prepare_cached("SELECT 1 FROM stale_anchors WHERE mem_hash = ?1")?
        .exists([h])?
        || db
            .prepare_cached("SELECT 1 FROM stale_marks WHERE mem_hash = ?1")?
            .exists([h])?
    {
        db.prepare_cached("DELETE FROM stale_anchors WHERE mem_hash = ?1")?
            .execute([h])?;
        db.prepare_cached("DELETE FROM stale_marks WHERE mem_hash = ?1")?
            .execute([h])?;
        // Rows there are only ever of a memory with a `sym:` anchor.
        db.prepare_cached("DELETE FROM stale_callees WHERE mem_hash = ?1")?
            .execute([h])?;
        db.prepare_cached("DELETE FROM stale_unchecked WHERE mem_hash = ?1")?
            .execute([h])?;
    }
    Ok(())
}

/// A row of `stale_code`.
pub(super) struct Code {
    pub(super) target: String,
    pub(super) key: String,
    pub(super) hash: String,
    pub(super) signature: String,
    pub(super) lines: i64,
    /// The timestamp of the live code record (when the code became what it is).
    pub(super) at_ms: i64,
}

pub(super) fn code_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Code> {
    Ok(Code {
        target: r.get(0)?,
        key: r.get(1)?,
        hash: r.get(2)?,
        signature: r.get(3)?,
        lines: r.get(4)?,
        at_ms: r.get(5)?,
    })
}

/// `stale_code` rows as [`code_row`] reads them; the key comes from `records`, which
/// holds it once for every live record (a row's `seq` is always a live record's).
pub(super) const CODE_ROW: &str =
    "SELECT c.target, r.key, c.hash, c.signature, c.lines, r.timestamp_ms
     FROM stale_code c JOIN records r ON r.seq = c.seq";

/// Where the code of a gone `target` with body `hash` lives now, if anywhere: a live
/// target of the same kind with that hash, one in the same file first, then the least
/// target in byte order (staleness.md, "Evaluating", step 3).
pub(super) fn moved_to(db: &Connection, hash: &str, target: &str) -> Result<Option<Code>> {
    let (kind, path) = target_parts(target);
    // Targets of one file's symbols share the prefix `sym:{path}#`; `$` follows `#`.
    if let Some(prefix) = target.strip_prefix("sym:").map(|_| format!("sym:{path}#")) {
        let end = format!("sym:{path}$");
        let same_file = db
            .prepare_cached(&format!(
                "{CODE_ROW} WHERE c.hash = ?1 AND c.kind = ?2 AND c.target >= ?3 AND c.target < ?4
                 ORDER BY c.target LIMIT 1"
            ))?
            .query_row(params![hash, kind, prefix, end], code_row)
            .optional()?;
        if same_file.is_some() {
            return Ok(same_file);
        }
    }
    Ok(db
        .prepare_cached(&format!(
            "{CODE_ROW} WHERE c.hash = ?1 AND c.kind = ?2 ORDER BY c.target LIMIT 1"
        ))?
        .query_row(params![hash, kind], code_row)
        .optional()?)
}

/// The kind and path of a target (`sym:{path}#{name}:{kind}` or `file:{path}`).
fn target_parts(target: &str) -> (&str, &str) {
    if let Some(rest) = target.strip_prefix("sym:") {
        let (head, kind) = rest.rsplit_once(':').unwrap_or((rest, ""));
        let path = head.split_once('#').map_or(head, |(p, _)| p);
        return (kind, path);
    }
    ("file", target.strip_prefix("file:").unwrap_or(target))
}

/// Decide one anchor at a record with timestamp `t` (staleness.md, "Evaluating").
fn evaluate(db: &Connection, mem: i64, target: &str, t: i64) -> Result<()> {
    let anchor: Option<(String, String)> = db
        .prepare_cached(
            "SELECT mem_id, hash FROM stale_anchors WHERE mem_hash = ?1 AND target = ?2",
        )?
        .query_row(params![mem, target], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let Some((mem_id, hash)) = anchor else {
        db.prepare_cached("DELETE FROM stale_marks WHERE mem_hash = ?1 AND target = ?2")?
            .execute(params![mem, target])?;
        return Ok(());
    };
    let now: Option<Code> = db
        .prepare_cached(&format!("{CODE_ROW} WHERE c.target = ?1"))?
        .query_row([target], code_row)
        .optional()?;
    let (reason, now) = match now {
        Some(c) if c.hash == hash => {
            db.prepare_cached("DELETE FROM stale_marks WHERE mem_hash = ?1 AND target = ?2")?
                .execute(params![mem, target])?;
            return Ok(());
        }
        Some(c) => ("changed", Some(c)),
        None => {
            let moved = moved_to(db, &hash, target)?;
            match moved {
                Some(c) => ("renamed", Some(c)),
                None => ("deleted", None),
            }
        }
    };
    db.prepare_cached(
        "INSERT INTO stale_marks (mem_hash, mem_id, target, reason, since_ms, now_key, now_target, signature, lines)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
         ON CONFLICT (mem_hash, target) DO UPDATE SET reason = excluded.reason,
           now_key = excluded.now_key, now_target = excluded.now_target,
           signature = excluded.signature, lines = excluded.lines",
    )?
    .execute(params![
        mem,
        mem_id,
        target,
        reason,
        t,
        now.as_ref().map(|c| c.key.as_str()),
        now.as_ref().map(|c| c.target.as_str()),
        now.as_ref().map(|c| c.signature.as_str()),
        now.as_ref().map(|c| c.lines)
    ])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_parts_split_kind_and_path() {
        assert_eq!(
            target_parts("sym:src/a.py#Session.request:method"),
            ("method", "src/a.py")
        );
        assert_eq!(target_parts("file:src/a.py"), ("file", "src/a.py"));
        let key = "sym:src/a.py#S.r:method:1:4";
        let t = target_of(key).unwrap();
        assert_eq!(target_parts(&t.target), (t.kind.as_str(), t.path.as_str()));
    }
}
