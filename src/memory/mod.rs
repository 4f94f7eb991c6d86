//! Memories: durable notes an agent or a person writes, found again by keyword.
//!
//! The first user of the store. A memory is one record under `mem:{uuid8}`; the
//! `memories` projection makes them listable and searchable. This layer decides what a
//! memory is and how it is found; it must never reach around the store into files,
//! and never knows the code index: whoever opens the store chooses its projections.

mod active;
mod anchor;
mod audit;
mod backend;
mod coding;
mod context;
mod edges;
mod filter;
mod jsonl;
mod jsonl_compat;
mod jsonl_import;
mod jsonl_read;
mod locked;
mod model;
mod notes;
mod pattern_sets;
mod projection;
mod recall;
mod recall_scan;
mod recall_topk;
mod redact_paths;
mod sessions;
mod stored_secrets;
pub mod taxonomy;

use std::path::Path;
use std::sync::Arc;

use rusqlite::OptionalExtension;
use serde_json::{Map, Value};

pub use active::{active_among, is_open_session, ActiveSession};
pub use anchor::{
    Anchor, AnchorError, AnchorSource, Anchorer, CalleeAnchor, MAX_ANCHORS, MAX_CALLEE_ANCHORS,
};
pub use audit::{read_audit, AuditEvent, AuditLog, LlmCall};
pub(crate) use backend::recall_fetch;
pub use backend::{fuse_ranked, MemoryBackend, MemoryText, MIN_VECTOR_SIMILARITY};
pub(crate) use coding::{check_error, decision_entry, error_entry};
pub use coding::{error_signature, normalise_message, Decision, ErrorReport};
pub use context::{analyze_patterns_of, project_context_of, PatternReport};
pub use edges::Related;
pub use filter::{parse_since, MemoryFilter};
pub use jsonl::ImportReport;
pub(crate) use jsonl::{derived_id, legacy_id, Prepared};
pub(crate) use jsonl_read::prepare_import;
pub use jsonl_read::DEFAULT_MAX_LINE_BYTES;
pub(crate) use locked::Locked;
pub use locked::{attach_event_to_next_write, take_unattached_event};
pub use model::{InvalidMemory, Memory, KINDS, MEMORY_TYPE};
pub use notes::note_name;
pub(crate) use notes::{check_name as check_note_name, note_entry};
pub use pattern_sets::PatternSetBackend;
pub use projection::MemoryProjection;
pub use recall::{filter_ids, keyword_ranked, RecallHit};
pub(crate) use sessions::{change_entry, check_session, ended_session, session_entry};
pub use sessions::{FileChange, CHANGE_ACTIONS};
pub use stored_secrets::{redact_stored, StoredRedaction};

use crate::embed::{default_embedder, is_zero, Embedder};
use crate::key::hash64;
use crate::store::{Projection, Store, StoreError, StoreOptions, WriteBatch};

/// What can go wrong with memories.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("no memory {0}")]
    NotFound(String),
    #[error("{0}")]
    Invalid(String),
    /// A memory that cannot be stored as it is.
    #[error(transparent)]
    Rejected(#[from] InvalidMemory),
    #[error("{path}: line {line}: {reason}")]
    BadLine {
        path: String,
        line: u64,
        reason: String,
    },
    /// The memory backend's database cannot be reached (down, restarting, refusing
    /// connections): nothing was written.
    #[error("memory backend {server} is unreachable: {reason}")]
    Unavailable { server: String, reason: String },
    /// The memory backend's database did not answer a call in time (a server that
    /// hangs, a statement cancelled by its `statement_timeout`): the call was
    /// abandoned; a write may or may not have committed.
    #[error("memory backend {server} did not answer within {after:?}; the call was abandoned")]
    TimedOut {
        server: String,
        after: std::time::Duration,
    },
    /// The memory backend's database refused a statement or its schema does not fit.
    #[error("memory backend {server}: {reason}")]
    Backend { server: String, reason: String },
    #[error("secret scanner: {0}")]
    Secrets(#[from] crate::patterns::PatternError),
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// Shorthand for memory results.
pub type Result<T, E = MemoryError> = std::result::Result<T, E>;

/// The taxonomy extension file in a store directory.
pub const TAXONOMY_FILE: &str = "taxonomy.toml";

/// Memories in one store.
pub struct Memories {
    store: Store,
    embedder: Arc<dyn Embedder>,
    anchorer: Option<Arc<dyn Anchorer>>,
}

impl Memories {
    /// Open (or create) the store in `dir` with `projections`, which must be every
    /// tracker projection of the build (`engram::projections()`; this layer does not
    /// know which those are, and a store opened with another set rebuilds its
    /// tracker). `Memories::open` and `Memories::open_with` pass that set; they are
    /// defined in `src/open.rs`, the module above memory and index that knows it.
    ///
    /// Taxonomy values listed in the store directory's `taxonomy.toml` are accepted
    /// from then on ([`taxonomy::load_extensions`]).
    pub fn open_with_projections(
        dir: impl AsRef<Path>,
        options: StoreOptions,
        projections: Vec<Box<dyn Projection>>,
    ) -> Result<Memories> {
        taxonomy::load_extensions(&dir.as_ref().join(TAXONOMY_FILE))
            .map_err(|e| MemoryError::Invalid(e.to_string()))?;
        Ok(Memories::from_store(Store::open(
            dir,
            options,
            projections,
        )?))
    }

    /// Wrap a store already opened with every projection of the build
    /// (`engram::projections()`).
    pub fn from_store(store: Store) -> Memories {
        Memories {
            store,
            embedder: Arc::new(default_embedder()),
            anchorer: None,
        }
    }

    /// Embed memories with `embedder` instead of the built-in one. Use the same
    /// embedder for code and memories so one query vector searches both.
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Memories {
        self.embedder = embedder;
        self
    }

    /// The embedder that makes this store's memory vectors.
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }

    /// The vector of a memory as stored (`None` when it has no words to embed).
    fn embedding(&self, m: &Memory) -> Result<Option<Vec<f32>>> {
        Ok(self.embeddings(std::iter::once(m))?.pop().flatten())
    }

    /// The vectors of many memories in one embedder call, in order; `None` where a
    /// memory has nothing to embed.
    fn embeddings<'m>(
        &self,
        memories: impl Iterator<Item = &'m Memory>,
    ) -> Result<Vec<Option<Vec<f32>>>> {
        let texts: Vec<String> = memories.map(embedding_text).collect();
        embed_texts(self.embedder.as_ref(), &texts)
    }

    /// The underlying store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Store a new memory with just text, tags and free metadata; returns it with
    /// its id. See [`Memories::write`] for every field.
    pub fn remember(
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

    /// Store a new memory (its `id`, if set, must be free) after validating every
    /// field; returns it as stored, secrets redacted ([`Memory::redacted`] counts them).
    pub fn write(&self, memory: Memory) -> Result<Memory> {
        self.locked_ahead(&[&memory], |l| self.write_locked(l, memory.clone()))
    }

    /// Replace a memory's content with `change` (its id and creation time are kept),
    /// as a new version; earlier versions stay readable through [`Memories::history`].
    /// The version is read and written under the writer lock, so concurrent updates
    /// each get their own number.
    pub fn update(&self, id: &str, change: Memory) -> Result<Memory> {
        self.locked_ahead(&[&change], |l| self.update_locked(l, id, change.clone()))
    }

    /// The vectors of `memories` as they will be written (redacted), keyed by the
    /// text embedded; one embedder call, made before any lock is taken.
    pub(crate) fn embed_ahead(
        &self,
        memories: &[&Memory],
    ) -> Result<std::collections::HashMap<String, Option<Vec<f32>>>> {
        if memories.is_empty() {
            return Ok(Default::default());
        }
        let mut redacted: Vec<Memory> = memories.iter().map(|m| (*m).clone()).collect();
        for m in &mut redacted {
            redact_memory(m)?;
        }
        // An embedder that fails (a server down) does not stop the write: the memory
        // is stored without its vector, and `embed_missing` adds it later.
        let vectors = self.embeddings(redacted.iter()).unwrap_or_else(|e| {
            warn_vectorless(&e);
            vec![None; redacted.len()]
        });
        Ok(redacted.iter().map(embedding_text).zip(vectors).collect())
    }

    /// Embed the memories that have no vector of this store's embedder (written while
    /// it was unreachable, or under another embedder) — at most `limit` of them, the
    /// oldest first. The vectors are made outside the writer lock and stored under it,
    /// each only if its memory still has the text it was made from. Returns how many
    /// were stored.
    pub fn embed_missing(&self, limit: usize) -> Result<usize> {
        let name = self.embedder.name().to_string();
        let ids: Vec<String> = self.store.with_tracker(|db| {
            let mut stmt = db.prepare(
                "SELECT m.id FROM memories m WHERE NOT EXISTS
                   (SELECT 1 FROM vectors v WHERE v.key_hash = m.key_hash AND v.embedder = ?1)
                 ORDER BY m.seq LIMIT ?2",
            )?;
            let rows = stmt.query_map(rusqlite::params![name, limit as i64], |r| r.get(0))?;
            Ok(rows.collect::<rusqlite::Result<Vec<String>>>()?)
        })?;
        let mut stored = 0;
        for group in ids.chunks(256) {
            let mut found = Vec::with_capacity(group.len());
            for id in group {
                if let Some(m) = self.get(id)? {
                    found.push(m);
                }
            }
            let vectors = self.embeddings(found.iter())?;
            stored += self.locked(|l| {
                let mut batch = WriteBatch::new();
                let mut n = 0;
                for (m, v) in found.iter().zip(vectors) {
                    let Some(v) = v else { continue };
                    let unchanged = l.get(&m.id)?.is_some_and(|now| {
                        now.version == m.version && embedding_text(&now) == embedding_text(m)
                    });
                    if unchanged {
                        batch.put_vector(&m.id, &name, &v)?;
                        n += 1;
                    }
                }
                if n > 0 {
                    l.add(&batch)?;
                }
                Ok(n)
            })?;
        }
        Ok(stored)
    }

    /// [`Memories::write`] inside a locked read-modify-write.
    pub(crate) fn write_locked(&self, l: &mut Locked<'_>, mut memory: Memory) -> Result<Memory> {
        memory.validate()?;
        memory.redacted = redact_memory(&mut memory)?;
        self.check_symbols(&memory)?;
        self.anchor_locked(l, &mut memory)?;
        if memory.id.is_empty() {
            memory.id = self.new_id_locked(l)?;
        } else if l.exists(&memory.id)? {
            return Err(MemoryError::Invalid(format!(
                "{} already exists; update it instead",
                memory.id
            )));
        }
        let now = crate::store::now_ms();
        memory.created_ms = now;
        memory.updated_ms = now;
        memory.version = 1;
        self.add_version(l, &memory)?;
        Ok(memory)
    }

    /// [`Memories::update`] inside a locked read-modify-write.
    pub(crate) fn update_locked(
        &self,
        l: &mut Locked<'_>,
        id: &str,
        mut change: Memory,
    ) -> Result<Memory> {
        let id = normalise_id(id)?;
        let Some(old) = l.get(&id)? else {
            return Err(MemoryError::NotFound(id.to_string()));
        };
        change.id = old.id.clone();
        change.validate()?;
        change.redacted = redact_memory(&mut change)?;
        self.check_symbols(&change)?;
        self.anchor_locked(l, &mut change)?;
        change.created_ms = old.created_ms;
        change.updated_ms = crate::store::now_ms().max(old.updated_ms);
        change.version = old.version + 1;
        change.extra = old.extra;
        self.add_version(l, &change)?;
        Ok(change)
    }

    /// When the store holds a code index (any `sym:` record), every `sym:` key a
    /// memory references must be in it: a typo'd or stale symbol is refused.
    fn check_symbols(&self, memory: &Memory) -> Result<()> {
        let syms: Vec<&String> = memory
            .symbols
            .iter()
            .filter(|s| s.starts_with("sym:"))
            .collect();
        if syms.is_empty() {
            return Ok(());
        }
        let missing: Vec<String> = self.store.with_tracker(|db| {
            let indexed = db
                .prepare_cached(
                    "SELECT 1 FROM records WHERE key >= 'sym:' AND key < 'sym;' LIMIT 1",
                )?
                .query_row([], |_| Ok(()))
                .optional()?
                .is_some();
            if !indexed {
                return Ok(Vec::new());
            }
            let mut stmt = db.prepare_cached("SELECT 1 FROM records WHERE key_hash = ?1")?;
            let mut missing = Vec::new();
            for s in &syms {
                if stmt
                    .query_row([hash64(s) as i64], |_| Ok(()))
                    .optional()?
                    .is_none()
                {
                    missing.push((*s).clone());
                }
            }
            Ok(missing)
        })?;
        if missing.is_empty() {
            Ok(())
        } else {
            Err(MemoryError::Invalid(format!(
                "not in the code index: {}; `engram symbol NAME` finds the current keys",
                missing.join(", ")
            )))
        }
    }

    fn add_version(&self, l: &mut Locked<'_>, memory: &Memory) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.put_keeping_history(&memory.id, memory.to_meta(), memory.text.as_bytes())?;
        let vector = match l.ahead.get(&embedding_text(memory)) {
            Some(v) => v.clone(),
            None => self.embedding(memory).unwrap_or_else(|e| {
                warn_vectorless(&e);
                None
            }),
        };
        if let Some(v) = vector {
            batch.put_vector(&memory.id, self.embedder.name(), &v)?;
        }
        l.add(&batch)
    }

    /// Every version of a memory still in the log, oldest first.
    pub fn history(&self, id: &str) -> Result<Vec<Memory>> {
        let id = normalise_id(id)?;
        let (offsets, view) = self.store.read_with(|db| {
            let mut stmt = db.prepare_cached(
                "SELECT offset FROM memory_versions WHERE key_hash = ?1 ORDER BY seq",
            )?;
            let rows = stmt.query_map([hash64(&id) as i64], |r| r.get::<_, i64>(0))?;
            Ok(rows.collect::<rusqlite::Result<Vec<i64>>>()?)
        })?;
        let mut out = Vec::with_capacity(offsets.len());
        for off in offsets {
            let (rec, meta) = view.record_with_meta(off as u64, &id)?;
            let m = Memory::from_parts(&id, &meta, rec.body).ok_or_else(|| {
                MemoryError::Invalid(format!(
                    "version at offset {off} of {id} does not decode as a memory"
                ))
            })?;
            out.push(m);
        }
        Ok(out)
    }

    /// A memory by id (`mem:xxxxxxxx`, or the eight hex digits alone).
    pub fn get(&self, id: &str) -> Result<Option<Memory>> {
        let id = normalise_id(id)?;
        Ok(self.store.get(&id)?.as_ref().and_then(Memory::from_record))
    }

    /// Delete a memory. Returns false when there was none.
    pub fn forget(&self, id: &str) -> Result<bool> {
        let id = normalise_id(id)?;
        self.locked(|l| self.forget_locked(l, &id))
    }

    /// [`Memories::forget`] inside a locked read-modify-write.
    pub(crate) fn forget_locked(&self, l: &mut Locked<'_>, id: &str) -> Result<bool> {
        if !l.exists(id)? {
            return Ok(false);
        }
        let mut batch = WriteBatch::new();
        batch.delete(id)?;
        l.add(&batch)?;
        Ok(true)
    }

    /// Number of live memories.
    pub fn count(&self) -> Result<u64> {
        Ok(self.store.with_tracker(|db| {
            Ok(db.query_row("SELECT count(*) FROM memories", [], |r| r.get::<_, i64>(0))?)
        })? as u64)
    }

    /// Memories, most recently updated first.
    pub fn list(&self, limit: usize, offset: usize) -> Result<Vec<Memory>> {
        self.list_filtered(&MemoryFilter::default(), limit, offset)
    }

    /// Memories matching `filter`, most recently updated first.
    pub fn list_filtered(
        &self,
        filter: &MemoryFilter,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<Memory>> {
        let (cond, mut args) = filter.sql();
        args.push(rusqlite::types::Value::Integer(
            limit.min(i64::MAX as usize) as i64,
        ));
        args.push(rusqlite::types::Value::Integer(
            offset.min(i64::MAX as usize) as i64,
        ));
        let ids: Vec<String> = self.store.with_tracker(|db| {
            let mut stmt = db.prepare_cached(&format!(
                "SELECT m.id FROM memories m WHERE 1 = 1{cond} ORDER BY m.updated_ms DESC, m.seq DESC LIMIT ? OFFSET ?"
            ))?;
            let rows = stmt.query_map(rusqlite::params_from_iter(args), |r| r.get(0))?;
            Ok(rows.collect::<rusqlite::Result<Vec<String>>>()?)
        })?;
        self.load(ids)
    }

    fn load(&self, ids: Vec<String>) -> Result<Vec<Memory>> {
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(m) = self.get(&id)? {
                out.push(m);
            }
        }
        Ok(out)
    }

    /// A fresh id, checked free under the writer lock: 32 random bits collide often
    /// enough at scale that the check is needed.
    fn new_id_locked(&self, l: &Locked<'_>) -> Result<String> {
        for _ in 0..64 {
            let id = random_id()?;
            if !l.taken(&id) && !l.exists(&id)? {
                return Ok(id);
            }
        }
        Err(MemoryError::Invalid(
            "could not find a free memory id in 64 tries".into(),
        ))
    }
}

/// A random memory id (not yet checked free).
pub(crate) fn random_id() -> Result<String> {
    let mut b = [0u8; 4];
    getrandom::getrandom(&mut b)
        .map_err(|e| MemoryError::Invalid(format!("no randomness for an id: {e}")))?;
    Ok(format!("mem:{:08x}", u32::from_le_bytes(b)))
}

/// Replace every secret in what a memory stores (its paths first, in the index's
/// stored form: see `redact_paths`; then its text, tags and metadata strings) before
/// anything reaches the log; the number replaced.
pub(crate) fn redact_memory(m: &mut Memory) -> Result<u64> {
    let mut n = redact_paths::redact_memory_paths(m)?;
    n += crate::patterns::redact_string(&mut m.text)?;
    for tag in &mut m.tags {
        n += crate::patterns::redact_string(tag)?;
    }
    for v in m.metadata.values_mut() {
        n += crate::patterns::redact_json(v)?;
    }
    if let Some(s) = &mut m.session {
        n += crate::patterns::redact_string(s)?;
    }
    Ok(n)
}

/// Accept `mem:a1b2c3d4` or `a1b2c3d4`; refuse anything else with the expected form.
pub fn normalise_id(id: &str) -> Result<String> {
    Ok(model::memory_id(id)?)
}

fn warn_vectorless(e: &MemoryError) {
    tracing::warn!(
        "stored without a vector ({e}); keyword recall finds it, and `engram index` adds its vector once the embedder answers"
    );
}

/// The vectors of `texts` (made by [`embedding_text`]) in one embedder call, in
/// order; `None` where a text has nothing to embed.
pub(crate) fn embed_texts(
    embedder: &dyn Embedder,
    texts: &[String],
) -> Result<Vec<Option<Vec<f32>>>> {
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors = embedder
        .embed(&refs)
        .map_err(|e| MemoryError::Invalid(e.to_string()))?;
    if vectors.len() != refs.len() {
        return Err(MemoryError::Invalid(format!(
            "embedder {} returned {} vectors for {} texts",
            embedder.name(),
            vectors.len(),
            refs.len()
        )));
    }
    Ok(vectors
        .into_iter()
        .map(|v| (!v.is_empty() && !is_zero(&v)).then_some(v))
        .collect())
}

/// What a memory's vector is made of: its text and its tags.
pub(crate) fn embedding_text(m: &Memory) -> String {
    // Sized up front: a clone of the text is exactly full, so the first tag moved
    // (copied) every text of an import once more.
    let extra: usize = m.tags.iter().map(|t| t.len() + 1).sum();
    let mut t = String::with_capacity(m.text.len() + extra);
    t.push_str(&m.text);
    for tag in &m.tags {
        t.push(' ');
        t.push_str(tag);
    }
    t
}
