//! What a memory backend does, whatever holds the memories: the [`MemoryBackend`]
//! trait, implemented here by the local store ([`Memories`], delegating to its own
//! methods) and by the PostgreSQL backend (`memory_pg`).
//!
//! Both backends build typed entries (errors, decisions, sessions, file changes,
//! notes) with the same functions of this layer, redact with the same scanner before
//! anything leaves the process, read and write the same JSONL, and rank recall the
//! same way: keyword and vector candidates fused by reciprocal rank
//! ([`fuse_ranked`]). This module adds no storage of its own.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use serde_json::{Map, Value};

use super::{
    active_among, filter_ids, is_open_session, keyword_ranked, ActiveSession, Decision,
    ErrorReport, FileChange, ImportReport, Memories, Memory, MemoryFilter, RecallHit, Related,
    Result,
};
use crate::embed::is_zero;

/// Vector candidates less similar than this to the query are not recall candidates
/// (the same floor as code search's).
pub const MIN_VECTOR_SIMILARITY: f32 = 0.1;

/// The reciprocal-rank constant of recall's fusion (as in code search).
const RRF_K: f64 = 60.0;

/// How many session entries [`MemoryBackend::open_sessions`] reads by default, newest
/// first: far more than are ever open at once.
const MAX_SESSIONS_READ: usize = 100_000;

/// How many candidates each source of a recall gives for `top_k` hits.
pub(crate) fn recall_fetch(top_k: usize) -> usize {
    (top_k * 4).max(40)
}

/// The keyword and vector candidate lists of a recall (ids, best first) fused by
/// reciprocal rank, each list counting once: ids with their fused score, best first;
/// ties keep the order in which ids were first seen (keyword first).
pub fn fuse_ranked(keyword: &[String], vector: &[String]) -> Vec<(String, f64)> {
    let mut score: HashMap<&str, (f64, usize)> = HashMap::new();
    let mut order = 0usize;
    for list in [keyword, vector] {
        for (i, id) in list.iter().enumerate() {
            let e = score.entry(id.as_str()).or_insert_with(|| {
                order += 1;
                (0.0, order)
            });
            e.0 += 1.0 / (RRF_K + (i + 1) as f64);
        }
    }
    let mut out: Vec<(&str, f64, usize)> = score.into_iter().map(|(k, (s, o))| (k, s, o)).collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)));
    out.into_iter()
        .map(|(k, s, _)| (k.to_string(), s))
        .collect()
}

/// A memory's id and text, as a page of [`MemoryBackend::texts_after`] gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryText {
    pub id: String,
    pub text: String,
}

/// What a store of memories does, locally or on a database server. Every method is
/// synchronous and acknowledges a write only once it is durable (committed). Text is
/// redacted by the secret scanner before it is stored or sent anywhere.
pub trait MemoryBackend: Send + Sync {
    /// Where the memories are, for messages (`local /path`, `postgres host:port/db
    /// repo …`); never a password.
    fn describe(&self) -> String;
    /// Store a new memory (its `id`, if set, must be free); see [`Memories::write`].
    fn write(&self, memory: Memory) -> Result<Memory>;
    /// Replace a memory's content as a new version; see [`Memories::update`].
    fn update(&self, id: &str, change: Memory) -> Result<Memory>;
    /// A memory by id.
    fn get(&self, id: &str) -> Result<Option<Memory>>;
    /// Every version of a memory, oldest first.
    fn history(&self, id: &str) -> Result<Vec<Memory>>;
    /// Delete a memory (and its versions); false when there was none.
    fn forget(&self, id: &str) -> Result<bool>;
    /// Number of live memories.
    fn count(&self) -> Result<u64>;
    /// Memories matching `filter`, most recently updated first.
    fn list_filtered(
        &self,
        filter: &MemoryFilter,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<Memory>>;
    /// Memories like `query` among those matching `filter`: keyword and vector
    /// candidates fused by reciprocal rank ([`fuse_ranked`]), best first; the score is
    /// the fused one.
    fn recall(&self, query: &str, filter: &MemoryFilter, top_k: usize) -> Result<Vec<RecallHit>>;
    /// Set note `name` to `value` (a new version if it exists).
    fn note_set(&self, name: &str, value: &str, provenance: Option<&str>) -> Result<Memory>;
    /// The note named `name`.
    fn note_get(&self, name: &str) -> Result<Option<Memory>>;
    /// Every note, most recently set first.
    fn note_list(&self) -> Result<Vec<Memory>>;
    /// Delete note `name`; false when there was none.
    fn note_delete(&self, name: &str) -> Result<bool>;
    /// Record an error; a recurrence increments the known entry's `frequency`.
    /// Without a session it joins the active one for a caller that started
    /// `started` (see [`Memories::active_session`]), as do decisions and file changes.
    fn record_error(
        &self,
        e: &ErrorReport,
        tags: &[String],
        started: Option<&str>,
    ) -> Result<Memory>;
    /// Record a design decision.
    fn record_decision(&self, d: &Decision, started: Option<&str>) -> Result<Memory>;
    /// Start a coding session; its entry's id is the session id.
    fn start_session(&self, description: &str, tags: &[String]) -> Result<Memory>;
    /// End a session, writing the summary of what it recorded.
    fn end_session(&self, id: &str, success: bool, user_summary: Option<&str>) -> Result<Memory>;
    /// Record a file change with its reason.
    fn track_file_change(&self, c: &FileChange, started: Option<&str>) -> Result<Memory>;
    /// Everything within `hops` (1 to 3) of `start` over the entries' edges, nearest
    /// first.
    fn related(&self, start: &str, hops: u32) -> Result<Vec<Related>>;
    /// One page of the texts of the memories matching `filter`, in id order: at most
    /// `limit` whose id sorts after `after` (from the first with `None`). Paging by id
    /// visits every memory live through the whole walk once, whatever is written
    /// meanwhile; pattern scans read a repository's memories this way.
    fn texts_after(
        &self,
        filter: &MemoryFilter,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<MemoryText>>;
    /// Write every memory as one JSON line (the `engram export` format), oldest first.
    fn export(&self, out: &mut dyn Write) -> Result<u64>;
    /// Import a JSONL file whole or not at all, lines of at most
    /// [`super::DEFAULT_MAX_LINE_BYTES`].
    fn import_file(&self, path: &Path) -> Result<ImportReport> {
        self.import_file_limited(path, super::DEFAULT_MAX_LINE_BYTES)
    }
    /// Import a JSONL file whole or not at all; a line longer than `max_line_bytes` is
    /// an error naming it, found before more than that is held in memory.
    fn import_file_limited(&self, path: &Path, max_line_bytes: u64) -> Result<ImportReport>;

    /// The open sessions, most recently updated first.
    fn open_sessions(&self) -> Result<Vec<Memory>> {
        let filter = MemoryFilter {
            kind: Some("session".into()),
            ..MemoryFilter::default()
        };
        let mut found = self.list_filtered(&filter, MAX_SESSIONS_READ, 0)?;
        found.retain(is_open_session);
        Ok(found)
    }

    /// The session a record made now without a session id joins, for a caller that
    /// started `started`. A backend without the local store's writer lock reads it
    /// just before its write, in a transaction of its own.
    fn active_session(&self, started: Option<&str>) -> Result<ActiveSession> {
        Ok(active_among(&self.open_sessions()?, started))
    }

    /// End the active session for a caller that started `started`; refused, naming
    /// the open ones, when none or several are open.
    fn end_active_session(
        &self,
        started: Option<&str>,
        success: bool,
        user_summary: Option<&str>,
    ) -> Result<Memory> {
        let active = self.active_session(started)?;
        self.end_session(active.to_end()?, success, user_summary)
    }

    /// Past errors like `query`, those with a solution first, then by relevance.
    fn search_errors(&self, query: &str, top_k: usize) -> Result<Vec<RecallHit>> {
        let filter = MemoryFilter {
            kind: Some("error".into()),
            ..MemoryFilter::default()
        };
        let mut hits = self.recall(query, &filter, top_k)?;
        hits.sort_by_key(|h| !h.memory.metadata.contains_key("solution"));
        Ok(hits)
    }

    /// Store a new memory with just text, tags and free metadata.
    fn remember(
        &self,
        text: &str,
        tags: &[String],
        metadata: Option<Map<String, Value>>,
    ) -> Result<Memory> {
        let mut m = Memory::new(text);
        m.tags = tags.to_vec();
        m.metadata = metadata.unwrap_or_default();
        self.write(m)
    }
}

impl MemoryBackend for Memories {
    fn describe(&self) -> String {
        format!("local {}", self.store().dir().display())
    }

    fn write(&self, memory: Memory) -> Result<Memory> {
        Memories::write(self, memory)
    }

    fn update(&self, id: &str, change: Memory) -> Result<Memory> {
        Memories::update(self, id, change)
    }

    fn get(&self, id: &str) -> Result<Option<Memory>> {
        Memories::get(self, id)
    }

    fn history(&self, id: &str) -> Result<Vec<Memory>> {
        Memories::history(self, id)
    }

    fn forget(&self, id: &str) -> Result<bool> {
        Memories::forget(self, id)
    }

    fn count(&self) -> Result<u64> {
        Memories::count(self)
    }

    fn list_filtered(
        &self,
        filter: &MemoryFilter,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<Memory>> {
        Memories::list_filtered(self, filter, limit, offset)
    }

    fn recall(&self, query: &str, filter: &MemoryFilter, top_k: usize) -> Result<Vec<RecallHit>> {
        let fetch = recall_fetch(top_k);
        let keyword: Vec<String> = keyword_ranked(self.store(), query, filter, fetch)?
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        let mut vector = Vec::new();
        match self.embedder().embed(&[query]) {
            Ok(mut v) => {
                let qv = v.pop().unwrap_or_default();
                if !qv.is_empty() && !is_zero(&qv) {
                    let found =
                        self.store()
                            .vector_search(self.embedder().name(), &qv, fetch * 2)?;
                    vector = found
                        .into_iter()
                        .filter(|m| m.score >= MIN_VECTOR_SIMILARITY && m.key.starts_with("mem:"))
                        .map(|m| m.key)
                        .collect();
                    if *filter != MemoryFilter::default() {
                        vector = filter_ids(self.store(), &vector, filter)?;
                    }
                    vector.truncate(fetch);
                }
            }
            Err(e) => tracing::warn!("recall by keyword only: {e}"),
        }
        let mut hits = Vec::new();
        for (id, score) in fuse_ranked(&keyword, &vector) {
            if hits.len() == top_k {
                break;
            }
            if let Some(memory) = Memories::get(self, &id)? {
                hits.push(RecallHit { memory, score });
            }
        }
        Ok(hits)
    }

    fn note_set(&self, name: &str, value: &str, provenance: Option<&str>) -> Result<Memory> {
        Memories::note_set(self, name, value, provenance)
    }

    fn note_get(&self, name: &str) -> Result<Option<Memory>> {
        Memories::note_get(self, name)
    }

    fn note_list(&self) -> Result<Vec<Memory>> {
        Memories::note_list(self)
    }

    fn note_delete(&self, name: &str) -> Result<bool> {
        Memories::note_delete(self, name)
    }

    fn record_error(
        &self,
        e: &ErrorReport,
        tags: &[String],
        started: Option<&str>,
    ) -> Result<Memory> {
        Memories::record_error_joining(self, e, tags, started)
    }

    fn record_decision(&self, d: &Decision, started: Option<&str>) -> Result<Memory> {
        Memories::record_decision_joining(self, d, started)
    }

    fn start_session(&self, description: &str, tags: &[String]) -> Result<Memory> {
        Memories::start_session(self, description, tags)
    }

    fn end_session(&self, id: &str, success: bool, user_summary: Option<&str>) -> Result<Memory> {
        Memories::end_session_with(self, id, success, user_summary)
    }

    fn track_file_change(&self, c: &FileChange, started: Option<&str>) -> Result<Memory> {
        Memories::track_file_change_joining(self, c, started)
    }

    fn open_sessions(&self) -> Result<Vec<Memory>> {
        Memories::open_sessions(self)
    }

    fn active_session(&self, started: Option<&str>) -> Result<ActiveSession> {
        Memories::active_session(self, started)
    }

    fn end_active_session(
        &self,
        started: Option<&str>,
        success: bool,
        user_summary: Option<&str>,
    ) -> Result<Memory> {
        Memories::end_active_session(self, started, success, user_summary)
    }

    fn related(&self, start: &str, hops: u32) -> Result<Vec<Related>> {
        Memories::related(self, start, hops)
    }

    fn texts_after(
        &self,
        filter: &MemoryFilter,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<MemoryText>> {
        let (cond, filter_args) = filter.sql();
        let mut args = vec![rusqlite::types::Value::Text(
            after.unwrap_or("").to_string(),
        )];
        args.extend(filter_args);
        args.push(rusqlite::types::Value::Integer(
            limit.min(i64::MAX as usize) as i64,
        ));
        let ids: Vec<String> = self.store().with_tracker(|db| {
            let mut stmt = db.prepare_cached(&format!(
                "SELECT m.id FROM memories m WHERE m.id > ?{cond} ORDER BY m.id LIMIT ?"
            ))?;
            let rows = stmt.query_map(rusqlite::params_from_iter(args), |r| r.get(0))?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })?;
        // The text lives in the log only (the tracker keeps no second copy). A memory
        // forgotten since the page was listed is left out.
        let mut page = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(m) = self.get(&id)? {
                page.push(MemoryText { id, text: m.text });
            }
        }
        Ok(page)
    }

    fn export(&self, out: &mut dyn Write) -> Result<u64> {
        Memories::export(self, out)
    }

    fn import_file_limited(&self, path: &Path, max_line_bytes: u64) -> Result<ImportReport> {
        Memories::import_file_limited(self, path, max_line_bytes)
    }

    fn remember(
        &self,
        text: &str,
        tags: &[String],
        metadata: Option<Map<String, Value>>,
    ) -> Result<Memory> {
        Memories::remember(self, text, tags, metadata)
    }

    fn search_errors(&self, query: &str, top_k: usize) -> Result<Vec<RecallHit>> {
        Memories::search_errors(self, query, top_k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn agreement_between_keyword_and_vector_beats_one_top_rank() {
        let fused = fuse_ranked(&ids(&["a", "b", "c"]), &ids(&["d", "b", "a"]));
        let keys: Vec<&str> = fused.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["a", "b", "d", "c"]);
        assert!((fused[0].1 - (1.0 / 61.0 + 1.0 / 63.0)).abs() < 1e-12);
        assert!(fuse_ranked(&[], &[]).is_empty());
    }
}
