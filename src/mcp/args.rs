//! Reading a tool's arguments: the few typed lookups every handler uses on the
//! argument object (already normalised and checked against the tool's schema), and
//! failures turned into the message the caller sees. Lookups only: nothing here
//! decides what a tool does.

use serde_json::{Map, Value};

use crate::assist::UnknownLevel;
use crate::gate::GateError;
use crate::index::IndexError;
use crate::manager::ManagerError;
use crate::memory::MemoryError;
use crate::search::SearchError;
use crate::stale::StaleError;
use crate::store::StoreError;

/// Why a tool failed, as the layers below said it. Its text is what the caller
/// sees (a tool's result travels as text: [`super::handlers::ToolResult`]).
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("missing {0}")]
    Missing(String),
    #[error("at {at:?}: expected PATH:LINE, e.g. src/app.py:42")]
    NotPathLine { at: String },
    #[error("min_confidence {value:?}: expected resolved, imported, same-name or ambiguous")]
    Confidence { value: String },
    #[error(transparent)]
    Level(#[from] UnknownLevel),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Memory(#[from] MemoryError),
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error(transparent)]
    Search(#[from] SearchError),
    #[error(transparent)]
    Stale(#[from] StaleError),
    #[error(transparent)]
    Gate(#[from] GateError),
    #[error(transparent)]
    Manager(#[from] ManagerError),
}

/// The message the caller is sent.
impl From<ToolError> for String {
    fn from(e: ToolError) -> String {
        e.to_string()
    }
}

/// The string argument `name`, if given.
pub(super) fn arg_str<'a>(args: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    args.get(name).and_then(Value::as_str)
}

/// The string argument `name`, or the caller's error `missing <name>`.
pub(super) fn required_str<'a>(
    args: &'a Map<String, Value>,
    name: &str,
) -> Result<&'a str, ToolError> {
    arg_str(args, name).ok_or_else(|| ToolError::Missing(name.into()))
}

/// The strings of the list argument `name` (none when it is absent; items that are
/// not strings are skipped).
pub(super) fn str_list(args: &Map<String, Value>, name: &str) -> Vec<String> {
    args.get(name)
        .and_then(Value::as_array)
        .map(|v| {
            v.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The count argument `name` (`top_k`, `limit` …): `default` when absent, held
/// within 1..=`max`.
pub(super) fn bounded_count(args: &Map<String, Value>, name: &str, default: u64, max: u64) -> u64 {
    args.get(name)
        .and_then(Value::as_u64)
        .unwrap_or(default)
        .clamp(1, max)
}

/// A failure as the message the caller gets.
pub(super) fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_argument_is_named_in_the_callers_words() {
        let args: Map<String, Value> = serde_json::from_str(r#"{"query": "q"}"#).unwrap();
        assert_eq!(required_str(&args, "query").unwrap(), "q");
        let e = required_str(&args, "key").unwrap_err();
        assert!(
            matches!(&e, ToolError::Missing(name) if name == "key"),
            "{e:?}"
        );
        assert_eq!(String::from(e), "missing key");
    }
}
