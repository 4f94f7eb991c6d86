//! Staleness: memories that know when the code they are about changed.
//!
//! This layer owns the comparison of memories with code, which neither `memory` nor
//! `index` may make (they are peers): it resolves what a memory references into
//! anchors when the memory is written ([`CodeAnchorer`], run under the writer lock by
//! the memory layer), derives from the log which anchors no longer hold
//! ([`StaleProjection`]), and answers which memories are stale and why, and which are
//! possibly affected by a change to what their symbols call ([`impact()`]). It must never
//! write a record of its own and never delete or hide a memory: staleness is a mark,
//! derived from memory and code records, that a rebuild reproduces
//! (`format-spec/staleness.md`). Memories another backend holds (the team backend) are
//! anchored and judged against the local code index too, on read (`backend.rs`).

mod backend;
mod impact;
mod projection;
mod resolve;

use std::collections::HashMap;

use rusqlite::types::Value as SqlValue;
use serde::Serialize;

use crate::key::{hash64, Key};
use crate::memory::{Memories, Memory, MemoryError};
use crate::store::Store;

pub use backend::{confirm_in, list_in, marks_against, project_context_in, LocalCodeAnchors};
pub use impact::{impact, Affected, Impact, Via, MAX_DEPTH};
pub use projection::StaleProjection;
pub use resolve::{references, CodeAnchorer, CALLEE_DEPTH, MAX_AUTO_ANCHORS};

/// What can go wrong reading staleness.
#[derive(Debug, thiserror::Error)]
pub enum StaleError {
    #[error(transparent)]
    Memory(#[from] MemoryError),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error("impact depth {depth} is out of range: 1 (what a memory's symbols call) or {MAX_DEPTH} (and what those call)")]
    Depth { depth: u32 },
}

/// Shorthand for staleness results.
pub type Result<T, E = StaleError> = std::result::Result<T, E>;

/// A code target: a symbol's key without its lines, or a file's key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// `sym:{path}#{qualified_name}:{kind}` or `file:{path}`.
    pub target: String,
    /// The symbol's kind, or `file`.
    pub kind: String,
    /// The file it is in.
    pub path: String,
}

/// The target a `sym:` or `file:` key names (`None` for any other key).
pub fn target_of(key: &str) -> Option<Target> {
    if let Some(rest) = key.strip_prefix("sym:") {
        // Cheaper than Key::parse for the hot path, and exactly its split: the last
        // two `:` fields are the lines, the one before them the kind.
        let mut it = rest.rsplitn(4, ':');
        let (_end, _start, kind, head) = (it.next()?, it.next()?, it.next()?, it.next()?);
        let (path, _) = head.split_once('#')?;
        return Some(Target {
            target: format!("sym:{head}:{kind}"),
            kind: kind.to_string(),
            path: path.to_string(),
        });
    }
    match Key::parse(key) {
        Ok(Key::File { path }) => Some(Target {
            target: format!("file:{path}"),
            kind: "file".into(),
            path,
        }),
        _ => None,
    }
}

/// Why an anchor no longer holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Reason {
    /// The target is there with another body.
    Changed,
    /// The target is gone and the same body is live under another name (or file).
    Renamed,
    /// The target is gone.
    Deleted,
}

impl Reason {
    fn parse(s: &str) -> Reason {
        match s {
            "changed" => Reason::Changed,
            "renamed" => Reason::Renamed,
            _ => Reason::Deleted,
        }
    }

    /// `changed`, `renamed` or `deleted`.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Changed => "changed",
            Reason::Renamed => "renamed",
            Reason::Deleted => "deleted",
        }
    }
}

/// One anchor of a memory that no longer holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Staleness {
    /// The target (`sym:{path}#{name}:{kind}` or `file:{path}`).
    pub target: String,
    pub reason: Reason,
    /// When it became stale: the timestamp of the record that made it so (Unix ms).
    pub since_ms: u64,
    /// The key the memory was anchored to.
    pub was_key: String,
    /// The key now: changed, the target's current key; renamed, the new one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub now_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature_before: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature_after: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines_before: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines_after: Option<u64>,
    /// A short account of the change: lines added or removed, signatures.
    pub summary: String,
}

impl Staleness {
    /// `sym src/net.py#Session.request changed 3 days ago`, as of `now_ms`.
    pub fn label(&self, now_ms: u64) -> String {
        let (ns, rest) = self.target.split_once(':').unwrap_or(("", &self.target));
        format!(
            "{ns} {rest} {} {}",
            self.reason.as_str(),
            ago(now_ms.saturating_sub(self.since_ms))
        )
    }
}

/// `just now`, `5 minutes ago`, `3 days ago`.
pub fn ago(ms: u64) -> String {
    let s = ms / 1000;
    let (n, unit) = match s {
        0..=59 => return "just now".into(),
        60..=3599 => (s / 60, "minute"),
        3600..=86_399 => (s / 3600, "hour"),
        _ => (s / 86_400, "day"),
    };
    format!("{n} {unit}{} ago", if n == 1 { "" } else { "s" })
}

fn summary(
    reason: Reason,
    now_key: Option<&str>,
    sig: (Option<&str>, Option<&str>),
    lines: (Option<u64>, Option<u64>),
) -> String {
    let mut parts = Vec::new();
    match reason {
        Reason::Deleted => parts.push("no longer in the index".to_string()),
        Reason::Renamed => parts.push(format!("same body now at {}", now_key.unwrap_or("?"))),
        Reason::Changed => {}
    }
    if reason == Reason::Changed {
        match lines {
            (Some(b), Some(a)) if b != 0 && a > b => parts.push(format!("+{} lines", a - b)),
            (Some(b), Some(a)) if b != 0 && a < b => parts.push(format!("-{} lines", b - a)),
            (Some(b), Some(_)) if b != 0 => parts.push("body changed, same length".into()),
            _ => parts.push("content changed".into()),
        }
    }
    if let (Some(b), Some(a)) = sig {
        if b != a && !b.is_empty() {
            parts.push(format!("signature `{b}` -> `{a}`"));
        }
    }
    parts.join("; ")
}

/// The marks of the memories `ids` (those with none are left out).
pub fn of_memories(store: &Store, ids: &[String]) -> Result<HashMap<String, Vec<Staleness>>> {
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let hashes: Vec<i64> = ids.iter().map(|id| hash64(id) as i64).collect();
    let list = serde_json::to_string(&hashes).unwrap_or_else(|_| "[]".into());
    read(
        store,
        "WHERE m.mem_hash IN (SELECT value FROM json_each(?1))",
        vec![SqlValue::Text(list)],
    )
}

/// Every stale memory's marks.
fn all(store: &Store) -> Result<HashMap<String, Vec<Staleness>>> {
    read(store, "", Vec::new())
}

fn read(store: &Store, cond: &str, args: Vec<SqlValue>) -> Result<HashMap<String, Vec<Staleness>>> {
    let rows = store.with_tracker(|db| {
        let mut stmt = db.prepare_cached(&format!(
            "SELECT m.mem_id, m.target, m.reason, m.since_ms, a.key, m.now_key, a.signature,
                    m.signature, a.lines, m.lines
             FROM stale_marks m JOIN stale_anchors a
               ON a.mem_hash = m.mem_hash AND a.target = m.target {cond}
             ORDER BY m.since_ms DESC, m.target"
        ))?;
        let rows = stmt.query_map(rusqlite::params_from_iter(args), |r| {
            let nonzero = |v: Option<i64>| v.filter(|n| *n > 0).map(|n| n as u64);
            let nonempty = |v: Option<String>| v.filter(|s| !s.is_empty());
            let reason = Reason::parse(&r.get::<_, String>(2)?);
            let now_key: Option<String> = r.get(5)?;
            let sig_before = nonempty(r.get(6)?);
            let sig_after = nonempty(r.get(7)?);
            let lines_before = nonzero(r.get(8)?);
            let lines_after = nonzero(r.get(9)?);
            let summary = summary(
                reason,
                now_key.as_deref(),
                (sig_before.as_deref(), sig_after.as_deref()),
                (lines_before, lines_after),
            );
            Ok((
                r.get::<_, String>(0)?,
                Staleness {
                    target: r.get(1)?,
                    reason,
                    since_ms: r.get::<_, i64>(3)?.max(0) as u64,
                    was_key: r.get(4)?,
                    now_key,
                    signature_before: sig_before,
                    signature_after: sig_after,
                    lines_before,
                    lines_after,
                    summary,
                },
            ))
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    })?;
    let mut out: HashMap<String, Vec<Staleness>> = HashMap::new();
    for (id, s) in rows {
        out.entry(id).or_default().push(s);
    }
    Ok(out)
}

/// A stale memory and why.
#[derive(Debug, Clone, Serialize)]
pub struct StaleMemory {
    pub memory: Memory,
    /// Newest change first.
    pub stale: Vec<Staleness>,
}

impl StaleMemory {
    /// The newest change's time.
    pub fn since_ms(&self) -> u64 {
        self.stale.iter().map(|s| s.since_ms).max().unwrap_or(0)
    }
}

/// `list` and `backend::list_in`'s order: newest change first, then by id; at most
/// `limit`.
pub(crate) fn newest_first(mut out: Vec<StaleMemory>, limit: usize) -> Vec<StaleMemory> {
    out.sort_by(|a, b| {
        b.since_ms()
            .cmp(&a.since_ms())
            .then_with(|| a.memory.id.cmp(&b.memory.id))
    });
    out.truncate(limit);
    out
}

/// Stale memories, newest change first (at most `limit`).
pub fn list(memories: &Memories, limit: usize) -> Result<Vec<StaleMemory>> {
    let mut out = Vec::new();
    for (id, stale) in all(memories.store())? {
        if let Some(memory) = memories.get(&id)? {
            out.push(StaleMemory { memory, stale });
        }
    }
    Ok(newest_first(out, limit))
}

/// Re-anchor a memory to the code as it is now (a new version): it is fresh after.
pub fn confirm(memories: &Memories, id: &str) -> Result<Memory> {
    Ok(memories.reanchor(id)?)
}

/// `[stale: sym src/net.py#Session.request:method changed 3 days ago]` for a stale
/// memory's marks (`None` when there are none), as of `now_ms`.
pub fn tag(marks: &[Staleness], now_ms: u64) -> Option<String> {
    if marks.is_empty() {
        return None;
    }
    let labels: Vec<String> = marks.iter().map(|m| m.label(now_ms)).collect();
    Some(format!("[stale: {}]", labels.join("; ")))
}

/// The project context (`Memories::project_context`) with each stale entry tagged
/// `[stale: …]` and listed after the fresh ones of its section.
pub fn project_context(memories: &Memories, budget: usize) -> Result<String> {
    let marks = all(memories.store())?;
    let now = crate::store::now_ms();
    Ok(memories.project_context_marked(budget, &|m: &Memory| {
        marks.get(&m.id).and_then(|s| tag(s, now))
    })?)
}

/// Which of `ids` are stale (one query): for ranking them after fresh memories of
/// equal relevance.
pub fn stale_ids(store: &Store, ids: &[String]) -> Result<std::collections::HashSet<String>> {
    Ok(of_memories(store, ids)?.into_keys().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_drop_the_lines() {
        let t = target_of("sym:src/a.rs#Session::request:method:3:9").unwrap();
        assert_eq!(t.target, "sym:src/a.rs#Session::request:method");
        assert_eq!(t.kind, "method");
        assert_eq!(t.path, "src/a.rs");
        let f = target_of("file:src/a.rs").unwrap();
        assert_eq!(
            (f.target.as_str(), f.kind.as_str()),
            ("file:src/a.rs", "file")
        );
        assert!(target_of("mem:0000abcd").is_none());
        assert!(target_of("sym:nohash").is_none());
    }

    #[test]
    fn labels_say_what_and_when() {
        let s = Staleness {
            target: "sym:src/a.py#Session.request:method".into(),
            reason: Reason::Changed,
            since_ms: 0,
            was_key: String::new(),
            now_key: None,
            signature_before: None,
            signature_after: None,
            lines_before: Some(3),
            lines_after: Some(6),
            summary: String::new(),
        };
        assert_eq!(
            s.label(3 * 86_400_000 + 5),
            "sym src/a.py#Session.request:method changed 3 days ago"
        );
        assert_eq!(ago(90_000), "1 minute ago");
        assert_eq!(
            summary(
                Reason::Changed,
                None,
                (Some("f(a)"), Some("f(a, b)")),
                (Some(3), Some(6))
            ),
            "+3 lines; signature `f(a)` -> `f(a, b)`"
        );
    }
}
