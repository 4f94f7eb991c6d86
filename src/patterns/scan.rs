//! Running a compiled set over record bodies in place, and reporting matches.
//!
//! Bodies are scanned as the slices of the log's memory map that hold them — the
//! bytes on disk, no copy, no decoding. Line numbers are 1-based: a record whose
//! metadata has `start_line` (a code chunk) reports lines of its file.

use serde::Serialize;
use serde_json::{Map, Value};

use super::compile::{CompiledSet, Scanner};
use super::PatternError;
use crate::key::{hash64, Key};
use crate::store::Store;

/// What to scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScanTarget {
    /// One key's live value; for a `file:` key, the file's chunks (the file record
    /// itself holds no text).
    Key(String),
    /// Every memory, optionally only of a task type and/or a context type.
    Memories {
        task: Option<String>,
        context: Option<String>,
    },
    /// Every code chunk of the store.
    Code,
}

/// One match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Match {
    pub key: String,
    pub pattern_set: String,
    pub pattern: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// Byte offsets of the match in the record's body (end exclusive).
    pub start: u64,
    pub end: u64,
    /// The matched text; masked for secret sets.
    pub text: String,
}

/// Show enough of a secret to find it, never enough to use it.
pub fn mask(text: &str) -> String {
    let shown: String = text.chars().take(4).collect();
    format!("{shown}…[{} chars]", text.chars().count())
}

pub(super) fn scan(
    store: &Store,
    compiled: &CompiledSet,
    target: &ScanTarget,
) -> Result<Vec<Match>, PatternError> {
    let (candidates, view): (Vec<(String, i64)>, _) = store.read_with(|db| {
        use rusqlite::types::Value as Arg;
        let file_chunks = match target {
            ScanTarget::Key(k) => file_of_key(k),
            _ => None,
        };
        let (sql, arg): (&str, Option<Arg>) = match (target, &file_chunks) {
            // A file's text is in its chunks: the file record itself has no body.
            (ScanTarget::Key(_), Some(prefix)) => (
                "SELECT key, offset FROM records WHERE key LIKE ?1 ESCAPE '\\'",
                Some(Arg::Text(format!("{}%", like_escape(prefix)))),
            ),
            (ScanTarget::Key(k), None) => (
                "SELECT key, offset FROM records WHERE key_hash = ?1",
                Some(Arg::Integer(hash64(k) as i64)),
            ),
            (ScanTarget::Memories { .. }, _) => (
                "SELECT r.key, r.offset FROM memories m JOIN records r ON r.key_hash = m.key_hash ORDER BY r.seq",
                None,
            ),
            (ScanTarget::Code, _) => ("SELECT key, offset FROM records WHERE key LIKE 'chunk:%' ORDER BY key", None),
        };
        let mut stmt = db.prepare(sql)?;
        let map = |r: &rusqlite::Row<'_>| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?));
        let mut rows = match arg {
            Some(a) => stmt.query_map([a], map)?.collect::<rusqlite::Result<Vec<_>>>()?,
            None => stmt.query_map([], map)?.collect::<rusqlite::Result<Vec<_>>>()?,
        };
        if let Some(prefix) = &file_chunks {
            // LIKE ignores ASCII case and `chunk:a:` also begins `chunk:a:b:0` (file
            // `a:b`): keep the file's own chunks, in order.
            let index = |key: &str| -> Option<u64> { key.strip_prefix(prefix.as_str())?.parse().ok() };
            rows.retain(|(key, _)| index(key).is_some());
            rows.sort_by_key(|(key, _)| index(key));
        }
        Ok(rows)
    })?;
    let mut scanner = compiled.scanner()?;
    let mut out = Vec::new();
    for (key, offset) in candidates {
        let (rec, meta) = view.record_with_meta(offset as u64, &key)?;
        if let ScanTarget::Memories { task, context } = target {
            if (task.is_some() || context.is_some())
                && !memory_matches(&meta, task.as_deref(), context.as_deref())
            {
                continue;
            }
        }
        let found = scanner.scan(rec.body)?;
        if found.is_empty() {
            continue;
        }
        let path = meta
            .get("path")
            .and_then(Value::as_str)
            .map(String::from)
            .or_else(|| path_of_key(&key));
        let first_line = meta.get("start_line").and_then(Value::as_u64).unwrap_or(1);
        report(compiled, &key, rec.body, path, first_line, found, &mut out);
    }
    Ok(out)
}

/// The matches `hits` (pattern, start, end) of `compiled` in `body`, appended to `out`.
fn report(
    compiled: &CompiledSet,
    key: &str,
    body: &[u8],
    path: Option<String>,
    first_line: u64,
    hits: Vec<(usize, usize, usize)>,
    out: &mut Vec<Match>,
) {
    let (mut line, mut counted_to) = (first_line, 0usize);
    for (pattern, start, end) in hits {
        line += body[counted_to..start]
            .iter()
            .filter(|&&b| b == b'\n')
            .count() as u64;
        counted_to = start;
        let raw = String::from_utf8_lossy(&body[start..end.min(start + 400)]).into_owned();
        out.push(Match {
            key: key.to_string(),
            pattern_set: compiled.set.key(),
            pattern: compiled.set.patterns[pattern].id.clone(),
            path: path.clone(),
            line: Some(line),
            start: start as u64,
            end: end as u64,
            text: if compiled.set.secret { mask(&raw) } else { raw },
        });
    }
}

/// Scans texts held outside the store (a team backend's memories) with one set,
/// reporting matches as a scan of the same text stored under `key` would.
pub struct TextScanner<'a> {
    compiled: &'a CompiledSet,
    scanner: Scanner<'a>,
}

impl CompiledSet {
    /// A [`TextScanner`] with this set.
    pub fn text_scanner(&self) -> Result<TextScanner<'_>, PatternError> {
        Ok(TextScanner {
            compiled: self,
            scanner: self.scanner()?,
        })
    }
}

impl TextScanner<'_> {
    /// The matches in `text`, the value of `key`, appended to `out`.
    pub fn scan(
        &mut self,
        key: &str,
        text: &str,
        out: &mut Vec<Match>,
    ) -> Result<(), PatternError> {
        let hits = self.scanner.scan(text.as_bytes())?;
        report(
            self.compiled,
            key,
            text.as_bytes(),
            path_of_key(key),
            1,
            hits,
            out,
        );
        Ok(())
    }
}

fn memory_matches(meta: &Map<String, Value>, task: Option<&str>, context: Option<&str>) -> bool {
    let task_ok = task.is_none_or(|t| meta.get("task").and_then(Value::as_str) == Some(t));
    let context_ok = context.is_none_or(|c| {
        meta.get("contexts")
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|v| v.as_str() == Some(c)))
    });
    task_ok && context_ok
}

/// For a `file:` key, the prefix of its chunks' keys (`chunk:{path}:`).
fn file_of_key(key: &str) -> Option<String> {
    match Key::parse(key).ok()? {
        Key::File { path } => Some(format!("chunk:{path}:")),
        _ => None,
    }
}

/// `s` with LIKE's wildcards and the escape character escaped (by `\`).
fn like_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn path_of_key(key: &str) -> Option<String> {
    match Key::parse(key).ok()? {
        Key::File { path } | Key::Chunk { path, .. } | Key::Symbol { path, .. } => Some(path),
        _ => None,
    }
}
