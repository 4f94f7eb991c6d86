//! `verify`'s check of the projections' own tables against the log.
//!
//! For each table a projection lists ([`Projection::checked_tables`]): its row count
//! against the live records that imply one row each; that no row derives from a
//! record that is no longer live; and, for a deterministic sample of live keys spread
//! over the key-hash space, that the rows the table holds for the key's record are
//! the rows the projection derives from that record alone. The derived rows are made
//! in a scratch database in memory by the same code that applies batches, so the
//! check cannot drift from what the tracker does. The sample bounds the time on a
//! large store; the counts cover the rest. It reads the tracker inside `verify`'s
//! read transaction and must never write to it.

use std::collections::HashMap;

use rusqlite::types::Value as SqlValue;
use rusqlite::Connection;

use super::error::Result;
use super::tracker::{self, record_meta, Projection, TrackerMeta};
use super::tracker_apply::RecordApplier;
use super::verify::{Problem, VerifyReport};
use super::TRACKER_FILE;
use crate::format::decode_record;

/// How many live keys are compared row by row at most.
pub const SAMPLE: usize = 256;

/// Mismatches named one by one per table; the rest are counted.
const NAMED: usize = 5;

/// How `verify` finds the rows a record wrote in a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowsOf {
    /// By a column holding the record's `seq` (`rowid` for a full-text table).
    Seq(&'static str),
    /// By a column holding the record's key hash.
    KeyHash(&'static str),
}

/// One of a projection's tables, as `verify` checks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckedTable {
    pub name: &'static str,
    pub rows_of: RowsOf,
    /// The meta `type` of the records that derive exactly one row each here: the
    /// table's row count must be the number of such live records.
    pub one_per: Option<&'static str>,
    /// Rows stay for values the key no longer has (a history): no row is wrong for
    /// being of an older record, and a sampled record's rows need only be present.
    pub history: bool,
    /// Whether a record's rows here are a function of that record alone, so a
    /// sampled key's rows are compared with what it derives (not so for rows that
    /// depend on what other records did before).
    pub sampled: bool,
}

impl CheckedTable {
    /// A table whose rows each derive from one live record, compared when sampled.
    pub const fn new(name: &'static str, rows_of: RowsOf) -> Self {
        CheckedTable {
            name,
            rows_of,
            one_per: None,
            history: false,
            sampled: true,
        }
    }

    /// Exactly one row per live record of meta `type`.
    pub const fn one_per(mut self, record_type: &'static str) -> Self {
        self.one_per = Some(record_type);
        self
    }

    /// Rows of older values stay.
    pub const fn history(mut self) -> Self {
        self.history = true;
        self
    }

    /// Rows that depend on other records too: counted and tied to live records, not
    /// compared with one record's derivation.
    pub const fn not_sampled(mut self) -> Self {
        self.sampled = false;
        self
    }

    fn column(&self) -> &'static str {
        match self.rows_of {
            RowsOf::Seq(c) | RowsOf::KeyHash(c) => c,
        }
    }
}

/// Check every listed table of `projections` in `db` (inside verify's read
/// transaction) against the live records of the log `bytes` (`live`: key hash to
/// the offset of its live put, up to what the tracker has applied).
pub(super) fn check(
    db: &Connection,
    meta: &TrackerMeta,
    bytes: &[u8],
    live: &HashMap<u64, u64>,
    projections: &[&dyn Projection],
    report: &mut VerifyReport,
) -> Result<()> {
    let tables: Vec<CheckedTable> = projections
        .iter()
        .flat_map(|p| p.checked_tables())
        .collect();
    if tables.is_empty() {
        return Ok(());
    }
    if meta.schema != tracker::schema_fingerprint(projections) {
        report.warnings.push(format!(
            "{TRACKER_FILE} was built with other projections ({}); its query tables were not compared, the next open rebuilds it",
            meta.schema
        ));
        return Ok(());
    }
    let mut problem = |what: String| {
        report.problems.push(Problem {
            file: TRACKER_FILE,
            offset: None,
            what: format!("{what}; run `engram rebuild`"),
        })
    };

    // Counts, from each live record's type.
    let mut by_type: HashMap<String, u64> = HashMap::new();
    if tables.iter().any(|t| t.one_per.is_some()) {
        for &offset in live.values() {
            let Some(ty) = record_type(bytes, offset) else {
                continue;
            };
            *by_type.entry(ty).or_default() += 1;
        }
    }
    for t in &tables {
        if let Some(ty) = t.one_per {
            let rows: i64 = db.query_row(&format!("SELECT count(*) FROM {}", t.name), [], |r| {
                r.get(0)
            })?;
            let want = by_type.get(ty).copied().unwrap_or(0);
            if rows as u64 != want {
                problem(format!(
                    "table {}: {rows} rows, but the log has {want} live {ty} records",
                    t.name
                ));
            }
        }
        if !t.history {
            let (col, of) = match t.rows_of {
                RowsOf::Seq(c) => (c, "seq"),
                RowsOf::KeyHash(c) => (c, "key_hash"),
            };
            let sql = format!(
                "SELECT count(*), min(t.{col}) FROM {} t
                 WHERE NOT EXISTS (SELECT 1 FROM records r WHERE r.{of} = t.{col})",
                t.name
            );
            let (n, first): (i64, Option<i64>) =
                db.query_row(&sql, [], |r| Ok((r.get(0)?, r.get(1)?)))?;
            if n > 0 {
                problem(format!(
                    "table {}: {n} rows derive from no live record (the first with {col} {})",
                    t.name,
                    first.unwrap_or_default()
                ));
            }
        }
    }

    // A sample of live keys, row by row.
    let sampled: Vec<CheckedTable> = tables.into_iter().filter(|t| t.sampled).collect();
    if sampled.is_empty() || live.is_empty() {
        return Ok(());
    }
    let mut keys: Vec<(u64, u64)> = live.iter().map(|(&h, &o)| (h, o)).collect();
    keys.sort_unstable();
    let step = keys.len().div_ceil(SAMPLE);
    let sample: Vec<(u64, u64)> = keys.into_iter().step_by(step).collect();
    let mut scratch = Connection::open_in_memory()?;
    tracker::create_schema(
        &mut scratch,
        projections,
        rusqlite::TransactionBehavior::Immediate,
    )?;
    let mut applier = RecordApplier::default();
    let tx = scratch.transaction()?;
    for &(_, offset) in &sample {
        if let Ok(rec) = decode_record(&bytes[offset as usize..]) {
            applier.apply(&tx, offset, &rec, projections)?;
        }
    }
    applier.finish(&tx)?;
    let mut wrong: HashMap<&'static str, Vec<String>> = HashMap::new();
    for &(hash, offset) in &sample {
        let Ok(rec) = decode_record(&bytes[offset as usize..]) else {
            continue;
        };
        let key = record_meta(&rec).map(|(_, k)| k).unwrap_or_default();
        for t in &sampled {
            let by = match t.rows_of {
                RowsOf::Seq(_) => rec.seq() as i64,
                RowsOf::KeyHash(_) => hash as i64,
            };
            let sql = format!("SELECT * FROM {} WHERE {} = ?1", t.name, t.column());
            let derived = rows(&tx, &sql, by)?;
            let held = rows(db, &sql, by)?;
            let agrees = if t.history {
                derived.iter().all(|r| held.contains(r))
            } else {
                derived == held
            };
            if !agrees {
                wrong.entry(t.name).or_default().push(format!(
                    "{key} (seq {}, offset {offset}: {} rows held, {} derived from its record)",
                    rec.seq(),
                    held.len(),
                    derived.len()
                ));
            }
        }
    }
    drop(tx);
    let mut names: Vec<_> = wrong.into_iter().collect();
    names.sort();
    for (table, keys) in names {
        let more = keys.len().saturating_sub(NAMED);
        let mut what = format!(
            "table {table}: rows differ from what the log's records derive for {}",
            keys[..keys.len().min(NAMED)].join(", ")
        );
        if more > 0 {
            what.push_str(&format!(" and {more} more sampled keys"));
        }
        problem(what);
    }
    Ok(())
}

/// The meta `type` of the put at `offset`, if it has one.
fn record_type(bytes: &[u8], offset: u64) -> Option<String> {
    let rec = decode_record(bytes.get(offset as usize..)?).ok()?;
    let (meta, _) = record_meta(&rec).ok()?;
    meta.get("type")?.as_str().map(str::to_string)
}

/// The rows a query gives, each as its values' debug text, sorted: two tables'
/// rows compare as multisets whatever order SQLite returns them in.
fn rows(db: &Connection, sql: &str, by: i64) -> Result<Vec<String>> {
    let mut stmt = db.prepare_cached(sql)?;
    let n = stmt.column_count();
    let mut out: Vec<String> = stmt
        .query_map([by], |r| {
            (0..n)
                .map(|i| r.get::<_, SqlValue>(i))
                .collect::<rusqlite::Result<Vec<_>>>()
                .map(|v| format!("{v:?}"))
        })?
        .collect::<rusqlite::Result<_>>()?;
    out.sort();
    Ok(out)
}
