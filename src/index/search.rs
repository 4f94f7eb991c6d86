//! Keyword search over indexed chunks: FTS5 BM25 over code-aware tokens, the path
//! weighted above the text, user text always quoted (never FTS syntax), filtered by
//! language and path glob. (Vector and symbol search fuse in on top of this.)

use globset::Glob;
use serde::Serialize;

use super::IndexError;
use crate::memory::query::{fts_query, split_identifier};
use crate::store::Store;

/// One search result. Lines are 1-based and inclusive.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchHit {
    pub key: String,
    pub kind: &'static str,
    pub path: String,
    pub start_line: u64,
    pub end_line: u64,
    pub symbol: Option<String>,
    pub score: f64,
    pub snippet: String,
}

/// Filters for [`search`].
#[derive(Debug, Clone, Default)]
pub struct SearchOptions {
    pub top_k: usize,
    /// Only chunks of this language (`rust`, `python`, …).
    pub lang: Option<String>,
    /// Only paths matching this glob (`src/**/*.rs`).
    pub path_glob: Option<String>,
}

/// Chunks matching `query`, best first.
pub fn search(
    store: &Store,
    query: &str,
    opts: &SearchOptions,
) -> Result<Vec<SearchHit>, IndexError> {
    let Some(fts) = fts_query(query) else {
        return Ok(Vec::new());
    };
    let glob = match &opts.path_glob {
        Some(g) => Some(
            Glob::new(g)
                .map_err(|e| IndexError::Invalid(format!("--path {g:?} is not a valid glob: {e}")))?
                .compile_matcher(),
        ),
        None => None,
    };
    let top_k = opts.top_k.max(1);
    // Over-fetch when a glob filters afterwards.
    let fetch = if glob.is_some() { top_k * 20 } else { top_k };
    let rows: Vec<(String, String, u64, u64, f64)> = store.with_tracker(|db| {
        let mut stmt = db.prepare_cached(
            "SELECT r.key, c.path, c.start_line, c.end_line, bm25(code_fts, 4.0, 1.0) AS rank
             FROM code_fts JOIN code_chunks c ON c.key_hash = code_fts.rowid
             JOIN records r ON r.key_hash = c.key_hash
             WHERE code_fts MATCH ?1 AND (?2 IS NULL OR c.lang = ?2)
             ORDER BY rank LIMIT ?3",
        )?;
        let rows = stmt.query_map(
            rusqlite::params![fts, opts.lang, fetch.min(i64::MAX as usize) as i64],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get::<_, i64>(2)? as u64,
                    r.get::<_, i64>(3)? as u64,
                    -r.get::<_, f64>(4)?,
                ))
            },
        )?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    })?;
    let terms: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .flat_map(|w| std::iter::once(w.to_lowercase()).chain(split_identifier(w)))
        .collect();
    let mut hits = Vec::new();
    for (key, path, start_line, end_line, score) in rows {
        if glob.as_ref().is_some_and(|g| !g.is_match(&path)) {
            continue;
        }
        let body = store.get(&key)?.map(|r| r.body).unwrap_or_default();
        let text = String::from_utf8_lossy(&body);
        // The first line that holds a query word is the snippet.
        let line = text
            .lines()
            .find(|l| {
                let l = l.to_lowercase();
                terms.iter().any(|t| l.contains(t.as_str()))
            })
            .unwrap_or_else(|| text.lines().next().unwrap_or(""));
        hits.push(SearchHit {
            key,
            kind: "chunk",
            path,
            start_line,
            end_line,
            symbol: None,
            score,
            snippet: line.trim().chars().take(200).collect(),
        });
        if hits.len() == top_k {
            break;
        }
    }
    Ok(hits)
}
