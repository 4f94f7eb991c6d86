//! The memory manager: providers composed behind the security gate.
//!
//! [`MemoryManager::enrich_prompt`] asks the code, session-memory and note providers
//! at once (one thread each), fuses their ranked answers by reciprocal rank, and hands
//! the result to the gate, which checks the repository, sanitises, caps and
//! attributes every block. The manager decides what to ask and how to merge; it
//! never touches files or tables itself — providers do.

mod providers;

use std::sync::Arc;

use serde::Serialize;

pub use providers::{
    Chunker, CodeMemoryProvider, ContextItem, HyperscanSecretScanner, NoteProvider, SecretScanner,
    SessionMemoryProvider, StoreProviders, StoreVectorStore, SymbolChunker, VectorStore,
};

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
}

/// Providers composed behind a gate.
pub struct MemoryManager {
    pub code: Arc<dyn CodeMemoryProvider>,
    pub sessions: Arc<dyn SessionMemoryProvider>,
    pub notes: Arc<dyn NoteProvider>,
    pub gate: Gate,
    /// A chat model scoring the memories `enrich_prompt` finds, when its `rerank`
    /// feature is on (and the memories to score are reachable).
    #[cfg(feature = "llm")]
    pub rerank: Option<(Arc<crate::assist::Assistant>, Arc<crate::memory::Memories>)>,
}

#[cfg(feature = "llm")]
impl MemoryManager {
    /// The memory items in the model's order, those under its threshold dropped; the
    /// items as they were (with a warning) when the model gives no scores.
    fn reranked(&self, prompt: &str, items: Vec<ContextItem>) -> Vec<ContextItem> {
        let Some((assistant, memories)) = &self.rerank else {
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
        match assistant.rerank(memories, prompt, &candidates) {
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
        let p = Arc::new(providers);
        MemoryManager {
            code: p.clone(),
            sessions: p.clone(),
            notes: p,
            gate,
            #[cfg(feature = "llm")]
            rerank: None,
        }
    }

    /// Relevant code, notes and memories for `prompt` in repository `repo`, within
    /// `budget` bytes (and the gate's own cap), sanitised and attributed.
    pub fn enrich_prompt(
        &self,
        repo: &str,
        prompt: &str,
        budget: usize,
    ) -> Result<Enriched, ManagerError> {
        self.gate.check_repo(repo)?;
        let (code, memories, notes) = std::thread::scope(|s| {
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
            (join(code), join(memories), join(notes))
        });
        #[cfg(feature = "llm")]
        let memories = memories.map(|m| self.reranked(prompt, m));
        let lists = [code?, memories?, notes?];
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
        let mut gate = self.gate.clone();
        gate.caps.total_bytes = budget.min(self.gate.caps.total_bytes);
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
        Ok(Enriched {
            context,
            blocks,
            flagged,
        })
    }
}
