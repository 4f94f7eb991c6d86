//! Secrets out before anything is written: every match of the `secrets` pattern set
//! in a chunk is replaced by `[REDACTED:<pattern>]`, or the chunk is dropped, per
//! configuration. The original bytes never leave this function.

use std::collections::BTreeMap;

use crate::patterns::{PatternError, Scanner};

/// What to do with a chunk that holds a secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SecretAction {
    /// Replace each secret by `[REDACTED:<type>]` (the default).
    #[default]
    Redact,
    /// Leave the whole chunk out of the index.
    Exclude,
}

/// The text with secrets replaced (`None` when excluded), counting each by type.
pub fn redact(
    text: &str,
    scanner: &mut Scanner<'_>,
    ids: &[String],
    action: SecretAction,
    counts: &mut BTreeMap<String, u64>,
) -> Result<Option<String>, PatternError> {
    let hits = scanner.scan(text.as_bytes())?;
    if hits.is_empty() {
        return Ok(Some(text.to_string()));
    }
    for &(p, _, _) in &hits {
        *counts.entry(ids[p].clone()).or_default() += 1;
    }
    if action == SecretAction::Exclude {
        return Ok(None);
    }
    // Merge overlapping matches so every secret byte is covered exactly once.
    let mut spans: Vec<(usize, usize, usize)> = hits;
    spans.sort_by_key(|h| (h.1, std::cmp::Reverse(h.2)));
    let mut out = String::with_capacity(text.len());
    let mut at = 0usize;
    let mut i = 0;
    while i < spans.len() {
        let (p, start, mut end) = spans[i];
        i += 1;
        while i < spans.len() && spans[i].1 < end {
            end = end.max(spans[i].2);
            i += 1;
        }
        if start < at {
            continue;
        }
        out.push_str(&text[at..floor_boundary(text, start)]);
        out.push_str(&format!("[REDACTED:{}]", ids[p]));
        at = ceil_boundary(text, end);
    }
    out.push_str(&text[at..]);
    Ok(Some(out))
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i.min(s.len())
}
