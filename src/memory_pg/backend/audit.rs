//! The audit trail on PostgreSQL ([`AuditLog`] for [`PgMemories`]): the repository's
//! rows of `engram_audit` (schema 2), appended in one transaction per call and
//! acknowledged after COMMIT, or, for a write's event, inserted in the write's own
//! transaction (`tx.rs`), and read back oldest first. Row-level security keeps each
//! repository's rows to itself; the table has no policy to update or delete.

use deadpool_postgres::Transaction;
use tokio_postgres::types::Json;

use super::tx::{i64_of, limit_of, Ahead, TxResult};
use crate::memory::{AuditEvent, AuditLog, LlmCall, MemoryError, Result};
use crate::memory_pg::PgMemories;

const INSERT: &str = "INSERT INTO engram_audit
    (repo, time_ms, op, session, user_id, query, results, redactions, flagged, error, llm)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";

const SELECT: &str = "SELECT time_ms, op, session, user_id, query, results, redactions,
    flagged, error, llm FROM engram_audit
    WHERE repo = $1 AND time_ms >= $2 ORDER BY time_ms, seq";

/// The newest `$3` rows of [`SELECT`], newest first.
const SELECT_LAST: &str = "SELECT time_ms, op, session, user_id, query, results, redactions,
    flagged, error, llm FROM engram_audit
    WHERE repo = $1 AND time_ms >= $2 ORDER BY time_ms DESC, seq DESC LIMIT $3";

const COUNT: &str = "SELECT count(*) FROM engram_audit WHERE repo = $1 AND time_ms >= $2";

impl PgMemories {
    /// Insert `events` (each already prepared) in transaction `tx`.
    pub(super) async fn insert_audit(
        &self,
        tx: &Transaction<'_>,
        events: &[AuditEvent],
    ) -> TxResult<()> {
        let insert = tx.prepare_cached(INSERT).await.map_err(|e| self.pg(e))?;
        for e in events {
            let llm = e
                .llm
                .as_ref()
                .map(serde_json::to_value)
                .transpose()
                .map_err(|err| MemoryError::Invalid(format!("audit event: {err}")))?;
            tx.execute(
                &insert,
                &[
                    &self.repo,
                    &i64_of(e.time_ms),
                    &e.op,
                    &e.session,
                    &e.user_id,
                    &e.query,
                    &i64_of(e.results),
                    &i64_of(e.redactions),
                    &e.flagged,
                    &e.error,
                    &llm.map(Json),
                ],
            )
            .await
            .map_err(|e| self.pg(e))?;
        }
        Ok(())
    }
}

impl AuditLog for PgMemories {
    fn append_audit(&self, events: &[AuditEvent]) -> Result<()> {
        if events.is_empty() {
            return Ok(());
        }
        let events = events
            .iter()
            .map(AuditEvent::prepared)
            .collect::<std::result::Result<Vec<_>, _>>()?;
        // On its own: never with an event a caller attached to its next write.
        self.attempts(Ahead::new(), false, self.db.deadline(), |_| async {
            let mut client = self.client().await?;
            let tx = self.begin(&mut client).await?;
            self.insert_audit(&tx, &events).await?;
            self.commit(tx).await?;
            Ok(())
        })
    }

    /// Yes: a write's event (`memory::attach_event_to_next_write`) is inserted in the
    /// transaction of the call's first write, and committed with it.
    fn rides_with_writes(&self) -> bool {
        true
    }

    fn read_audit(&self, since_ms: u64) -> Result<Vec<AuditEvent>> {
        let rows = self.read(|| async {
            let mut client = self.client().await?;
            let tx = self.begin(&mut client).await?;
            let rows = tx
                .query(SELECT, &[&self.repo, &i64_of(since_ms)])
                .await
                .map_err(|e| self.pg(e))?;
            self.commit(tx).await?;
            Ok(rows)
        })?;
        rows.iter().map(|r| self.audit_event(r)).collect()
    }

    fn read_audit_last(&self, since_ms: u64, limit: usize) -> Result<(Vec<AuditEvent>, u64)> {
        let (rows, total) = self.read(|| async {
            let mut client = self.client().await?;
            let tx = self.begin(&mut client).await?;
            let since = i64_of(since_ms);
            let total: i64 = tx
                .query_one(COUNT, &[&self.repo, &since])
                .await
                .map_err(|e| self.pg(e))?
                .get(0);
            let rows = tx
                .query(SELECT_LAST, &[&self.repo, &since, &limit_of(limit)])
                .await
                .map_err(|e| self.pg(e))?;
            self.commit(tx).await?;
            Ok((rows, total))
        })?;
        let mut out = rows
            .iter()
            .map(|r| self.audit_event(r))
            .collect::<Result<Vec<_>>>()?;
        out.reverse();
        Ok((out, total.max(0) as u64))
    }
}

impl PgMemories {
    /// An event from a row of [`SELECT`].
    fn audit_event(&self, row: &tokio_postgres::Row) -> Result<AuditEvent> {
        let llm: Option<Json<serde_json::Value>> = row.get(9);
        let llm = llm
            .map(|Json(v)| serde_json::from_value::<LlmCall>(v))
            .transpose()
            .map_err(|e| MemoryError::Invalid(format!("a stored audit event: {e}")))?;
        let u = |v: i64| v.max(0) as u64;
        Ok(AuditEvent {
            time_ms: u(row.get(0)),
            op: row.get(1),
            repo: self.repo.clone(),
            session: row.get(2),
            user_id: row.get(3),
            query: row.get(4),
            results: u(row.get(5)),
            redactions: u(row.get(6)),
            flagged: row.get(7),
            error: row.get(8),
            llm,
        })
    }
}
