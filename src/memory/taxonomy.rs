//! The memory taxonomy: task types, insight types and context types (DESIGN.md,
//! "Memories"), and the provenance of a memory.
//!
//! Values are accepted with or without their prefix (`debug`, `task:debug`) and stored
//! without it. Unknown values are refused with the list of valid ones; a custom value
//! must say so with an `x-` prefix (`x-migration`). This module validates names only;
//! it never reads or writes a store.

use std::fmt;

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
}

impl fmt::Display for Axis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.prefix())
    }
}

/// A value refused by [`normalise`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{value:?} is not a {axis} type; valid: {valid} (or a custom value starting with x-)")]
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
        valid: axis.values().join(", "),
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
