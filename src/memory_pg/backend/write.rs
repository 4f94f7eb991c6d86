//! Writing rows: a memory, its version, edges, vector, and the note or error
//! signature it holds, all in the caller's transaction.

use deadpool_postgres::Transaction;
use pgvector::Vector;

use super::tx::{i64_of, now_ms, Ahead, TxError, TxResult};
use crate::memory::{self, Memory, MemoryError, Result};
use crate::memory_pg::rows::{self, memory_from_row, refs, Param, MEMORY_COLUMNS};
use crate::memory_pg::PgMemories;

const INSERT_COLUMNS: &str =
    "repo, id, kind, text, task, insights, contexts, tags, session, version, created_ms, updated_ms, doc, tsv";

impl PgMemories {
    /// The live memory `id` (locked for update when `lock`).
    pub(super) async fn fetch(
        &self,
        tx: &Transaction<'_>,
        id: &str,
        lock: bool,
    ) -> TxResult<Option<Memory>> {
        let sql = format!(
            "SELECT {MEMORY_COLUMNS} FROM engram_memories m WHERE m.repo = $1 AND m.id = $2{}",
            if lock { " FOR UPDATE" } else { "" }
        );
        let row = tx
            .query_opt(&sql, &[&self.repo, &id])
            .await
            .map_err(|e| self.pg(e))?;
        Ok(row.as_ref().map(memory_from_row).transpose()?)
    }

    pub(super) fn vector_for(&self, ahead: &Ahead, m: &Memory) -> TxResult<Option<Vec<f32>>> {
        let text = memory::embedding_text(m);
        match ahead.get(&text) {
            Some(v) => Ok(v.clone()),
            None => Err(TxError::NeedVector(text)),
        }
    }

    /// The row values of `m`, `$1` to `$15` in [`INSERT_COLUMNS`] order.
    pub(super) fn row_params(&self, m: &Memory) -> Vec<Param> {
        let (t, g) = rows::tsv_texts(m);
        vec![
            Box::new(self.repo.clone()),
            Box::new(m.id.clone()),
            Box::new(m.kind.clone()),
            Box::new(m.text.clone()),
            Box::new(m.task.clone()),
            Box::new(m.insights.clone()),
            Box::new(m.contexts.clone()),
            Box::new(m.tags.clone()),
            Box::new(m.session.clone()),
            Box::new(i64_of(m.version)),
            Box::new(i64_of(m.created_ms)),
            Box::new(i64_of(m.updated_ms)),
            Box::new(rows::doc(m)),
            Box::new(t),
            Box::new(g),
        ]
    }

    /// Insert `m` (id, version and times set) unless its id is taken; its `seq`, or
    /// `None` when the id was taken.
    pub(super) async fn insert_new(
        &self,
        tx: &Transaction<'_>,
        m: &Memory,
    ) -> TxResult<Option<i64>> {
        let sql = format!(
            "INSERT INTO engram_memories ({INSERT_COLUMNS})
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, {})
             ON CONFLICT (repo, id) DO NOTHING RETURNING seq",
            rows::tsv_sql(14, 15)
        );
        let params = self.row_params(m);
        let row = tx
            .query_opt(&sql, &refs(&params))
            .await
            .map_err(|e| self.pg(e))?;
        Ok(row.map(|r| r.get(0)))
    }

    /// Replace memory `id` with `change` as its next version: the row is locked, the
    /// version incremented in the same statement. With `expect`, only if the memory
    /// is still at that version (else the attempt is retried).
    pub(super) async fn update_in(
        &self,
        tx: &Transaction<'_>,
        ahead: &Ahead,
        id: &str,
        mut change: Memory,
        expect: Option<u64>,
    ) -> TxResult<Memory> {
        let Some(old) = self.fetch(tx, id, true).await? else {
            return Err(TxError::Fail(MemoryError::NotFound(id.to_string())));
        };
        if expect.is_some_and(|v| v != old.version) {
            return Err(TxError::Retry);
        }
        change.id = old.id.clone();
        change.created_ms = old.created_ms;
        change.updated_ms = now_ms().max(old.updated_ms);
        change.version = old.version + 1;
        change.extra = old.extra;
        let vector = self.vector_for(ahead, &change)?;
        let sql = format!(
            "UPDATE engram_memories SET kind = $3, text = $4, task = $5, insights = $6,
               contexts = $7, tags = $8, session = $9, version = version + 1,
               updated_ms = GREATEST($10, updated_ms), doc = $11, tsv = {},
               seq = nextval('engram_write_seq')
             WHERE repo = $1 AND id = $2
             RETURNING version, created_ms, updated_ms, seq",
            rows::tsv_sql(12, 13)
        );
        // The row's values without version and created_ms (kept by the statement).
        let mut params = self.row_params(&change);
        params.drain(9..11);
        let row = tx
            .query_one(&sql, &refs(&params))
            .await
            .map_err(|e| self.pg(e))?;
        change.version = row.get::<_, i64>(0) as u64;
        change.created_ms = row.get::<_, i64>(1) as u64;
        change.updated_ms = row.get::<_, i64>(2) as u64;
        self.after_write(tx, &change, row.get(3), vector).await?;
        Ok(change)
    }

    /// Everything written beside a memory's row, in its transaction: the version, its
    /// edges, its vector, and the note or error signature it holds.
    pub(super) async fn after_write(
        &self,
        tx: &Transaction<'_>,
        m: &Memory,
        seq: i64,
        vector: Option<Vec<f32>>,
    ) -> TxResult<()> {
        let pg = |e| self.pg(e);
        tx.execute(
            "INSERT INTO engram_memory_versions (repo, id, version, text, created_ms, updated_ms, seq, doc)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (repo, id, version) DO UPDATE SET text = excluded.text,
               created_ms = excluded.created_ms, updated_ms = excluded.updated_ms,
               seq = excluded.seq, doc = excluded.doc",
            &[
                &self.repo,
                &m.id,
                &i64_of(m.version),
                &m.text,
                &i64_of(m.created_ms),
                &i64_of(m.updated_ms),
                &seq,
                &rows::doc(m),
            ],
        )
        .await
        .map_err(pg)?;
        tx.execute(
            "DELETE FROM engram_memory_edges WHERE repo = $1 AND owner = $2",
            &[&self.repo, &m.id],
        )
        .await
        .map_err(pg)?;
        let edges = rows::edges(m);
        if !edges.is_empty() {
            let (mut src, mut rel, mut dst) = (Vec::new(), Vec::new(), Vec::new());
            for (s, r, d) in edges {
                src.push(s);
                rel.push(r.to_string());
                dst.push(d);
            }
            tx.execute(
                "INSERT INTO engram_memory_edges (repo, src, rel, dst, owner)
                 SELECT $1, e.s, e.r, e.d, $2 FROM unnest($3::text[], $4::text[], $5::text[]) AS e(s, r, d)
                 ON CONFLICT DO NOTHING",
                &[&self.repo, &m.id, &src, &rel, &dst],
            )
            .await
            .map_err(pg)?;
        }
        let embedder = self.embedder.name().to_string();
        match vector {
            Some(v) => {
                let dims = v.len() as i32;
                tx.execute(
                    "INSERT INTO engram_memory_vectors (repo, id, embedder, dims, embedding)
                     VALUES ($1, $2, $3, $4, $5)
                     ON CONFLICT (repo, id, embedder) DO UPDATE SET dims = excluded.dims,
                       embedding = excluded.embedding",
                    &[&self.repo, &m.id, &embedder, &dims, &Vector::from(v)],
                )
                .await
                .map_err(pg)?;
            }
            None => {
                tx.execute(
                    "DELETE FROM engram_memory_vectors WHERE repo = $1 AND id = $2 AND embedder = $3",
                    &[&self.repo, &m.id, &embedder],
                )
                .await
                .map_err(pg)?;
            }
        }
        if m.kind == "note" {
            if let Some(name) = rows::meta_str(m, "name") {
                tx.execute(
                    "INSERT INTO engram_notes (repo, name, id) VALUES ($1, $2, $3)
                     ON CONFLICT (repo, name) DO UPDATE SET id = excluded.id",
                    &[&self.repo, &name, &m.id],
                )
                .await
                .map_err(pg)?;
            }
        }
        if m.kind == "error" {
            if let Some(sig) = rows::meta_str(m, "signature") {
                let frequency = rows::error_frequency(m);
                tx.execute(
                    "INSERT INTO engram_error_counts (repo, signature, id, frequency)
                     VALUES ($1, $2, $3, $4)
                     ON CONFLICT (repo, signature) DO UPDATE SET id = excluded.id,
                       frequency = excluded.frequency",
                    &[&self.repo, &sig, &m.id, &i64_of(frequency)],
                )
                .await
                .map_err(pg)?;
            }
        }
        Ok(())
    }

    /// Store `m` (validated, redacted) as a new memory under its id, or under a fresh
    /// one when it has none.
    pub(super) async fn write_new(
        &self,
        tx: &Transaction<'_>,
        ahead: &Ahead,
        mut m: Memory,
    ) -> TxResult<Memory> {
        let given = !m.id.is_empty();
        let now = now_ms();
        m.created_ms = now;
        m.updated_ms = now;
        m.version = 1;
        let vector = self.vector_for(ahead, &m)?;
        for _ in 0..64 {
            if !given {
                m.id = memory::random_id()?;
            }
            match self.insert_new(tx, &m).await? {
                Some(seq) => {
                    self.after_write(tx, &m, seq, vector).await?;
                    return Ok(m);
                }
                None if given => {
                    return Err(TxError::Fail(MemoryError::Invalid(format!(
                        "{} already exists; update it instead",
                        m.id
                    ))))
                }
                None => {}
            }
        }
        Err(TxError::Fail(MemoryError::Invalid(
            "could not find a free memory id in 64 tries".into(),
        )))
    }

    /// Validate, redact and anchor an entry about to be written (anchored after
    /// redaction, as the local store does, so the anchors are those of what is kept).
    pub(super) fn prepare(&self, mut m: Memory) -> Result<Memory> {
        m.validate()?;
        m.redacted = memory::redact_memory(&mut m)?;
        if let Some(source) = &self.anchors {
            m.anchors = source.anchors(&m)?;
            m.callees = source.callees(&m.anchors)?;
        }
        Ok(m)
    }
}
