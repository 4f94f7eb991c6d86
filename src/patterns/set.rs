//! What a pattern set is, how it is read from JSON or TOML, and how it is checked.
//!
//! A set is named by a slug (stored under `pat:{name}`), has a description and tags,
//! and an ordered list of patterns, each with an id and a Hyperscan regex. This module
//! validates shape only; compiling is `compile`'s job.

use serde::{Deserialize, Serialize};

use super::PatternError;

/// A named set of regexes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatternSet {
    /// Slug: the set's key is `pat:{name}`.
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub tags: Vec<String>,
    /// Matches are secrets: reports show only a masked prefix, never the text.
    #[serde(default)]
    pub secret: bool,
    pub patterns: Vec<PatternDef>,
}

/// One regex of a set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatternDef {
    /// Short id, unique in its set (`aws_access_key`, `eval`).
    pub id: String,
    /// Hyperscan (PCRE-subset) syntax; no back-references or look-around.
    pub regex: String,
    #[serde(default)]
    pub description: String,
    /// Match regardless of case.
    #[serde(default)]
    pub caseless: bool,
}

impl PatternSet {
    /// Parse a definition; TOML when `toml` is true, else JSON.
    pub fn parse(text: &str, toml: bool) -> Result<PatternSet, PatternError> {
        let set: PatternSet = if toml {
            ::toml::from_str(text)
                .map_err(|e| PatternError::Invalid(format!("not a valid TOML pattern set: {e}")))?
        } else {
            serde_json::from_str(text)
                .map_err(|e| PatternError::Invalid(format!("not a valid JSON pattern set: {e}")))?
        };
        set.check()?;
        Ok(set)
    }

    /// Check names and ids (not the regexes themselves).
    pub fn check(&self) -> Result<(), PatternError> {
        let slug_ok = |s: &str| {
            !s.is_empty()
                && s.len() <= 64
                && s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        };
        let name = self.name.strip_prefix("pat:").unwrap_or(&self.name);
        if !slug_ok(name) {
            return Err(PatternError::Invalid(format!(
                "set name {:?} must be 1-64 of a-z, 0-9, '-', '_'",
                self.name
            )));
        }
        if self.patterns.is_empty() {
            return Err(PatternError::Invalid(format!("set {name} has no patterns")));
        }
        for (i, p) in self.patterns.iter().enumerate() {
            if !slug_ok(&p.id) {
                return Err(PatternError::Invalid(format!(
                    "pattern {i} of {name}: id {:?} must be 1-64 of a-z, 0-9, '-', '_'",
                    p.id
                )));
            }
            if self.patterns[..i].iter().any(|q| q.id == p.id) {
                return Err(PatternError::Invalid(format!(
                    "pattern {i} of {name}: id {:?} is used twice",
                    p.id
                )));
            }
            if p.regex.is_empty() {
                return Err(PatternError::Invalid(format!(
                    "pattern {i} ({}) of {name}: empty regex",
                    p.id
                )));
            }
        }
        Ok(())
    }

    /// The name without any `pat:` prefix.
    pub fn slug(&self) -> &str {
        self.name.strip_prefix("pat:").unwrap_or(&self.name)
    }

    /// The set's key in a store.
    pub fn key(&self) -> String {
        format!("pat:{}", self.slug())
    }
}
