//! Finding symbols: by name (exact, prefix, fuzzy — `Session.request`, `request`,
//! `sesreq`), and by the words of a query (BM25 over names, signatures and docs) as a
//! source for hybrid search.

use rusqlite::{Connection, OptionalExtension};
use serde::Serialize;

use super::IndexError;
use crate::fts::{fts_all_query, fts_query, Bm25};
use crate::store::Store;

/// A symbol as stored. Lines are 1-based and inclusive.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SymbolInfo {
    pub key: String,
    pub name: String,
    pub qualified_name: String,
    pub kind: String,
    pub path: String,
    pub lang: String,
    pub start_line: u64,
    pub end_line: u64,
    pub signature: String,
}

pub(crate) const COLUMNS: &str =
    "r.key, s.name, s.qualified_name, s.kind, s.path, s.lang, s.start_line, s.end_line, s.signature
     FROM code_symbols s JOIN records r ON r.seq = s.seq";

pub(crate) fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SymbolInfo> {
    Ok(SymbolInfo {
        key: r.get(0)?,
        name: r.get(1)?,
        qualified_name: r.get(2)?,
        kind: r.get(3)?,
        path: r.get(4)?,
        lang: r.get(5)?,
        start_line: r.get::<_, i64>(6)? as u64,
        end_line: r.get::<_, i64>(7)? as u64,
        signature: r.get(8)?,
    })
}

/// Symbols named `name`: exact matches of the name or qualified name first (the same
/// case before other cases), then prefix matches, then fuzzy ones (the letters of
/// `name` in order, `sesreq` → `Session.request`), at most `limit`.
pub fn lookup_symbols(
    store: &Store,
    name: &str,
    limit: usize,
) -> Result<Vec<SymbolInfo>, IndexError> {
    let name = name.trim();
    if name.is_empty() {
        return Ok(Vec::new());
    }
    let limit = limit.clamp(1, 1000);
    Ok(store.with_tracker(|db| {
        let mut out: Vec<SymbolInfo> = Vec::new();
        let push = |found: Vec<SymbolInfo>, out: &mut Vec<SymbolInfo>| {
            for s in found {
                if out.len() < limit && !out.iter().any(|o| o.key == s.key) {
                    out.push(s);
                }
            }
        };
        let exact = query(
            db,
            &format!(
                "SELECT {COLUMNS} WHERE s.name = ?1 COLLATE NOCASE OR s.qualified_name = ?1 COLLATE NOCASE
                 ORDER BY (s.qualified_name = ?1) DESC, (s.name = ?1) DESC, s.path, s.start_line LIMIT ?2"
            ),
            name,
            limit,
        )?;
        push(exact, &mut out);
        if out.len() < limit {
            let pattern = format!("{}%", like_escape(name));
            let prefix = query(
                db,
                &format!(
                    "SELECT {COLUMNS} WHERE s.name LIKE ?1 ESCAPE '\\' OR s.qualified_name LIKE ?1 ESCAPE '\\'
                     ORDER BY length(s.name), s.path, s.start_line LIMIT ?2"
                ),
                &pattern,
                limit,
            )?;
            push(prefix, &mut out);
        }
        if out.len() < limit {
            push(fuzzy(db, name, limit)?, &mut out);
        }
        Ok(out)
    })?)
}

fn query(
    db: &Connection,
    sql: &str,
    arg: &str,
    limit: usize,
) -> crate::store::Result<Vec<SymbolInfo>> {
    let mut stmt = db.prepare_cached(sql)?;
    let rows = stmt.query_map(rusqlite::params![arg, limit as i64], row)?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

/// `%`, `_` and `\` in user text are literal in LIKE.
pub(crate) fn like_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Every symbol whose qualified name holds the letters of `name` in order, best
/// first. Reads all names once; fine for lookups, too slow for every search.
fn fuzzy(db: &Connection, name: &str, limit: usize) -> crate::store::Result<Vec<SymbolInfo>> {
    let wanted: Vec<char> = name
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect();
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let mut stmt = db.prepare_cached("SELECT seq, qualified_name FROM code_symbols")?;
    let mut scored: Vec<(i64, i64, usize)> = Vec::new();
    let rows = stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?;
    for r in rows {
        let (seq, qualified) = r?;
        if let Some(score) = fuzzy_score(&wanted, &qualified) {
            scored.push((score, seq, qualified.len()));
        }
    }
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.2.cmp(&b.2)));
    scored.truncate(limit);
    let mut by_seq = db.prepare_cached(&format!("SELECT {COLUMNS} WHERE s.seq = ?1"))?;
    let mut out = Vec::with_capacity(scored.len());
    for (_, seq, _) in scored {
        if let Some(s) = by_seq.query_row([seq], row).optional()? {
            out.push(s);
        }
    }
    Ok(out)
}

/// How well `wanted` (lower-case letters and digits) matches `candidate` as a
/// subsequence: points for each letter, more when it starts a word (after `.`, `_`,
/// `::`, or a lower-to-upper case change) or continues the previous match. `None`
/// when the letters are not all there in order.
fn fuzzy_score(wanted: &[char], candidate: &str) -> Option<i64> {
    let mut score = 0i64;
    let mut w = 0usize;
    let mut prev: Option<char> = None;
    let mut last_matched = false;
    for c in candidate.chars() {
        if w == wanted.len() {
            break;
        }
        let lower = c.to_lowercase().next().unwrap_or(c);
        let word_start = match prev {
            None => true,
            Some(p) => !p.is_alphanumeric() || (p.is_lowercase() && c.is_uppercase()),
        };
        if c.is_alphanumeric() && lower == wanted[w] {
            score += 1 + if word_start { 8 } else { 0 } + if last_matched { 4 } else { 0 };
            w += 1;
            last_matched = true;
        } else {
            last_matched = false;
        }
        prev = Some(c);
    }
    (w == wanted.len()).then_some(score)
}

/// [`symbol_ranked`]'s score for a symbol whose name or qualified name is the query,
/// in the query's case: above any BM25 score.
pub const NAMED_SAME_CASE: f64 = f64::MAX;

/// [`symbol_ranked`]'s score for a symbol named as the query in another case: above
/// any BM25 score, below [`NAMED_SAME_CASE`].
pub const NAMED_OTHER_CASE: f64 = f64::MAX / 2.0;

/// Symbols matching the words of `query` (BM25, names weighted far above signatures
/// and docs), best first: every-word matches first, any-word ones only when fewer
/// than `enough`.
pub fn symbol_ranked(
    store: &Store,
    query: &str,
    enough: usize,
    limit: usize,
) -> Result<Vec<(String, f64)>, IndexError> {
    let (Some(all), Some(any)) = (fts_all_query(query), fts_query(query)) else {
        return Ok(Vec::new());
    };
    let limit = limit.max(1);
    Ok(store.with_tracker(|db| {
        // Rank on the full-text table alone, so SQLite keeps only the best `limit`
        // while it scores; joining every match to its symbol and record before the
        // sort cost a lookup per match, which over common words is most of a query.
        let sql = Bm25 {
            table: "code_symbols_fts",
            weights: &[10.0, 1.0],
            id: "rowid",
            join: "",
            filter: "",
            then_by: "",
        }
        .sql(limit);
        let mut stmt = db.prepare_cached(&sql)?;
        let mut key_of = db.prepare_cached(
            "SELECT r.key FROM code_symbols s JOIN records r ON r.seq = s.seq
             WHERE s.seq = ?1",
        )?;
        let mut run = |q: &str| -> rusqlite::Result<Vec<(String, f64)>> {
            let rows = stmt
                .query_map([q], |r| Ok((r.get::<_, i64>(0)?, -r.get::<_, f64>(1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let mut keyed = Vec::with_capacity(rows.len());
            for (seq, score) in rows {
                if let Some(key) = key_of.query_row([seq], |r| r.get(0)).optional()? {
                    keyed.push((key, score));
                }
            }
            Ok(keyed)
        };
        // A query that is exactly a symbol's name puts that symbol first.
        let mut out: Vec<(String, f64)> = Vec::new();
        let name = query.trim();
        if !name.is_empty() && !name.contains(char::is_whitespace) {
            out = exact_name_keys(db, name, limit as i64)?;
        }
        for hit in run(&all)? {
            if !out.iter().any(|(k, _)| *k == hit.0) {
                out.push(hit);
            }
        }
        if out.len() < enough && any != all {
            for hit in run(&any)? {
                if out.len() >= limit {
                    break;
                }
                if !out.iter().any(|(k, _)| *k == hit.0) {
                    out.push(hit);
                }
            }
        }
        Ok(out)
    })?)
}

/// Keys of the symbols named `name` (name or qualified name, any case), at most
/// `limit`, scored [`NAMED_SAME_CASE`] when the name has `name`'s exact case (these
/// first) and [`NAMED_OTHER_CASE`] otherwise.
///
/// Two bounded index reads instead of one sorted one: a common name (`new`,
/// `Deserialize`) has thousands of symbols, and sorting them all by case, each
/// joined to its record first, made such a query the slowest of all.
fn exact_name_keys(
    db: &Connection,
    name: &str,
    limit: i64,
) -> crate::store::Result<Vec<(String, f64)>> {
    let mut same_case = db.prepare_cached(
        "SELECT r.key FROM code_symbols s JOIN records r ON r.seq = s.seq
         WHERE s.name = ?1 COLLATE NOCASE AND s.name = ?1 LIMIT ?2",
    )?;
    let mut keys = same_case
        .query_map(rusqlite::params![name, limit], |r| {
            Ok((r.get::<_, String>(0)?, NAMED_SAME_CASE))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    if (keys.len() as i64) < limit {
        // Any case, name or qualified name; the ones already taken may come again,
        // so read enough to fill up after skipping them.
        let mut any_case = db.prepare_cached(
            "SELECT r.key FROM code_symbols s JOIN records r ON r.seq = s.seq
             WHERE s.name = ?1 COLLATE NOCASE OR s.qualified_name = ?1 COLLATE NOCASE
             LIMIT ?2",
        )?;
        let wanted = limit + keys.len() as i64;
        let more = any_case
            .query_map(rusqlite::params![name, wanted], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        for key in more {
            if keys.len() as i64 >= limit {
                break;
            }
            if !keys.iter().any(|(k, _)| *k == key) {
                keys.push((key, NAMED_OTHER_CASE));
            }
        }
    }
    Ok(keys)
}

/// A symbol by key hash.
pub fn symbol_info(store: &Store, key_hash: u64) -> Result<Option<SymbolInfo>, IndexError> {
    Ok(store.with_tracker(|db| {
        Ok(db
            .prepare_cached(&format!("SELECT {COLUMNS} WHERE r.key_hash = ?1"))?
            .query_row([key_hash as i64], row)
            .optional()?)
    })?)
}

/// The query for the key of the chunk of the file `path` that holds line `line` (SQL
/// expressions): the last one starting at or before it, since windows overlap.
fn chunk_holding_sql(path: &str, line: &str) -> String {
    format!(
        "SELECT r.key FROM code_chunks c JOIN records r ON r.seq = c.seq
         WHERE c.path = {path} AND c.start_line <= {line} AND c.end_line >= {line}
         ORDER BY c.start_line DESC LIMIT 1"
    )
}

/// The key of the chunk of `path` that holds `line` (the last one starting at or
/// before it, since windows overlap).
pub fn chunk_at(store: &Store, path: &str, line: u64) -> Result<Option<String>, IndexError> {
    Ok(store.with_tracker(|db| {
        Ok(db
            .prepare_cached(&chunk_holding_sql("?1", "?2"))?
            .query_row(rusqlite::params![path, line as i64], |r| r.get(0))
            .optional()?)
    })?)
}

/// For each symbol key, the key of the chunk that holds the symbol's first line (as
/// [`chunk_at`] finds it), in one read of the tracker: search maps up to its whole
/// symbol list this way, and a lock and two queries per symbol added up.
pub fn chunks_of_symbols(
    store: &Store,
    symbol_keys: &[String],
) -> Result<Vec<Option<String>>, IndexError> {
    Ok(store.with_tracker(|db| {
        let mut stmt = db.prepare_cached(&format!(
            "SELECT ({}) FROM records k JOIN code_symbols s ON s.seq = k.seq WHERE k.key_hash = ?1",
            chunk_holding_sql("s.path", "s.start_line")
        ))?;
        let mut out = Vec::with_capacity(symbol_keys.len());
        for key in symbol_keys {
            let chunk: Option<Option<String>> = stmt
                .query_row([crate::key::hash64(key) as i64], |r| r.get(0))
                .optional()?;
            out.push(chunk.flatten());
        }
        Ok(out)
    })?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(s: &str) -> Vec<char> {
        s.chars().collect()
    }

    #[test]
    fn fuzzy_prefers_word_starts_and_runs() {
        let q = chars("sesreq");
        assert!(fuzzy_score(&q, "Session.request").is_some());
        assert!(fuzzy_score(&q, "Client.get").is_none());
        let a = fuzzy_score(&q, "Session.request").unwrap();
        let b = fuzzy_score(&q, "usesRequirements").unwrap_or(0);
        assert!(a > b, "{a} vs {b}");
        assert_eq!(like_escape("a%b_c\\"), "a\\%b\\_c\\\\");
    }
}
