//! The code-graph tools: `find_references`, `find_callers`, `impact_analysis` and
//! `symbols_overview`, each a thin call of `index::graph` (the library holds the
//! logic). Paths are made repository-relative through the gate first, so a path
//! outside the repository is refused, never looked up.

use serde_json::{json, Map, Value};

use super::args::{arg_str, bounded_count, err, ToolError};
use super::handlers::{noted, Engine, ToolResult};
use crate::index::graph::{self, Ask, Confidence, Target};

/// Most items a graph tool returns.
const MAX_ITEMS: u64 = 500;

impl Engine {
    /// Run one of the graph tools; `None` for any other name.
    pub(super) fn dispatch_graph(&self, name: &str, a: &Map<String, Value>) -> Option<ToolResult> {
        Some(match name {
            "find_references" => self.find_references(a),
            "find_callers" => self.find_callers(a),
            "impact_analysis" => self.impact_analysis(a),
            "symbols_overview" => self.symbols_overview(a),
            _ => return None,
        })
    }

    fn find_references(&self, a: &Map<String, Value>) -> ToolResult {
        let (target, ask) = self.graph_ask(a, 1)?;
        let note = self.index_first()?;
        let found = graph::refs(self.memories.store(), &target, ask).map_err(err)?;
        Ok(noted(
            json!({"definitions": found.definitions, "refs": found.items, "truncated": found.truncated}),
            note,
        ))
    }

    fn find_callers(&self, a: &Map<String, Value>) -> ToolResult {
        let depth = bounded_count(a, "depth", 1, 3) as u32;
        let (target, ask) = self.graph_ask(a, depth)?;
        let note = self.index_first()?;
        let found = graph::callers(self.memories.store(), &target, ask).map_err(err)?;
        Ok(noted(
            json!({"definitions": found.definitions, "callers": found.items, "truncated": found.truncated}),
            note,
        ))
    }

    fn impact_analysis(&self, a: &Map<String, Value>) -> ToolResult {
        let raw = arg_str(a, "target").ok_or(
            "missing target: a repository-relative file or folder, or a definition's name",
        )?;
        // Something path-like is confined to the repository; a bare name is a name.
        let target = if raw.contains(['/', '\\']) || raw.starts_with('.') {
            self.gate.relative(raw).map_err(err)?
        } else {
            raw.to_string()
        };
        let ask = Ask {
            min_confidence: min_confidence(a)?,
            depth: bounded_count(a, "depth", 2, 3) as u32,
            limit: bounded_count(a, "limit", 20, MAX_ITEMS) as usize,
        };
        let note = self.index_first()?;
        let found = graph::impact(self.memories.store(), &target, ask).map_err(err)?;
        Ok(noted(serde_json::to_value(found).map_err(err)?, note))
    }

    fn symbols_overview(&self, a: &Map<String, Value>) -> ToolResult {
        let path = match arg_str(a, "path").map(str::trim) {
            None | Some("") | Some(".") => String::new(),
            Some(p) => self.gate.relative(p).map_err(err)?,
        };
        let limit = bounded_count(a, "limit", 20, MAX_ITEMS) as usize;
        let note = self.index_first()?;
        let found = graph::overview(self.memories.store(), &path, limit).map_err(err)?;
        // One flat list, so the reply is cut to its limit and size like any list.
        let symbols: Vec<Value> = found
            .files
            .iter()
            .flat_map(|f| {
                f.symbols.iter().map(move |s| {
                    json!({"path": f.path, "line": s.line, "end_line": s.end_line, "kind": s.kind,
                           "name": s.qualified_name, "depth": s.depth, "signature": s.signature})
                })
            })
            .collect();
        Ok(noted(
            json!({"symbols": symbols, "total": found.total, "truncated": found.truncated}),
            note,
        ))
    }

    /// The target (`name`, or `at` as PATH:LINE with the path confined to the
    /// repository) and limits of a reference or caller question.
    fn graph_ask(&self, a: &Map<String, Value>, depth: u32) -> Result<(Target, Ask), ToolError> {
        let at = match arg_str(a, "at") {
            Some(at) => {
                let (path, line) = at
                    .rsplit_once(':')
                    .ok_or_else(|| ToolError::NotPathLine { at: at.into() })?;
                Some(format!("{}:{line}", self.gate.relative(path)?))
            }
            None => None,
        };
        let target = Target::new(arg_str(a, "name"), at.as_deref())?;
        let ask = Ask {
            min_confidence: min_confidence(a)?,
            depth,
            limit: bounded_count(a, "limit", 20, MAX_ITEMS) as usize,
        };
        Ok((target, ask))
    }
}

fn min_confidence(a: &Map<String, Value>) -> Result<Confidence, ToolError> {
    match arg_str(a, "min_confidence") {
        None => Ok(Confidence::SameName),
        Some(s) => Confidence::parse(s).ok_or_else(|| ToolError::Confidence { value: s.into() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_confidence_is_named_with_the_four_there_are() {
        let args = |v: Value| v.as_object().cloned().unwrap_or_default();
        assert!(matches!(
            min_confidence(&args(json!({}))),
            Ok(Confidence::SameName)
        ));
        let e = min_confidence(&args(json!({"min_confidence": "sure"}))).unwrap_err();
        assert!(
            matches!(&e, ToolError::Confidence { value } if value == "sure"),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "min_confidence \"sure\": expected resolved, imported, same-name or ambiguous"
        );
    }
}
