//! The tools whose behaviour the seeds shaped, beyond argument names: a filter-only
//! `memory_search_structured` and memory hits carrying the entry's fields;
//! `coding_end_session` without an id, with the seed's statistics; `coding_search_errors`
//! with the error's fields at the top of each item; `coding_get_project_context` with a
//! focus; `pattern_load` from the seed's arguments or JSON/TOML text; `pattern_scan_memories`
//! normalising taxonomy values (a list of contexts must all match); `pattern_list`
//! with `id: "pat:slug"`. Every current output field is kept; fields are only added.

use serde_json::{json, Map, Value};

use super::args::{arg_str, bounded_count, err, required_str, str_list};
use super::handlers::{Connection, Engine, ToolResult};
use super::outward::{CALL_MARKS, MIN_BUDGET};
use super::shape;
use crate::manager::memory_hit;
use crate::memory::taxonomy::{self, Axis};
use crate::memory::MemoryFilter;
use crate::patterns::PatternSet;
use crate::search::SearchResults;

impl Engine {
    /// `memory_search` and `memory_search_structured`.
    pub(super) fn search_memories(&self, a: &Map<String, Value>) -> ToolResult {
        let filter = self.memory_filter(a)?;
        let top_k = bounded_count(a, "top_k", 10, 100) as usize;
        let found = match arg_str(a, "query").filter(|q| !q.trim().is_empty()) {
            Some(q) => self.providers.recall(q, &filter, top_k).map_err(err)?,
            None => {
                // Filters only: the entries newest first, as hits.
                let found = self
                    .backend()
                    .list_filtered(&filter, top_k, 0)
                    .map_err(err)?;
                let mut marks = self.providers.marks(&found).map_err(err)?;
                SearchResults {
                    hits: found
                        .into_iter()
                        .map(|m| {
                            let stale = marks.remove(&m.id).unwrap_or_default();
                            memory_hit(m, 0.0, stale)
                        })
                        .collect(),
                    degraded: None,
                    vector_space: None,
                }
            }
        };
        let mut v = self.hits(&found);
        self.add_memory_fields(&mut v);
        Ok(v)
    }

    /// Memory hits carry the entry's id, task, insights, contexts and tags.
    fn add_memory_fields(&self, v: &mut Value) {
        let Some(hits) = v.get_mut("hits").and_then(Value::as_array_mut) else {
            return;
        };
        for h in hits {
            let Some(key) = h.get("key").and_then(Value::as_str).map(String::from) else {
                continue;
            };
            if !key.starts_with("mem:") {
                continue;
            }
            if let Ok(Some(m)) = self.backend().get(&key) {
                h["id"] = json!(m.id);
                h["key_hash"] = json!(crate::key::hash64(&m.id));
                h["task"] = json!(m.task);
                h["insights"] = json!(m.insights);
                h["contexts"] = json!(m.contexts);
                h["tags"] = json!(m.tags);
                h["memory_kind"] = json!(m.kind);
            }
        }
    }

    /// `coding_end_session`: the given session, or the active one (the session this
    /// connection started while it is open, else the store's one open session). The
    /// statistics are those the memory layer counted from the summary's sections.
    pub(super) fn end_session(&self, a: &Map<String, Value>, conn: &Connection) -> ToolResult {
        let m = self.backend();
        let success = a.get("success").and_then(Value::as_bool).unwrap_or(true);
        let sess = match arg_str(a, "id") {
            Some(id) => m.end_session(id, success, arg_str(a, "summary")),
            None => m.end_active_session(conn.started().as_deref(), success, arg_str(a, "summary")),
        }
        .map_err(err)?;
        conn.ended(&sess.id);
        let summary = self.gate.budget().take(&sess.text).unwrap_or_default();
        let mut v = json!({"id": sess.id, "summary": summary.text, "flags": summary.flags});
        let field = |k: &str| sess.metadata.get(k).cloned().unwrap_or(Value::Null);
        let ended = field("ended_ms").as_u64().unwrap_or(sess.updated_ms);
        let minutes = ended.saturating_sub(sess.created_ms) as f64 / 60_000.0;
        v["files_touched"] = field("files_touched");
        v["errors_encountered"] = field("errors_encountered");
        v["errors_fixed"] = field("errors_fixed");
        v["decisions_made"] = field("decisions_made");
        v["duration_minutes"] = json!((minutes * 10.0).round() / 10.0);
        v["success"] = json!(success);
        self.after_session_end(&sess.id, &mut v);
        Ok(v)
    }

    /// `coding_search_errors`: each item keeps `score` and `memory` and gets the
    /// error's fields at its top (in engram's and the seed's names).
    pub(super) fn search_errors(&self, a: &Map<String, Value>) -> ToolResult {
        let (query, top_k) = (
            required_str(a, "query")?,
            bounded_count(a, "top_k", 10, 100) as usize,
        );
        let hits = self.backend().search_errors(query, top_k).map_err(err)?;
        let mut budget = self.gate.budget();
        let mut out = Vec::new();
        for h in &hits {
            let Some(mem) = shape::memory(&h.memory, &mut budget) else {
                break;
            };
            let mut item = json!({"score": h.score, "id": h.memory.id});
            if let Some(meta) = mem.get("metadata").and_then(Value::as_object) {
                for k in [
                    "error_type",
                    "message",
                    "file",
                    "line",
                    "solution",
                    "resolved",
                    "frequency",
                    "stack_trace",
                ] {
                    if let Some(v) = meta.get(k) {
                        item[k] = v.clone();
                    }
                }
                item["file_path"] = meta.get("file").cloned().unwrap_or(Value::Null);
                item["line_number"] = meta.get("line").cloned().unwrap_or(Value::Null);
            }
            item["tags"] = json!(h.memory.tags);
            item["memory"] = mem;
            out.push(item);
        }
        Ok(shape::listed("errors", out, &budget))
    }

    /// `coding_get_project_context`; with a focus, the memories matching it come first.
    pub(super) fn project_context(&self, a: &Map<String, Value>) -> ToolResult {
        let budget = bounded_count(a, "budget", 4000, self.gate.caps.total_bytes as u64) as usize;
        if budget < MIN_BUDGET {
            return Err(format!(
                "budget {budget} is too small: the reply's JSON alone needs about {MIN_BUDGET} bytes; give at least that"
            ));
        }
        let mut text = String::new();
        if let Some(focus) = arg_str(a, "focus").filter(|f| !f.trim().is_empty()) {
            // Ranked as memory_search ranks them, from where the memory tools read,
            // each tagged stale against the local code index.
            let hits = self
                .providers
                .recall(focus, &MemoryFilter::default(), 5)
                .map_err(err)?
                .hits;
            if !hits.is_empty() {
                text.push_str(&format!("## Focus: {focus}\n"));
                let now = crate::store::now_ms();
                for h in hits {
                    let body = h.text.as_deref().unwrap_or(&h.snippet);
                    let first = body.lines().next().unwrap_or("");
                    let tag = h
                        .stale
                        .as_deref()
                        .and_then(|s| crate::stale::tag(s, now))
                        .map(|t| format!(" {t}"))
                        .unwrap_or_default();
                    text.push_str(&format!("- [{}] {first}{tag}\n", h.key));
                }
                text.push('\n');
            }
        }
        let rest = budget.saturating_sub(text.len());
        text.push_str(&self.full_context(rest)?);
        let mut warnings = Vec::new();
        let compressed = self.compressed(a, &text, budget, &mut warnings)?;
        let clean = self
            .gate
            .budget()
            .take(compressed.as_deref().unwrap_or(&text))
            .unwrap_or_default();
        let mut v = json!({"context": clean.text, "flags": clean.flags});
        if compressed.is_some() {
            v["compressed"] = json!(true);
        }
        if !warnings.is_empty() {
            v["warnings"] = json!(warnings);
        }
        // The budget is the whole reply's, JSON included.
        crate::gate::fit_text(&mut v, "context", budget.saturating_sub(CALL_MARKS));
        Ok(v)
    }

    /// `pattern_load`: TOML text, JSON or TOML text, or the seed's arguments.
    pub(super) fn pattern_load(&self, a: &Map<String, Value>) -> ToolResult {
        let set = if let Some(t) = arg_str(a, "toml") {
            PatternSet::parse(t, true).map_err(err)?
        } else if let Some(t) = arg_str(a, "definition") {
            PatternSet::parse_detect(t).map_err(err)?
        } else if let Some(id) = arg_str(a, "id") {
            let mut obj = Map::new();
            obj.insert("id".into(), json!(id));
            // Regex strings or `{id, regex, …}` objects, as given.
            obj.insert(
                "patterns".into(),
                a.get("patterns").cloned().unwrap_or_else(|| json!([])),
            );
            obj.insert(
                "description".into(),
                json!(arg_str(a, "description").unwrap_or("")),
            );
            obj.insert("tags".into(), json!(str_list(a, "tags")));
            let set: PatternSet = serde_json::from_value(Value::Object(obj))
                .map_err(|e| format!("pattern_load: not a pattern set: {e}"))?;
            set.check().map_err(err)?;
            set
        } else {
            return Err(
                "pattern_load: pass toml, definition (JSON or TOML text), or id with patterns"
                    .into(),
            );
        };
        let replace = a.get("replace").and_then(Value::as_bool).unwrap_or(false);
        let patterns = self.patterns();
        let loaded = patterns.load_replacing(set, replace).map_err(err)?;
        Ok(
            json!({"loaded": loaded.slug(), "id": loaded.key(), "patterns": loaded.patterns.len(),
            "description": loaded.description, "tags": loaded.tags}),
        )
    }

    /// `pattern_list`, with each set's `id` (`pat:slug`) and tags.
    pub(super) fn pattern_list(&self) -> ToolResult {
        let sets = self.patterns().list().map_err(err)?;
        let out: Vec<Value> = sets
            .iter()
            .map(|(set, builtin)| {
                json!({"name": set.name, "id": set.key(), "description": set.description,
                "patterns": set.patterns.len(), "builtin": builtin, "tags": set.tags})
            })
            .collect();
        Ok(json!({"sets": out}))
    }

    /// `pattern_scan_memories`: task and contexts normalised like everywhere else
    /// (unknown values refused); every given context must match. The memories are
    /// read from wherever the memory tools read.
    pub(super) fn pattern_scan_memories(&self, a: &Map<String, Value>) -> ToolResult {
        let task = arg_str(a, "task")
            .map(|t| taxonomy::normalise(Axis::Task, t))
            .transpose()
            .map_err(err)?;
        let contexts = str_list(a, "context")
            .iter()
            .map(|c| taxonomy::normalise(Axis::Context, c))
            .collect::<Result<Vec<_>, _>>()
            .map_err(err)?;
        let set = required_str(a, "set")?;
        let filter = MemoryFilter {
            task,
            contexts,
            ..MemoryFilter::default()
        };
        let found = self
            .providers
            .scan_memories(&self.patterns(), set, &filter)
            .map_err(err)?;
        Ok(json!({"matches": found}))
    }
}
