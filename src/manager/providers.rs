//! The provider traits the manager composes, and their built-in implementations on
//! an engram store.
//!
//! A provider answers one kind of question (code, session memory, notes) with
//! [`ContextItem`]s: text plus where it came from. Anything that can answer the same
//! questions — another index, a remote service — can stand in for a built-in one.
//! The lower-level traits ([`Chunker`], [`SecretScanner`], [`VectorStore`]; the
//! [`crate::embed::Embedder`] lives with the embedders) name the parts an indexing
//! pipeline is made of.

use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use super::ManagerError;
use crate::embed::Embedder;
use crate::index::symbols::{self, SymbolChunk};
use crate::index::{self, IndexOptions, IndexReport, SymbolInfo};
use crate::memory::{Memories, Memory, MemoryFilter};
use crate::search::{self, HitKind, SearchHit, SearchOptions};
use crate::store::{Store, WriteBatch};

/// One piece of context a provider found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContextItem {
    /// The key it came from (`chunk:…`, `mem:…`).
    pub key: String,
    /// `[source: path:start-end]` or `[memory: mem:id]`.
    pub attribution: String,
    pub text: String,
    /// The provider's own score (higher is better); comparable within a provider only.
    pub score: f64,
}

/// Code: search it, look symbols up, index a checkout.
pub trait CodeMemoryProvider: Send + Sync {
    fn search(&self, query: &str, top_k: usize) -> Result<Vec<ContextItem>, ManagerError>;
    fn search_symbol(&self, name: &str, limit: usize) -> Result<Vec<SymbolInfo>, ManagerError>;
    fn index(&self, root: &Path) -> Result<IndexReport, ManagerError>;
}

/// What earlier sessions learned: store it, query it.
pub trait SessionMemoryProvider: Send + Sync {
    fn store(&self, memory: Memory) -> Result<Memory, ManagerError>;
    fn query(
        &self,
        query: &str,
        filter: &MemoryFilter,
        top_k: usize,
    ) -> Result<Vec<ContextItem>, ManagerError>;
}

/// Key/value notes of a repository.
pub trait NoteProvider: Send + Sync {
    fn set(&self, name: &str, value: &str) -> Result<(), ManagerError>;
    fn get(&self, name: &str) -> Result<Option<String>, ManagerError>;
    fn list(&self) -> Result<Vec<(String, String)>, ManagerError>;
    fn search(&self, query: &str, top_k: usize) -> Result<Vec<ContextItem>, ManagerError>;
}

/// Cuts a file into chunks.
pub trait Chunker: Send + Sync {
    fn chunk(&self, lang: &str, text: &str) -> Vec<SymbolChunk>;
}

/// Finds secrets and replaces them before text is stored.
pub trait SecretScanner: Send + Sync {
    /// The text with every secret replaced, and how many were.
    fn redact(&self, text: &str) -> Result<(String, u64), ManagerError>;
}

/// Stores vectors by key and finds the nearest.
pub trait VectorStore: Send + Sync {
    fn upsert(&self, key: &str, vector: &[f32]) -> Result<(), ManagerError>;
    fn nearest(&self, query: &[f32], k: usize) -> Result<Vec<(String, f32)>, ManagerError>;
}

/// `[source: path:start-end]`, or `[memory: mem:id]` followed by a memory's
/// `[stale: …]` tag when its code changed.
pub(super) fn attribution(h: &SearchHit) -> String {
    match (&h.path, h.start_line, h.end_line) {
        (Some(p), Some(a), Some(b)) => format!("[source: {p}:{a}-{b}]"),
        _ => match h
            .stale
            .as_deref()
            .and_then(|s| crate::stale::tag(s, crate::store::now_ms()))
        {
            Some(tag) => format!("[memory: {}] {tag}", h.key),
            None => format!("[memory: {}]", h.key),
        },
    }
}

/// The code provider built into an engram store. Its memories and notes are
/// [`super::BackendProviders`]'s, the one path for every backend.
#[derive(Clone)]
pub struct StoreProviders {
    memories: Arc<Memories>,
    embedder: Arc<dyn Embedder>,
    index_options: IndexOptions,
}

impl StoreProviders {
    /// Providers over `memories`' store, embedding with its embedder.
    pub fn new(memories: Arc<Memories>, index_options: IndexOptions) -> StoreProviders {
        let embedder = memories.embedder().clone();
        StoreProviders {
            memories,
            embedder,
            index_options,
        }
    }

    /// The store's memories (the manager's memory and note providers read them).
    pub fn memories(&self) -> &Arc<Memories> {
        &self.memories
    }

    fn engine_store(&self) -> &Store {
        self.memories.store()
    }

    fn items(&self, query: &str, opts: SearchOptions) -> Result<Vec<ContextItem>, ManagerError> {
        let found = search::search(self.engine_store(), query, &opts)?;
        let mut out = Vec::with_capacity(found.hits.len());
        for h in found.hits {
            let text = match &h.text {
                Some(t) => t.clone(),
                None => self
                    .engine_store()
                    .get(&h.key)?
                    .map(|r| String::from_utf8_lossy(&r.body).into_owned())
                    .unwrap_or_else(|| h.snippet.clone()),
            };
            out.push(ContextItem {
                attribution: attribution(&h),
                key: h.key,
                text,
                score: h.score,
            });
        }
        Ok(out)
    }
}

impl CodeMemoryProvider for StoreProviders {
    fn search(&self, query: &str, top_k: usize) -> Result<Vec<ContextItem>, ManagerError> {
        self.items(
            query,
            SearchOptions {
                top_k,
                kind: Some(HitKind::Chunk),
                embedder: self.embedder.clone(),
                ..SearchOptions::default()
            },
        )
    }

    fn search_symbol(&self, name: &str, limit: usize) -> Result<Vec<SymbolInfo>, ManagerError> {
        Ok(index::lookup_symbols(self.engine_store(), name, limit)?)
    }

    fn index(&self, root: &Path) -> Result<IndexReport, ManagerError> {
        Ok(index::index(
            self.engine_store(),
            root,
            &self.index_options,
        )?)
    }
}

/// The built-in chunker: tree-sitter symbols, Markdown headings, line windows.
pub struct SymbolChunker;

impl Chunker for SymbolChunker {
    fn chunk(&self, lang: &str, text: &str) -> Vec<SymbolChunk> {
        symbols::symbols_and_chunks(lang, text).1
    }
}

/// The built-in secret scanner: the shared [`Redactor`](crate::patterns::Redactor)
/// every way into the store uses.
pub struct HyperscanSecretScanner {
    redactor: &'static crate::patterns::Redactor,
}

impl HyperscanSecretScanner {
    pub fn new() -> Result<HyperscanSecretScanner, ManagerError> {
        Ok(HyperscanSecretScanner {
            redactor: crate::patterns::Redactor::builtin()?,
        })
    }
}

impl SecretScanner for HyperscanSecretScanner {
    fn redact(&self, text: &str) -> Result<(String, u64), ManagerError> {
        let red = self.redactor.redact(text)?;
        Ok((red.text, red.counts.values().sum()))
    }
}

/// The built-in vector store: vector records in the log, searched in the cache.
pub struct StoreVectorStore {
    memories: Arc<Memories>,
}

impl StoreVectorStore {
    pub fn new(memories: Arc<Memories>) -> StoreVectorStore {
        StoreVectorStore { memories }
    }
}

impl VectorStore for StoreVectorStore {
    /// Vectors describe a stored value: a key with none is refused.
    fn upsert(&self, key: &str, vector: &[f32]) -> Result<(), ManagerError> {
        if self.memories.store().get(key)?.is_none() {
            return Err(ManagerError::Invalid(format!(
                "no value is stored under {key}; store it before its vector"
            )));
        }
        let mut b = WriteBatch::new();
        b.put_vector(key, self.memories.embedder().name(), vector)?;
        self.memories.store().commit(&b)?;
        Ok(())
    }

    fn nearest(&self, query: &[f32], k: usize) -> Result<Vec<(String, f32)>, ManagerError> {
        let found =
            self.memories
                .store()
                .vector_search(self.memories.embedder().name(), query, k)?;
        Ok(found.into_iter().map(|m| (m.key, m.score)).collect())
    }
}
