//! Secrets out of text before it is written: the one scanner every way in calls
//! (memories, notes, coding records, imports, tool arguments, audit events).
//!
//! The span work is [`Redactor`]'s (the built-in secret rules, compiled once per
//! process): each secret is replaced by `[REDACTED:<rule>]` followed by as many line
//! breaks as it spanned, so line numbers stay right. This module applies it to text
//! and to every string of a JSON value, and reports how many it replaced, never what.

use serde_json::Value;

use super::{PatternError, Redactor};

/// Text with its secrets replaced, and how many there were.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedactedText {
    pub text: String,
    pub secrets: u64,
}

/// `text` with every secret of the built-in rules replaced ([`Redactor::builtin`]).
pub fn redact_secrets(text: &str) -> Result<RedactedText, PatternError> {
    let r = Redactor::builtin()?.redact(text)?;
    Ok(RedactedText {
        secrets: r.counts.values().sum(),
        text: r.text,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_replaced_counted_and_lines_kept() {
        let r = redact_secrets(
            "a\nkey AKIAHNHEOABTCPM7PCMI and ghp_abcdefghijklmnopqrstuvwxyz0123456789\nb",
        )
        .unwrap();
        assert_eq!(r.secrets, 2);
        assert!(!r.text.contains("AKIAHNHEOABTCPM7PCMI") && !r.text.contains("ghp_abc"));
        assert_eq!(r.text.lines().count(), 3);
        assert_eq!(redact_secrets("nothing").unwrap().secrets, 0);
    }

    #[test]
    fn json_strings_are_redacted_at_any_depth() {
        let mut v = serde_json::json!({"a": ["x", {"b": "AKIAHNHEOABTCPM7PCMI"}], "n": 3});
        assert_eq!(redact_json(&mut v).unwrap(), 1);
        assert!(!v.to_string().contains("AKIAHNHEOABTCPM7PCMI"));
    }
}
