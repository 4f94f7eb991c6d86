//! Secrets out before anything is written: every secret the shared `Redactor` finds
//! in a file is replaced by `[REDACTED:<rule>]`, or the chunk is dropped, per
//! configuration. The original bytes never leave this function.

use std::collections::BTreeMap;

use crate::patterns::{PatternError, Redacted, Redactor};

/// What to do with a chunk that holds a secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SecretAction {
    /// Replace each secret by `[REDACTED:<type>]` (the default).
    #[default]
    Redact,
    /// Leave the whole chunk out of the index.
    Exclude,
}

/// Redact the text of the file at `path` (relative to the indexed root), adding each
/// secret found to `counts` by rule: the shared [`Redactor`] replaces whole spans and
/// keeps the line count, leaving what the allowlists' path rows allow there.
pub fn redact(
    path: &str,
    text: &str,
    counts: &mut BTreeMap<String, u64>,
) -> Result<Redacted, PatternError> {
    let red = Redactor::builtin()?.redact_at(path, text)?;
    for (id, n) in &red.counts {
        *counts.entry(id.clone()).or_default() += n;
    }
    Ok(red)
}
