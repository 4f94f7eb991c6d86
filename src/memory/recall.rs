//! Keyword recall over memories: BM25 over their text and tags (code-aware tokens),
//! among those a [`MemoryFilter`] keeps, and the filter applied to a list of ids.
//!
//! Reads only: one FTS5 query or one filtered lookup per call, never a write.

use std::collections::HashSet;

use super::{Memories, Memory, MemoryError, MemoryFilter, Result};
use crate::fts::{fts_query, Bm25};
use crate::key::hash64;
use crate::store::Store;

/// One recall result.
#[derive(Debug, Clone, PartialEq)]
pub struct RecallHit {
    pub memory: Memory,
    /// BM25 relevance, higher is better.
    pub score: f64,
}

impl Memories {
    /// Memories matching `query` by keyword (BM25 over text and tags, code-aware
    /// tokens), best first; recency breaks ties.
    pub fn recall(&self, query: &str, top_k: usize) -> Result<Vec<RecallHit>> {
        self.recall_filtered(query, &MemoryFilter::default(), top_k)
    }

    /// [`Memories::recall`] among the memories matching `filter`.
    pub fn recall_filtered(
        &self,
        query: &str,
        filter: &MemoryFilter,
        top_k: usize,
    ) -> Result<Vec<RecallHit>> {
        let found = keyword_ranked(&self.store, query, filter, top_k)?;
        let mut hits = Vec::with_capacity(found.len());
        for (id, score) in found {
            if let Some(memory) = self.get(&id)? {
                hits.push(RecallHit { memory, score });
            }
        }
        Ok(hits)
    }
}

/// Ids of the memories matching `query` by keyword among those matching
/// `filter`, with their BM25 score (higher is better), best first.
pub fn keyword_ranked(
    store: &Store,
    query: &str,
    filter: &MemoryFilter,
    top_k: usize,
) -> Result<Vec<(String, f64)>> {
    let Some(fts) = fts_query(query) else {
        return Ok(Vec::new());
    };
    let (cond, filter_args) = filter.sql();
    let mut args = vec![rusqlite::types::Value::Text(fts)];
    args.extend(filter_args);
    args.push(rusqlite::types::Value::Integer(
        top_k.min(i64::MAX as usize) as i64,
    ));
    let found: Vec<(String, f64)> = store.with_tracker(|db| {
        let sql = Bm25 {
            table: "memories_fts",
            weights: &[1.0, 2.0],
            id: "m.id",
            join: "JOIN memories m ON m.seq = memories_fts.rowid",
            filter: &cond,
            then_by: ", m.updated_ms DESC",
        }
        .sql();
        let mut stmt = db.prepare_cached(&sql)?;
        let rows = stmt.query_map(rusqlite::params_from_iter(args), |r| {
            Ok((r.get(0)?, -r.get::<_, f64>(1)?))
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    })?;
    Ok(found)
}

/// The ids among `ids` of live memories matching `filter`, in one query.
pub fn filter_ids(store: &Store, ids: &[String], filter: &MemoryFilter) -> Result<Vec<String>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let hashes: Vec<i64> = ids.iter().map(|id| hash64(id) as i64).collect();
    let list = serde_json::to_string(&hashes).map_err(|e| MemoryError::Invalid(e.to_string()))?;
    let (cond, filter_args) = filter.sql();
    let mut args = vec![rusqlite::types::Value::Text(list)];
    args.extend(filter_args);
    let keep: HashSet<i64> = store.with_tracker(|db| {
        let mut stmt = db.prepare_cached(&format!(
            "SELECT m.key_hash FROM memories m
             WHERE m.key_hash IN (SELECT value FROM json_each(?)){cond}"
        ))?;
        let rows = stmt.query_map(rusqlite::params_from_iter(args), |r| r.get::<_, i64>(0))?;
        Ok(rows.collect::<rusqlite::Result<HashSet<i64>>>()?)
    })?;
    Ok(ids
        .iter()
        .zip(hashes)
        .filter(|(_, h)| keep.contains(h))
        .map(|(id, _)| id.clone())
        .collect())
}
