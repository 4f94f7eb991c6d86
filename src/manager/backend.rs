//! The session-memory and note providers over any [`MemoryBackend`]: with the team
//! backend, `enrich_prompt` finds the memories and notes where the memory tools keep
//! them (the repository's rows on the database server), never in the local store,
//! which then holds only the code. Stale tags come from the local code index, as the
//! memory tools' do.

use std::sync::Arc;

use super::{ContextItem, ManagerError, NoteProvider, SessionMemoryProvider};
use crate::memory::{Memories, Memory, MemoryBackend, MemoryFilter};

/// Session memories and notes read from and written to a [`MemoryBackend`].
pub struct BackendProviders {
    backend: Arc<dyn MemoryBackend>,
    /// The local store whose code index judges staleness; `None`: no tags.
    code: Option<Arc<Memories>>,
}

impl BackendProviders {
    /// Providers over `backend`, tagging stale memories against `code`'s index.
    pub fn new(backend: Arc<dyn MemoryBackend>, code: Option<Arc<Memories>>) -> BackendProviders {
        BackendProviders { backend, code }
    }

    /// Context items of `found`, in order, each attributed `[memory: id]` (with its
    /// `[stale: …]` tag when its code changed).
    fn items(&self, found: Vec<(Memory, f64)>) -> Result<Vec<ContextItem>, ManagerError> {
        let marks = match &self.code {
            Some(c) => {
                let ms: Vec<Memory> = found.iter().map(|(m, _)| m.clone()).collect();
                crate::stale::marks_against(c.store(), &ms)?
            }
            None => Default::default(),
        };
        let now = crate::store::now_ms();
        Ok(found
            .into_iter()
            .map(|(m, score)| {
                let tag = marks.get(&m.id).and_then(|s| crate::stale::tag(s, now));
                ContextItem {
                    attribution: match tag {
                        Some(t) => format!("[memory: {}] {t}", m.id),
                        None => format!("[memory: {}]", m.id),
                    },
                    key: m.id,
                    text: m.text,
                    score,
                }
            })
            .collect())
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
        let hits = self.backend.recall(query, filter, top_k)?;
        self.items(hits.into_iter().map(|h| (h.memory, h.score)).collect())
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
        super::providers::note_pairs(self.backend.note_list()?)
    }

    fn search(&self, query: &str, top_k: usize) -> Result<Vec<ContextItem>, ManagerError> {
        let filter = MemoryFilter {
            kind: Some("note".into()),
            ..MemoryFilter::default()
        };
        SessionMemoryProvider::query(self, query, &filter, top_k)
    }
}
