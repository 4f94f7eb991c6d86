//! The memory manager: providers composed behind the security gate.
//!
//! [`MemoryManager::enrich_prompt`] asks the code, session-memory and note providers
//! at once (one thread each), and, when asked, the external providers (other MCP
//! servers, `external`, `mcp_provider`) beside them under their deadlines; it fuses
//! their ranked answers by reciprocal rank and hands the result to the gate, which
//! checks the repository, sanitises, caps and attributes every block. The manager
//! decides what to ask and how to merge; it never touches files or tables itself —
//! providers do — and never stores what an external provider returns.

mod backend;
mod external;
mod first_index;
#[cfg(feature = "mcp")]
mod mcp_provider;
#[cfg(feature = "mcp")]
mod mcp_result;
mod providers;
mod scan;
mod vector_fill;

use std::sync::Arc;

use serde::Serialize;

pub use backend::{memory_hit, BackendProviders};
pub use external::{
    ask_all, ExternalAnswer, ExternalHit, ExternalProvider, ProviderHealth, ProviderNote,
    ProviderStatus,
};
pub use first_index::{FirstIndex, DEFAULT_WAIT as FIRST_INDEX_WAIT};
#[cfg(feature = "mcp")]
pub use mcp_provider::{McpProvider, McpProviderSpec, McpTransport, BASIC_ENV};
pub use providers::{
    Chunker, CodeMemoryProvider, ContextItem, HyperscanSecretScanner, NoteProvider, SecretScanner,
    SessionMemoryProvider, StoreProviders, StoreVectorStore, SymbolChunker, VectorStore,
};
pub use scan::{scan_memories, scan_memory};
pub use vector_fill::{FillStatus, VectorFill};

use crate::gate::{Block, Gate, GateError};
use crate::memory::MemoryFilter;
use crate::search::{fuse, RankedList};

/// What can go wrong in the manager or a provider.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    #[error(transparent)]
    Gate(#[from] GateError),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error(transparent)]
    Memory(#[from] crate::memory::MemoryError),
    #[error(transparent)]
    Index(#[from] crate::index::IndexError),
    #[error(transparent)]
    Search(#[from] crate::search::SearchError),
    #[error(transparent)]
    Patterns(#[from] crate::patterns::PatternError),
    #[error(transparent)]
    Stale(#[from] crate::stale::StaleError),
    #[error("{0}")]
    Invalid(String),
}

/// The context block for a prompt.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Enriched {
    /// The blocks joined, each under its attribution: what an agent puts before the
    /// prompt.
    pub context: String,
    pub blocks: Vec<Block>,
    /// Injection phrasings found in any block.
    pub flagged: Vec<&'static str>,
    /// What happened to each external provider asked (none unless asked).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub providers: Vec<ProviderNote>,
}

/// A chat model scoring memories, where the memories it scores are read, and the
/// audit log its calls fall back on (see [`MemoryManager::rerank`]).
#[cfg(feature = "llm")]
pub type Reranker = (
    Arc<crate::assist::Assistant>,
    Arc<dyn crate::memory::MemoryBackend>,
    Arc<dyn crate::memory::AuditLog>,
);

/// Providers composed behind a gate.
pub struct MemoryManager {
    pub code: Arc<dyn CodeMemoryProvider>,
    pub sessions: Arc<dyn SessionMemoryProvider>,
    pub notes: Arc<dyn NoteProvider>,
    /// Other services asked beside the built-in providers when a caller wants them
    /// (never written into the store).
    pub external: Vec<Arc<dyn ExternalProvider>>,
    pub gate: Gate,
    /// A chat model scoring the memories `enrich_prompt` finds, when its `rerank`
    /// feature is on: the model, where the memories it scores are read (the
    /// session provider's backend), and the audit log its calls fall back on.
    #[cfg(feature = "llm")]
    pub rerank: Option<Reranker>,
}

#[cfg(feature = "llm")]
impl MemoryManager {
    /// The memory items in the model's order, those under its threshold dropped; the
    /// items as they were (with a warning) when the model gives no scores.
    fn reranked(&self, prompt: &str, items: Vec<ContextItem>) -> Vec<ContextItem> {
        let Some((assistant, memories, log)) = &self.rerank else {
            return items;
        };
        if !assistant.features.rerank || items.is_empty() {
            return items;
        }
        let mut candidates = Vec::new();
        for i in &items {
            if let Ok(Some(m)) = memories.get(&i.key) {
                candidates.push(m);
            }
        }
        match assistant.rerank(&**log, prompt, &candidates) {
            Ok(scored) => scored
                .iter()
                .filter_map(|s| {
                    items.iter().find(|i| i.key == s.id).map(|i| ContextItem {
                        score: s.score,
                        ..i.clone()
                    })
                })
                .collect(),
            Err(e) => {
                crate::assist::warn("relevance scoring", &e);
                items
            }
        }
    }
}

/// How many items each provider contributes before fusion.
const PER_PROVIDER: usize = 8;

impl MemoryManager {
    /// The built-in providers of one store.
    pub fn new(providers: StoreProviders, gate: Gate) -> MemoryManager {
        let memories = Arc::new(BackendProviders::local(providers.memories().clone()));
        MemoryManager {
            code: Arc::new(providers),
            sessions: memories.clone(),
            notes: memories,
            external: Vec::new(),
            gate,
            #[cfg(feature = "llm")]
            rerank: None,
        }
    }

    /// The same manager asking `external` providers too when a caller wants them.
    pub fn with_external(mut self, external: Vec<Arc<dyn ExternalProvider>>) -> MemoryManager {
        self.external = external;
        self
    }

    /// Ask the external providers alone (at once, each under its deadline); nothing
    /// when none are configured.
    pub fn external_search(&self, query: &str, top_k: usize) -> ExternalAnswer {
        ask_all(&self.external, query, top_k)
    }

    /// Relevant code, notes and memories for `prompt` in repository `repo`, within
    /// `budget` bytes (and the gate's own cap), sanitised and attributed.
    pub fn enrich_prompt(
        &self,
        repo: &str,
        prompt: &str,
        budget: usize,
    ) -> Result<Enriched, ManagerError> {
        self.enrich_prompt_with(repo, prompt, budget, false)
    }

    /// [`Self::enrich_prompt`], asking the external providers beside the built-in
    /// ones when `external` is set: their results are fused with the rest and pass
    /// the gate the same way; a provider that is late or fails is skipped with a
    /// note (in [`Enriched::providers`] and at the end of the context).
    pub fn enrich_prompt_with(
        &self,
        repo: &str,
        prompt: &str,
        budget: usize,
        external: bool,
    ) -> Result<Enriched, ManagerError> {
        self.gate.check_repo(repo)?;
        let (code, memories, notes, outside) = std::thread::scope(|s| {
            let outside = s.spawn(|| {
                if external {
                    self.external_search(prompt, PER_PROVIDER)
                } else {
                    ExternalAnswer::default()
                }
            });
            let code = s.spawn(|| self.code.search(prompt, PER_PROVIDER));
            let memories = s.spawn(|| {
                self.sessions
                    .query(prompt, &MemoryFilter::default(), PER_PROVIDER)
            });
            let notes = s.spawn(|| self.notes.search(prompt, PER_PROVIDER));
            let join =
                |h: std::thread::ScopedJoinHandle<'_, Result<Vec<ContextItem>, ManagerError>>| {
                    h.join().unwrap_or_else(|_| {
                        Err(ManagerError::Invalid("a provider panicked".into()))
                    })
                };
            let outside = outside.join().unwrap_or_default();
            (join(code), join(memories), join(notes), outside)
        });
        #[cfg(feature = "llm")]
        let memories = memories.map(|m| self.reranked(prompt, m));
        let mut lists = vec![code?, memories?, notes?];
        lists.extend(outside.lists);
        let mut by_key = std::collections::HashMap::new();
        let ranked: Vec<RankedList> = lists
            .iter()
            .map(|items| RankedList {
                keys: items.iter().map(|i| i.key.clone()).collect(),
                weight: 1.0,
            })
            .collect();
        for item in lists.into_iter().flatten() {
            by_key.entry(item.key.clone()).or_insert(item);
        }
        let items: Vec<(String, String)> = fuse(&ranked)
            .into_iter()
            .filter_map(|(key, _)| by_key.remove(&key))
            .map(|i| (i.attribution, i.text))
            .collect();
        // Notes about skipped providers end the context, inside the same budget.
        let notes: Vec<String> = outside
            .notes
            .iter()
            .filter_map(ProviderNote::line)
            .collect();
        let noted: usize = notes.iter().map(|n| n.len() + 1).sum();
        let mut gate = self.gate.clone();
        gate.caps.total_bytes = budget.min(self.gate.caps.total_bytes).saturating_sub(noted);
        let blocks = gate.blocks(items);
        let mut flagged: Vec<&'static str> = blocks
            .iter()
            .flat_map(|b| b.flags.iter().copied())
            .collect();
        flagged.sort();
        flagged.dedup();
        let mut context = String::new();
        for b in &blocks {
            context.push_str(&b.attribution);
            if !b.flags.is_empty() {
                context.push_str(&format!(" [flagged: {}]", b.flags.join(", ")));
            }
            context.push('\n');
            context.push_str(b.text.trim_end());
            context.push_str("\n\n");
        }
        for line in notes {
            context.push_str(&line);
            context.push('\n');
        }
        Ok(Enriched {
            context,
            blocks,
            flagged,
            providers: outside.notes,
        })
    }
}
