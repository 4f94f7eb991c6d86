//! One normalisation step before a call's arguments are checked, shared by stdio and
//! HTTP (both reach tools through [`super::Server`]): it lets calls written for the
//! seed systems in unchanged, without changing what engram's own names mean.
//!
//! In order:
//! 1. the tool: a TeleCoder name (`compat.rs`) is routed to engram's tool; a
//!    tool outside the server's profile is refused (TeleCoder names never are);
//! 2. scope arguments, accepted on every tool: `repo` and `project_id` must name this
//!    server's repository (or one the gate allows) by any name it answers to (see
//!    [`crate::gate::RepoNames`]), `user_id` goes to the audit event;
//! 3. a few seed-shaped arguments rewritten (`line_range`, `screenshot_base64`);
//! 4. argument aliases ([`super::tools::Param::aliases`]) renamed to the canonical
//!    name; an alias and its canonical name given different values are refused;
//! 5. 64-bit key hashes (ints, or digit strings for `key`/`symbols`) resolved to keys;
//! 6. lenient types where the intent is unambiguous: numeric strings, `"true"`/
//!    `"false"`, JSON-array strings, one string for a list;
//!
//! then [`super::tools::validate`] checks the result as before. Nothing here writes.

use serde_json::{json, Map, Value};

use super::handlers::Engine;
use super::tools::{self, ArgsError, Param, ToolSpec, Ty};
use crate::gate::GateError;
use crate::store::StoreError;

/// Arguments every tool accepts that name the caller's scope.
const SCOPE: &[&str] = &["repo", "project_id", "user_id"];

/// Parameters that hold keys: a 64-bit key hash given there is resolved to its key.
const KEY_PARAMS: &[&str] = &["key", "id", "symbols", "resolved_by"];

/// Why a call was refused before it ran. The text is what the caller is sent (an
/// `invalid_params`), word for word as before these were typed; `tool` is the tool
/// the call was routed to.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("no tool {name:?} in this server's profile; tools: {}", listed.join(", "))]
    NoSuchTool { name: String, listed: Vec<String> },
    #[error("{tool}: {arg} must be a string, got {value}")]
    ScopeNotAString {
        tool: &'static str,
        arg: &'static str,
        value: Value,
    },
    /// `repo` or `project_id` names a repository this server does not serve.
    #[error("{tool}: {arg}: {reason}")]
    OutOfScope {
        tool: &'static str,
        arg: &'static str,
        reason: GateError,
    },
    #[error("{tool}: line_range must be [start, end] or \"start,end\", got {value}")]
    LineRange { tool: &'static str, value: Value },
    #[error("{tool}: screenshot_base64 must be a string")]
    ScreenshotNotAString { tool: &'static str },
    /// An alias (or seed argument) and its canonical name with different values.
    #[error("{tool}: {alias:?} and {name:?} are the same argument and were given different values ({value} and {given}); pass only one")]
    Conflict {
        tool: &'static str,
        alias: &'static str,
        name: &'static str,
        value: Value,
        given: Value,
    },
    #[error("{tool}: {param}: no record has key hash {hash} (signed {}); pass a key or the hash of a stored one", *hash as i64)]
    UnknownHash {
        tool: &'static str,
        param: &'static str,
        hash: u64,
    },
    #[error("{tool}: looking up key hash {hash}: {reason}")]
    HashLookup {
        tool: &'static str,
        hash: u64,
        reason: StoreError,
    },
    /// The normalised arguments do not fit the tool's schema.
    #[error(transparent)]
    Args(#[from] ArgsError),
}

/// The message the caller is sent (a tool's result is text on the wire).
impl From<CallError> for String {
    fn from(e: CallError) -> String {
        e.to_string()
    }
}

/// A call ready to run: the tool, its arguments in engram's names and types, and who
/// the caller said they were.
pub struct Prepared {
    pub spec: &'static ToolSpec,
    pub args: Map<String, Value>,
    pub user_id: Option<String>,
}

/// Route, normalise and validate a call. `listed` are the tools of the server's
/// profile. The error is the message for the caller (an `invalid_params`).
pub fn prepare(
    engine: &Engine,
    name: &str,
    listed: &[&str],
    args: Map<String, Value>,
) -> Result<Prepared, CallError> {
    let target = super::compat::target(name);
    let spec = match tools::find(target.unwrap_or(name)) {
        Some(spec) if target.is_some() || listed.contains(&spec.name) => spec,
        _ => {
            return Err(CallError::NoSuchTool {
                name: name.into(),
                listed: listed.iter().map(|t| t.to_string()).collect(),
            })
        }
    };
    let mut args = args;
    let user_id = scope(engine, spec, &mut args)?;
    seed_shapes(spec, &mut args)?;
    for p in spec.params {
        rename_aliases(spec, p, &mut args)?;
        if KEY_PARAMS.contains(&p.name) {
            if let Some(v) = args.get_mut(p.name) {
                resolve_hashes(engine, spec, p, v)?;
            }
        }
        if let Some(v) = args.get_mut(p.name) {
            coerce(p.ty, v);
        }
    }
    tools::validate(spec, &args)?;
    Ok(Prepared {
        spec,
        args,
        user_id,
    })
}

/// Check and remove the scope arguments; returns the `user_id`.
fn scope(
    engine: &Engine,
    spec: &ToolSpec,
    args: &mut Map<String, Value>,
) -> Result<Option<String>, CallError> {
    let mut user = None;
    for &k in SCOPE {
        let Some(v) = args.remove(k) else { continue };
        let text = match &v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Null => continue,
            _ => {
                return Err(CallError::ScopeNotAString {
                    tool: spec.name,
                    arg: k,
                    value: v,
                })
            }
        };
        if k == "user_id" {
            user = Some(text.chars().take(128).collect());
        } else if let Err(reason) = engine.gate.check_repo(&text) {
            return Err(CallError::OutOfScope {
                tool: spec.name,
                arg: k,
                reason,
            });
        }
    }
    Ok(user)
}

/// Seed arguments that are not a plain rename.
fn seed_shapes(spec: &ToolSpec, args: &mut Map<String, Value>) -> Result<(), CallError> {
    if spec.name == "coding_track_file_change" {
        if let Some(range) = args.remove("line_range") {
            let Some((a, b)) = line_range(&range) else {
                return Err(CallError::LineRange {
                    tool: spec.name,
                    value: range,
                });
            };
            for (k, v) in [("start_line", a), ("end_line", b)] {
                put_checked(spec, args, "line_range", k, json!(v))?;
            }
        }
    }
    if spec.name == "coding_record_error" {
        if let Some(image) = args.remove("screenshot_base64") {
            // The handler keeps only what identifies the image (its sha256 and size),
            // never the image itself, and shows it to the vision model when that is on.
            let Value::String(data) = image else {
                return Err(CallError::ScreenshotNotAString { tool: spec.name });
            };
            // As a data URL, so even a short one is never taken for a path.
            let url = if data.trim_start().starts_with("data:") {
                data
            } else {
                format!("data:;base64,{}", data.trim())
            };
            put_checked(spec, args, "screenshot_base64", "screenshot", json!(url))?;
        }
    }
    Ok(())
}

fn line_range(v: &Value) -> Option<(u64, u64)> {
    let parts: Vec<Value> = match v {
        Value::Array(a) => a.clone(),
        Value::String(s) => {
            let t = s
                .trim()
                .trim_start_matches(['[', '('])
                .trim_end_matches([']', ')']);
            t.split([',', '-', ':']).map(|p| json!(p.trim())).collect()
        }
        _ => return None,
    };
    let num = |v: &Value| match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    };
    match parts.as_slice() {
        [a, b] => Some((num(a)?, num(b)?)),
        _ => None,
    }
}

/// Set `key` from what the seed argument `from` said, refusing a different value
/// already given under `key`.
fn put_checked(
    spec: &ToolSpec,
    args: &mut Map<String, Value>,
    from: &'static str,
    key: &'static str,
    value: Value,
) -> Result<(), CallError> {
    match args.get(key) {
        Some(given) if !same(given, &value) => Err(conflict(spec, from, key, &value, given)),
        _ => {
            args.insert(key.into(), value);
            Ok(())
        }
    }
}

fn conflict(
    spec: &ToolSpec,
    alias: &'static str,
    name: &'static str,
    value: &Value,
    given: &Value,
) -> CallError {
    CallError::Conflict {
        tool: spec.name,
        alias,
        name,
        value: value.clone(),
        given: given.clone(),
    }
}

/// Equal values, counting `"5"` and `5`, or `"a"` and `["a"]`, as equal.
fn same(a: &Value, b: &Value) -> bool {
    if a == b {
        return true;
    }
    for ty in [Ty::Int, Ty::Num, Ty::Bool, Ty::StrList] {
        let (mut x, mut y) = (a.clone(), b.clone());
        coerce(ty, &mut x);
        coerce(ty, &mut y);
        if x == y && (x != *a || y != *b) {
            return true;
        }
    }
    false
}

/// Rename `p`'s aliases to its name.
fn rename_aliases(
    spec: &ToolSpec,
    p: &Param,
    args: &mut Map<String, Value>,
) -> Result<(), CallError> {
    for &alias in p.aliases {
        let Some(mut v) = args.remove(alias) else {
            continue;
        };
        if v.is_null() {
            continue;
        }
        coerce(p.ty, &mut v);
        match args.get_mut(p.name) {
            Some(given) if !given.is_null() => {
                coerce(p.ty, given);
                if !same(given, &v) {
                    return Err(conflict(spec, alias, p.name, &v, given));
                }
            }
            _ => {
                args.insert(p.name.into(), v);
            }
        }
    }
    Ok(())
}

/// A key hash as an integer: a JSON number (u64, or the signed i64 SQLite shows), or
/// for `key`/`symbols` a string of digits (keys always have a namespace, so digits
/// alone cannot be one).
fn hash_of(p: &Param, v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64().or_else(|| n.as_i64().map(|i| i as u64)),
        Value::String(s) if p.name != "id" && p.name != "resolved_by" => {
            let t = s.trim();
            let digits = t.strip_prefix('-').unwrap_or(t);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            t.parse::<u64>()
                .ok()
                .or_else(|| t.parse::<i64>().ok().map(|i| i as u64))
        }
        _ => None,
    }
}

fn resolve_hashes(
    engine: &Engine,
    spec: &ToolSpec,
    p: &Param,
    v: &mut Value,
) -> Result<(), CallError> {
    let resolve = |hash: u64| -> Result<Value, CallError> {
        match engine.memories.store().key_for_hash(hash) {
            Ok(Some(key)) => Ok(json!(key)),
            Ok(None) => Err(CallError::UnknownHash {
                tool: spec.name,
                param: p.name,
                hash,
            }),
            Err(reason) => Err(CallError::HashLookup {
                tool: spec.name,
                hash,
                reason,
            }),
        }
    };
    if p.ty == Ty::StrList {
        if let Value::Array(items) = v {
            for item in items.iter_mut() {
                if let Some(h) = hash_of(p, item) {
                    *item = resolve(h)?;
                }
            }
            return Ok(());
        }
    }
    if let Some(h) = hash_of(p, v) {
        *v = resolve(h)?;
    }
    Ok(())
}

/// Bring a value to type `ty` where the intent is unambiguous; anything else is left
/// for validation to refuse.
pub(super) fn coerce(ty: Ty, v: &mut Value) {
    let Value::String(s) = v else {
        if ty == Ty::Int {
            if let Some(f) = v.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0) {
                *v = json!(f as u64);
            }
        }
        return;
    };
    let t = s.trim();
    let new = match ty {
        Ty::Int => t.parse::<u64>().ok().map(|n| json!(n)),
        Ty::Num => t
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .map(|n| json!(n)),
        Ty::Bool => match t.to_ascii_lowercase().as_str() {
            "true" => Some(json!(true)),
            "false" => Some(json!(false)),
            _ => None,
        },
        Ty::StrList if t.starts_with('[') => serde_json::from_str::<Vec<Value>>(t)
            .ok()
            .filter(|a| a.iter().all(Value::is_string))
            .map(Value::Array),
        Ty::StrList => Some(json!([s.clone()])),
        Ty::Object if t.starts_with('{') => serde_json::from_str::<Map<String, Value>>(t)
            .ok()
            .map(Value::Object),
        Ty::Str | Ty::Object => None,
    };
    if let Some(n) = new {
        *v = n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenient_types() {
        let c = |ty, v: Value| {
            let mut v = v;
            coerce(ty, &mut v);
            v
        };
        assert_eq!(c(Ty::Int, json!("5")), json!(5));
        assert_eq!(c(Ty::Bool, json!("true")), json!(true));
        assert_eq!(c(Ty::Num, json!("0.8")), json!(0.8));
        assert_eq!(c(Ty::StrList, json!("[\"a\",\"b\"]")), json!(["a", "b"]));
        assert_eq!(c(Ty::StrList, json!("auth")), json!(["auth"]));
        assert_eq!(c(Ty::Bool, json!("maybe")), json!("maybe"));
        assert!(same(&json!("auth"), &json!(["auth"])));
        assert!(!same(&json!(["auth"]), &json!(["ui"])));
        assert_eq!(line_range(&json!("42,57")), Some((42, 57)));
        assert_eq!(line_range(&json!([3, 9])), Some((3, 9)));
    }

    #[test]
    fn seed_shapes_that_do_not_fit_are_refused_with_the_tool_named() {
        let spec = tools::find("coding_track_file_change").unwrap();
        let mut args = Map::new();
        args.insert("line_range".into(), json!("ten to twelve"));
        let e = seed_shapes(spec, &mut args).unwrap_err();
        assert!(
            matches!(&e, CallError::LineRange { tool, value } if *tool == spec.name && value == "ten to twelve"),
            "{e:?}"
        );
        assert_eq!(
            String::from(e),
            "coding_track_file_change: line_range must be [start, end] or \"start,end\", got \"ten to twelve\""
        );
        let mut args = Map::new();
        args.insert("line_range".into(), json!([3, 9]));
        args.insert("start_line".into(), json!(4));
        let e = seed_shapes(spec, &mut args).unwrap_err();
        assert!(
            matches!(&e, CallError::Conflict { alias, name, .. } if *alias == "line_range" && *name == "start_line"),
            "{e:?}"
        );
    }
}
