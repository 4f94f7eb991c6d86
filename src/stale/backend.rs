//! Staleness of memories another backend holds (the team backend, PostgreSQL).
//!
//! A repository's code index always stays in its local store, so only half of the
//! comparison can move: the anchors are stored with each memory in the backend's
//! rows (computed at write time from the local code index by [`LocalCodeAnchors`]),
//! and whether they still hold is decided when asked, against the local index, by
//! the projection's rules (`format-spec/staleness.md`, "Evaluating": same hash is
//! fresh; another hash is changed; gone with the same body live elsewhere is
//! renamed; else deleted). Nothing is written for it: the backend's memories are not
//! in the local log, so there are no derived marks to keep.
//!
//! What differs from the local store's marks, because the local index keeps no
//! history of a target whose memory it never saw: a mark's `since_ms` is the
//! timestamp of the code record live now (changed, renamed), or of the file's record
//! for a symbol gone from a file still indexed, else the memory's last write; and
//! with no local code index at all nothing is marked (there is nothing to compare
//! with, which is not the same as every target being deleted).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use rusqlite::{Connection, OptionalExtension};

use super::projection::{code_row, moved_to, Code, CODE_ROW};
use super::{summary, target_of, CodeAnchorer, Reason, Result, StaleMemory, Staleness};
use crate::key::hash64;
use crate::memory::{
    self, Anchor, AnchorSource, Anchorer, CalleeAnchor, Memories, Memory, MemoryBackend,
    MemoryError, MemoryFilter,
};
use crate::store::Store;

/// Memories read from the backend per round trip when listing stale ones.
const PAGE: usize = 500;

/// The anchors of a memory written to another backend, resolved against the code
/// index of the repository's local store (what the local store's own writes get from
/// [`CodeAnchorer`]).
pub struct LocalCodeAnchors {
    code: Arc<Memories>,
}

impl LocalCodeAnchors {
    /// Anchors resolved against the code index of `code`'s store.
    pub fn new(code: Arc<Memories>) -> LocalCodeAnchors {
        LocalCodeAnchors { code }
    }
}

impl AnchorSource for LocalCodeAnchors {
    fn anchors(&self, memory: &Memory) -> memory::Result<Vec<Anchor>> {
        Ok(self
            .code
            .store()
            .with_tracker(|db| CodeAnchorer.anchors(db, memory))?)
    }

    fn callees(&self, anchors: &[Anchor]) -> memory::Result<Option<Vec<CalleeAnchor>>> {
        Ok(self
            .code
            .store()
            .with_tracker(|db| CodeAnchorer.callees(db, anchors))?)
    }
}

/// Whether the store has a code index to compare anchors with.
fn has_code(db: &Connection) -> crate::store::Result<bool> {
    Ok(db
        .prepare_cached("SELECT 1 FROM stale_code LIMIT 1")?
        .exists([])?)
}

/// The timestamp of the live record under `key`, if there is one.
fn record_time(db: &Connection, key: &str) -> crate::store::Result<Option<u64>> {
    Ok(db
        .prepare_cached("SELECT timestamp_ms FROM records WHERE key_hash = ?1")?
        .query_row([hash64(key) as i64], |r| r.get::<_, i64>(0))
        .optional()?
        .map(|t| t.max(0) as u64))
}

/// The anchors of `m` that no longer hold against the code in `db`, newest first.
fn evaluate(db: &Connection, m: &Memory) -> crate::store::Result<Vec<Staleness>> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for a in &m.anchors {
        let Some(target) = target_of(&a.key) else {
            continue;
        };
        if !seen.insert(target.target.clone()) {
            continue;
        }
        let now: Option<Code> = db
            .prepare_cached(&format!("{CODE_ROW} WHERE c.target = ?1"))?
            .query_row([&target.target], code_row)
            .optional()?;
        let (reason, now) = match now {
            Some(c) if c.hash == a.hash => continue,
            Some(c) => (Reason::Changed, Some(c)),
            None => match moved_to(db, &a.hash, &target.target)? {
                Some(c) => (Reason::Renamed, Some(c)),
                None => (Reason::Deleted, None),
            },
        };
        let since_ms = match &now {
            Some(c) => c.at_ms.max(0) as u64,
            None if target.kind != "file" => {
                record_time(db, &format!("file:{}", target.path))?.unwrap_or(m.updated_ms)
            }
            None => m.updated_ms,
        };
        let nonempty = |s: Option<&str>| s.filter(|s| !s.is_empty()).map(String::from);
        let nonzero = |n: Option<u64>| n.filter(|n| *n > 0);
        let signature_before = nonempty(a.signature.as_deref());
        let signature_after = nonempty(now.as_ref().map(|c| c.signature.as_str()));
        let lines_before = nonzero(a.lines);
        let lines_after = nonzero(now.as_ref().map(|c| c.lines.max(0) as u64));
        let now_key = now.as_ref().map(|c| c.key.clone());
        out.push(Staleness {
            summary: summary(
                reason,
                now_key.as_deref(),
                (signature_before.as_deref(), signature_after.as_deref()),
                (lines_before, lines_after),
            ),
            target: target.target,
            reason,
            since_ms,
            was_key: a.key.clone(),
            now_key,
            signature_before,
            signature_after,
            lines_before,
            lines_after,
        });
    }
    out.sort_by(|x, y| {
        y.since_ms
            .cmp(&x.since_ms)
            .then_with(|| x.target.cmp(&y.target))
    });
    Ok(out)
}

/// The marks of `memories` (held by any backend) against the code index of `code`;
/// those with none are left out.
pub fn marks_against(code: &Store, memories: &[Memory]) -> Result<HashMap<String, Vec<Staleness>>> {
    let anchored: Vec<&Memory> = memories.iter().filter(|m| !m.anchors.is_empty()).collect();
    if anchored.is_empty() {
        return Ok(HashMap::new());
    }
    Ok(code.with_tracker(|db| {
        let mut out = HashMap::new();
        if !has_code(db)? {
            return Ok(out);
        }
        for m in anchored {
            let marks = evaluate(db, m)?;
            if !marks.is_empty() {
                out.insert(m.id.clone(), marks);
            }
        }
        Ok(out)
    })?)
}

/// The stale memories of `backend` against the code index of `code`, newest change
/// first (at most `limit`). Reads every memory of the backend, a page at a time.
pub fn list_in(
    code: &Store,
    backend: &dyn MemoryBackend,
    limit: usize,
) -> Result<Vec<StaleMemory>> {
    let mut out = Vec::new();
    let mut offset = 0;
    loop {
        let page = backend.list_filtered(&MemoryFilter::default(), PAGE, offset)?;
        let n = page.len();
        let mut marks = marks_against(code, &page)?;
        for memory in page {
            if let Some(stale) = marks.remove(&memory.id) {
                out.push(StaleMemory { memory, stale });
            }
        }
        if n < PAGE {
            break;
        }
        offset += n;
    }
    Ok(super::newest_first(out, limit))
}

/// Re-anchor memory `id` of `backend` to the code of `code` as it is now (a new
/// version): it is fresh after.
pub fn confirm_in(code: &Store, backend: &dyn MemoryBackend, id: &str) -> Result<Memory> {
    let mut m = backend
        .get(id)?
        .ok_or_else(|| MemoryError::NotFound(id.to_string()))?;
    m.anchors = code.with_tracker(|db| CodeAnchorer.anchors(db, &m))?;
    Ok(backend.update(id, m)?)
}

/// The project context of `backend`'s memories ([`memory::project_context_of`]) with
/// each entry stale against the code of `code` tagged `[stale: …]` and listed after
/// the fresh ones of its section.
pub fn project_context_in(
    code: &Store,
    backend: &dyn MemoryBackend,
    budget: usize,
) -> Result<String> {
    let now = crate::store::now_ms();
    let indexed = code.with_tracker(has_code)?;
    Ok(memory::project_context_of(
        backend,
        budget,
        &|m: &Memory| {
            if !indexed || m.anchors.is_empty() {
                return None;
            }
            // A mark that cannot be read leaves the entry untagged: the context is still
            // worth more than an error.
            let marks = code.with_tracker(|db| evaluate(db, m)).ok()?;
            super::tag(&marks, now)
        },
    )?)
}
