//! [`MemoryBackend`] on PostgreSQL: every call one transaction (retried after a
//! serialization failure or deadlock), every transaction scoped to the repository by
//! `engram.repo`, every write acknowledged after COMMIT.
//!
//! Vectors are made outside transactions (an embedder may be an HTTP service): each
//! call embeds what it expects to write first; a transaction whose entry turns out
//! different (an error recurrence that brings the old tags) rolls back, and the call
//! embeds the new text and runs it again.

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Object, Transaction};
use pgvector::Vector;

use super::rows::{self, memory_from_row, refs, Param, MEMORY_COLUMNS};
use super::{PgMemories, RETRIES};
use crate::embed::is_zero;
use crate::memory::{
    self, error_signature, fuse_ranked, normalise_id, Decision, ErrorReport, FileChange,
    ImportReport, Memory, MemoryBackend, MemoryError, MemoryFilter, RecallHit, Related, Result,
    MIN_VECTOR_SIMILARITY,
};

/// Vectors made ahead of a transaction, by the text they embed (`None`: nothing to
/// embed, or the embedder failed and the entry is stored without one).
type Ahead = HashMap<String, Option<Vec<f32>>>;

/// How a transaction attempt ended without a result.
enum TxError {
    /// A concurrent transaction got in the way (serialization failure, deadlock, an id
    /// taken meanwhile): run it again.
    Retry,
    /// The pooled connection was dead before anything was sent: run it again on
    /// another one.
    Stale(MemoryError),
    /// The entry to write embeds this text, which was not embedded ahead.
    NeedVector(String),
    /// A real failure.
    Fail(MemoryError),
}

impl From<MemoryError> for TxError {
    fn from(e: MemoryError) -> Self {
        TxError::Fail(e)
    }
}

type TxResult<T> = std::result::Result<T, TxError>;

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn i64_of(v: u64) -> i64 {
    v.min(i64::MAX as u64) as i64
}

fn limit_of(v: usize) -> i64 {
    v.min(i64::MAX as usize) as i64
}

const INSERT_COLUMNS: &str =
    "repo, id, kind, text, task, insights, contexts, tags, session, version, created_ms, updated_ms, doc, tsv";

impl PgMemories {
    fn pg(&self, e: tokio_postgres::Error) -> TxError {
        if super::is_retryable(&e) {
            TxError::Retry
        } else {
            TxError::Fail(self.db.error(e))
        }
    }

    /// Vectors of `texts`; an embedder failure stores the entries without one (as
    /// the local store does), and keyword recall still finds them.
    fn embed_texts(&self, texts: &[String]) -> Vec<Option<Vec<f32>>> {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        match self.embedder.embed(&refs) {
            Ok(v) if v.len() == texts.len() => v
                .into_iter()
                .map(|v| (!v.is_empty() && !is_zero(&v)).then_some(v))
                .collect(),
            Ok(v) => {
                tracing::warn!(
                    "embedder {} returned {} vectors for {} texts; stored without vectors",
                    self.embedder.name(),
                    v.len(),
                    texts.len()
                );
                vec![None; texts.len()]
            }
            Err(e) => {
                tracing::warn!("stored without a vector ({e}); keyword recall finds it");
                vec![None; texts.len()]
            }
        }
    }

    fn ahead(&self, memories: &[&Memory]) -> Ahead {
        let texts: Vec<String> = memories.iter().map(|m| memory::embedding_text(m)).collect();
        let vectors = self.embed_texts(&texts);
        texts.into_iter().zip(vectors).collect()
    }

    /// Run transaction attempts `f` until one ends: retries conflicts (with a short
    /// backoff), dead pooled connections, and entries whose vector was not made ahead.
    fn run<T, F, Fut>(&self, mut ahead: Ahead, f: F) -> Result<T>
    where
        F: Fn(Arc<Ahead>) -> Fut,
        Fut: Future<Output = TxResult<T>> + Send,
        T: Send,
    {
        let mut conflicts = 0usize;
        let mut rounds = 0usize;
        loop {
            rounds += 1;
            let snapshot = Arc::new(std::mem::take(&mut ahead));
            let outcome = self.db.block_on(f(snapshot.clone()));
            ahead = Arc::try_unwrap(snapshot).unwrap_or_else(|a| (*a).clone());
            match outcome {
                Ok(v) => return Ok(v),
                Err(TxError::Fail(e)) => return Err(e),
                Err(TxError::Stale(e)) => {
                    if rounds > 2 {
                        return Err(e);
                    }
                }
                Err(TxError::NeedVector(text)) => {
                    if rounds > RETRIES {
                        return Err(MemoryError::Invalid(
                            "the entry kept changing while it was embedded".into(),
                        ));
                    }
                    let v = self
                        .embed_texts(std::slice::from_ref(&text))
                        .pop()
                        .flatten();
                    ahead.insert(text, v);
                }
                Err(TxError::Retry) => {
                    conflicts += 1;
                    if conflicts > RETRIES {
                        return Err(MemoryError::Backend {
                            server: self.db.server.clone(),
                            reason: format!(
                                "gave up after {RETRIES} attempts conflicting with other writers"
                            ),
                        });
                    }
                    std::thread::sleep(Duration::from_millis(2 << conflicts.min(8)));
                }
            }
        }
    }

    /// A connection and a transaction on it scoped to this repository. A connection
    /// that fails here has sent nothing: the attempt may be retried.
    async fn client(&self) -> TxResult<Object> {
        self.db.client().await.map_err(TxError::Fail)
    }

    async fn begin<'c>(&self, client: &'c mut Object) -> TxResult<Transaction<'c>> {
        let tx = client
            .transaction()
            .await
            .map_err(|e| TxError::Stale(self.db.error(e)))?;
        tx.execute("SELECT set_config('engram.repo', $1, true)", &[&self.repo])
            .await
            .map_err(|e| TxError::Stale(self.db.error(e)))?;
        Ok(tx)
    }

    async fn commit(&self, tx: Transaction<'_>) -> TxResult<()> {
        tx.commit().await.map_err(|e| self.pg(e))
    }

    /// The live memory `id` (locked for update when `lock`).
    async fn fetch(&self, tx: &Transaction<'_>, id: &str, lock: bool) -> TxResult<Option<Memory>> {
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

    fn vector_for(&self, ahead: &Ahead, m: &Memory) -> TxResult<Option<Vec<f32>>> {
        let text = memory::embedding_text(m);
        match ahead.get(&text) {
            Some(v) => Ok(v.clone()),
            None => Err(TxError::NeedVector(text)),
        }
    }

    /// The row values of `m`, `$1` to `$15` in [`INSERT_COLUMNS`] order.
    fn row_params(&self, m: &Memory) -> Vec<Param> {
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
    async fn insert_new(&self, tx: &Transaction<'_>, m: &Memory) -> TxResult<Option<i64>> {
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

    /// Insert or replace `m` as it is (an import); its `seq`.
    async fn upsert(&self, tx: &Transaction<'_>, m: &Memory) -> TxResult<i64> {
        let sql = format!(
            "INSERT INTO engram_memories ({INSERT_COLUMNS})
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, {})
             ON CONFLICT (repo, id) DO UPDATE SET kind = excluded.kind, text = excluded.text,
               task = excluded.task, insights = excluded.insights, contexts = excluded.contexts,
               tags = excluded.tags, session = excluded.session, version = excluded.version,
               created_ms = excluded.created_ms, updated_ms = excluded.updated_ms,
               doc = excluded.doc, tsv = excluded.tsv, seq = nextval('engram_write_seq')
             RETURNING seq",
            rows::tsv_sql(14, 15)
        );
        let params = self.row_params(m);
        let row = tx
            .query_one(&sql, &refs(&params))
            .await
            .map_err(|e| self.pg(e))?;
        Ok(row.get(0))
    }

    /// Replace memory `id` with `change` as its next version: the row is locked, the
    /// version incremented in the same statement. With `expect`, only if the memory
    /// is still at that version (else the attempt is retried).
    async fn update_in(
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
    async fn after_write(
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
                let frequency = m
                    .metadata
                    .get("frequency")
                    .and_then(serde_json::Value::as_u64)
                    .unwrap_or(1);
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
    async fn write_new(
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

    /// Validate and redact an entry about to be written.
    fn prepare(mut m: Memory) -> Result<Memory> {
        m.validate().map_err(MemoryError::Invalid)?;
        m.redacted = memory::redact_memory(&mut m)?;
        Ok(m)
    }

    async fn select_memories(
        &self,
        tx: &Transaction<'_>,
        sql: &str,
        params: &[Param],
    ) -> TxResult<Vec<Memory>> {
        let rows = tx.query(sql, &refs(params)).await.map_err(|e| self.pg(e))?;
        Ok(rows
            .iter()
            .map(memory_from_row)
            .collect::<Result<Vec<_>>>()?)
    }

    fn read<T, F, Fut>(&self, f: F) -> Result<T>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = TxResult<T>> + Send,
        T: Send,
    {
        self.run(Ahead::new(), |_| f())
    }

    async fn list_in(
        &self,
        tx: &Transaction<'_>,
        filter: &MemoryFilter,
        limit: usize,
        offset: usize,
    ) -> TxResult<Vec<Memory>> {
        let (cond, mut params) = rows::filter_sql(filter, 2);
        let n = params.len() + 2;
        let sql = format!(
            "SELECT {MEMORY_COLUMNS} FROM engram_memories m WHERE m.repo = $1{cond}
             ORDER BY m.updated_ms DESC, m.seq DESC LIMIT ${n} OFFSET ${}",
            n + 1
        );
        let mut all: Vec<Param> = vec![Box::new(self.repo.clone())];
        all.append(&mut params);
        all.push(Box::new(limit_of(limit)));
        all.push(Box::new(limit_of(offset)));
        self.select_memories(tx, &sql, &all).await
    }

    /// Keyword candidates: ids best first (text weight B, tags A), recency breaking
    /// ties.
    async fn keyword_ids(
        &self,
        tx: &Transaction<'_>,
        query: &str,
        filter: &MemoryFilter,
        fetch: usize,
    ) -> TxResult<Vec<String>> {
        let Some(q) = rows::tsquery(query) else {
            return Ok(Vec::new());
        };
        let (cond, mut params) = rows::filter_sql(filter, 3);
        let n = params.len() + 3;
        let sql = format!(
            "SELECT m.id FROM engram_memories m, to_tsquery('simple', $2) q
             WHERE m.repo = $1 AND m.tsv @@ q{cond}
             ORDER BY ts_rank('{{0, 0, 0.5, 1}}', m.tsv, q) DESC, m.updated_ms DESC, m.seq DESC
             LIMIT ${n}"
        );
        let mut all: Vec<Param> = vec![Box::new(self.repo.clone()), Box::new(q)];
        all.append(&mut params);
        all.push(Box::new(limit_of(fetch)));
        let rows = tx.query(&sql, &refs(&all)).await.map_err(|e| self.pg(e))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    /// Vector candidates: ids nearest first by cosine over the HNSW index of the
    /// embedder's dimension, at least [`MIN_VECTOR_SIMILARITY`] similar.
    async fn vector_ids(
        &self,
        tx: &Transaction<'_>,
        qv: Vec<f32>,
        filter: &MemoryFilter,
        fetch: usize,
    ) -> TxResult<Vec<String>> {
        let dims = qv.len();
        let k = fetch * 2;
        tx.batch_execute(&format!("SET LOCAL hnsw.ef_search = {}", k.clamp(40, 1000)))
            .await
            .map_err(|e| self.pg(e))?;
        if self.iterative_scan {
            tx.batch_execute("SET LOCAL hnsw.iterative_scan = strict_order")
                .await
                .map_err(|e| self.pg(e))?;
        }
        let (cond, mut params) = rows::filter_sql(filter, 4);
        let n = params.len() + 4;
        let sql = format!(
            "SELECT v.id, (v.embedding::vector({dims}) <=> $3::vector({dims}))::float8 AS d
             FROM engram_memory_vectors v
             JOIN engram_memories m ON m.repo = v.repo AND m.id = v.id
             WHERE v.repo = $1 AND v.embedder = $2 AND v.dims = {dims}{cond}
             ORDER BY v.embedding::vector({dims}) <=> $3::vector({dims})
             LIMIT ${n}"
        );
        let mut all: Vec<Param> = vec![
            Box::new(self.repo.clone()),
            Box::new(self.embedder.name().to_string()),
            Box::new(Vector::from(qv)),
        ];
        all.append(&mut params);
        all.push(Box::new(limit_of(k)));
        let rows = tx.query(&sql, &refs(&all)).await.map_err(|e| self.pg(e))?;
        // Ordered by distance alone in SQL (a second sort key keeps the planner off
        // the HNSW index); ties broken by id here.
        let mut found: Vec<(f64, String)> = rows
            .iter()
            .map(|r| (r.get::<_, f64>(1), r.get::<_, String>(0)))
            .filter(|(d, _)| 1.0 - d >= f64::from(MIN_VECTOR_SIMILARITY))
            .collect();
        found.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
        let mut ids: Vec<String> = found.into_iter().map(|(_, id)| id).collect();
        ids.truncate(fetch);
        Ok(ids)
    }

    /// Create the HNSW index of this embedder's dimension if it is not there (the
    /// migration creates the built-in embedder's, 256).
    pub(super) async fn ensure_vector_index(&self) -> Result<()> {
        let dims = self.embedder.dimensions();
        if dims == 256 || dims == 0 || dims > 2000 {
            return Ok(());
        }
        let mut client = self.db.client().await?;
        let tx = client.transaction().await.map_err(|e| self.db.error(e))?;
        super::schema::lock(&self.db, &tx).await?;
        tx.batch_execute(&format!(
            "SET LOCAL client_min_messages = warning;
             CREATE INDEX IF NOT EXISTS engram_memory_vectors_hnsw_{dims} ON engram_memory_vectors
               USING hnsw ((embedding::vector({dims})) vector_cosine_ops) WHERE dims = {dims}"
        ))
        .await
        .map_err(|e| self.db.error(e))?;
        tx.commit().await.map_err(|e| self.db.error(e))?;
        Ok(())
    }
}

impl MemoryBackend for PgMemories {
    fn describe(&self) -> String {
        format!("{} repo {}", self.db.server, self.repo)
    }

    fn write(&self, memory: Memory) -> Result<Memory> {
        let m = Self::prepare(memory)?;
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
        let change = Self::prepare(change)?;
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
        self.read(|| async {
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
        let (name, m) = memory::note_entry(name, value, provenance)?;
        let name = name.to_string();
        let m = Self::prepare(m)?;
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
        self.read(|| async {
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

    fn record_error(&self, e: &ErrorReport, tags: &[String]) -> Result<Memory> {
        memory::check_error(e)?;
        let signature = error_signature(e);
        // The first occurrence's entry, embedded ahead; a recurrence usually embeds
        // the same text, else the attempt asks for its vector.
        let first = Self::prepare(memory::error_entry(e, &signature, tags, None, 1))?;
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
                    let mut m = Self::prepare(memory::error_entry(e, &signature, tags, None, 1))?;
                    m.id = fresh;
                    match self.write_new(&tx, &ahead, m).await {
                        Err(TxError::Fail(MemoryError::Invalid(_))) => return Err(TxError::Retry),
                        other => other?,
                    }
                } else {
                    let Some(old) = self.fetch(&tx, &holder, true).await? else {
                        return Err(TxError::Fail(MemoryError::NotFound(holder)));
                    };
                    let m = Self::prepare(memory::error_entry(
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

    fn record_decision(&self, d: &Decision) -> Result<Memory> {
        MemoryBackend::write(self, memory::decision_entry(d)?)
    }

    fn start_session(&self, description: &str, tags: &[String]) -> Result<Memory> {
        MemoryBackend::write(self, memory::session_entry(description, tags)?)
    }

    fn end_session(&self, id: &str, success: bool, user_summary: Option<&str>) -> Result<Memory> {
        let id = normalise_id(id)?;
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
            let m = Self::prepare(memory::ended_session(
                &session,
                entries,
                success,
                user_summary,
            ))?;
            let ahead = self.ahead(&[&m]);
            // Written only if the session is still the version the summary was made
            // from; else it is read and summarised again.
            let outcome = self.db.block_on(async {
                let mut client = self.client().await?;
                let tx = self.begin(&mut client).await?;
                let m = self
                    .update_in(&tx, &ahead, &id, m, Some(session.version))
                    .await?;
                self.commit(tx).await?;
                Ok::<_, TxError>(m)
            });
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

    fn track_file_change(&self, c: &FileChange) -> Result<Memory> {
        MemoryBackend::write(self, memory::change_entry(c)?)
    }

    fn related(&self, start: &str, hops: u32) -> Result<Vec<Related>> {
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

    fn export(&self, out: &mut dyn Write) -> Result<u64> {
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

    fn import_file(&self, path: &Path) -> Result<ImportReport> {
        // No code index here: a legacy hash64 symbol resolves to nothing.
        let memory::Prepared {
            memories: prepared,
            report,
        } = memory::prepare_import(path, &|_| Ok(None))?;
        if prepared.is_empty() {
            return Ok(report);
        }
        let ahead = self.ahead(&prepared.iter().map(|(m, _)| m).collect::<Vec<_>>());
        self.run(ahead, |ahead| {
            let (prepared, mut report) = (prepared.clone(), report.clone());
            async move {
                let mut client = self.client().await?;
                let tx = self.begin(&mut client).await?;
                let mut taken: HashSet<String> = HashSet::new();
                let mut legacy: HashMap<String, String> = HashMap::new();
                for (mut m, legacy_of) in prepared {
                    if m.id.is_empty() {
                        m.id = loop {
                            let id = memory::random_id()?;
                            if !taken.contains(&id) && self.fetch(&tx, &id, false).await?.is_none()
                            {
                                break id;
                            }
                        };
                    } else if let Some(old) = legacy_of {
                        m.id = match legacy.get(&old) {
                            Some(id) => id.clone(),
                            None => self.legacy_slot(&tx, &taken, &old).await?,
                        };
                        legacy.insert(old, m.id.clone());
                        if self.fetch(&tx, &m.id, false).await?.is_some() {
                            report.replaced += 1;
                        }
                    } else if self.fetch(&tx, &m.id, false).await?.is_some() {
                        report.replaced += 1;
                    }
                    taken.insert(m.id.clone());
                    let vector = self.vector_for(&ahead, &m)?;
                    let seq = self.upsert(&tx, &m).await?;
                    self.after_write(&tx, &m, seq, vector).await?;
                    report.imported += 1;
                }
                self.commit(tx).await?;
                Ok(report)
            }
        })
    }
}

impl PgMemories {
    /// The id for a memory imported under the legacy id `old`: the derived id,
    /// re-rolled while another memory holds it (as the local import does).
    async fn legacy_slot(
        &self,
        tx: &Transaction<'_>,
        taken: &HashSet<String>,
        old: &str,
    ) -> TxResult<String> {
        for round in 0..64 {
            let id = memory::derived_id(old, round);
            if taken.contains(&id) {
                continue;
            }
            match self.fetch(tx, &id, false).await? {
                None => return Ok(id),
                Some(m) if memory::legacy_id(&m) == Some(old) => return Ok(id),
                _ => {}
            }
        }
        Err(TxError::Fail(MemoryError::Invalid(format!(
            "no free memory id for legacy id {old:?} in 64 tries"
        ))))
    }
}
