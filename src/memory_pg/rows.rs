//! Memories as rows and back, filters as SQL, and the keyword index's text and
//! queries. Pure: builds values and SQL text, runs nothing.

use serde_json::Value;
use tokio_postgres::types::{Json, ToSql};
use tokio_postgres::Row;

use crate::fts::{fts_query, index_text};
use crate::memory::{Memory, MemoryError, MemoryFilter, Result};

/// The columns a memory is read from, for `SELECT {MEMORY_COLUMNS} FROM engram_memories m`.
pub(super) const MEMORY_COLUMNS: &str =
    "m.id, m.text, m.version, m.created_ms, m.updated_ms, m.doc";

/// A bound parameter.
pub(super) type Param = Box<dyn ToSql + Sync + Send>;

/// Borrow parameters as the client takes them.
pub(super) fn refs(params: &[Param]) -> Vec<&(dyn ToSql + Sync)> {
    params
        .iter()
        .map(|p| p.as_ref() as &(dyn ToSql + Sync))
        .collect()
}

/// A memory from a row of [`MEMORY_COLUMNS`] (or the same six columns of a version):
/// the record metadata as stored, with the version and times of the row.
pub(super) fn memory_from_row(row: &Row) -> Result<Memory> {
    let Json(doc): Json<Value> = row.get(5);
    memory_from_parts(
        &row.get::<_, String>(0),
        &row.get::<_, String>(1),
        row.get(2),
        row.get(3),
        row.get(4),
        doc,
    )
}

/// A memory from the values of a row of [`MEMORY_COLUMNS`]: id, text, version,
/// created and updated times, and the stored record metadata.
pub(super) fn memory_from_parts(
    id: &str,
    text: &str,
    version: i64,
    created: i64,
    updated: i64,
    doc: Value,
) -> Result<Memory> {
    let Value::Object(mut meta) = doc else {
        return Err(MemoryError::Invalid(format!(
            "{id}: stored metadata is not an object"
        )));
    };
    meta.insert("version".into(), Value::from(version.max(1) as u64));
    meta.insert("created_ms".into(), Value::from(created.max(0) as u64));
    meta.insert("updated_ms".into(), Value::from(updated.max(0) as u64));
    Memory::from_parts(id, &meta, text.as_bytes()).ok_or_else(|| {
        MemoryError::Invalid(format!("{id}: stored row does not decode as a memory"))
    })
}

/// The record metadata stored for `m` (what the local store's record holds).
pub(super) fn doc(m: &Memory) -> Json<Value> {
    Json(Value::Object(m.to_meta()))
}

/// Words only: every character that is not a letter or digit becomes a space, so
/// PostgreSQL's parser sees the same words FTS5's tokenizer does (no file paths, URLs
/// or hyphenated compounds as single tokens).
fn words_only(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect()
}

/// The keyword index's text of a memory's text (weight B) and of its tags (weight A):
/// the code-aware text of [`index_text`], words only.
pub(super) fn tsv_texts(m: &Memory) -> (String, String) {
    (
        words_only(&index_text(&m.text)),
        words_only(&index_text(&m.tags.join(" "))),
    )
}

/// The SQL of the keyword vector over parameters `$t` (text) and `$g` (tags).
pub(super) fn tsv_sql(t: usize, g: usize) -> String {
    tsv_of(&format!("${t}"), &format!("${g}"))
}

/// The SQL of the keyword vector over the SQL expressions `t` (text) and `g` (tags).
pub(super) fn tsv_of(t: &str, g: &str) -> String {
    format!(
        "setweight(to_tsvector('simple', {t}), 'B') || setweight(to_tsvector('simple', {g}), 'A')"
    )
}

/// A `to_tsquery('simple', …)` argument for free user text: any of the words and
/// sub-words of [`fts_query`] (the same terms the local store asks FTS5 for), each
/// quoted. `None` when the text has no word.
pub(super) fn tsquery(user: &str) -> Option<String> {
    let fts = fts_query(user)?;
    let mut terms: Vec<String> = Vec::new();
    for quoted in fts.split(" OR ") {
        let term = quoted
            .strip_prefix('"')
            .and_then(|t| t.strip_suffix('"'))
            .unwrap_or(quoted)
            .replace("\"\"", "\"");
        for w in words_only(&term).split_whitespace() {
            let w = w.to_lowercase();
            let q = format!("'{w}'");
            if !terms.contains(&q) {
                terms.push(q);
            }
        }
    }
    (!terms.is_empty()).then(|| terms.join(" | "))
}

/// `AND …` conditions of `filter` on the alias `m`, numbering parameters from
/// `first`; every value is a bound parameter.
pub(super) fn filter_sql(filter: &MemoryFilter, first: usize) -> (String, Vec<Param>) {
    let mut sql = String::new();
    let mut params: Vec<Param> = Vec::new();
    let mut n = first;
    let mut cond = |sql: &mut String, text: &str, p: Param| {
        sql.push_str(&text.replace('?', &format!("${n}")));
        params.push(p);
        n += 1;
    };
    if let Some(k) = &filter.kind {
        cond(&mut sql, " AND m.kind = ?", Box::new(k.clone()));
    }
    if let Some(t) = &filter.task {
        cond(&mut sql, " AND m.task = ?", Box::new(t.clone()));
    }
    if !filter.insights.is_empty() {
        cond(
            &mut sql,
            " AND m.insights @> ?::text[]",
            Box::new(filter.insights.clone()),
        );
    }
    if !filter.contexts.is_empty() {
        cond(
            &mut sql,
            " AND m.contexts @> ?::text[]",
            Box::new(filter.contexts.clone()),
        );
    }
    if !filter.tags.is_empty() {
        cond(
            &mut sql,
            " AND m.tags @> ?::text[]",
            Box::new(filter.tags.clone()),
        );
    }
    if let Some(s) = &filter.session {
        cond(&mut sql, " AND m.session = ?", Box::new(s.clone()));
    }
    if let Some(since) = filter.since_ms {
        cond(
            &mut sql,
            " AND m.updated_ms >= ?",
            Box::new(since.min(i64::MAX as u64) as i64),
        );
    }
    (sql, params)
}

/// The edges an entry states, as the local store's projection derives them: its
/// session includes it; it affects (a file change), relates to (a decision) or
/// mentions (anything else) each key in `symbols`; an error is resolved by a change.
pub(super) fn edges(m: &Memory) -> Vec<(String, &'static str, String)> {
    let mut out = Vec::new();
    if let Some(s) = &m.session {
        out.push((s.clone(), "includes", m.id.clone()));
    }
    let rel = match m.kind.as_str() {
        "file_change" => "affects",
        "decision" => "relates_to",
        _ => "mentions",
    };
    for sym in &m.symbols {
        out.push((m.id.clone(), rel, sym.clone()));
    }
    if let Some(by) = m.metadata.get("resolved_by").and_then(Value::as_str) {
        out.push((m.id.clone(), "resolved_by", by.to_string()));
    }
    out.sort();
    out.dedup();
    out
}

/// A string field of a memory's metadata.
pub(super) fn meta_str<'a>(m: &'a Memory, name: &str) -> Option<&'a str> {
    m.metadata.get(name).and_then(Value::as_str)
}

/// An error memory's recorded frequency (`metadata.frequency`), 1 when it has none:
/// what its `engram_error_counts` row starts from.
pub(super) fn error_frequency(m: &Memory) -> u64 {
    m.metadata
        .get("frequency")
        .and_then(Value::as_u64)
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyword_text_and_queries_are_words_only_and_quoted() {
        let mut m = Memory::new("parseHttpRequest in src/net.rs, don't-panic");
        m.tags = vec!["http-client".into()];
        let (t, g) = tsv_texts(&m);
        assert!(t.contains("parseHttpRequest") && t.contains("parse") && t.contains("net rs"));
        assert!(!t.contains('/') && !t.contains('-') && !t.contains('\''));
        assert!(g.contains("http client"));
        let q = tsquery("parseHttpRequest 'it''s' & | !").unwrap(); // "it" is a stop word
        assert_eq!(q, "'parsehttprequest' | 'parse' | 'http' | 'request' | 's'");
        assert_eq!(tsquery("  -- !"), None);
    }

    #[test]
    fn filters_bind_every_value() {
        let f = MemoryFilter {
            kind: Some("note".into()),
            tags: vec!["a'; DROP TABLE x".into()],
            since_ms: Some(5),
            ..MemoryFilter::default()
        };
        let (sql, params) = filter_sql(&f, 3);
        assert_eq!(
            sql,
            " AND m.kind = $3 AND m.tags @> $4::text[] AND m.updated_ms >= $5"
        );
        assert_eq!(params.len(), 3);
    }
}
