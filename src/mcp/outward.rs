//! The tools' reach outward: `code_search` and `enrich_prompt` with
//! `providers: true` also ask the configured external MCP servers, through the
//! manager, beside the store.
//!
//! What those servers return is untrusted: it reaches the caller only as gate
//! blocks (sanitised, capped, flagged, attributed `[source: NAME: path:line]`), with
//! a note for each provider that was late or failed. Nothing here stores it. The
//! work is the manager's (`external_search`, `enrich_prompt_with`); this file only
//! shapes the answer.

use std::sync::Arc;

use serde_json::{json, Value};

use super::args::err;
use super::handlers::{Engine, ToolResult};
use super::shape;
use crate::manager::ExternalProvider;
use crate::search::{self, SearchOptions};

impl Engine {
    /// The same engine asking `providers` when a call wants them.
    pub fn with_external(mut self, providers: Vec<Arc<dyn ExternalProvider>>) -> Engine {
        self.manager.external = providers;
        self
    }

    /// `code_search` over the store and the external providers at once: the store's
    /// hits under `hits` and theirs under `external`, each within half the total
    /// cap, and a note per provider under `providers`.
    pub(super) fn search_with_providers(&self, query: &str, opts: SearchOptions) -> ToolResult {
        let top_k = opts.top_k;
        let (local, outside) = std::thread::scope(|s| {
            let outside = s.spawn(|| self.manager.external_search(query, top_k));
            let local = search::search(self.memories.store(), query, &opts);
            (local, outside.join().unwrap_or_default())
        });
        let r = local.map_err(err)?;
        let mut half = self.gate.clone();
        half.caps.total_bytes /= 2;
        let mut budget = half.budget();
        let hits = shape::hits(&r.hits, &mut budget);
        let mut v = shape::listed("hits", hits, &budget);
        v["degraded"] = json!(r.degraded);
        if let Some(space) = &r.vector_space {
            v["vector_space"] = json!(space);
        }
        let items = outside
            .lists
            .into_iter()
            .flatten()
            .map(|i| (i.attribution, i.text))
            .collect();
        let external: Vec<Value> = half
            .blocks(items)
            .into_iter()
            .map(|b| {
                let mut e = json!({"source": b.attribution, "text": b.text});
                if !b.flags.is_empty() {
                    e["flags"] = json!(b.flags);
                }
                if b.truncated {
                    e["truncated"] = json!(true);
                }
                e
            })
            .collect();
        v["external"] = json!(external);
        v["providers"] = json!(outside.notes);
        Ok(v)
    }

    /// `enrich_prompt`, asking the external providers too when `providers` is set.
    pub(super) fn enrich_with(&self, prompt: &str, budget: usize, providers: bool) -> ToolResult {
        let e = self
            .manager
            .enrich_prompt_with(&self.gate.repo, prompt, budget, providers)
            .map_err(err)?;
        serde_json::to_value(e).map_err(err)
    }
}
