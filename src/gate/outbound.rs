//! What may leave the machine for a chat model: every text a model is sent passes
//! [`Gate::outbound`] first — the repository checked against the caller's scope,
//! every secret replaced, control sequences stripped, and the bytes capped.
//!
//! It never sends anything and never decides what is asked; it only shapes what the
//! `assist` layer hands it, and refuses (rather than sends) when the secret scanner is
//! unavailable.

use serde::Serialize;

use super::{sanitize, truncate, Gate, GateError};

/// A text cleared to be sent to a model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Outbound {
    /// The text, secrets replaced by `[REDACTED:<rule>]`, capped.
    pub text: String,
    /// Secrets replaced.
    pub redactions: u64,
    /// Whether the cap cut it.
    pub truncated: bool,
}

impl Gate {
    /// `text` of repository `repo` as it may be sent to a model: the repository must be
    /// one this caller may reach, secrets are replaced, control sequences stripped,
    /// and at most `max_bytes` bytes are kept (cut at a character boundary).
    pub fn outbound(
        &self,
        repo: &str,
        text: &str,
        max_bytes: usize,
    ) -> Result<Outbound, GateError> {
        self.check_repo(repo)?;
        let red = crate::patterns::redact_secrets(text).map_err(|e| {
            GateError::Invalid(format!(
                "the secret scanner is unavailable, so nothing is sent to the model: {e}"
            ))
        })?;
        let clean = sanitize(&red.text);
        let (text, truncated) = truncate(&clean.text, max_bytes);
        Ok(Outbound {
            text,
            redactions: red.secrets,
            truncated,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::Caps;

    #[test]
    fn secrets_are_replaced_caps_applied_and_scope_checked() {
        let g = Gate::new("r", None, vec![], Caps::default());
        let o = g
            .outbound("r", "key AKIAHNHEOABTCPM7PCMI\x1b[31m red", 1000)
            .unwrap();
        assert!(!o.text.contains("AKIAHNHEOABTCPM7PCMI"), "{}", o.text);
        assert!(!o.text.contains('\x1b'));
        assert_eq!(o.redactions, 1);
        let o = g.outbound("r", "abcdef", 3).unwrap();
        assert_eq!((o.text.as_str(), o.truncated), ("abc", true));
        assert!(g.outbound("other", "x", 10).is_err());
    }
}
