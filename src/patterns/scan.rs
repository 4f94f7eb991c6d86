//! Running a compiled set over record bodies in place, and reporting matches.
//!
//! Bodies are scanned as the slices of the log's memory map that hold them — the
//! bytes on disk, no copy, no decoding. Line numbers are 1-based: a record whose
//! metadata has `start_line` (a code chunk) reports lines of its file.

use std::collections::HashSet;

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
    // A file's chunks may overlap (a long symbol is cut into windows that share
    // lines): a match they share is reported once.
    let mut seen = match target {
        ScanTarget::Code => Some(HashSet::new()),
        ScanTarget::Key(k) if file_of_key(k).is_some() => Some(HashSet::new()),
        _ => None,
    };
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
        let mut first_line = meta.get("start_line").and_then(Value::as_u64).unwrap_or(1);
        let mut found = found;
        if let Some(header) = window_header(&meta, rec.body) {
            // A later window of a long symbol written by an engram before symbol-sized
            // chunks opens with a copy of the symbol's first line: its matches are the
            // first window's. (Today's pieces hold their own lines only, and carry the
            // signature in the chunk's `context` instead.)
            found.retain(|&(_, start, _)| start >= header);
            first_line -= 1;
        }
        let found = Found {
            key: &key,
            body: rec.body,
            path,
            first_line,
            hits: found,
        };
        report(compiled, found, seen.as_mut(), &mut out);
    }
    Ok(out)
}

/// The length of the line a chunk's body opens with when it is not a line of the
/// file: the body has one line more than its `start_line..=end_line`.
fn window_header(meta: &Map<String, Value>, body: &[u8]) -> Option<usize> {
    let (start, end) = (
        meta.get("start_line")?.as_u64()?,
        meta.get("end_line")?.as_u64()?,
    );
    let newlines = body.iter().filter(|&&b| b == b'\n').count() as u64;
    let lines = newlines + u64::from(!body.ends_with(b"\n") && !body.is_empty());
    if start == 0 || lines != end.checked_sub(start)? + 2 {
        return None;
    }
    body.iter().position(|&b| b == b'\n').map(|i| i + 1)
}

/// The matches of one record's body.
struct Found<'a> {
    key: &'a str,
    body: &'a [u8],
    path: Option<String>,
    first_line: u64,
    /// (pattern, start, end) in `body`.
    hits: Vec<(usize, usize, usize)>,
}

/// Where a match is in its file: path, line, byte column, pattern.
type Place = (String, u64, usize, usize);

/// The matches `found` of `compiled`, appended to `out`; with `seen`, each place
/// (path, line, column, pattern) only the first time.
fn report(
    compiled: &CompiledSet,
    found: Found<'_>,
    mut seen: Option<&mut HashSet<Place>>,
    out: &mut Vec<Match>,
) {
    let body = found.body;
    let (mut line, mut counted_to) = (found.first_line, 0usize);
    for (pattern, start, end) in found.hits {
        line += body[counted_to..start]
            .iter()
            .filter(|&&b| b == b'\n')
            .count() as u64;
        counted_to = start;
        if let (Some(seen), Some(path)) = (seen.as_deref_mut(), &found.path) {
            let line_start = body[..start]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
            if !seen.insert((path.clone(), line, start - line_start, pattern)) {
                continue;
            }
        }
        let raw = String::from_utf8_lossy(&body[start..end.min(start + 400)]).into_owned();
        out.push(Match {
            key: found.key.to_string(),
            pattern_set: compiled.set.key(),
            pattern: compiled.set.patterns[pattern].id.clone(),
            path: found.path.clone(),
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
        let found = Found {
            key,
            body: text.as_bytes(),
            path: path_of_key(key),
            first_line: 1,
            hits,
        };
        report(self.compiled, found, None, out);
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
        Key::File { path }
        | Key::Chunk { path, .. }
        | Key::Symbol { path, .. }
        | Key::Refs { path } => Some(path),
        _ => None,
    }
}
