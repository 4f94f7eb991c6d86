//! Keyword recall over memories: BM25 over their text and tags (code-aware tokens),
//! among those a [`MemoryFilter`] keeps, and the filter applied to a list of ids.
//!
//! Reads only: one FTS5 query or one filtered lookup per call, never a write.

use std::collections::HashSet;

use super::{recall_scan, Memories, Memory, MemoryError, MemoryFilter, Result};
use rusqlite::OptionalExtension;

use crate::fts::{fts_all_query, fts_query, Bm25};
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
    /// tokens), best first; the memory written last wins a tie. See
    /// [`keyword_ranked`] for when memories holding every word are preferred.
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
/// `filter`, with their BM25 score (higher is better), best first, at most `top_k`;
/// among equal scores the memory written last comes first.
///
/// When at least `top_k` memories hold every word of the query, the answer is the
/// best of those (that query is selective, hence cheap to rank); otherwise it is
/// the best of the memories holding any of the words, as before. Ranking every
/// memory that holds a common word is what costs time in a large store (each match
/// is scored), so the any-word query runs only when the all-words one falls short.
/// Without a filter the ranking reads the full-text table alone and joins only the
/// `top_k` winners to their ids.
pub fn keyword_ranked(
    store: &Store,
    query: &str,
    filter: &MemoryFilter,
    top_k: usize,
) -> Result<Vec<(String, f64)>> {
    let (Some(all), Some(any)) = (fts_all_query(query), fts_query(query)) else {
        return Ok(Vec::new());
    };
    let limit = top_k.clamp(1, i64::MAX as usize);
    let (cond, filter_args) = filter.sql();
    let (row_cond, row_args) = filter.sql_per_row();
    // The posting lists in memory when they can answer exactly, else the statement.
    let rank = |fts: &str| -> Result<Vec<(String, f64)>> {
        match recall_scan::ranked(store, fts, &row_cond, &row_args, limit)? {
            Some(found) => Ok(found),
            None => Ok(store.with_tracker(|db| ranked(db, fts, &cond, &filter_args, limit))?),
        }
    };
    let mut found = rank(&all)?;
    if found.len() < limit && any != all {
        found = rank(&any)?;
    }
    Ok(found)
}

/// One ranking: `(id, score)` best first, ties to the later write (`seq`). `cond`
/// and `filter_args` come from [`MemoryFilter::sql`]; empty, the full-text table is
/// ranked alone and only the winners are looked up.
pub(super) fn ranked(
    db: &rusqlite::Connection,
    fts: &str,
    cond: &str,
    filter_args: &[rusqlite::types::Value],
    limit: usize,
) -> crate::store::Result<Vec<(String, f64)>> {
    use rusqlite::types::Value;
    let score = |r: &rusqlite::Row<'_>| Ok((r.get::<_, String>(0)?, -r.get::<_, f64>(1)?));
    let mut args = vec![Value::Text(fts.to_string())];
    args.extend(filter_args.iter().cloned());
    if !cond.is_empty() {
        let sql = Bm25 {
            id: "m.id",
            join: "JOIN memories m ON m.seq = memories_fts.rowid",
            filter: cond,
            then_by: ", m.seq DESC",
            ..MEMORY_BM25
        }
        .sql(limit);
        let mut stmt = db.prepare_cached(&sql)?;
        let rows = stmt.query_map(rusqlite::params_from_iter(args), score)?;
        return Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?);
    }
    let mut stmt = db.prepare_cached(&MEMORY_BM25.sql(limit))?;
    let rows = stmt.query_map(rusqlite::params_from_iter(args), |r| {
        Ok((r.get::<_, i64>(0)?, -r.get::<_, f64>(1)?))
    })?;
    let by_row: Vec<(i64, f64)> = rows.collect::<rusqlite::Result<Vec<_>>>()?;
    let mut id_of = db.prepare_cached("SELECT id FROM memories WHERE seq = ?1")?;
    let mut out = Vec::with_capacity(by_row.len());
    for (seq, score) in by_row {
        // A full-text row without its memory would be a projection bug; skip it
        // rather than fail the search.
        if let Some(id) = id_of
            .query_row([seq], |r| r.get::<_, String>(0))
            .optional()?
        {
            out.push((id, score));
        }
    }
    Ok(out)
}

/// Memories by keyword, tags weighted twice the text: the full-text table alone.
const MEMORY_BM25: Bm25<'static> = Bm25 {
    table: "memories_fts",
    weights: &[1.0, 2.0],
    id: "rowid",
    join: "",
    filter: "",
    then_by: ", rowid DESC",
};

/// The ids among `ids` of live memories matching `filter`, in one query.
pub fn filter_ids(store: &Store, ids: &[String], filter: &MemoryFilter) -> Result<Vec<String>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let hashes: Vec<i64> = ids.iter().map(|id| hash64(id) as i64).collect();
    let list = serde_json::to_string(&hashes).map_err(|e| MemoryError::Invalid(e.to_string()))?;
    let (cond, filter_args) = filter.sql_per_row();
    let mut args = vec![rusqlite::types::Value::Text(list)];
    args.extend(filter_args);
    let keep: HashSet<i64> = store.with_tracker(|db| {
        // The given ids drive (CROSS JOIN keeps that order): a few primary-key
        // lookups, each label checked on the row found.
        let mut stmt = db.prepare_cached(&format!(
            "SELECT m.key_hash FROM json_each(?) j CROSS JOIN memories m
             ON m.key_hash = j.value WHERE 1{cond}"
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
