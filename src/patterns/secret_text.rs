//! Secrets out of text before it is written: the one scanner every way in calls
//! (memories, notes, coding records, imports, tool arguments, audit events).
//!
//! Uses the built-in `secrets` set, compiled once per process. Each secret is
//! replaced by `[REDACTED:<rule>]` followed by as many line breaks as it spanned, so
//! line numbers stay right. It reports how many it replaced, never what.

use std::sync::OnceLock;

use serde_json::Value;

use super::{builtin, compile, CompiledSet, PatternError};

/// Text with its secrets replaced, and how many there were.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedactedText {
    pub text: String,
    pub secrets: u64,
}

fn compiled() -> Result<&'static CompiledSet, PatternError> {
    static SET: OnceLock<Result<CompiledSet, String>> = OnceLock::new();
    SET.get_or_init(|| compile(&builtin::secrets()).map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| PatternError::Invalid(e.clone()))
}

/// `text` with every secret of the built-in set replaced.
pub fn redact_secrets(text: &str) -> Result<RedactedText, PatternError> {
    let set = compiled()?;
    let hits = set.scan(text.as_bytes())?;
    if hits.is_empty() {
        return Ok(RedactedText {
            text: text.to_string(),
            secrets: 0,
        });
    }
    let ids: Vec<&str> = set.set.patterns.iter().map(|p| p.id.as_str()).collect();
    let mut spans = hits;
    spans.sort_by_key(|&(_, start, end)| (start, std::cmp::Reverse(end)));
    let mut out = String::with_capacity(text.len());
    let mut at = 0usize;
    let mut found = 0u64;
    let mut i = 0;
    while i < spans.len() {
        let (rule, start, mut end) = spans[i];
        i += 1;
        while i < spans.len() && spans[i].1 < end {
            end = end.max(spans[i].2);
            i += 1;
        }
        let (start, end) = (
            floor_boundary(text, start.max(at)),
            ceil_boundary(text, end),
        );
        if start < at || end <= start {
            continue;
        }
        found += 1;
        out.push_str(&text[at..start]);
        out.push_str(&format!(
            "[REDACTED:{}]",
            ids.get(rule).unwrap_or(&"secret")
        ));
        out.extend(std::iter::repeat_n(
            '\n',
            text[start..end].matches('\n').count(),
        ));
        at = end;
    }
    out.push_str(&text[at..]);
    Ok(RedactedText {
        text: out,
        secrets: found,
    })
}

/// Every string inside `value` (object values, array items, nested) redacted in
/// place; the number of secrets replaced.
pub fn redact_json(value: &mut Value) -> Result<u64, PatternError> {
    Ok(match value {
        Value::String(s) => redact_string(s)?,
        Value::Array(items) => {
            let mut n = 0;
            for v in items {
                n += redact_json(v)?;
            }
            n
        }
        Value::Object(map) => {
            let mut n = 0;
            for (_, v) in map.iter_mut() {
                n += redact_json(v)?;
            }
            n
        }
        _ => 0,
    })
}

/// Redact `s` in place; the number of secrets replaced.
pub fn redact_string(s: &mut String) -> Result<u64, PatternError> {
    let r = redact_secrets(s)?;
    if r.secrets > 0 {
        *s = r.text;
    }
    Ok(r.secrets)
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_replaced_counted_and_lines_kept() {
        let r = redact_secrets(
            "a\nkey AKIAIOSFODNN7EXAMPLE and ghp_abcdefghijklmnopqrstuvwxyz0123456789\nb",
        )
        .unwrap();
        assert_eq!(r.secrets, 2);
        assert!(!r.text.contains("AKIAIOSFODNN7EXAMPLE") && !r.text.contains("ghp_abc"));
        assert_eq!(r.text.lines().count(), 3);
        assert_eq!(redact_secrets("nothing").unwrap().secrets, 0);
    }

    #[test]
    fn json_strings_are_redacted_at_any_depth() {
        let mut v = serde_json::json!({"a": ["x", {"b": "AKIAIOSFODNN7EXAMPLE"}], "n": 3});
        assert_eq!(redact_json(&mut v).unwrap(), 1);
        assert!(!v.to_string().contains("AKIAIOSFODNN7EXAMPLE"));
    }
}
