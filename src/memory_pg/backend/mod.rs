//! [`MemoryBackend`] on PostgreSQL: every call one transaction (retried after a
//! serialization failure or deadlock), every transaction scoped to the repository by
//! `engram.repo`, every write acknowledged after COMMIT.
//!
//! Vectors are made outside transactions (an embedder may be an HTTP service): each
//! call embeds what it expects to write first; a transaction whose entry turns out
//! different (an error recurrence that brings the old tags) rolls back, and the call
//! embeds the new text and runs it again.

mod audit;
mod bulk;
mod coding;
mod patterns;
mod query;
mod secrets;
mod transfer;
mod tx;
mod write;

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use crate::embed::is_zero;
use crate::memory::{
    self, fuse_ranked, normalise_id, Decision, ErrorReport, FileChange, ImportReport, Memory,
    MemoryBackend, MemoryFilter, MemoryText, RecallHit, Related, Result,
};
use crate::memory_pg::rows::{Param, MEMORY_COLUMNS};
use crate::memory_pg::PgMemories;
pub use secrets::{PgRedactReport, PgStoredSecret};
use tx::Ahead;

impl MemoryBackend for PgMemories {
    fn describe(&self) -> String {
        format!("{} repo {}", self.db.server, self.repo)
    }

    fn write(&self, memory: Memory) -> Result<Memory> {
        let m = self.prepare(memory)?;
        let ahead = self.ahead(&[&m]);
        self.run(ahead, |ahead| {
            let m = m.clone();
            async move {
                let mut client = self.client().await?;
                let tx = self.begin(&mut client).await?;
                let m = self.write_new(&tx, &ahead, m).await?;
                self.commit(tx).await?;
                Ok(m)
            }
        })
    }

    fn update(&self, id: &str, change: Memory) -> Result<Memory> {
        let id = normalise_id(id)?;
        let mut change = change;
        change.id = id.clone();
        let change = self.prepare(change)?;
        let ahead = self.ahead(&[&change]);
        self.run(ahead, |ahead| {
            let (id, change) = (id.clone(), change.clone());
            async move {
                let mut client = self.client().await?;
                let tx = self.begin(&mut client).await?;
                let m = self.update_in(&tx, &ahead, &id, change, None).await?;
                self.commit(tx).await?;
                Ok(m)
            }
        })
    }

    fn get(&self, id: &str) -> Result<Option<Memory>> {
        let id = normalise_id(id)?;
        self.read(|| async {
            let mut client = self.client().await?;
            let tx = self.begin(&mut client).await?;
            let m = self.fetch(&tx, &id, false).await?;
            self.commit(tx).await?;
            Ok(m)
        })
    }

    fn history(&self, id: &str) -> Result<Vec<Memory>> {
        let id = normalise_id(id)?;
        self.read(|| async {
            let mut client = self.client().await?;
            let tx = self.begin(&mut client).await?;
            let sql = "SELECT m.id, m.text, m.version, m.created_ms, m.updated_ms, m.doc
                       FROM engram_memory_versions m WHERE m.repo = $1 AND m.id = $2
                       ORDER BY m.seq, m.version";
            let params: Vec<Param> = vec![Box::new(self.repo.clone()), Box::new(id.clone())];
            let out = self.select_memories(&tx, sql, &params).await?;
            self.commit(tx).await?;
            Ok(out)
        })
    }

    fn forget(&self, id: &str) -> Result<bool> {
        let id = normalise_id(id)?;
        self.run(Ahead::new(), |_| async {
            let mut client = self.client().await?;
            let tx = self.begin(&mut client).await?;
            let n = tx
                .execute(
                    "DELETE FROM engram_memories WHERE repo = $1 AND id = $2",
                    &[&self.repo, &id],
                )
                .await
                .map_err(|e| self.pg(e))?;
            self.commit(tx).await?;
            Ok(n > 0)
        })
    }

    fn count(&self) -> Result<u64> {
        self.read(|| async {
            let mut client = self.client().await?;
            let tx = self.begin(&mut client).await?;
            let n: i64 = tx
                .query_one(
                    "SELECT count(*) FROM engram_memories WHERE repo = $1",
                    &[&self.repo],
                )
                .await
                .map_err(|e| self.pg(e))?
                .get(0);
            self.commit(tx).await?;
            Ok(n as u64)
        })
    }

    fn list_filtered(
        &self,
        filter: &MemoryFilter,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<Memory>> {
        self.read(|| async {
            let mut client = self.client().await?;
            let tx = self.begin(&mut client).await?;
            let out = self.list_in(&tx, filter, limit, offset).await?;
            self.commit(tx).await?;
            Ok(out)
        })
    }

    fn recall(&self, query: &str, filter: &MemoryFilter, top_k: usize) -> Result<Vec<RecallHit>> {
        let fetch = memory::recall_fetch(top_k);
        let qv = match self.embedder.embed(&[query]) {
            Ok(mut v) => v.pop().filter(|v| !v.is_empty() && !is_zero(v)),
            Err(e) => {
                tracing::warn!("recall by keyword only: {e}");
                None
            }
        };
        self.read(|| {
            let qv = qv.clone();
            async move {
                let mut client = self.client().await?;
                let tx = self.begin(&mut client).await?;
                let keyword = self.keyword_ids(&tx, query, filter, fetch).await?;
                let vector = match qv {
                    Some(qv) => self.vector_ids(&tx, qv, filter, fetch).await?,
                    None => Vec::new(),
                };
                let fused: Vec<(String, f64)> = fuse_ranked(&keyword, &vector)
                    .into_iter()
                    .take(top_k)
                    .collect();
                let ids: Vec<String> = fused.iter().map(|(id, _)| id.clone()).collect();
                let sql =
                    format!("SELECT {MEMORY_COLUMNS} FROM engram_memories m WHERE m.repo = $1 AND m.id = ANY($2)");
                let params: Vec<Param> = vec![Box::new(self.repo.clone()), Box::new(ids)];
                let found = self.select_memories(&tx, &sql, &params).await?;
                self.commit(tx).await?;
                let mut by_id: HashMap<String, Memory> =
                    found.into_iter().map(|m| (m.id.clone(), m)).collect();
                Ok(fused
                    .into_iter()
                    .filter_map(|(id, score)| by_id.remove(&id).map(|memory| RecallHit { memory, score }))
                    .collect())
            }
        })
    }

    fn note_set(&self, name: &str, value: &str, provenance: Option<&str>) -> Result<Memory> {
        self.set_note(name, value, provenance)
    }

    fn note_get(&self, name: &str) -> Result<Option<Memory>> {
        let name = memory::check_note_name(name)?.to_string();
        self.read(|| async {
            let mut client = self.client().await?;
            let tx = self.begin(&mut client).await?;
            let sql = format!(
                "SELECT {MEMORY_COLUMNS} FROM engram_notes n
                 JOIN engram_memories m ON m.repo = n.repo AND m.id = n.id
                 WHERE n.repo = $1 AND n.name = $2"
            );
            let params: Vec<Param> = vec![Box::new(self.repo.clone()), Box::new(name.clone())];
            let mut found = self.select_memories(&tx, &sql, &params).await?;
            self.commit(tx).await?;
            Ok(found.pop())
        })
    }

    fn note_list(&self) -> Result<Vec<Memory>> {
        let filter = MemoryFilter {
            kind: Some("note".into()),
            ..MemoryFilter::default()
        };
        self.list_filtered(&filter, usize::MAX >> 1, 0)
    }

    fn note_delete(&self, name: &str) -> Result<bool> {
        let name = memory::check_note_name(name)?.to_string();
        self.run(Ahead::new(), |_| async {
            let mut client = self.client().await?;
            let tx = self.begin(&mut client).await?;
            let n = tx
                .execute(
                    "DELETE FROM engram_memories m USING engram_notes n
                     WHERE n.repo = $1 AND n.name = $2 AND m.repo = n.repo AND m.id = n.id",
                    &[&self.repo, &name],
                )
                .await
                .map_err(|e| self.pg(e))?;
            self.commit(tx).await?;
            Ok(n > 0)
        })
    }

    fn record_error(
        &self,
        e: &ErrorReport,
        tags: &[String],
        started: Option<&str>,
    ) -> Result<Memory> {
        let mut e = e.clone();
        self.join(&mut e.session, started)?;
        self.count_error(&e, tags)
    }

    fn record_decision(&self, d: &Decision, started: Option<&str>) -> Result<Memory> {
        let mut m = memory::decision_entry(d)?;
        self.join(&mut m.session, started)?;
        MemoryBackend::write(self, m)
    }

    fn start_session(&self, description: &str, tags: &[String]) -> Result<Memory> {
        MemoryBackend::write(self, memory::session_entry(description, tags)?)
    }

    fn end_session(&self, id: &str, success: bool, user_summary: Option<&str>) -> Result<Memory> {
        self.close_session(id, success, user_summary)
    }

    fn track_file_change(&self, c: &FileChange, started: Option<&str>) -> Result<Memory> {
        let mut m = memory::change_entry(c)?;
        self.join(&mut m.session, started)?;
        MemoryBackend::write(self, m)
    }

    fn related(&self, start: &str, hops: u32) -> Result<Vec<Related>> {
        self.walk_related(start, hops)
    }

    fn texts_after(
        &self,
        filter: &MemoryFilter,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<MemoryText>> {
        let after = after.unwrap_or("");
        self.read(|| async {
            let mut client = self.client().await?;
            let tx = self.begin(&mut client).await?;
            let out = self.texts_in(&tx, filter, after, limit).await?;
            self.commit(tx).await?;
            Ok(out)
        })
    }

    fn export(&self, out: &mut dyn Write) -> Result<u64> {
        self.export_jsonl(out)
    }

    fn import_file_limited(&self, path: &Path, max_line_bytes: u64) -> Result<ImportReport> {
        self.import_jsonl(path, max_line_bytes)
    }
}
