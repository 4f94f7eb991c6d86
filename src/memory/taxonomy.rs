//! The memory taxonomy: task types, insight types and context types (DESIGN.md,
//! "Memories"), and the provenance of a memory.
//!
//! Values are accepted with or without their prefix (`debug`, `task:debug`) and stored
//! without it. Unknown values are refused with the list of valid ones; a custom value
//! must say so with an `x-` prefix (`x-migration`), or be listed in an extension file
//! (`taxonomy.toml` in the store directory, see [`load_extensions`]). This module
//! validates names only; it never reads or writes a store.
//!
//! Extensions are process-wide: a value one store's file adds is accepted for every
//! store the process opens. Values are only ever added, never removed, so a memory
//! valid when written stays valid.

use std::fmt;
use std::path::Path;
use std::sync::RwLock;

/// The built-in task types.
pub const TASKS: &[&str] = &[
    "debug",
    "bugfix",
    "implement_feature",
    "refactor",
    "rewrite",
    "optimize",
    "architect",
    "design_api",
    "research",
    "explain",
    "brainstorm",
    "generate_tests",
    "security_review",
    "dependency_update",
    "infra_update",
    "perf_investigation",
];

/// The built-in insight types.
pub const INSIGHTS: &[&str] = &[
    "decision",
    "constraint",
    "assumption",
    "pitfall",
    "tradeoff",
    "invariant",
    "todo",
    "context",
];

/// The built-in context types.
pub const CONTEXTS: &[&str] = &[
    "frontend", "backend", "auth", "billing", "ui", "infra", "devops", "data", "testing", "api",
];

/// Where a memory came from, which bounds how far it is trusted.
pub const PROVENANCES: &[&str] = &["user_stated", "agent_observed", "llm_extracted", "inferred"];

/// One of the three taxonomy axes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Axis {
    Task,
    Insight,
    Context,
}

impl Axis {
    /// The key prefix of the axis (`task`, `insight`, `context`).
    pub fn prefix(self) -> &'static str {
        match self {
            Axis::Task => "task",
            Axis::Insight => "insight",
            Axis::Context => "context",
        }
    }

    /// The built-in values of the axis.
    pub fn values(self) -> &'static [&'static str] {
        match self {
            Axis::Task => TASKS,
            Axis::Insight => INSIGHTS,
            Axis::Context => CONTEXTS,
        }
    }

    fn slot(self) -> usize {
        match self {
            Axis::Task => 0,
            Axis::Insight => 1,
            Axis::Context => 2,
        }
    }

    /// Built-in values followed by those added by extension files.
    pub fn all_values(self) -> Vec<String> {
        let mut v: Vec<String> = self.values().iter().map(|s| s.to_string()).collect();
        if let Ok(ext) = EXTENSIONS.read() {
            v.extend(ext[self.slot()].iter().cloned());
        }
        v
    }
}

/// Values added by extension files, per axis (task, insight, context).
static EXTENSIONS: RwLock<[Vec<String>; 3]> = RwLock::new([Vec::new(), Vec::new(), Vec::new()]);

/// A taxonomy extension file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ExtensionError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {reason}; expected e.g. tasks = [\"migration\"], insights = [...], contexts = [\"mobile\"]")]
    Invalid { path: String, reason: String },
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ExtensionFile {
    #[serde(default)]
    tasks: Vec<String>,
    #[serde(default)]
    insights: Vec<String>,
    #[serde(default)]
    contexts: Vec<String>,
}

/// Add the values listed in the TOML file at `path` (keys `tasks`, `insights`,
/// `contexts`; each value lower-case letters, digits and `_`, at most 64 bytes).
/// A missing file adds nothing; a malformed one is refused whole.
pub fn load_extensions(path: &Path) -> Result<(), ExtensionError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(ExtensionError::Io {
                path: path.display().to_string(),
                source,
            })
        }
    };
    let invalid = |reason: String| ExtensionError::Invalid {
        path: path.display().to_string(),
        reason,
    };
    let file: ExtensionFile =
        toml::from_str(&text).map_err(|e| invalid(e.message().to_string()))?;
    let lists = [file.tasks, file.insights, file.contexts];
    for v in lists.iter().flatten() {
        let ok = !v.is_empty()
            && v.len() <= 64
            && v.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !ok {
            return Err(invalid(format!(
                "{v:?} is not a valid value (lower-case letters, digits and _, at most 64 bytes)"
            )));
        }
    }
    let mut ext = EXTENSIONS
        .write()
        .map_err(|_| invalid("taxonomy extensions poisoned".into()))?;
    for (slot, list) in lists.into_iter().enumerate() {
        for v in list {
            if !ext[slot].contains(&v) {
                ext[slot].push(v);
            }
        }
    }
    Ok(())
}

impl fmt::Display for Axis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.prefix())
    }
}

/// A value refused by [`normalise`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{value:?} is not a {axis} type; valid: {valid} (or a custom value starting with x-, or one listed in the store's taxonomy.toml)")]
pub struct TaxonomyError {
    pub axis: Axis,
    pub value: String,
    pub valid: String,
}

/// Validate a value of `axis`, with or without its prefix, and return it without the
/// prefix. Case and `-`/`_` spelling are forgiven for built-in values
/// (`Implement-Feature` → `implement_feature`); custom values keep their `x-` prefix.
pub fn normalise(axis: Axis, value: &str) -> Result<String, TaxonomyError> {
    let raw = value.trim();
    let bare = raw
        .strip_prefix(axis.prefix())
        .and_then(|r| r.strip_prefix(':'))
        .unwrap_or(raw);
    let canon = bare.to_ascii_lowercase().replace('-', "_");
    if let Some(v) = axis.values().iter().find(|v| **v == canon) {
        return Ok((*v).to_string());
    }
    if let Ok(ext) = EXTENSIONS.read() {
        if let Some(v) = ext[axis.slot()].iter().find(|v| **v == canon) {
            return Ok(v.clone());
        }
    }
    let lower = bare.to_ascii_lowercase();
    if lower.len() > 2
        && lower.starts_with("x-")
        && lower.len() <= 64
        && lower[2..]
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Ok(lower);
    }
    Err(TaxonomyError {
        axis,
        value: value.to_string(),
        valid: axis.all_values().join(", "),
    })
}

/// Validate a provenance name; `None` for an unknown one.
pub fn provenance(value: &str) -> Option<&'static str> {
    let canon = value.trim().to_ascii_lowercase().replace('-', "_");
    PROVENANCES.iter().copied().find(|p| *p == canon)
}

/// The default trust of a provenance, from 0 to 1: what a person said outranks what an
/// agent saw, which outranks what a model extracted or the engine inferred.
pub fn default_trust(provenance: &str) -> f64 {
    match provenance {
        "user_stated" => 1.0,
        "agent_observed" => 0.8,
        "llm_extracted" => 0.6,
        _ => 0.4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_accepted_with_or_without_prefix() {
        assert_eq!(normalise(Axis::Task, "debug").unwrap(), "debug");
        assert_eq!(normalise(Axis::Task, "task:debug").unwrap(), "debug");
        assert_eq!(
            normalise(Axis::Task, "Implement-Feature").unwrap(),
            "implement_feature"
        );
        assert_eq!(
            normalise(Axis::Insight, "insight:pitfall").unwrap(),
            "pitfall"
        );
        assert_eq!(normalise(Axis::Context, "x-mobile").unwrap(), "x-mobile");
    }

    #[test]
    fn unknown_values_are_refused_with_the_valid_list() {
        let e = normalise(Axis::Task, "dance").unwrap_err();
        assert!(e.to_string().contains("perf_investigation"), "{e}");
        assert!(normalise(Axis::Insight, "task:decision").is_err());
        assert!(normalise(Axis::Context, "x-").is_err());
        assert!(normalise(Axis::Context, "x-has space").is_err());
    }

    #[test]
    fn provenance_and_trust() {
        assert_eq!(provenance("User-Stated"), Some("user_stated"));
        assert_eq!(provenance("rumour"), None);
        assert!(default_trust("user_stated") > default_trust("inferred"));
    }
}
