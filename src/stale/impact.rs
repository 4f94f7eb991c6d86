//! Memories *possibly affected* by a change: a function an anchored symbol calls
//! (its callee anchors, `format-spec/staleness.md`, "Callee anchors") is no longer
//! what it was when the memory was written. Judged when asked from `stale_callees`
//! against `stale_code`, by the same rule as an anchor (same hash: as it was; another
//! hash: changed; gone with its body live elsewhere: renamed; else deleted).
//!
//! Reported apart from staleness and never mixed into it: an affected memory is not
//! marked, ranked lower or tagged anywhere else, and a symbol that is itself stale is
//! left out here (its memory is listed as stale already). Reads only.

use std::collections::BTreeMap;

use rusqlite::params;
use serde::Serialize;

use super::projection::moved_to;
use super::{Reason, Result, StaleError};
use crate::key::Key;
use crate::memory::{Memories, Memory};

/// The deepest `--depth`: what the anchored symbol calls, and what those call (the
/// depth callee anchors are recorded to).
pub const MAX_DEPTH: u32 = super::resolve::CALLEE_DEPTH;

/// A callee that is no longer as it was when the memory was written.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Via {
    /// The callee's qualified name.
    pub symbol: String,
    /// `sym:{path}#{name}:{kind}`.
    pub target: String,
    pub path: String,
    /// Its first line now (changed, renamed), or then (deleted).
    pub line: u64,
    /// Calls from the anchored symbol to it (1: a direct call).
    pub depth: u32,
    pub reason: Reason,
    /// How sure the call graph was that the call reaches it, when anchored.
    pub confidence: String,
    /// The callee's key when the memory was written.
    pub was_key: String,
    /// Its key now (changed: the same target; renamed: the new one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub now_key: Option<String>,
}

impl Via {
    /// `rate (pkg/util.py:5) changed [depth 1, imported]`.
    pub fn label(&self) -> String {
        format!(
            "{} ({}:{}) {} [depth {}{}]",
            self.symbol,
            self.path,
            self.line,
            self.reason.as_str(),
            self.depth,
            if self.confidence.is_empty() {
                String::new()
            } else {
                format!(", {}", self.confidence)
            }
        )
    }
}

/// A memory's anchored symbol, some of whose callees changed.
#[derive(Debug, Clone, Serialize)]
pub struct Affected {
    pub memory: Memory,
    /// The anchored symbol's qualified name.
    pub symbol: String,
    /// Its target, `sym:{path}#{name}:{kind}`.
    pub target: String,
    /// The callees that changed, nearest first.
    pub via: Vec<Via>,
}

/// What `stale --impact` adds to the stale list.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Impact {
    /// Anchored symbols whose callees changed, newest callee change first.
    pub affected: Vec<Affected>,
    /// Memories with a symbol anchor written before callee anchors were recorded:
    /// nothing can be said of them until they are re-anchored (`confirm`).
    pub unchecked: Vec<String>,
    /// How many such memories there are (`unchecked` holds at most the limit).
    pub unchecked_total: usize,
}

/// One row of `stale_callees` whose callee no longer holds, before its memory is read.
struct Row {
    mem_id: String,
    of_target: String,
    via: Via,
    /// The time of the callee's live record (0 when it is gone).
    at_ms: i64,
}

/// The memories possibly affected by a change to what their anchored symbols call,
/// up to `depth` calls away (1 or 2); at most `limit` entries and `limit` unchecked
/// ids.
pub fn impact(memories: &Memories, depth: u32, limit: usize) -> Result<Impact> {
    if !(1..=MAX_DEPTH).contains(&depth) {
        return Err(StaleError::Depth { depth });
    }
    let store = memories.store();
    let (rows, unchecked, unchecked_total) = store.with_tracker(|db| {
        let mut stmt = db.prepare_cached(
            "SELECT k.mem_id, k.of_target, k.target, k.key, k.hash, k.depth, k.confidence,
                    c.hash, r.key, r.timestamp_ms
             FROM stale_callees k
               LEFT JOIN stale_code c ON c.target = k.target
               LEFT JOIN records r ON r.seq = c.seq
             WHERE k.depth <= ?1 AND (c.hash IS NULL OR c.hash <> k.hash)
               AND NOT EXISTS (SELECT 1 FROM stale_marks m
                               WHERE m.mem_hash = k.mem_hash AND m.target = k.of_target)
             ORDER BY k.mem_id, k.of_target, k.depth, k.target",
        )?;
        type Raw = (
            String,
            String,
            String,
            String,
            String,
            u32,
            String,
            Option<String>,
            Option<String>,
            Option<i64>,
        );
        let raw = stmt
            .query_map(params![depth], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    r.get(7)?,
                    r.get(8)?,
                    r.get(9)?,
                ))
            })?
            .collect::<rusqlite::Result<Vec<Raw>>>()?;
        let mut rows = Vec::with_capacity(raw.len());
        for (mem_id, of_target, target, was_key, hash, depth, confidence, now_hash, now, at) in raw
        {
            let (reason, now_key, at_ms) = match (now_hash, now) {
                (Some(_), Some(key)) => (Reason::Changed, Some(key), at.unwrap_or(0)),
                _ => match moved_to(db, &hash, &target)? {
                    Some(c) => (Reason::Renamed, Some(c.key), c.at_ms),
                    None => (Reason::Deleted, None, 0),
                },
            };
            let (symbol, path, line) = place(now_key.as_deref().unwrap_or(&was_key));
            rows.push(Row {
                mem_id,
                of_target,
                at_ms,
                via: Via {
                    symbol,
                    target,
                    path,
                    line,
                    depth,
                    reason,
                    confidence,
                    was_key,
                    now_key,
                },
            });
        }
        let unchecked_total: i64 =
            db.query_row("SELECT count(*) FROM stale_unchecked", [], |r| r.get(0))?;
        let mut stmt =
            db.prepare_cached("SELECT mem_id FROM stale_unchecked ORDER BY mem_id LIMIT ?1")?;
        let unchecked = stmt
            .query_map([limit.min(i64::MAX as usize) as i64], |r| {
                r.get::<_, String>(0)
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok((rows, unchecked, unchecked_total.max(0) as usize))
    })?;

    // One entry per (memory, anchored symbol), its callees nearest first.
    let mut grouped: BTreeMap<(String, String), (i64, Vec<Via>)> = BTreeMap::new();
    for r in rows {
        let e = grouped.entry((r.mem_id, r.of_target)).or_default();
        e.0 = e.0.max(r.at_ms);
        e.1.push(r.via);
    }
    let mut entries: Vec<(i64, Affected)> = Vec::with_capacity(grouped.len());
    for ((mem_id, target), (at_ms, via)) in grouped {
        // A row outlives its memory only inside a batch still being applied.
        let Some(memory) = memories.get(&mem_id)? else {
            continue;
        };
        entries.push((
            at_ms,
            Affected {
                memory,
                symbol: target_name(&target),
                target,
                via,
            },
        ));
    }
    entries.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then_with(|| a.1.memory.id.cmp(&b.1.memory.id))
            .then_with(|| a.1.target.cmp(&b.1.target))
    });
    entries.truncate(limit);
    Ok(Impact {
        affected: entries.into_iter().map(|(_, a)| a).collect(),
        unchecked,
        unchecked_total,
    })
}

/// The qualified name, path and first line a `sym:` key names.
fn place(key: &str) -> (String, String, u64) {
    match Key::parse(key) {
        Ok(Key::Symbol {
            path, name, start, ..
        }) => (name, path, u64::from(start)),
        _ => (key.to_string(), String::new(), 0),
    }
}

/// The qualified name in a target (`sym:{path}#{name}:{kind}`).
fn target_name(target: &str) -> String {
    let head = target.rsplit_once(':').map_or(target, |(h, _)| h);
    head.split_once('#')
        .map_or(head, |(_, name)| name)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_places_come_from_keys_and_targets() {
        assert_eq!(
            target_name("sym:src/a.py#Session.request:method"),
            "Session.request"
        );
        assert_eq!(
            place("sym:pkg/util.py#rate:function:5:7"),
            ("rate".to_string(), "pkg/util.py".to_string(), 5)
        );
        let v = Via {
            symbol: "rate".into(),
            target: "sym:pkg/util.py#rate:function".into(),
            path: "pkg/util.py".into(),
            line: 5,
            depth: 1,
            reason: Reason::Changed,
            confidence: "imported".into(),
            was_key: String::new(),
            now_key: None,
        };
        assert_eq!(
            v.label(),
            "rate (pkg/util.py:5) changed [depth 1, imported]"
        );
    }
}
