//! Walking the edges between entries, and moving memories in and out as JSONL.

use std::collections::{HashSet, VecDeque};
use std::io::Write;
use std::path::Path;
use std::time::Instant;

use deadpool_postgres::Transaction;

use super::bulk::{Imported, Known, Sizer};
use super::tx::{TxError, TxResult};
use crate::memory::{self, ImportReport, MemoryError, Related, Result};
use crate::memory_pg::rows::{memory_from_row, MEMORY_COLUMNS};
use crate::memory_pg::{PgMemories, Progress};

impl PgMemories {
    /// `related`: a breadth-first walk over the edges, in one transaction.
    pub(super) fn walk_related(&self, start: &str, hops: u32) -> Result<Vec<Related>> {
        if !(1..=3).contains(&hops) {
            return Err(MemoryError::Invalid(format!(
                "hops must be 1 to 3, not {hops}"
            )));
        }
        let start = if start.len() == 8 && !start.contains(':') {
            format!("mem:{start}")
        } else {
            start.to_string()
        };
        self.read(|| {
            let start = start.clone();
            async move {
                let mut client = self.client().await?;
                let tx = self.begin(&mut client).await?;
                let mut seen: HashSet<String> = HashSet::from([start.clone()]);
                let mut queue = VecDeque::from([(start, 0u32)]);
                let mut out = Vec::new();
                while let Some((node, depth)) = queue.pop_front() {
                    if depth == hops {
                        continue;
                    }
                    let rows = tx
                        .query(
                            "SELECT n, r FROM (
                               SELECT dst AS n, rel AS r FROM engram_memory_edges WHERE repo = $1 AND src = $2
                               UNION SELECT src, rel || '⁻¹' FROM engram_memory_edges WHERE repo = $1 AND dst = $2
                             ) e ORDER BY n COLLATE \"C\", r COLLATE \"C\"",
                            &[&self.repo, &node],
                        )
                        .await
                        .map_err(|e| self.pg(e))?;
                    for row in rows {
                        let next: String = row.get(0);
                        if seen.insert(next.clone()) {
                            out.push(Related {
                                key: next.clone(),
                                hops: depth + 1,
                                via: row.get(1),
                                from: node.clone(),
                            });
                            queue.push_back((next, depth + 1));
                        }
                    }
                }
                self.commit(tx).await?;
                Ok(out)
            }
        })
    }

    /// `export`: every memory, oldest first, a page per transaction.
    pub(super) fn export_jsonl(&self, out: &mut dyn Write) -> Result<u64> {
        let io = |source| MemoryError::Io {
            path: "export".into(),
            source,
        };
        let mut n = 0u64;
        let mut after: (i64, i64) = (i64::MIN, i64::MIN);
        loop {
            let (page, last) = self.read(|| async move {
                let mut client = self.client().await?;
                let tx = self.begin(&mut client).await?;
                let sql = format!(
                    "SELECT {MEMORY_COLUMNS}, m.seq FROM engram_memories m
                     WHERE m.repo = $1 AND (m.created_ms, m.seq) > ($2, $3)
                     ORDER BY m.created_ms, m.seq LIMIT 1000"
                );
                let rows = tx
                    .query(&sql, &[&self.repo, &after.0, &after.1])
                    .await
                    .map_err(|e| self.pg(e))?;
                self.commit(tx).await?;
                let last: Option<(i64, i64)> = rows.last().map(|r| (r.get(3), r.get(6)));
                let page = rows
                    .iter()
                    .map(memory_from_row)
                    .collect::<Result<Vec<_>>>()?;
                Ok((page, last))
            })?;
            let Some(last) = last else { break };
            after = last;
            for m in &page {
                let line =
                    serde_json::to_string(m).map_err(|e| MemoryError::Invalid(e.to_string()))?;
                writeln!(out, "{line}").map_err(io)?;
                n += 1;
            }
        }
        out.flush().map_err(io)?;
        Ok(n)
    }

    /// `import_file`: the whole file in one transaction, whole or not at all, in
    /// batches ([`PgMemories::import_batch`]: one query for which of a batch's ids
    /// exist, one statement per table for its rows) sized to the statement timeout
    /// ([`Sizer`]). It may run as long as it keeps writing: only
    /// a server that answers no batch within the deadline ends it
    /// ([`PgMemories::run_bulk`]).
    pub(super) fn import_jsonl(&self, path: &Path, max_line_bytes: u64) -> Result<ImportReport> {
        // No code index here: a legacy hash64 symbol resolves to nothing.
        let memory::Prepared {
            memories: prepared,
            report,
        } = memory::prepare_import(path, &|_| Ok(None), max_line_bytes)?;
        if prepared.is_empty() {
            return Ok(report);
        }
        let ahead = self.ahead(&prepared.iter().map(|(m, _)| m).collect::<Vec<_>>());
        let progress = Progress::new();
        self.run_bulk(ahead, &progress, |ahead| {
            let (prepared, mut report) = (prepared.clone(), report.clone());
            let progress = progress.clone();
            async move {
                let mut client = self.client().await?;
                let tx = self.begin(&mut client).await?;
                let mut done = Imported::default();
                let mut sizer = Sizer::new(self.db.statement_timeout);
                let mut rest = &prepared[..];
                while !rest.is_empty() {
                    let (batch, after) = rest.split_at(sizer.next().min(rest.len()));
                    let start = Instant::now();
                    self.import_batch(&tx, &ahead, batch, &mut done, &mut report)
                        .await?;
                    sizer.took(batch.len(), start.elapsed());
                    progress.tick();
                    rest = after;
                }
                self.commit(tx).await?;
                Ok(report)
            }
        })
    }

    /// The id for a memory imported under the legacy id `old`: the derived id,
    /// re-rolled while another memory holds it (as the local import does).
    pub(super) async fn legacy_slot(
        &self,
        tx: &Transaction<'_>,
        known: &mut Known,
        taken: &HashSet<String>,
        old: &str,
    ) -> TxResult<String> {
        for round in 0..64 {
            let id = memory::derived_id(old, round);
            if taken.contains(&id) {
                continue;
            }
            match self.known(tx, known, &id).await? {
                None => return Ok(id),
                Some(m) if memory::legacy_id(m) == Some(old) => return Ok(id),
                _ => {}
            }
        }
        Err(TxError::Fail(MemoryError::Invalid(format!(
            "no free memory id for legacy id {old:?} in 64 tries"
        ))))
    }
}
