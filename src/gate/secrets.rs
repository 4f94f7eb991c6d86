//! Secrets out of what callers write: memory text, notes, coding records and the
//! audit trail's copy of a query are passed through the built-in `secrets` pattern
//! set before anything is appended, each match replaced by `[REDACTED:<type>]`.
//!
//! The scanner is `patterns::secret_text`, the one every way in uses; this covers the
//! text that arrives through tool arguments. It never decides whether a write happens, only what its text is.

use serde_json::{Map, Value};

use crate::patterns::{redact_string, PatternError};

/// `text` with every secret replaced by `[REDACTED:<type>]`, and how many there were.
pub fn redact_secrets(text: &str) -> Result<(String, u64), PatternError> {
    let r = crate::patterns::redact_secrets(text)?;
    Ok((r.text, r.secrets))
}

/// Every string in `args` (and in its string arrays) redacted in place; the number of
/// secrets found. Arguments named in `keep` are left as they are.
pub fn redact_args(args: &mut Map<String, Value>, keep: &[&str]) -> Result<u64, PatternError> {
    let mut found = 0;
    for (name, v) in args.iter_mut() {
        if keep.contains(&name.as_str()) {
            continue;
        }
        match v {
            Value::String(s) => found += redact_in_place(s)?,
            Value::Array(items) => {
                for item in items {
                    if let Value::String(s) = item {
                        found += redact_in_place(s)?;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(found)
}

fn redact_in_place(s: &mut String) -> Result<u64, PatternError> {
    redact_string(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_in_arguments_are_redacted_and_counted() {
        let (red, n) = redact_secrets("key AKIAHNHEOABTCPM7PCMI here").unwrap();
        assert_eq!(n, 1);
        assert!(!red.contains("AKIAHNHEOABTCPM7PCMI") && red.contains("[REDACTED:"));
        let mut args = json!({
            "text": "aws AKIAHNHEOABTCPM7PCMI",
            "tags": ["ok", "AKIAHNHEOABTCPM7PCMI"],
            "toml": "AKIAHNHEOABTCPM7PCMI",
            "top_k": 3,
        })
        .as_object()
        .cloned()
        .unwrap();
        assert_eq!(redact_args(&mut args, &["toml"]).unwrap(), 2);
        assert!(!args["text"].as_str().unwrap().contains("AKIA"));
        assert_eq!(args["tags"][0], "ok");
        assert_eq!(args["toml"], "AKIAHNHEOABTCPM7PCMI");
        assert_eq!(
            redact_secrets("nothing here").unwrap(),
            ("nothing here".into(), 0)
        );
    }
}
