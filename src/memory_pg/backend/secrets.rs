//! Secrets already in the repository's rows: found in every memory (notes and coding
//! records are memories too) and in every version history keeps, and rewritten
//! without them.
//!
//! An older engram, or a tool writing the database directly, may have stored text
//! the write path would have redacted. [`PgMemories::find_stored_secrets`] reads the
//! text and record metadata of every row of `engram_memories` and
//! `engram_memory_versions` of this repository and reports which hold a secret, by
//! rule, never the text. [`PgMemories::redact_stored_secrets`] rewrites each such
//! row in place (same id, version, times and write order), with its keyword index,
//! edges and vector made again from the redacted text, one transaction per memory.
//! What the rules are and how text is redacted is the memory layer's
//! ([`memory::redact_stored`]); this module only reads and rewrites rows.
//!
//! In place means an UPDATE: PostgreSQL keeps the old row version (the old text) in
//! the table's files as a dead tuple until VACUUM reclaims it, and in the write-ahead
//! log until its segments are recycled. No query of any role sees it meanwhile;
//! `VACUUM FULL` on the two tables rewrites their files without it. The audit trail
//! is append-only and not scanned here: its query text is redacted before it is
//! written.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use tokio_postgres::types::Json;

use super::tx::{limit_of, Ahead};
use crate::memory::{self, Memory, MemoryError, Result};
use crate::memory_pg::rows::{self, memory_from_parts, refs};
use crate::memory_pg::PgMemories;

/// Rows read per round trip while scanning.
const PAGE: usize = 500;

/// The memories' table.
const LIVE: &str = "engram_memories";
/// The versions' table.
const VERSIONS: &str = "engram_memory_versions";

/// One row of the team database holding secrets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PgStoredSecret {
    /// The memory's id (`mem:…`).
    pub id: String,
    /// Its kind (`memory`, `note`, `error`, `decision`, `session`, `file_change`, …).
    pub kind: String,
    /// `engram_memories` (the memory as it is now) or `engram_memory_versions` (a
    /// version history keeps, the current one included).
    pub table: &'static str,
    pub version: u64,
    /// Whether the row is the memory as it is now.
    pub live: bool,
    /// Secrets found (never the text).
    pub secrets: u64,
    /// Secrets found, by rule id.
    pub rules: BTreeMap<String, u64>,
}

/// What [`PgMemories::redact_stored_secrets`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PgRedactReport {
    /// Memories with at least one row rewritten.
    pub memories_rewritten: u64,
    /// Rows rewritten (a memory's live row and its versions' rows).
    pub rows_rewritten: u64,
    /// Secrets replaced.
    pub secrets: u64,
}

/// A row as read for scanning: id, kind, version, text, record metadata.
type ScanRow = (String, String, i64, String, Value);

impl PgMemories {
    /// Every row of this repository's memories and versions holding a secret; see
    /// the module doc. Memories in id order, each's live row first, then its
    /// versions oldest first.
    pub fn find_stored_secrets(&self) -> Result<Vec<PgStoredSecret>> {
        let mut out = Vec::new();
        for table in [LIVE, VERSIONS] {
            let mut after = (String::new(), 0i64);
            loop {
                let page = self.scan_page(table, &after)?;
                for (id, kind, version, text, doc) in &page {
                    let Value::Object(meta) = doc else { continue };
                    if let Some(r) = memory::redact_stored(text, meta)? {
                        out.push(PgStoredSecret {
                            id: id.clone(),
                            kind: kind.clone(),
                            table,
                            version: (*version).max(0) as u64,
                            live: table == LIVE,
                            secrets: r.secrets(),
                            rules: r.rules,
                        });
                    }
                }
                match page.last() {
                    Some(last) if page.len() == PAGE => after = (last.0.clone(), last.2),
                    _ => break,
                }
            }
        }
        out.sort_by(|a, b| (&a.id, !a.live, a.version).cmp(&(&b.id, !b.live, b.version)));
        Ok(out)
    }

    /// One page of `table` after `(id, version)`, in that order.
    fn scan_page(&self, table: &'static str, after: &(String, i64)) -> Result<Vec<ScanRow>> {
        let sql = if table == LIVE {
            "SELECT id, kind, version, text, doc FROM engram_memories
             WHERE repo = $1 AND (id, version) > ($2, $3) ORDER BY id, version LIMIT $4"
        } else {
            "SELECT id, coalesce(doc->>'kind', ''), version, text, doc FROM engram_memory_versions
             WHERE repo = $1 AND (id, version) > ($2, $3) ORDER BY id, version LIMIT $4"
        };
        self.read(|| async {
            let mut client = self.client().await?;
            let tx = self.begin(&mut client).await?;
            let rows = tx
                .query(sql, &[&self.repo, &after.0, &after.1, &limit_of(PAGE)])
                .await
                .map_err(|e| self.pg(e))?;
            self.commit(tx).await?;
            Ok(rows
                .iter()
                .map(|r| {
                    let Json(doc): Json<Value> = r.get(4);
                    (r.get(0), r.get(1), r.get(2), r.get(3), doc)
                })
                .collect())
        })
    }

    /// Rewrite every row [`PgMemories::find_stored_secrets`] finds without its
    /// secrets; see the module doc.
    pub fn redact_stored_secrets(&self) -> Result<PgRedactReport> {
        let mut ids: Vec<String> = self
            .find_stored_secrets()?
            .into_iter()
            .map(|f| f.id)
            .collect();
        ids.dedup();
        let mut report = PgRedactReport::default();
        for id in ids {
            let (rows, secrets) = self.redact_memory_rows(&id)?;
            if rows > 0 {
                report.memories_rewritten += 1;
                report.rows_rewritten += rows;
                report.secrets += secrets;
            }
        }
        Ok(report)
    }

    /// The live row of memory `id` as it is stored, redacted: the memory it becomes,
    /// and the secrets replaced by rule; `None` when it holds none (or is gone).
    fn redacted_live(
        id: &str,
        text: &str,
        version: i64,
        times: (i64, i64),
        doc: &Value,
    ) -> Result<Option<(Memory, u64)>> {
        let Value::Object(meta) = doc else {
            return Err(MemoryError::Invalid(format!(
                "{id}: stored metadata is not an object"
            )));
        };
        let Some(r) = memory::redact_stored(text, meta)? else {
            return Ok(None);
        };
        let secrets = r.secrets();
        let m = memory_from_parts(
            id,
            &r.text,
            version,
            times.0,
            times.1,
            Value::Object(r.meta),
        )?;
        Ok(Some((m, secrets)))
    }

    /// Rewrite memory `id`'s rows holding secrets, in one transaction; the rows
    /// rewritten and the secrets replaced.
    fn redact_memory_rows(&self, id: &str) -> Result<(u64, u64)> {
        const LIVE_ROW: &str = "SELECT text, version, created_ms, updated_ms, doc, seq
                                FROM engram_memories WHERE repo = $1 AND id = $2";
        // The vector of the redacted text, made ahead of the transaction (an
        // embedder may be an HTTP service); the transaction asks again if the
        // memory changed meanwhile.
        let ahead: Ahead = match self.get_raw(id, LIVE_ROW)? {
            Some((text, version, times, doc, _)) => {
                match Self::redacted_live(id, &text, version, times, &doc)? {
                    Some((m, _)) => self.ahead(&[&m]),
                    None => Ahead::new(),
                }
            }
            None => return Ok((0, 0)),
        };
        self.run(ahead, |ahead| async move {
            let mut client = self.client().await?;
            let tx = self.begin(&mut client).await?;
            let sql = format!("{LIVE_ROW} FOR UPDATE");
            let Some(row) = tx
                .query_opt(&sql, &[&self.repo, &id])
                .await
                .map_err(|e| self.pg(e))?
            else {
                self.commit(tx).await?;
                return Ok((0, 0));
            };
            let (mut rows_done, mut secrets) = (0u64, 0u64);
            // Every version's row (the current one's too), in place.
            let versions = tx
                .query(
                    "SELECT version, text, doc FROM engram_memory_versions
                     WHERE repo = $1 AND id = $2 ORDER BY version FOR UPDATE",
                    &[&self.repo, &id],
                )
                .await
                .map_err(|e| self.pg(e))?;
            for v in versions {
                let Json(doc): Json<Value> = v.get(2);
                let Value::Object(meta) = doc else { continue };
                let Some(r) = memory::redact_stored(v.get(1), &meta)? else {
                    continue;
                };
                let version: i64 = v.get(0);
                tx.execute(
                    "UPDATE engram_memory_versions SET text = $4, doc = $5
                     WHERE repo = $1 AND id = $2 AND version = $3",
                    &[
                        &self.repo,
                        &id,
                        &version,
                        &r.text,
                        &Json(Value::Object(r.meta.clone())),
                    ],
                )
                .await
                .map_err(|e| self.pg(e))?;
                rows_done += 1;
                secrets += r.secrets();
            }
            let Json(doc): Json<Value> = row.get(4);
            let live =
                Self::redacted_live(id, row.get(0), row.get(1), (row.get(2), row.get(3)), &doc)?;
            if let Some((m, n)) = live {
                let vector = self.vector_for(&ahead, &m)?;
                let sql = format!(
                    "UPDATE engram_memories SET kind = $3, text = $4, task = $5, insights = $6,
                       contexts = $7, tags = $8, session = $9, doc = $10, tsv = {}
                     WHERE repo = $1 AND id = $2",
                    rows::tsv_sql(11, 12)
                );
                // The row's values without version and times (kept as they are).
                let mut params = self.row_params(&m);
                params.drain(9..12);
                tx.execute(&sql, &refs(&params))
                    .await
                    .map_err(|e| self.pg(e))?;
                // The current version's row again (as the live row now is), edges,
                // vector, note and error rows.
                self.after_write(&tx, &m, row.get(5), vector).await?;
                rows_done += 1;
                secrets += n;
            }
            self.commit(tx).await?;
            Ok((rows_done, secrets))
        })
    }

    /// The live row of memory `id` as `sql` (text, version, created, updated, doc,
    /// seq) reads it, outside any write.
    #[allow(clippy::type_complexity)]
    fn get_raw(
        &self,
        id: &str,
        sql: &'static str,
    ) -> Result<Option<(String, i64, (i64, i64), Value, i64)>> {
        self.read(|| async {
            let mut client = self.client().await?;
            let tx = self.begin(&mut client).await?;
            let row = tx
                .query_opt(sql, &[&self.repo, &id])
                .await
                .map_err(|e| self.pg(e))?;
            self.commit(tx).await?;
            Ok(row.map(|r| {
                let Json(doc): Json<Value> = r.get(4);
                (r.get(0), r.get(1), (r.get(2), r.get(3)), doc, r.get(5))
            }))
        })
    }
}
