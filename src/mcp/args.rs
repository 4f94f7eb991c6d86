//! Reading a tool's arguments: the few typed lookups every handler uses on the
//! argument object (already normalised and checked against the tool's schema), and
//! failures turned into the message the caller sees. Lookups only: nothing here
//! decides what a tool does.

use serde_json::{Map, Value};

/// The string argument `name`, if given.
pub(super) fn arg_str<'a>(args: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    args.get(name).and_then(Value::as_str)
}

/// The string argument `name`, or the caller's error `missing <name>`.
pub(super) fn required_str<'a>(
    args: &'a Map<String, Value>,
    name: &str,
) -> Result<&'a str, String> {
    arg_str(args, name).ok_or_else(|| format!("missing {name}"))
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
