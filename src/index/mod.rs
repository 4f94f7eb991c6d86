//! Indexing a repository: walk it, redact secrets, chunk files, store them, and
//! find them again by keyword.
//!
//! A run is incremental: a file whose size and modification time are unchanged costs a
//! `stat`; one whose content hash is unchanged costs a read; changed files replace
//! their chunks; vanished files leave tombstones. Files are prepared (read, redacted,
//! parsed, embedded) without any lock and committed in bounded batches, each holding
//! whole files, so other writers wait at most one short batch and a killed run resumes
//! where it stopped (see [`index`]). Secrets are redacted (or their chunk
//! excluded) before a record is built, so their bytes never reach the store. This
//! layer knows files and chunks; symbols (tree-sitter) come on top of it. It never
//! knows memories: code and memories meet only in `search` and above.

mod chunk;
mod file;
pub mod graph;
mod pass;
mod prepare;
mod projection;
mod redact;
mod search;
mod symbol_search;
pub mod symbols;
mod walk;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

pub use chunk::{line_windows, Chunk};
pub use file::symbol_key;
pub use pass::{embedder_in_use, has_indexed_files, index, index_keywords};
pub use projection::{CodeProjection, CHUNK_TYPE, FILE_TYPE, SYMBOL_TYPE};
pub use redact::SecretAction;
pub use search::{chunk_info, keyword_ranked, ChunkInfo};
pub use symbol_search::{
    chunk_at, chunks_of_symbols, lookup_symbols, symbol_info, symbol_ranked, SymbolInfo,
    NAMED_OTHER_CASE, NAMED_SAME_CASE,
};
pub use walk::{is_secrets_file, language, Skipped};

use crate::embed::{default_embedder, EmbedError, Embedder};
use crate::patterns::PatternError;
use crate::store::StoreError;

/// What can go wrong while indexing or searching.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Patterns(#[from] PatternError),
    #[error(transparent)]
    Embed(#[from] EmbedError),
    #[error("{0}")]
    Invalid(String),
}

/// How to index.
#[derive(Clone)]
pub struct IndexOptions {
    /// Files larger than this are skipped (default 1 MiB).
    pub max_file_bytes: u64,
    pub secret_action: SecretAction,
    /// Makes each chunk's vector (default: the built-in [`HashedEmbedder`]). Files
    /// embedded by another embedder are re-embedded, never mixed.
    ///
    /// [`HashedEmbedder`]: crate::embed::HashedEmbedder
    pub embedder: Arc<dyn Embedder>,
    /// Called after each file with (files done, files found), for progress bars.
    pub progress: Option<Arc<dyn Fn(u64, u64) + Send + Sync>>,
    /// Threads that read, redact, parse, chunk and embed files; `0` (the default)
    /// means one per core. Records are committed in file order by one writer whatever
    /// the number, so the same tree gives the same records.
    pub threads: usize,
    /// When the embedder is not the built-in one: first commit every changed file with
    /// the built-in embedder's vectors, so search works within seconds, then add the
    /// configured embedder's vectors (a neural model takes minutes on a large tree).
    /// Default true.
    pub keywords_first: bool,
    /// Whether each file's `refs:` record (the code graph's calls and imports) is
    /// written. Default true. Off only to measure what the graph costs (the index
    /// bench's `graph` part); not a setting: the CLI and the config never clear it,
    /// and a store indexed without it answers graph queries with nothing.
    #[doc(hidden)]
    pub graph: bool,
}

impl Default for IndexOptions {
    fn default() -> Self {
        IndexOptions {
            max_file_bytes: 1 << 20,
            secret_action: SecretAction::Redact,
            embedder: Arc::new(default_embedder()),
            progress: None,
            threads: 0,
            keywords_first: true,
            graph: true,
        }
    }
}

impl IndexOptions {
    /// Whether [`index`] runs in two passes: keywords first is asked for and the
    /// embedder is not the built-in one.
    pub fn splits_keywords_first(&self) -> bool {
        self.keywords_first && self.embedder.name() != default_embedder().name()
    }
}

impl std::fmt::Debug for IndexOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexOptions")
            .field("max_file_bytes", &self.max_file_bytes)
            .field("secret_action", &self.secret_action)
            .field("embedder", &self.embedder.name())
            .field("threads", &self.threads)
            .field("keywords_first", &self.keywords_first)
            .finish()
    }
}

/// What an indexing run did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct IndexReport {
    pub files_indexed: u64,
    pub files_unchanged: u64,
    /// Files whose content was already indexed under another embedder: only the
    /// configured embedder's vectors were added to their existing chunks.
    pub files_reembedded: u64,
    pub files_deleted: u64,
    /// Binary, secrets, too large or unreadable.
    pub files_skipped: u64,
    pub skipped_binary: u64,
    pub skipped_secret_files: u64,
    pub skipped_too_large: u64,
    pub skipped_unreadable: u64,
    pub symbols: u64,
    pub chunks: u64,
    pub chunks_excluded: u64,
    /// Secrets redacted, by pattern.
    pub redactions: BTreeMap<String, u64>,
    /// With [`IndexOptions::keywords_first`] and an embedder other than the built-in
    /// one: when the keywords pass was done and search could answer.
    pub keyword_seconds: Option<f64>,
    pub seconds: f64,
}
