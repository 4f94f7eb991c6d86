//! Secrets out before anything is written: every secret the shared `Redactor` finds
//! in a file is replaced by `[REDACTED:<rule>]`, or the chunk is dropped, per
//! configuration. The original bytes never leave this function.

use std::collections::BTreeMap;

use crate::patterns::{PatternError, Redactor, Scanner};

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

/// Redact `text`, counting each secret by type. Delegates to the shared
/// [`Redactor`](crate::patterns::Redactor), which covers whole secret spans (private
/// key blocks, keyword assignments judged by entropy); `scanner` and `ids` are no
/// longer needed and stay only until the callers are switched over.
pub fn redact(
    text: &str,
    _scanner: &mut Scanner<'_>,
    _ids: &[String],
    counts: &mut BTreeMap<String, u64>,
) -> Result<Redacted, PatternError> {
    let red = Redactor::builtin()?.redact(text)?;
    for (id, n) in red.counts {
        *counts.entry(id).or_default() += n;
    }
    Ok(Redacted {
        text: red.text,
        secret_lines: red.secret_lines,
    })
}
