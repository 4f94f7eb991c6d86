//! Resolving what a memory references into anchors: its `symbols`, and the qualified
//! names, backticked identifiers and `path:line` references of its text that name
//! indexed code, each with the content hash its target has now
//! (`format-spec/staleness.md`, "Anchors"). Reads the tracker only; never writes.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::Regex;
use rusqlite::{params, Connection, OptionalExtension};

use super::target_of;
use crate::index::graph::{self, Ask, Confidence};
use crate::key::Key;
use crate::memory::{Anchor, Anchorer, CalleeAnchor, Memory, MAX_CALLEE_ANCHORS};

/// Most anchors made for one memory.
pub const MAX_AUTO_ANCHORS: usize = 32;
/// How far callee anchors follow calls: the functions an anchored symbol calls, and
/// the functions those call.
pub const CALLEE_DEPTH: u32 = 2;
/// The weakest call edge a callee anchor follows: a call resolved through the
/// file's scopes or its imports, never a repository-wide name match.
const CALLEE_CONFIDENCE: Confidence = Confidence::Imported;
/// A qualified name naming more symbols than this is too vague to anchor.
const MAX_PER_NAME: usize = 4;

/// A reference found in a memory's text.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reference {
    /// `Session.request`, `Client::get`.
    Qualified(String),
    /// `` `parse_config` ``: one identifier in backticks.
    Identifier(String),
    /// `src/net.py:42`.
    PathLine(String, u64),
}

static QUALIFIED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[A-Za-z_][A-Za-z0-9_]*(?:(?:\.|::)[A-Za-z_][A-Za-z0-9_]*)+").expect("valid")
});
static BACKTICKED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"`([A-Za-z_][A-Za-z0-9_]*)(?:\(\))?`").expect("valid"));
static PATH_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"([A-Za-z0-9_./-]+\.[A-Za-z0-9]+):([0-9]{1,9})\b").expect("valid")
});

/// The references in `text`, in order of first appearance, without repeats.
pub fn references(text: &str) -> Vec<Reference> {
    let mut found: Vec<(usize, Reference)> = Vec::new();
    let mut path_spans = Vec::new();
    for c in PATH_LINE.captures_iter(text) {
        if let (Some(all), Some(p), Some(n)) = (c.get(0), c.get(1), c.get(2)) {
            if let Ok(line) = n.as_str().parse() {
                path_spans.push(all.range());
                found.push((all.start(), Reference::PathLine(p.as_str().into(), line)));
            }
        }
    }
    for m in QUALIFIED.find_iter(text) {
        // Inside a path (`src/net.py`) it is a file name, not a symbol.
        let in_path = path_spans.iter().any(|r| r.contains(&m.start()))
            || text[..m.start()].ends_with('/')
            || text[m.end()..].starts_with('/');
        if !in_path {
            found.push((m.start(), Reference::Qualified(m.as_str().into())));
        }
    }
    for c in BACKTICKED.captures_iter(text) {
        if let Some(id) = c.get(1) {
            found.push((id.start(), Reference::Identifier(id.as_str().into())));
        }
    }
    found.sort_by_key(|(at, _)| *at);
    let mut seen = BTreeSet::new();
    found
        .into_iter()
        .filter(|(_, r)| seen.insert(r.clone()))
        .map(|(_, r)| r)
        .collect()
}

/// The anchorer every store of this build is opened with (`src/open.rs`).
pub struct CodeAnchorer;

impl Anchorer for CodeAnchorer {
    fn anchors(&self, db: &Connection, memory: &Memory) -> crate::store::Result<Vec<Anchor>> {
        // No code index, nothing to anchor to.
        if !db
            .prepare_cached("SELECT 1 FROM stale_code LIMIT 1")?
            .exists([])?
        {
            return Ok(Vec::new());
        }
        let mut keys: Vec<String> = Vec::new();
        for s in &memory.symbols {
            match Key::parse(s) {
                Ok(Key::Symbol { .. }) => keys.push(s.clone()),
                Ok(Key::File { path } | Key::Chunk { path, .. }) => {
                    keys.push(format!("file:{path}"))
                }
                _ => {}
            }
        }
        for r in references(&memory.text) {
            keys.extend(resolve(db, &r)?);
        }
        let mut targets = BTreeSet::new();
        let mut out = Vec::new();
        for key in keys {
            let Some(t) = target_of(&key) else { continue };
            if !targets.insert(t.target.clone()) {
                continue;
            }
            let row: Option<(String, String, String, i64)> = db
                .prepare_cached(
                    "SELECT r.key, c.hash, c.signature, c.lines FROM stale_code c
                     JOIN records r ON r.seq = c.seq WHERE c.target = ?1",
                )?
                .query_row([&t.target], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })
                .optional()?;
            let Some((key, hash, signature, lines)) = row else {
                continue;
            };
            out.push(Anchor {
                key,
                hash,
                signature: (!signature.is_empty()).then_some(signature),
                lines: (lines > 0).then_some(lines as u64),
            });
            if out.len() == MAX_AUTO_ANCHORS {
                break;
            }
        }
        Ok(out)
    }

    fn callees(
        &self,
        db: &Connection,
        anchors: &[Anchor],
    ) -> crate::store::Result<Option<Vec<CalleeAnchor>>> {
        let symbols: Vec<&Anchor> = anchors
            .iter()
            .filter(|a| a.key.starts_with("sym:"))
            .collect();
        if symbols.is_empty() {
            return Ok(None);
        }
        let ask = Ask {
            min_confidence: CALLEE_CONFIDENCE,
            depth: CALLEE_DEPTH,
            limit: MAX_CALLEE_ANCHORS,
        };
        let mut out = Vec::new();
        for a in symbols {
            let found = graph::callees_in(db, &graph::Target::Name(a.key.clone()), ask)?;
            for l in found.items {
                let Some(t) = target_of(&l.key).filter(|t| t.kind != "file") else {
                    continue;
                };
                let hash: Option<String> = db
                    .prepare_cached("SELECT hash FROM stale_code WHERE target = ?1")?
                    .query_row([&t.target], |r| r.get(0))
                    .optional()?;
                let Some(hash) = hash else { continue };
                out.push(CalleeAnchor {
                    of: a.key.clone(),
                    key: l.key,
                    hash,
                    depth: l.depth,
                    confidence: l.confidence.as_str().to_string(),
                });
            }
        }
        // Nearest first over all anchors (stable: each anchor's own order stays), so
        // the cap drops the farthest calls, never one anchor's direct ones.
        out.sort_by_key(|c| c.depth);
        out.truncate(MAX_CALLEE_ANCHORS);
        Ok(Some(out))
    }

    fn current_key(
        &self,
        db: &Connection,
        key: &str,
        hash: Option<&str>,
    ) -> crate::store::Result<Option<String>> {
        let live = db
            .prepare_cached("SELECT 1 FROM records WHERE key_hash = ?1")?
            .exists([crate::key::hash64(key) as i64])?;
        if live {
            return Ok(Some(key.to_string()));
        }
        let Some(t) = target_of(key) else {
            return Ok(None);
        };
        // The same symbol (path, name, kind) at other lines.
        let same: Option<String> = db
            .prepare_cached(
                "SELECT r.key FROM stale_code c JOIN records r ON r.seq = c.seq
                 WHERE c.target = ?1",
            )?
            .query_row([&t.target], |r| r.get(0))
            .optional()?;
        if same.is_some() {
            return Ok(same);
        }
        // Renamed, or moved to another file, with the same body.
        if let Some(h) = hash {
            if let Some(c) = super::projection::moved_to(db, h, &t.target)? {
                return Ok(Some(c.key));
            }
        }
        // Its file moved and the body changed: the one symbol of that name and kind.
        let Some((_, name_kind)) = t.target.split_once('#') else {
            return Ok(None);
        };
        let suffix = format!("#{name_kind}");
        let mut stmt = db.prepare_cached(
            "SELECT r.key FROM stale_code c JOIN records r ON r.seq = c.seq
             WHERE c.kind = ?1 AND substr(c.target, -length(?2)) = ?2 LIMIT 2",
        )?;
        let found = stmt
            .query_map(params![t.kind, suffix], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<String>>>()?;
        Ok(match found.as_slice() {
            [one] => Some(one.clone()),
            _ => None,
        })
    }
}

/// The keys a reference names in the index (none when it names nothing, or too much).
fn resolve(db: &Connection, r: &Reference) -> crate::store::Result<Vec<String>> {
    let keys = |sql: &str, arg: &str| -> crate::store::Result<Vec<String>> {
        let mut stmt = db.prepare_cached(sql)?;
        let rows = stmt.query_map([arg], |r| r.get::<_, String>(0))?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    };
    Ok(match r {
        Reference::Qualified(q) => {
            let mut found = Vec::new();
            for spelling in [q.clone(), q.replace("::", "."), q.replace('.', "::")] {
                found = keys(
                    "SELECT r.key FROM code_symbols s JOIN records r ON r.seq = s.seq
                     WHERE s.qualified_name = ?1 ORDER BY r.key LIMIT 5",
                    &spelling,
                )?;
                if !found.is_empty() {
                    break;
                }
            }
            if found.len() > MAX_PER_NAME {
                Vec::new()
            } else {
                found
            }
        }
        Reference::Identifier(name) => {
            let found = keys(
                "SELECT r.key FROM code_symbols s JOIN records r ON r.seq = s.seq
                 WHERE s.name = ?1 ORDER BY r.key LIMIT 2",
                name,
            )?;
            if found.len() == 1 {
                found
            } else {
                Vec::new()
            }
        }
        Reference::PathLine(path, line) => {
            let path = path.strip_prefix("./").unwrap_or(path);
            let indexed = db
                .prepare_cached("SELECT 1 FROM code_files WHERE path = ?1")?
                .exists([path])?;
            if !indexed {
                return Ok(Vec::new());
            }
            let line = (*line).min(i64::MAX as u64) as i64;
            let inner: Option<String> = db
                .prepare_cached(
                    "SELECT r.key FROM code_symbols s JOIN records r ON r.seq = s.seq
                     WHERE s.path = ?1 AND s.start_line <= ?2 AND s.end_line >= ?2
                     ORDER BY s.end_line - s.start_line, r.key LIMIT 1",
                )?
                .query_row(rusqlite::params![path, line], |r| r.get(0))
                .optional()?;
            vec![inner.unwrap_or_else(|| format!("file:{path}"))]
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_in_text() {
        let r = references(
            "Session.request retries (see src/net.py:42); `parse_config` and Client::get, \
             not net.py or src/net.py alone; Session.request again",
        );
        assert_eq!(
            r,
            vec![
                Reference::Qualified("Session.request".into()),
                Reference::PathLine("src/net.py".into(), 42),
                Reference::Identifier("parse_config".into()),
                Reference::Qualified("Client::get".into()),
                Reference::Qualified("net.py".into()),
            ]
        );
    }
}
