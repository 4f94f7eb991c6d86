//! Paths through the redactor: a file or directory named like a secret (a token
//! saved as `ghp_….txt`, a directory named by an AWS key id) is stored under a
//! redacted path, since paths are keys, metadata and the headers of snippets.
//!
//! Each secret in a path becomes `[REDACTED:<rule>~<tag>]`, `<tag>` being twelve hex
//! digits of `hash64` of the secret's bytes (format-spec/keys.md). The stored path is
//! thus a pure function of the real one: an indexer that walks the disk names a file
//! the same way on every run (it finds, updates and deletes it like any other), two
//! files whose names differ only in their secret stay apart, every file of a
//! secret-named directory stays in one stored directory, and no table anywhere holds
//! the secret. A span never crosses a `/`: it ends with the component it starts in,
//! so the rest of the path (a file's extension, its language) is kept.
//!
//! Owns: the stored form of a path. Must never return a path holding a span the
//! redactor judged secret.

use std::borrow::Cow;

use super::{PatternError, Redactor};
use crate::key::hash64;
use engram_secrets::bytes::{ceil_boundary, floor_boundary};

/// The path as stored: `path` itself when it holds no secret (nearly always), else
/// with each secret replaced as the module doc says.
pub fn redact_path(path: &str) -> Result<Cow<'_, str>, PatternError> {
    let redactor = Redactor::builtin()?;
    let found = redactor.find(path)?;
    if found.is_empty() {
        return Ok(Cow::Borrowed(path));
    }
    // Each span cut at the end of its component, then overlapping spans merged.
    let mut spans: Vec<(usize, usize, usize)> = found
        .iter()
        .map(|f| {
            let start = floor_boundary(path, f.start);
            let component_end = path[start..].find('/').map_or(path.len(), |i| start + i);
            let end = ceil_boundary(path, f.end).min(component_end);
            (start, end, f.rule)
        })
        .filter(|&(start, end, _)| start < end)
        .collect();
    spans.sort();
    let mut merged: Vec<(usize, usize, usize)> = Vec::with_capacity(spans.len());
    for (start, end, rule) in spans {
        match merged.last_mut() {
            Some(last) if start < last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end, rule)),
        }
    }
    let mut out = String::with_capacity(path.len() + 48 * merged.len());
    let mut at = 0;
    for (start, end, rule) in merged {
        out.push_str(&path[at..start]);
        let id = redactor.rule(rule).map_or("secret", |r| r.id);
        let tag = hash64(&path[start..end]) & 0xffff_ffff_ffff;
        out.push_str(&format!("[REDACTED:{id}~{tag:012x}]"));
        at = end;
    }
    out.push_str(&path[at..]);
    Ok(Cow::Owned(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "ghp_Zq8wLr2TmV9xKc4YpB7nJd3HsF6gQa1Ue5Wi";

    #[test]
    fn a_path_without_a_secret_is_itself() {
        for p in [
            "src/main.rs",
            "docs/auth/token_refresh.md",
            "tests/fixtures/password_reset.py",
            "a b/c#d/[e]:f.txt",
        ] {
            assert!(matches!(redact_path(p).unwrap(), Cow::Borrowed(q) if q == p));
        }
    }

    #[test]
    fn a_secret_in_a_name_is_replaced_within_its_component_with_a_stable_tag() {
        let real = format!("notes/{TOKEN}.txt");
        let stored = redact_path(&real).unwrap().into_owned();
        assert!(!stored.contains(&TOKEN[4..12]), "{stored}");
        assert!(
            stored.starts_with("notes/[REDACTED:github_token~"),
            "{stored}"
        );
        assert!(stored.ends_with("].txt"), "{stored}");
        assert_eq!(redact_path(&real).unwrap(), stored, "not stable");
        // Another token in the same place is another stored path.
        let other = real.replace("Zq8w", "Zq9w");
        assert_ne!(redact_path(&other).unwrap(), stored);
        // A secret directory: its files stay together, their names kept.
        let dir = "AKIAQ3EGRT7WXYZ2PLMN";
        let a = redact_path(&format!("keys/{dir}/a.md"))
            .unwrap()
            .into_owned();
        let b = redact_path(&format!("keys/{dir}/b.md"))
            .unwrap()
            .into_owned();
        assert!(!a.contains(dir) && a.ends_with("]/a.md"), "{a}");
        assert_eq!(a.trim_end_matches("a.md"), b.trim_end_matches("b.md"));
    }
}
