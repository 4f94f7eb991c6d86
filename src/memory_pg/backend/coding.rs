//! The entries written with a counter or a claim: notes (one entry per name), error
//! recurrences (one entry per signature, its frequency counted), and session ends.

use super::tx::{Carried, TxError};
use crate::memory::{
    self, error_signature, normalise_id, ErrorReport, Memory, MemoryBackend, MemoryError,
    MemoryFilter, Result,
};
use crate::memory_pg::{PgMemories, RETRIES};

impl PgMemories {
    /// Give `session`, when it is unset, the active session for a caller that started
    /// `started`: read just before the record's own transaction (the database has no
    /// store writer lock to decide both under).
    pub(super) fn join(&self, session: &mut Option<String>, started: Option<&str>) -> Result<()> {
        if session.is_none() {
            *session = MemoryBackend::active_session(self, started)?
                .id()
                .map(String::from);
        }
        Ok(())
    }

    /// `note_set`: claim the name (or queue behind its holder) and write the entry.
    pub(super) fn set_note(
        &self,
        name: &str,
        value: &str,
        provenance: Option<&str>,
    ) -> Result<Memory> {
        let (name, m) = memory::note_entry(name, value, provenance)?;
        let name = name.to_string();
        let m = self.prepare(m)?;
        let ahead = self.ahead(&[&m]);
        self.run(ahead, |ahead| {
            let (name, m) = (name.clone(), m.clone());
            async move {
                let mut client = self.client().await?;
                let tx = self.begin(&mut client).await?;
                let fresh = memory::random_id()?;
                // Claim the name (or queue behind whoever holds it) in one statement.
                let holder: String = tx
                    .query_one(
                        "INSERT INTO engram_notes (repo, name, id) VALUES ($1, $2, $3)
                         ON CONFLICT (repo, name) DO UPDATE SET name = excluded.name
                         RETURNING id",
                        &[&self.repo, &name, &fresh],
                    )
                    .await
                    .map_err(|e| self.pg(e))?
                    .get(0);
                let out = if holder == fresh {
                    let mut m = m;
                    m.id = fresh;
                    match self.write_new(&tx, &ahead, m).await {
                        // The fresh id was another entry's: try again with another.
                        Err(TxError::Fail(MemoryError::Invalid(_))) => return Err(TxError::Retry),
                        other => other?,
                    }
                } else {
                    self.update_in(&tx, &ahead, &holder, m, None).await?
                };
                self.commit(tx).await?;
                Ok(out)
            }
        })
    }

    /// `record_error`: count the occurrence under a row lock, then write or update.
    pub(super) fn count_error(&self, e: &ErrorReport, tags: &[String]) -> Result<Memory> {
        memory::check_error(e)?;
        let signature = error_signature(e);
        // The first occurrence's entry, embedded ahead; a recurrence usually embeds
        // the same text, else the attempt asks for its vector.
        let first = self.prepare(memory::error_entry(e, &signature, tags, None, 1))?;
        let ahead = self.ahead(&[&first]);
        self.run(ahead, |ahead| {
            let signature = signature.clone();
            async move {
                let mut client = self.client().await?;
                let tx = self.begin(&mut client).await?;
                let fresh = memory::random_id()?;
                // Count the occurrence in one statement; the row stays locked until
                // commit, so recurrences of one error queue here and each counts.
                let row = tx
                    .query_one(
                        "INSERT INTO engram_error_counts (repo, signature, id, frequency)
                         VALUES ($1, $2, $3, 1)
                         ON CONFLICT (repo, signature)
                           DO UPDATE SET frequency = engram_error_counts.frequency + 1
                         RETURNING id, frequency",
                        &[&self.repo, &signature, &fresh],
                    )
                    .await
                    .map_err(|e| self.pg(e))?;
                let holder: String = row.get(0);
                let frequency: i64 = row.get(1);
                let out = if holder == fresh {
                    let mut m = self.prepare(memory::error_entry(e, &signature, tags, None, 1))?;
                    m.id = fresh;
                    match self.write_new(&tx, &ahead, m).await {
                        Err(TxError::Fail(MemoryError::Invalid(_))) => return Err(TxError::Retry),
                        other => other?,
                    }
                } else {
                    let Some(old) = self.fetch(&tx, &holder, true).await? else {
                        return Err(TxError::Fail(MemoryError::NotFound(holder)));
                    };
                    let m = self.prepare(memory::error_entry(
                        e,
                        &signature,
                        tags,
                        Some(&old),
                        frequency.max(1) as u64,
                    ))?;
                    self.update_in(&tx, &ahead, &holder, m, None).await?
                };
                self.commit(tx).await?;
                Ok(out)
            }
        })
    }

    /// `end_session`: summarise, then write only if the session did not change meanwhile.
    pub(super) fn close_session(
        &self,
        id: &str,
        success: bool,
        user_summary: Option<&str>,
    ) -> Result<Memory> {
        let id = normalise_id(id)?;
        // The caller's audit event rides with the write (tx.rs).
        let carried = Carried::take();
        for _ in 0..RETRIES {
            let Some(session) = MemoryBackend::get(self, &id)? else {
                return Err(MemoryError::NotFound(id));
            };
            memory::check_session(&session)?;
            let filter = MemoryFilter {
                session: Some(session.id.clone()),
                ..MemoryFilter::default()
            };
            let entries = self.list_filtered(&filter, usize::MAX >> 1, 0)?;
            let m = self.prepare(memory::ended_session(
                &session,
                entries,
                success,
                user_summary,
            ))?;
            let ahead = self.ahead(&[&m]);
            // Written only if the session is still the version the summary was made
            // from; else it is read and summarised again.
            let outcome = self.db.block_on_deadline(carried.scope(async {
                let mut client = self.client().await?;
                let tx = self.begin(&mut client).await?;
                let m = self
                    .update_in(&tx, &ahead, &id, m, Some(session.version))
                    .await?;
                self.commit(tx).await?;
                Ok::<_, TxError>(m)
            }))?;
            match outcome {
                Ok(m) => return Ok(m),
                Err(TxError::Fail(e)) => return Err(e),
                Err(TxError::Stale(_) | TxError::Retry | TxError::NeedVector(_)) => continue,
            }
        }
        Err(MemoryError::Backend {
            server: self.db.server.clone(),
            reason: format!("{id} kept changing while its session was summarised"),
        })
    }
}
