//! A repository's memories wherever they are, resolved once: [`BackendProviders`]
//! over a [`MemoryBackend`], the local store or another backend (the team backend,
//! PostgreSQL) beside the local store's code index. The manager's session-memory
//! and note providers are this one type for both, and the CLI's memory commands run
//! their one body over it.
//!
//! What the two backends do differently is decided here and nowhere else
//! ([`Judge`]): where a stale mark comes from, which search ranks recall, and (an
//! access path only, the matches are the same) how a pattern scan reads the
//! memories. The CLI and the MCP engine hold one of these and never ask which
//! backend it is. It never writes a record of its own; the backend does every write.

use std::collections::HashMap;
use std::sync::Arc;

use super::{ContextItem, ManagerError, NoteProvider, SessionMemoryProvider};
use crate::memory::{Memories, Memory, MemoryBackend, MemoryFilter};
use crate::patterns::{Match, Patterns, ScanTarget};
use crate::search::{self, HitKind, SearchHit, SearchOptions, SearchResults};
use crate::stale::{StaleMemory, Staleness};

/// How a backend's memories are judged against code and searched: the only thing
/// that differs between the local store and another backend.
#[derive(Clone)]
enum Judge {
    /// The backend is this local store. Its memories carry the marks the store
    /// derives from its log (each with the time the change was indexed), and recall
    /// is the store's own search (`engram search` restricted to memories: keyword and
    /// vector ranks fused, recency breaking ties, the most complete vector space while
    /// an embedder switch is under way) — a backend that is not the store has
    /// neither, which is why this case is kept.
    Own(Arc<Memories>),
    /// Another backend's memories, judged on read against the code index of this
    /// local store (`None`: nothing indexed here, so nothing is marked), recalled by
    /// the backend's [`MemoryBackend::recall`].
    Beside(Option<Arc<Memories>>),
}

/// Session memories and notes read from and written to a [`MemoryBackend`], with
/// staleness and recall as `Judge` decides.
#[derive(Clone)]
pub struct BackendProviders {
    backend: Arc<dyn MemoryBackend>,
    judge: Judge,
}

impl BackendProviders {
    /// Providers over another backend, tagging stale memories against `code`'s index.
    pub fn new(backend: Arc<dyn MemoryBackend>, code: Option<Arc<Memories>>) -> BackendProviders {
        BackendProviders {
            backend,
            judge: Judge::Beside(code),
        }
    }

    /// Providers over the local store `memories`: memories and code in one place.
    pub fn local(memories: Arc<Memories>) -> BackendProviders {
        BackendProviders {
            backend: memories.clone(),
            judge: Judge::Own(memories),
        }
    }

    /// Where the memories are read and written.
    pub fn backend(&self) -> &Arc<dyn MemoryBackend> {
        &self.backend
    }

    /// The local store holding the code index memories are judged against (`None`
    /// when nothing was indexed here).
    pub fn code(&self) -> Option<&Arc<Memories>> {
        match &self.judge {
            Judge::Own(m) => Some(m),
            Judge::Beside(code) => code.as_ref(),
        }
    }

    /// The stale marks of `list` (by id; fresh memories are left out).
    pub fn marks(&self, list: &[Memory]) -> Result<HashMap<String, Vec<Staleness>>, ManagerError> {
        Ok(match &self.judge {
            Judge::Own(m) => {
                let ids: Vec<String> = list.iter().map(|m| m.id.clone()).collect();
                crate::stale::of_memories(m.store(), &ids)?
            }
            Judge::Beside(Some(c)) => crate::stale::marks_against(c.store(), list)?,
            Judge::Beside(None) => HashMap::new(),
        })
    }

    /// The stale memories, newest change first (at most `limit`); none when there is
    /// no code index to compare with.
    pub fn stale(&self, limit: usize) -> Result<Vec<StaleMemory>, ManagerError> {
        Ok(match &self.judge {
            Judge::Own(m) => crate::stale::list(m, limit)?,
            Judge::Beside(Some(c)) => crate::stale::list_in(c.store(), &*self.backend, limit)?,
            Judge::Beside(None) => Vec::new(),
        })
    }

    /// The memories possibly affected by a change to what their symbols call, up to
    /// `depth` calls away (`stale --impact`). Judged from the local store's stale
    /// tables only: refused for another backend.
    pub fn impact(&self, depth: u32, limit: usize) -> Result<crate::stale::Impact, ManagerError> {
        match &self.judge {
            Judge::Own(m) => Ok(crate::stale::impact(m, depth, limit)?),
            Judge::Beside(_) => Err(ManagerError::Invalid(
                "impact judges the local store's memories only, not the team backend's (engram stale without --impact lists its stale ones)".into(),
            )),
        }
    }

    /// Re-anchor memory `id` to the code as it is now (a new version); refused when
    /// there is no code index.
    pub fn confirm(&self, id: &str) -> Result<Memory, ManagerError> {
        Ok(match &self.judge {
            Judge::Own(m) => crate::stale::confirm(m, id)?,
            Judge::Beside(Some(c)) => crate::stale::confirm_in(c.store(), &*self.backend, id)?,
            Judge::Beside(None) => {
                return Err(ManagerError::Invalid(
                    "confirm re-anchors a memory to the local code index, and there is none (engram index first)".into(),
                ))
            }
        })
    }

    /// The project context of the backend's memories within `budget` bytes, each
    /// stale entry tagged `[stale: …]` after the fresh ones of its section.
    pub fn context(&self, budget: usize) -> Result<String, ManagerError> {
        Ok(match &self.judge {
            Judge::Own(m) => crate::stale::project_context(m, budget)?,
            Judge::Beside(Some(c)) => {
                crate::stale::project_context_in(c.store(), &*self.backend, budget)?
            }
            Judge::Beside(None) => {
                crate::memory::project_context_of(&*self.backend, budget, &|_| None)?
            }
        })
    }

    /// Memories like `query` among those matching `filter`, best first, as search
    /// hits (each with its text and stale marks).
    pub fn recall(
        &self,
        query: &str,
        filter: &MemoryFilter,
        top_k: usize,
    ) -> Result<SearchResults, ManagerError> {
        if let Judge::Own(m) = &self.judge {
            return Ok(search::search(
                m.store(),
                query,
                &SearchOptions {
                    top_k,
                    kind: Some(HitKind::Memory),
                    memory_filter: filter.clone(),
                    embedder: m.embedder().clone(),
                    ..SearchOptions::default()
                },
            )?);
        }
        let hits = self.backend.recall(query, filter, top_k)?;
        let found: Vec<Memory> = hits.iter().map(|h| h.memory.clone()).collect();
        let mut marks = self.marks(&found)?;
        Ok(SearchResults {
            hits: hits
                .into_iter()
                .map(|h| {
                    let stale = marks.remove(&h.memory.id).unwrap_or_default();
                    memory_hit(h.memory, h.score, stale)
                })
                .collect(),
            degraded: None,
            vector_space: None,
        })
    }

    /// Scan the memories matching `filter` (task, and every one of its contexts)
    /// with the set named `set`, which `patterns` compiles. The local store is read
    /// in one pass in write order; another backend is paged by id.
    pub fn scan_memories(
        &self,
        patterns: &Patterns<'_>,
        set: &str,
        filter: &MemoryFilter,
    ) -> Result<Vec<Match>, ManagerError> {
        let Judge::Own(m) = &self.judge else {
            return super::scan_memories(patterns, &*self.backend, set, filter);
        };
        let target = ScanTarget::Memories {
            task: filter.task.clone(),
            context: filter.contexts.first().cloned(),
        };
        let mut found = patterns.scan(set, &target)?;
        if filter.contexts.len() > 1 {
            let mut keep = HashMap::new();
            found.retain(|f| {
                *keep.entry(f.key.clone()).or_insert_with(|| {
                    m.get(&f.key)
                        .ok()
                        .flatten()
                        .is_some_and(|mem| filter.contexts.iter().all(|c| mem.contexts.contains(c)))
                })
            });
        }
        Ok(found)
    }
}

/// A memory as a search hit: its first line the snippet (at most 200 characters),
/// with its stale marks (empty when fresh).
pub fn memory_hit(m: Memory, score: f64, stale: Vec<Staleness>) -> SearchHit {
    SearchHit {
        snippet: m
            .text
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(200)
            .collect(),
        key: m.id,
        kind: HitKind::Memory,
        path: None,
        start_line: None,
        end_line: None,
        symbol: None,
        signature: None,
        score,
        text: Some(m.text),
        stale: Some(stale),
    }
}

impl SessionMemoryProvider for BackendProviders {
    fn store(&self, memory: Memory) -> Result<Memory, ManagerError> {
        Ok(self.backend.write(memory)?)
    }

    fn query(
        &self,
        query: &str,
        filter: &MemoryFilter,
        top_k: usize,
    ) -> Result<Vec<ContextItem>, ManagerError> {
        Ok(self
            .recall(query, filter, top_k)?
            .hits
            .into_iter()
            .map(|h| ContextItem {
                attribution: super::providers::attribution(&h),
                text: h.text.clone().unwrap_or_else(|| h.snippet.clone()),
                key: h.key,
                score: h.score,
            })
            .collect())
    }
}

impl NoteProvider for BackendProviders {
    fn set(&self, name: &str, value: &str) -> Result<(), ManagerError> {
        self.backend.note_set(name, value, Some("agent_observed"))?;
        Ok(())
    }

    fn get(&self, name: &str) -> Result<Option<String>, ManagerError> {
        Ok(self.backend.note_get(name)?.map(|m| m.text))
    }

    fn list(&self) -> Result<Vec<(String, String)>, ManagerError> {
        Ok(self
            .backend
            .note_list()?
            .into_iter()
            .map(|m| {
                let name = crate::memory::note_name(&m).unwrap_or("").to_string();
                (name, m.text)
            })
            .collect())
    }

    fn search(&self, query: &str, top_k: usize) -> Result<Vec<ContextItem>, ManagerError> {
        let filter = MemoryFilter {
            kind: Some("note".into()),
            ..MemoryFilter::default()
        };
        SessionMemoryProvider::query(self, query, &filter, top_k)
    }
}
