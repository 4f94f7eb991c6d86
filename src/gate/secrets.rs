//! Secrets out of what callers write: memory text, notes, coding records and the
//! audit trail's copy of a query are passed through the built-in `secrets` pattern
//! set before anything is appended, each match replaced by `[REDACTED:<type>]`.
//!
//! The indexer does the same for files; this covers text that arrives through tool
//! arguments. It never decides whether a write happens, only what its text is.

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};

use serde_json::{Map, Value};

use crate::patterns::{builtin, compile, CompiledSet, PatternError};

/// The built-in secrets set, compiled once per process (compiling costs milliseconds).
fn compiled() -> Result<&'static (CompiledSet, Vec<String>), PatternError> {
    static SET: OnceLock<Result<(CompiledSet, Vec<String>), String>> = OnceLock::new();
    SET.get_or_init(|| {
        let set = builtin::secrets();
        let ids = set.patterns.iter().map(|p| p.id.clone()).collect();
        compile(&set).map(|c| (c, ids)).map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(|e| PatternError::Invalid(e.clone()))
}

/// Hyperscan scratch is per scanner; one redaction at a time per process is plenty
/// for tool arguments (they are small).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// `text` with every secret replaced by `[REDACTED:<type>]`, and how many there were.
pub fn redact_secrets(text: &str) -> Result<(String, u64), PatternError> {
    let (set, ids) = compiled()?;
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut scanner = set.scanner()?;
    let mut counts = BTreeMap::new();
    let red = crate::index::redact_text(text, &mut scanner, ids, &mut counts)?;
    Ok((red, counts.values().sum()))
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
    let (red, n) = redact_secrets(s)?;
    if n > 0 {
        *s = red;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_in_arguments_are_redacted_and_counted() {
        let (red, n) = redact_secrets("key AKIAIOSFODNN7EXAMPLE here").unwrap();
        assert_eq!(n, 1);
        assert!(!red.contains("AKIAIOSFODNN7EXAMPLE") && red.contains("[REDACTED:"));
        let mut args = json!({
            "text": "aws AKIAIOSFODNN7EXAMPLE",
            "tags": ["ok", "AKIAIOSFODNN7EXAMPLE"],
            "toml": "AKIAIOSFODNN7EXAMPLE",
            "top_k": 3,
        })
        .as_object()
        .cloned()
        .unwrap();
        assert_eq!(redact_args(&mut args, &["toml"]).unwrap(), 2);
        assert!(!args["text"].as_str().unwrap().contains("AKIA"));
        assert_eq!(args["tags"][0], "ok");
        assert_eq!(args["toml"], "AKIAIOSFODNN7EXAMPLE");
        assert_eq!(
            redact_secrets("nothing here").unwrap(),
            ("nothing here".into(), 0)
        );
    }
}
