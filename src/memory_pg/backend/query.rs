//! Reading rows: listing with filters, and recall's keyword (tsvector) and vector
//! (HNSW) candidates.

use deadpool_postgres::Transaction;
use pgvector::Vector;

use super::tx::{limit_of, TxResult};
use crate::memory::{Memory, MemoryFilter, MemoryText, Result, MIN_VECTOR_SIMILARITY};
use crate::memory_pg::rows::{self, memory_from_row, refs, Param, MEMORY_COLUMNS};
use crate::memory_pg::PgMemories;

impl PgMemories {
    pub(super) async fn select_memories(
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

    pub(super) async fn list_in(
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

    /// A page of memory texts in id order after `after`; see
    /// [`MemoryBackend::texts_after`](crate::memory::MemoryBackend::texts_after).
    pub(super) async fn texts_in(
        &self,
        tx: &Transaction<'_>,
        filter: &MemoryFilter,
        after: &str,
        limit: usize,
    ) -> TxResult<Vec<MemoryText>> {
        let (cond, mut params) = rows::filter_sql(filter, 3);
        let n = params.len() + 3;
        let sql = format!(
            "SELECT m.id, m.text FROM engram_memories m WHERE m.repo = $1 AND m.id > $2{cond}
             ORDER BY m.id LIMIT ${n}"
        );
        let mut all: Vec<Param> = vec![Box::new(self.repo.clone()), Box::new(after.to_string())];
        all.append(&mut params);
        all.push(Box::new(limit_of(limit)));
        let rows = tx.query(&sql, &refs(&all)).await.map_err(|e| self.pg(e))?;
        Ok(rows
            .iter()
            .map(|r| MemoryText {
                id: r.get(0),
                text: r.get(1),
            })
            .collect())
    }

    /// Keyword candidates: ids best first (text weight B, tags A), recency breaking
    /// ties.
    pub(super) async fn keyword_ids(
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
    pub(super) async fn vector_ids(
        &self,
        tx: &Transaction<'_>,
        qv: Vec<f32>,
        filter: &MemoryFilter,
        fetch: usize,
    ) -> TxResult<Vec<String>> {
        let dims = qv.len();
        let k = fetch * 2;
        self.vector_settings(tx, k).await?;
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

    /// Set, for the rest of `tx`, how the HNSW index is searched for `k` candidates:
    /// `hnsw.ef_search` the larger of `k` and the setting (pgvector's maximum at
    /// most), and iterative scans where pgvector has them.
    async fn vector_settings(&self, tx: &Transaction<'_>, k: usize) -> TxResult<()> {
        let ef = k
            .max(self.ef_search as usize)
            .min(crate::memory_pg::MAX_EF_SEARCH as usize);
        tx.batch_execute(&format!("SET LOCAL hnsw.ef_search = {ef}"))
            .await
            .map_err(|e| self.pg(e))?;
        if self.iterative_scan {
            tx.batch_execute("SET LOCAL hnsw.iterative_scan = strict_order")
                .await
                .map_err(|e| self.pg(e))?;
        }
        Ok(())
    }

    /// The `hnsw.ef_search` the server holds while a recall of `top_k` searches
    /// vectors: applied in a transaction as recall applies it, then read back.
    pub fn vector_ef_search(&self, top_k: usize) -> Result<u32> {
        let k = crate::memory::recall_fetch(top_k) * 2;
        self.read(|| async move {
            let mut client = self.client().await?;
            let tx = self.begin(&mut client).await?;
            self.vector_settings(&tx, k).await?;
            let ef: String = tx
                .query_one("SELECT current_setting('hnsw.ef_search')", &[])
                .await
                .map_err(|e| self.pg(e))?
                .get(0);
            self.commit(tx).await?;
            Ok(ef)
        })?
        .trim()
        .parse()
        .map_err(|e| crate::memory::MemoryError::Invalid(format!("hnsw.ef_search: {e}")))
    }

    /// Create the HNSW index of this embedder's dimension if it is not there (the
    /// migration creates the built-in embedder's, 256).
    pub(in crate::memory_pg) async fn ensure_vector_index(&self) -> Result<()> {
        let dims = self.embedder.dimensions();
        if dims == 256 || dims == 0 || dims > 2000 {
            return Ok(());
        }
        let mut client = self.db.client().await?;
        let tx = client.transaction().await.map_err(|e| self.db.error(e))?;
        crate::memory_pg::schema::lock(&self.db, &tx).await?;
        tx.batch_execute(&format!(
            "SET LOCAL client_min_messages = warning; SET LOCAL statement_timeout = 0;
             CREATE INDEX IF NOT EXISTS engram_memory_vectors_hnsw_{dims} ON engram_memory_vectors
               USING hnsw ((embedding::vector({dims})) vector_cosine_ops) WHERE dims = {dims}"
        ))
        .await
        .map_err(|e| self.db.error(e))?;
        tx.commit().await.map_err(|e| self.db.error(e))?;
        Ok(())
    }
}
