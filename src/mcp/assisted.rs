//! The tools a chat model can help with, when one is configured: session summaries
//! and extraction at `coding_end_session`, error screenshots at `coding_record_error`,
//! compression in `coding_get_project_context`, and `coding_suggest_solution`.
//!
//! Every tool here has its answer without a model; a failing model adds a `warnings`
//! entry, never an error. It holds no logic the `assist` layer does not offer.

use serde_json::{json, Map, Value};

use super::args::{arg_str, err, required_str, str_list, ToolError};
use super::handlers::{Engine, ToolResult};
use crate::assist::{is_base64, screenshot_from, unread_image, warn, Assistant, Features, Level};
use crate::memory::ErrorReport;

impl Engine {
    /// The assistant, if configured and `feature` is on.
    fn assistant_with(&self, feature: fn(&Features) -> bool) -> Option<&Assistant> {
        self.assistant.as_deref().filter(|a| feature(&a.features))
    }

    /// After `coding_end_session`: the model's summary and extracted knowledge, when
    /// those features are on.
    pub(super) fn after_session_end(&self, id: &str, v: &mut Value) {
        let mut warnings = Vec::new();
        if let Some(a) = self.assistant_with(|f| f.summary) {
            match a.summarize_session_in(&**self.backend(), &*self.memories, id) {
                Ok(m) => {
                    let summary = m.metadata.get("llm_summary").and_then(Value::as_str);
                    let clean = self
                        .gate
                        .budget()
                        .take(summary.unwrap_or(""))
                        .unwrap_or_default();
                    v["llm_summary"] = json!(clean.text);
                }
                Err(e) => warnings.extend(warn("session summary", &e)),
            }
        }
        if let Some(a) = self.assistant_with(|f| f.extract) {
            match a.extract_knowledge_in(&**self.backend(), &*self.memories, id) {
                Ok(x) => {
                    v["extracted"] = json!(x.stored.iter().map(|m| &m.id).collect::<Vec<_>>());
                }
                Err(e) => warnings.extend(warn("knowledge extraction", &e)),
            }
        }
        if !warnings.is_empty() {
            v["warnings"] = json!(warnings);
        }
    }

    /// `coding_record_error`: a screenshot is kept as its hash and size only, and read
    /// by the vision model when that feature is on.
    pub(super) fn record_error(&self, a: Map<String, Value>, started: Option<&str>) -> ToolResult {
        let mut e: ErrorReport = serde_json::from_value(Value::Object(a.clone())).map_err(err)?;
        let mut warnings = Vec::new();
        if let Some(given) = e.screenshot.take() {
            match screenshot_from(&given, |p| self.gate.confine(p).map_err(err)) {
                Ok(shot) => {
                    e.screenshot = Some(shot.reference());
                    e.extra_metadata
                        .insert("screenshot_sha256".into(), json!(shot.sha256));
                    e.extra_metadata
                        .insert("screenshot_bytes".into(), json!(shot.bytes));
                    if let Some(asst) = self.assistant_with(|f| f.vision) {
                        match asst.read_screenshot(&*self.memories, &shot) {
                            Ok(f) => {
                                if e.file.is_none() {
                                    e.file =
                                        f.file.as_deref().and_then(|p| self.gate.relative(p).ok());
                                }
                                if e.line.is_none() {
                                    e.line = f.line;
                                }
                                if e.stack_trace.is_none() {
                                    e.stack_trace.clone_from(&f.stack_trace);
                                }
                                let mut reading = serde_json::to_value(&f).map_err(err)?;
                                reading["provenance"] = json!("llm_extracted");
                                reading["model"] = json!(asst.model());
                                e.extra_metadata
                                    .insert("screenshot_reading".into(), reading);
                            }
                            Err(x) => warnings.extend(warn("screenshot reading", &x)),
                        }
                    }
                }
                // Not an image we can read (a path on another machine, …): a path is
                // kept (its secrets replaced), image data only as its size and hash.
                Err(why) => {
                    e.screenshot = Some(if is_base64(&given) {
                        unread_image(&given, &why)
                    } else {
                        crate::gate::redact_secrets(&given).map_err(err)?.0
                    });
                }
            }
        }
        let mem = self
            .backend()
            .record_error(&e, &str_list(&a, "tags"), started)
            .map_err(err)?;
        let mut v = json!({"id": mem.id, "frequency": mem.metadata.get("frequency"),
            "session": mem.session});
        if let Some(r) = mem.metadata.get("screenshot_reading") {
            v["screenshot_reading"] = r.clone();
        }
        if !warnings.is_empty() {
            v["warnings"] = json!(warnings);
        }
        Ok(v)
    }

    /// `coding_suggest_solution`: the model's suggestion, else the most similar solved
    /// past error's solution.
    pub(super) fn suggest_solution(&self, a: &Map<String, Value>) -> ToolResult {
        let id = required_str(a, "error_id")?;
        if a.get("dry_run").and_then(Value::as_bool).unwrap_or(false) {
            // The exact requests the model would get, sent to nobody.
            let Some(asst) = self.assistant.as_deref() else {
                return Err("dry_run shows what would be sent to the chat model, and none is configured (set llm_model)".into());
            };
            let dry = asst.dry_run_copy();
            crate::assist::suggest(Some(&dry), &**self.backend(), &*self.memories, id)
                .map_err(err)?;
            return Ok(json!({"dry_run": true, "requests": dry.prepared()}));
        }
        // The error and past ones come from where the memory tools read (the team
        // backend too); a model call is audited in the team log when one is set.
        let (s, warning) = crate::assist::suggest(
            self.assistant.as_deref(),
            &**self.backend(),
            &*self.memories,
            id,
        )
        .map_err(err)?;
        let mut budget = self.gate.budget();
        let mut v = serde_json::to_value(&s).map_err(err)?;
        v["solution"] = json!(budget.take(&s.solution).unwrap_or_default().text);
        if let Some(w) = warning {
            v["warnings"] = json!([w]);
        }
        Ok(v)
    }

    /// The project context compressed by the model at `level` (argument `compress`,
    /// else `detailed` when the compress feature is on); `None` when not asked or the
    /// model gave nothing (the warning is pushed).
    pub(super) fn compressed(
        &self,
        a: &Map<String, Value>,
        context: &str,
        budget: usize,
        warnings: &mut Vec<String>,
    ) -> Result<Option<String>, ToolError> {
        let level = match arg_str(a, "compress") {
            Some(l) => l.parse::<Level>()?,
            None if self.assistant_with(|f| f.compress).is_some() => Level::Detailed,
            None => return Ok(None),
        };
        let Some(asst) = self.assistant.as_deref() else {
            warnings.push("compress asks for a model, and none is configured (llm_model); showing the full context".into());
            return Ok(None);
        };
        let full = self.full_context(asst.max_request_bytes)?;
        let full = if full.len() < context.len() {
            context
        } else {
            &full
        };
        match asst.compress_context(&*self.memories, full, level, budget) {
            Ok(t) => Ok(Some(t)),
            Err(e) => {
                warnings.extend(warn("context compression", &e));
                Ok(None)
            }
        }
    }
}
