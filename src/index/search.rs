//! Reading the code index back: keyword-ranked chunks (FTS5 BM25 over code-aware
//! tokens, the path weighted above the text, user text always quoted, never FTS
//! syntax) and where each chunk is. Fusing these with vectors and memories is the
//! `search` layer's job, not this one's.

use rusqlite::OptionalExtension;

use super::IndexError;
use crate::fts::{fts_all_query, fts_query, Bm25};
use crate::store::Store;

/// Where an indexed chunk is. Lines are 1-based and inclusive.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkInfo {
    pub key: String,
    pub path: String,
    pub lang: String,
    pub start_line: u64,
    pub end_line: u64,
    /// The symbol the chunk belongs to, when the file was parsed.
    pub symbol: Option<String>,
    /// The file's modification time when it was indexed (Unix ms).
    pub mtime_ms: u64,
}

/// Chunk keys matching `query` by keyword, best first, with their BM25 score (higher
/// is better), at most `limit`, only of language `lang` when given.
///
/// Chunks holding every word come first (that query is selective, hence cheap); only
/// when they are fewer than `enough` is the any-word query run to fill up to `limit`,
/// since ranking every chunk that holds any common word is what costs time.
pub fn keyword_ranked(
    store: &Store,
    query: &str,
    lang: Option<&str>,
    enough: usize,
    limit: usize,
) -> Result<Vec<(String, f64)>, IndexError> {
    let (Some(all), Some(any)) = (fts_all_query(query), fts_query(query)) else {
        return Ok(Vec::new());
    };
    let limit = limit.max(1);
    Ok(store.with_tracker(|db| {
        let mut out = ranked(db, &all, lang, limit)?;
        if out.len() < enough.min(limit) && any != all {
            for (fts_row, score) in ranked(db, &any, lang, limit)? {
                if out.len() == limit {
                    break;
                }
                if !out.iter().any(|(r, _)| *r == fts_row) {
                    out.push((fts_row, score));
                }
            }
        }
        let mut key_of = db.prepare_cached(
            "SELECT r.key FROM code_chunks c JOIN records r ON r.seq = c.seq WHERE c.seq = ?1",
        )?;
        let mut keyed = Vec::with_capacity(out.len());
        for (fts_row, score) in out {
            if let Some(key) = key_of
                .query_row([fts_row], |r| r.get::<_, String>(0))
                .optional()?
            {
                keyed.push((key, score));
            }
        }
        Ok(keyed)
    })?)
}

/// One FTS5 query: chunks' full-text rows (`code_chunks.seq`) with their BM25 score, best first. Without a
/// language filter it touches only the FTS table, which lets SQLite stop the sort at
/// `limit` instead of joining every match first.
fn ranked(
    db: &rusqlite::Connection,
    fts: &str,
    lang: Option<&str>,
    limit: usize,
) -> crate::store::Result<Vec<(i64, f64)>> {
    let score = |r: &rusqlite::Row<'_>| Ok((r.get(0)?, -r.get::<_, f64>(1)?));
    let rows = match lang {
        None => {
            let sql = Bm25 {
                id: "rowid",
                join: "",
                filter: "",
                ..CODE_BM25
            }
            .sql(limit);
            let mut stmt = db.prepare_cached(&sql)?;
            let rows = stmt.query_map([fts], score)?;
            rows.collect::<rusqlite::Result<Vec<_>>>()?
        }
        Some(lang) => {
            let mut stmt = db.prepare_cached(&CODE_BM25.sql(limit))?;
            let rows = stmt.query_map([fts, lang], score)?;
            rows.collect::<rusqlite::Result<Vec<_>>>()?
        }
    };
    Ok(rows)
}

/// Chunks of one language by keyword, the path weighted four times the text.
const CODE_BM25: Bm25<'static> = Bm25 {
    table: "code_fts",
    weights: &[4.0, 1.0],
    id: "code_fts.rowid",
    join: "JOIN code_chunks c ON c.seq = code_fts.rowid",
    filter: " AND c.lang = ?",
    then_by: "",
};

/// Where the chunk with this key hash is, if it is indexed.
pub fn chunk_info(store: &Store, key_hash: u64) -> Result<Option<ChunkInfo>, IndexError> {
    Ok(store.with_tracker(|db| {
        Ok(db
            .prepare_cached(
                "SELECT r.key, c.path, c.lang, c.start_line, c.end_line, f.mtime_ms, c.symbol
                 FROM code_chunks c JOIN records r ON r.seq = c.seq
                 LEFT JOIN code_files f ON f.path = c.path
                 WHERE r.key_hash = ?1",
            )?
            .query_row([key_hash as i64], |r| {
                Ok(ChunkInfo {
                    key: r.get(0)?,
                    path: r.get(1)?,
                    lang: r.get(2)?,
                    start_line: r.get::<_, i64>(3)? as u64,
                    end_line: r.get::<_, i64>(4)? as u64,
                    symbol: r.get(6)?,
                    mtime_ms: r.get::<_, Option<i64>>(5)?.unwrap_or(0) as u64,
                })
            })
            .optional()?)
    })?)
}
