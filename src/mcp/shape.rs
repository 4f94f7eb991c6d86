//! What tool results look like on the way out: every text sanitised, attributed and
//! inside the gate's byte caps (per block and per response), with the injection
//! flags it raised; and what an audit event counts of a result.
//!
//! Pure functions over values the handlers already fetched; nothing here reads or
//! writes the store.

use serde_json::{json, Value};

use crate::gate::Budget;
use crate::memory::Memory;
use crate::search::SearchHit;

/// `[source: path:start-end]` for code, `[memory: mem:id]` for memories.
pub fn attribution(h: &SearchHit) -> String {
    match (&h.path, h.start_line, h.end_line) {
        (Some(p), Some(a), Some(b)) => format!("[source: {p}:{a}-{b}]"),
        _ => format!("[memory: {}]", h.key),
    }
}

/// Search hits as JSON, in order, until the budget is spent.
pub fn hits(found: &[SearchHit], budget: &mut Budget) -> Vec<Value> {
    let mut out = Vec::new();
    for h in found {
        let source = attribution(h);
        budget.spend(source.len() + h.key.len());
        let Some(snippet) = budget.take(&h.snippet) else {
            break;
        };
        let mut flags = snippet.flags.clone();
        let mut v = json!({
            "key": h.key, "kind": h.kind, "path": h.path, "start_line": h.start_line,
            "end_line": h.end_line, "symbol": h.symbol, "score": h.score,
            "snippet": snippet.text, "source": source,
        });
        if let Some(signature) = h.signature.as_deref() {
            let Some(clean) = budget.take(signature) else {
                break;
            };
            flags.extend(clean.flags);
            v["signature"] = json!(clean.text);
        }
        if let Some(text) = h.text.as_deref() {
            let Some(clean) = budget.take(text) else {
                break;
            };
            flags.extend(clean.flags);
            v["text"] = json!(clean.text);
        }
        if let Some(stale) = &h.stale {
            v["stale"] = json!(stale);
        }
        flags.sort();
        flags.dedup();
        if !flags.is_empty() {
            v["flags"] = json!(flags);
        }
        out.push(v);
    }
    out
}

/// One memory as JSON with its text sanitised and capped, attributed; `None` once
/// the budget is spent.
pub fn memory(m: &Memory, budget: &mut Budget) -> Option<Value> {
    let mut v = serde_json::to_value(m).unwrap_or(Value::Null);
    let source = format!("[memory: {}]", m.id);
    budget.spend(source.len());
    let clean = budget.take(&m.text)?;
    // Typed kinds keep text in their fields too (an error's message and stack trace,
    // a decision's rationale): every other string goes through the same budget.
    if let Some(obj) = v.as_object_mut() {
        obj.remove("text");
        // Bookkeeping for `memory_stale` with `impact` (up to 64 keys and hashes):
        // not worth an agent's reply budget on every memory shown.
        obj.remove("callees");
        let mut flags = clean.flags.clone();
        for field in obj.values_mut() {
            cap_strings(field, budget, &mut flags);
        }
        flags.sort();
        flags.dedup();
        if !flags.is_empty() {
            obj.insert("flags".into(), json!(flags));
        }
    }
    v["text"] = json!(clean.text);
    v["source"] = json!(source);
    // The seeds address entries by the 64-bit hash of their key.
    v["key_hash"] = json!(crate::key::hash64(&m.id));
    Some(v)
}

/// Every string inside `v` sanitised and cut to the budget (emptied once it is spent);
/// flags found are added to `flags`.
fn cap_strings(v: &mut Value, budget: &mut Budget, flags: &mut Vec<&'static str>) {
    match v {
        Value::String(s) => match budget.take(s) {
            Some(clean) => {
                flags.extend(clean.flags);
                *s = clean.text;
            }
            None => s.clear(),
        },
        Value::Array(items) => items.iter_mut().for_each(|i| cap_strings(i, budget, flags)),
        Value::Object(map) => map.values_mut().for_each(|i| cap_strings(i, budget, flags)),
        _ => {}
    }
}

/// Memories as JSON, in order, until the budget is spent.
pub fn memories<'a>(
    found: impl IntoIterator<Item = &'a Memory>,
    budget: &mut Budget,
) -> Vec<Value> {
    let mut out = Vec::new();
    for m in found {
        match memory(m, budget) {
            Some(v) => out.push(v),
            None => break,
        }
    }
    out
}

/// Records that are not memories (audit events) as JSON, every string in them
/// sanitised and capped, with the flags that raised; in order until the budget is
/// spent.
pub fn records(found: impl IntoIterator<Item = Value>, budget: &mut Budget) -> Vec<Value> {
    /// What the fields' names and numbers of a record cost, roughly.
    const RECORD_OVERHEAD: usize = 96;
    let mut out = Vec::new();
    for mut v in found {
        if budget.take("").is_none() {
            break;
        }
        budget.spend(RECORD_OVERHEAD);
        let mut flags = Vec::new();
        cap_strings(&mut v, budget, &mut flags);
        flags.sort();
        flags.dedup();
        if let (false, Some(obj)) = (flags.is_empty(), v.as_object_mut()) {
            obj.insert("flags".into(), json!(flags));
        }
        out.push(v);
    }
    out
}

/// A list result: the items under `field`, and whether the caps cut or left out any.
pub fn listed(field: &str, items: Vec<Value>, budget: &Budget) -> Value {
    let mut v = json!({ field: items });
    if budget.cut() {
        v["truncated"] = json!(true);
    }
    v
}

/// Most bytes of a list tool's reply when the caller gave no limit: a default
/// answer stays small in an agent's context.
pub const DEFAULT_REPLY_BYTES: usize = 8000;

/// A tool whose reply lists items: the field holding them, the argument that caps
/// how many (in its canonical name) and that cap's default.
pub struct ListTool {
    pub tool: &'static str,
    pub field: &'static str,
    pub limit: &'static str,
    pub default: usize,
}

const fn list(
    tool: &'static str,
    field: &'static str,
    limit: &'static str,
    default: usize,
) -> ListTool {
    ListTool {
        tool,
        field,
        limit,
        default,
    }
}

/// Every list-returning tool (the TeleCoder names route to these).
pub const LIST_TOOLS: &[ListTool] = &[
    list("code_search", "hits", "top_k", 10),
    list("jit_search", "hits", "top_k", 10),
    list("symbol_search", "symbols", "limit", 20),
    list("memory_search", "hits", "top_k", 10),
    list("memory_search_structured", "hits", "top_k", 10),
    list("memory_list_structured", "memories", "limit", 20),
    list("memory_list_threads", "threads", "limit", 20),
    list("pattern_scan", "matches", "limit", 20),
    list("pattern_scan_memories", "matches", "limit", 20),
    list("pattern_list", "sets", "limit", 50),
    list("audit_read", "events", "limit", 20),
    list("get_notes", "notes", "limit", 20),
    list("search_notes", "notes", "limit", 20),
    list("memory_stale", "stale", "limit", 20),
    list("coding_search_errors", "errors", "top_k", 10),
    list("find_references", "refs", "limit", 20),
    list("find_callers", "callers", "limit", 20),
    list("impact_analysis", "dependents", "limit", 20),
    list("symbols_overview", "symbols", "limit", 20),
];

/// A list tool's reply cut to its limit (the caller's, or the default) and to a
/// size: the total cap when the caller chose the limit, [`DEFAULT_REPLY_BYTES`]
/// when not. What was left out is counted (`truncated`, `omitted`).
pub fn fit_list_reply(
    tool: &str,
    args: &serde_json::Map<String, Value>,
    v: &mut Value,
    total_cap: usize,
) {
    let Some(spec) = LIST_TOOLS.iter().find(|l| l.tool == tool) else {
        return;
    };
    let given = args.get(spec.limit).and_then(Value::as_u64);
    let limit = given.map_or(spec.default, |n| n.max(1) as usize);
    let max = match given {
        Some(_) => total_cap,
        None => DEFAULT_REPLY_BYTES.min(total_cap),
    };
    crate::gate::fit_list(v, spec.field, Some(limit), max);
}

/// Most bytes of an error message (they may quote the caller's arguments).
pub const ERROR_BYTES: usize = 1024;

/// An error message fit to return: sanitised, at most [`ERROR_BYTES`].
pub fn error_text(message: &str) -> String {
    let clean = crate::gate::sanitize(message).text;
    let (mut cut, truncated) = crate::gate::truncate(&clean, ERROR_BYTES);
    if truncated {
        cut.push_str(" …");
    }
    cut
}

/// How many results a tool's answer holds (for the audit trail).
pub fn count_results(v: &Value) -> u64 {
    [
        "hits",
        "symbols",
        "memories",
        "threads",
        "matches",
        "notes",
        "errors",
        "blocks",
        "sets",
        "events",
        "refs",
        "callers",
        "dependents",
    ]
    .iter()
    .find_map(|k| v.get(k).and_then(Value::as_array).map(|a| a.len() as u64))
    .unwrap_or(1)
}

/// Every injection flag anywhere in a tool's answer (for the audit trail).
pub fn collect_flags(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for k in ["flagged", "flags"] {
        if let Some(f) = v.get(k).and_then(Value::as_array) {
            out.extend(f.iter().filter_map(|x| x.as_str().map(String::from)));
        }
    }
    for k in ["hits", "memories", "notes", "threads", "errors"] {
        for item in v.get(k).and_then(Value::as_array).into_iter().flatten() {
            let item = item.get("memory").unwrap_or(item);
            for f in item
                .get("flags")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(f) = f.as_str() {
                    out.push(f.to_string());
                }
            }
        }
    }
    if let Some(m) = v.get("memory") {
        out.extend(collect_flags(
            &json!({"flags": m.get("flags").cloned().unwrap_or_default()}),
        ));
    }
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::{Caps, Gate};

    #[test]
    fn memories_stop_at_the_total_cap_and_say_so() {
        let g = Gate::new(
            "r",
            None,
            vec![],
            Caps {
                chunk_bytes: 100,
                total_bytes: 250,
            },
        );
        let ms: Vec<Memory> = (0..10)
            .map(|i| Memory::new(format!("{i} {}", "x".repeat(300))))
            .collect();
        let mut b = g.budget();
        let out = memories(&ms, &mut b);
        assert!(out.len() < 10 && !out.is_empty());
        for m in &out {
            assert!(m["text"].as_str().unwrap().len() <= 100);
            assert!(m["source"].as_str().unwrap().starts_with("[memory: "));
        }
        assert_eq!(listed("memories", out, &b)["truncated"], true);
    }
}
