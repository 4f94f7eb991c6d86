//! Small tools the seeds have and engram lacked, each mapped onto an existing library
//! call: `memory_update` (`Memories::update`), `memory_delete` (`Memories::forget`),
//! `delete_note` and `search_notes` (notes), `memory_stats` (what
//! `GET /api/memory/{repo}/stats` reports); and staleness: `memory_stale`
//! (`stale::list`, with `impact` also `stale::impact`) and `memory_confirm` (`stale::confirm`), through the engine's
//! [`crate::manager::BackendProviders`] on either backend (the team backend's memories
//! judged against the local code index). Listed in the `memory` profile, not `core`.

use serde_json::{json, Map, Value};

use super::args::{arg_str, err, required_str, str_list, ToolError};
use super::handlers::{Engine, ToolResult};
use super::tools::{opt, req as required, Profile, ToolSpec, Ty};
use crate::memory::Memory;

const MEMORY: &[Profile] = &[Profile::Memory];

/// The specs of the tools this module handles.
pub static EXTRA_TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "memory_update",
        description: "Change a memory as a new version (earlier ones stay in its history); only the fields given change. Use it when a memory is out of date.",
        params: &[required("id", Ty::Str, "The memory id (also memory_id).").aka(&["memory_id"]),
            opt("text", Ty::Str, "The new text."), opt("task", Ty::Str, "Task type."),
            opt("insights", Ty::StrList, "Insight types."),
            opt("contexts", Ty::StrList, "Context types (also context).").aka(&["context"]),
            opt("tags", Ty::StrList, "Tags."),
            opt("metadata", Ty::Object, "Metadata fields to set (merged into what is there).")],
        profiles: MEMORY,
    },
    ToolSpec {
        name: "memory_delete",
        description: "Delete a memory by id; returns whether there was one. Use it for a memory that is wrong.",
        params: &[required("id", Ty::Str, "The memory id (also memory_id).").aka(&["memory_id"])],
        profiles: MEMORY,
    },
    ToolSpec {
        name: "delete_note",
        description: "Delete a repository note by name; returns whether there was one. Use it for a note that no longer holds.",
        params: &[required("name", Ty::Str, "The note's name (also key).").aka(&["key"])],
        profiles: MEMORY,
    },
    ToolSpec {
        name: "search_notes",
        description: "Find notes whose name or value contains every word of the query. Use it when you do not know a note's name.",
        params: &[required("query", Ty::Str, "Words to find."),
            opt("limit", Ty::Int, "Most notes (default 20); also top_k, k.").aka(&["top_k", "topK", "k"])],
        profiles: MEMORY,
    },
    ToolSpec {
        name: "memory_stale",
        description: "Memories whose code changed, moved or was deleted since they were written, each with what changed. Use it to review them: memory_confirm if one still holds, memory_update if not.",
        params: &[opt("limit", Ty::Int, "Most memories (default 20); also top_k, k.").aka(&["top_k", "topK", "k"]),
            opt("impact", Ty::Bool, "Also list, under `affected`, memories whose symbols call a function that changed since they were written (not stale themselves: worth a look)."),
            opt("depth", Ty::Int, "With impact: 1 (what the symbol calls, the default) or 2 (and what those call).")],
        profiles: MEMORY,
    },
    ToolSpec {
        name: "memory_confirm",
        description: "Re-anchor a stale memory to the code as it is now (a new version, fresh again). Use it when a stale memory still holds.",
        params: &[required("id", Ty::Str, "The memory id (also memory_id).").aka(&["memory_id"])],
        profiles: MEMORY,
    },
    ToolSpec {
        name: "memory_stats",
        description: "How much the store holds: memories, records, indexed files, chunks and symbols. Use it to check a repository is indexed.",
        params: &[],
        profiles: MEMORY,
    },
];

impl Engine {
    /// Run one of [`EXTRA_TOOLS`]; `None` for any other name.
    pub(super) fn dispatch_extra(&self, name: &str, a: &Map<String, Value>) -> Option<ToolResult> {
        Some(match name {
            "memory_update" => self.memory_update(a),
            "memory_delete" => {
                let id = match required_str(a, "id") {
                    Ok(id) => id,
                    Err(e) => return Some(Err(e.into())),
                };
                self.backend()
                    .forget(id)
                    .map(|deleted| json!({"id": id, "deleted": deleted}))
                    .map_err(err)
            }
            "delete_note" => {
                let name = match required_str(a, "name") {
                    Ok(n) => n,
                    Err(e) => return Some(Err(e.into())),
                };
                self.backend()
                    .note_delete(name)
                    .map(|deleted| json!({"name": name, "deleted": deleted}))
                    .map_err(err)
            }
            "search_notes" => self.search_notes(a),
            "memory_stats" => self.stats(),
            "memory_stale" => self.memory_stale(a),
            "memory_confirm" => self.memory_confirm(a),
            _ => return None,
        })
    }

    fn memory_update(&self, a: &Map<String, Value>) -> ToolResult {
        let id = required_str(a, "id")?;
        let m = self.backend();
        let mut change = m
            .get(id)
            .map_err(err)?
            .ok_or_else(|| format!("no memory {id}"))?;
        if let Some(t) = arg_str(a, "text") {
            change.text = t.to_string();
        }
        if let Some(t) = arg_str(a, "task") {
            change.task = Some(t.to_string());
        }
        for (k, field) in [
            ("insights", &mut change.insights),
            ("contexts", &mut change.contexts),
            ("tags", &mut change.tags),
        ] {
            if a.contains_key(k) {
                *field = str_list(a, k);
            }
        }
        if let Some(meta) = a.get("metadata").and_then(Value::as_object) {
            change.metadata.extend(meta.clone());
        }
        let updated = m.update(id, change).map_err(err)?;
        let shown = super::shape::memory(&updated, &mut self.gate.budget());
        Ok(json!({"id": updated.id, "updated": true, "version": updated.version, "memory": shown}))
    }

    fn memory_stale(&self, a: &Map<String, Value>) -> ToolResult {
        let limit = a
            .get("limit")
            .and_then(Value::as_u64)
            .unwrap_or(20)
            .clamp(1, 500) as usize;
        let found = self.providers.stale(limit).map_err(err)?;
        let mut budget = self.gate.budget();
        let mut items = Vec::new();
        for s in &found {
            let Some(mut shown) = super::shape::memory(&s.memory, &mut budget) else {
                break;
            };
            shown["stale"] = json!(s.stale);
            items.push(shown);
        }
        let mut extra = Map::new();
        if a.get("impact").and_then(Value::as_bool) == Some(true) {
            let depth = a.get("depth").and_then(Value::as_u64).unwrap_or(1);
            let depth = u32::try_from(depth).unwrap_or(u32::MAX);
            let impact = self.providers.impact(depth, limit).map_err(err)?;
            let mut affected = Vec::new();
            for x in &impact.affected {
                let Some(mut shown) = super::shape::memory(&x.memory, &mut budget) else {
                    break;
                };
                shown["symbol"] = json!(x.symbol);
                shown["target"] = json!(x.target);
                shown["via"] = json!(x.via);
                affected.push(shown);
            }
            extra.insert("affected".into(), json!(affected));
            extra.insert("unchecked".into(), json!(impact.unchecked));
        }
        let mut answer = super::shape::listed("stale", items, &budget);
        if let Value::Object(o) = &mut answer {
            o.extend(extra);
        }
        Ok(answer)
    }

    fn memory_confirm(&self, a: &Map<String, Value>) -> ToolResult {
        let id = required_str(a, "id")?;
        let m = self.providers.confirm(id).map_err(err)?;
        let mut shown = super::shape::memory(&m, &mut self.gate.budget());
        self.annotate_stale(std::slice::from_ref(&m), shown.iter_mut())?;
        Ok(json!({"id": m.id, "confirmed": true, "version": m.version, "memory": shown}))
    }

    /// Add `stale` (the marks, empty when fresh) to each shaped memory of `found`.
    pub(super) fn annotate_stale<'a>(
        &self,
        found: &[Memory],
        items: impl Iterator<Item = &'a mut Value>,
    ) -> Result<(), ToolError> {
        let mut marks = self.providers.marks(found)?;
        for v in items {
            let Some(id) = v.get("id").and_then(Value::as_str).map(String::from) else {
                continue;
            };
            if let Value::Object(o) = v {
                o.insert("stale".into(), json!(marks.remove(&id).unwrap_or_default()));
            }
        }
        Ok(())
    }

    /// The project context of wherever the memories are, at most `budget` bytes, stale
    /// entries tagged against the local code index.
    pub(super) fn full_context(&self, budget: usize) -> Result<String, ToolError> {
        Ok(self.providers.context(budget)?)
    }

    fn search_notes(&self, a: &Map<String, Value>) -> ToolResult {
        let words: Vec<String> = required_str(a, "query")?
            .split_whitespace()
            .map(str::to_lowercase)
            .collect();
        let limit = a
            .get("limit")
            .and_then(Value::as_u64)
            .unwrap_or(20)
            .clamp(1, 500) as usize;
        let notes = self.backend().note_list().map_err(err)?;
        let found: Vec<_> = notes
            .into_iter()
            .filter(|n| {
                let name = crate::memory::note_name(n).unwrap_or("");
                let hay = format!("{name}\n{}", n.text).to_lowercase();
                words.iter().all(|w| hay.contains(w.as_str()))
            })
            .take(limit)
            .collect();
        let mut budget = self.gate.budget();
        let items = super::shape::memories(&found, &mut budget);
        Ok(super::shape::listed("notes", items, &budget))
    }

    /// What the store holds (also served as `GET /api/memory/{repo}/stats`).
    pub fn stats(&self) -> ToolResult {
        let store = self.memories.store();
        let count = |sql: &str| -> Result<i64, ToolError> {
            Ok(store.with_tracker(|db| Ok(db.query_row(sql, [], |r| r.get(0))?))?)
        };
        let memories = self.backend().count().map_err(err)?;
        Ok(json!({
            "repo": self.gate.repo,
            "memories": memories,
            "total_memories": memories,
            "live_records": store.live_records().map_err(err)?,
            "files": count("SELECT count(*) FROM code_files")?,
            "chunks": count("SELECT count(*) FROM code_chunks")?,
            "symbols": count("SELECT count(*) FROM code_symbols")?,
        }))
    }
}
