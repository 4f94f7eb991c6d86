//! engram's secret detector: which spans of a text are credentials, tokens or private
//! keys, and the text with each one replaced by `[REDACTED:<rule>]`.
//!
//! The rule table (`rules.toml`, read by `secret_rules`: one row per kind of secret,
//! each a Hyperscan regex with the check to run after a match and a positive and a
//! negative example), the allowlists (`allowlist.toml`, read by `allowlist`: stop
//! words, value and token patterns, markers, each row with its reason and source), the
//! checks that decide whether a match is a secret (`secret_*`; a keyword assignment's
//! value by one classifier over named classes, `value_class` and `class_*`), and the
//! [`Redactor`] that runs them. It depends on no part of
//! engram's storage: it reads text and returns spans or text, and writes nothing but
//! the compiled rules' cache file, where its caller asks for one.

pub mod allowlist;
pub mod bytes;
mod class_code;
mod class_encoded;
mod class_reference;
mod class_sample;
pub mod hs;
pub mod redact;
mod redact_span;
mod secret_binary;
#[cfg(test)]
mod secret_binary_tests;
mod secret_code;
#[cfg(test)]
mod secret_code_shapes_tests;
mod secret_composed;
#[cfg(test)]
mod secret_composed_tests;
#[cfg(test)]
mod secret_constants_hashes_tests;
mod secret_context;
#[cfg(test)]
mod secret_context_tests;
mod secret_excerpt;
mod secret_fixture;
#[cfg(test)]
mod secret_fixture_tests;
mod secret_framing;
mod secret_inert;
mod secret_keyword;
mod secret_locator;
#[cfg(test)]
mod secret_locator_tests;
mod secret_made_up;
mod secret_marker;
#[cfg(test)]
mod secret_marker_tests;
mod secret_named;
#[cfg(test)]
mod secret_named_tests;
mod secret_placeholder;
mod secret_protocol;
mod secret_reference;
pub mod secret_rules;
mod secret_sample;
#[cfg(test)]
mod secret_sample_tests;
mod secret_script;
#[cfg(test)]
mod secret_script_tests;
mod secret_shape;
pub mod secret_value;
mod secret_views;
pub mod secret_words;
#[cfg(test)]
mod test_random;
mod value_class;

pub use redact::{Finding, Redacted, Redactor};
pub use secret_rules::{Check, SecretRule};

/// What can go wrong compiling or running the rules (never the text: any text scans).
#[derive(Debug, Clone, thiserror::Error)]
pub enum SecretsError {
    /// One regex does not compile on its own (Hyperscan's message).
    #[error("pattern {index} does not compile: {message}")]
    BadRegex { index: usize, message: String },
    /// Every regex compiles alone but not the list together (Hyperscan's message).
    #[error("the patterns do not compile together: {0}")]
    Compile(String),
    /// Hyperscan failed to allocate scratch space or to scan.
    #[error("{0}")]
    Hyperscan(String),
}
