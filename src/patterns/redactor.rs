//! The secret detector (crate `engram_secrets`) as engram runs it: the built-in rules
//! compiled once per process, their database cached under engram's data directory
//! (`cache/`), and errors as [`PatternError`]s. Every way into the store calls it
//! before writing. What is a secret is the crate's business; this only decides where
//! the compiled rules are cached.

use engram_secrets::{Finding, Redacted, SecretRule};

use super::PatternError;

/// The built-in secret rules, compiled: finds and replaces secrets in text.
#[derive(Debug)]
pub struct Redactor {
    inner: &'static engram_secrets::Redactor,
}

impl Redactor {
    /// The built-in secret rules, compiled once per process. Compiling them takes
    /// seconds, which every `engram remember` would pay, so the compiled database is
    /// cached under the data directory (`cache/`), keyed by the rules and the
    /// Hyperscan version; an unreadable or foreign cache is simply recompiled.
    pub fn builtin() -> Result<&'static Redactor, PatternError> {
        static BUILTIN: std::sync::OnceLock<Redactor> = std::sync::OnceLock::new();
        if let Some(r) = BUILTIN.get() {
            return Ok(r);
        }
        let cache = crate::location::data_home().map(|home| home.join("cache"));
        let inner = engram_secrets::Redactor::builtin_cached(cache.as_deref())?;
        Ok(BUILTIN.get_or_init(|| Redactor { inner }))
    }

    /// The detector itself, for what this wrapper does not pass on.
    pub fn detector(&self) -> &'static engram_secrets::Redactor {
        self.inner
    }

    /// The rule behind a finding.
    pub fn rule(&self, index: usize) -> Option<&'static SecretRule> {
        self.inner.rule(index)
    }

    /// Every secret span of `text` ([`engram_secrets::Redactor::find`]).
    pub fn find(&self, text: &str) -> Result<Vec<Finding>, PatternError> {
        Ok(self.inner.find(text)?)
    }

    /// `text` with every secret replaced ([`engram_secrets::Redactor::redact`]).
    pub fn redact(&self, text: &str) -> Result<Redacted, PatternError> {
        Ok(self.inner.redact(text)?)
    }
}
