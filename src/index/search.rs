//! Reading the code index back: keyword-ranked chunks (FTS5 BM25 over code-aware
//! tokens, the path weighted above the text, user text always quoted, never FTS
//! syntax) and where each chunk is. Fusing these with vectors and memories is the
//! `search` layer's job, not this one's.

use rusqlite::OptionalExtension;

use super::IndexError;
use crate::memory::query::fts_query;
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
pub fn keyword_ranked(
    store: &Store,
    query: &str,
    lang: Option<&str>,
    limit: usize,
) -> Result<Vec<(String, f64)>, IndexError> {
    let Some(fts) = fts_query(query) else {
        return Ok(Vec::new());
    };
    Ok(store.with_tracker(|db| {
        let mut stmt = db.prepare_cached(
            "SELECT r.key, bm25(code_fts, 4.0, 1.0) AS rank
             FROM code_fts JOIN code_chunks c ON c.key_hash = code_fts.rowid
             JOIN records r ON r.key_hash = c.key_hash
             WHERE code_fts MATCH ?1 AND (?2 IS NULL OR c.lang = ?2)
             ORDER BY rank LIMIT ?3",
        )?;
        let rows = stmt.query_map(
            rusqlite::params![fts, lang, limit.min(i64::MAX as usize) as i64],
            |r| Ok((r.get(0)?, -r.get::<_, f64>(1)?)),
        )?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    })?)
}

/// Where the chunk with this key hash is, if it is indexed.
pub fn chunk_info(store: &Store, key_hash: u64) -> Result<Option<ChunkInfo>, IndexError> {
    Ok(store.with_tracker(|db| {
        Ok(db
            .prepare_cached(
                "SELECT r.key, c.path, c.lang, c.start_line, c.end_line, f.mtime_ms
                 FROM code_chunks c JOIN records r ON r.key_hash = c.key_hash
                 LEFT JOIN code_files f ON f.path = c.path
                 WHERE c.key_hash = ?1",
            )?
            .query_row([key_hash as i64], |r| {
                Ok(ChunkInfo {
                    key: r.get(0)?,
                    path: r.get(1)?,
                    lang: r.get(2)?,
                    start_line: r.get::<_, i64>(3)? as u64,
                    end_line: r.get::<_, i64>(4)? as u64,
                    symbol: None,
                    mtime_ms: r.get::<_, Option<i64>>(5)?.unwrap_or(0) as u64,
                })
            })
            .optional()?)
    })?)
}
