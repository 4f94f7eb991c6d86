//! Secrets already in a stored entry, as another backend keeps it (its text and its
//! record metadata): found and replaced by the same built-in rules every way in uses,
//! and counted by rule.
//!
//! An older engram, or a tool writing the database directly, may have stored an
//! entry without redacting it. A backend reads such an entry back as it is stored and
//! asks [`redact_stored`] what it would hold without its secrets; the answer names
//! the rules that matched and how often, never the text they matched. This module
//! reads and writes nothing: rewriting the stored entry is the backend's.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::Result;
use crate::patterns::Redactor;

/// A stored entry without its secrets.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRedaction {
    /// The text with every secret replaced by `[REDACTED:<rule>]`.
    pub text: String,
    /// The record metadata with every secret in its strings replaced (the `key` and
    /// `type` fields are left as they are: they name the record).
    pub meta: Map<String, Value>,
    /// Secrets found, by rule id.
    pub rules: BTreeMap<String, u64>,
}

impl StoredRedaction {
    /// How many secrets were replaced.
    pub fn secrets(&self) -> u64 {
        self.rules.values().sum()
    }
}

/// `text` and `meta` of a stored entry with every secret replaced, or `None` when
/// they hold none.
pub fn redact_stored(text: &str, meta: &Map<String, Value>) -> Result<Option<StoredRedaction>> {
    let redactor = Redactor::builtin()?;
    let mut rules = BTreeMap::new();
    let text = redact_text(redactor, text, &mut rules)?;
    let mut meta = meta.clone();
    for (k, v) in meta.iter_mut() {
        if k != "key" && k != "type" {
            redact_value(redactor, v, &mut rules)?;
        }
    }
    Ok((!rules.is_empty()).then_some(StoredRedaction { text, meta, rules }))
}

fn redact_text(
    redactor: &Redactor,
    text: &str,
    rules: &mut BTreeMap<String, u64>,
) -> Result<String> {
    let r = redactor.redact(text)?;
    if r.counts.is_empty() {
        return Ok(text.to_string());
    }
    for (rule, n) in r.counts {
        *rules.entry(rule).or_default() += n;
    }
    Ok(r.text)
}

fn redact_value(
    redactor: &Redactor,
    value: &mut Value,
    rules: &mut BTreeMap<String, u64>,
) -> Result<()> {
    match value {
        Value::String(s) => *s = redact_text(redactor, s, rules)?,
        Value::Array(items) => {
            for v in items {
                redact_value(redactor, v, rules)?;
            }
        }
        Value::Object(map) => {
            for (_, v) in map.iter_mut() {
                redact_value(redactor, v, rules)?;
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_metadata_are_redacted_and_counted_by_rule() {
        let meta: Map<String, Value> = serde_json::from_value(serde_json::json!({
            "type": "memory", "kind": "note",
            "metadata": {"value": ["x", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"]},
            "version": 2
        }))
        .unwrap();
        let r = redact_stored("key AKIAHNHEOABTCPM7PCMI here", &meta)
            .unwrap()
            .unwrap();
        assert_eq!(r.secrets(), 2);
        assert_eq!(r.rules.len(), 2, "{:?}", r.rules);
        assert!(!r.text.contains("AKIAHNHEOABTCPM7PCMI"));
        let doc = Value::Object(r.meta.clone()).to_string();
        assert!(!doc.contains("ghp_abc"), "{doc}");
        assert_eq!(r.meta["version"], 2);
        assert_eq!(r.meta["kind"], "note");
        let plain: Map<String, Value> =
            serde_json::from_value(serde_json::json!({"type": "memory", "tags": ["a"]})).unwrap();
        assert_eq!(redact_stored("nothing here", &plain).unwrap(), None);
    }
}
