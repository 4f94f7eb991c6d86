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

/// A file's text with every secret replaced by `[REDACTED:<type>]`, followed by as
/// many line breaks as the secret spanned, so line numbers stay those of the file.
pub struct Redacted {
    pub text: String,
    /// 1-based inclusive line ranges that held a secret (for excluding chunks).
    pub secret_lines: Vec<(u64, u64)>,
}

impl Redacted {
    /// True when lines `start..=end` hold any secret.
    pub fn touches(&self, start: u64, end: u64) -> bool {
        self.secret_lines
            .iter()
            .any(|&(a, b)| a <= end && start <= b)
    }
}

/// Redact `text`, counting each secret by type.
pub fn redact(
    text: &str,
    scanner: &mut Scanner<'_>,
    ids: &[String],
    counts: &mut BTreeMap<String, u64>,
) -> Result<Redacted, PatternError> {
    let hits = scanner.scan(text.as_bytes())?;
    if hits.is_empty() {
        return Ok(Redacted {
            text: text.to_string(),
            secret_lines: Vec::new(),
        });
    }
    for &(p, _, _) in &hits {
        *counts.entry(ids[p].clone()).or_default() += 1;
    }
    // Merge overlapping matches so every secret byte is covered exactly once.
    let mut spans: Vec<(usize, usize, usize)> = hits;
    spans.sort_by_key(|h| (h.1, std::cmp::Reverse(h.2)));
    let mut out = String::with_capacity(text.len());
    let mut secret_lines = Vec::new();
    let mut at = 0usize;
    let mut line = 1u64;
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
        let (start, end) = (floor_boundary(text, start), ceil_boundary(text, end));
        let before = &text[at..start];
        line += newlines(before);
        out.push_str(before);
        out.push_str(&format!("[REDACTED:{}]", ids[p]));
        let breaks = newlines(&text[start..end]);
        secret_lines.push((line, line + breaks));
        for _ in 0..breaks {
            out.push('\n');
        }
        line += breaks;
        at = end;
    }
    out.push_str(&text[at..]);
    Ok(Redacted {
        text: out,
        secret_lines,
    })
}

fn newlines(s: &str) -> u64 {
    s.bytes().filter(|&b| b == b'\n').count() as u64
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
