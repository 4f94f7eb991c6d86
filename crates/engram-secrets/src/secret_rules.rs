//! The secret rules: one table row per kind of credential, each with its Hyperscan
//! regex, a positive and a negative example. This module holds the row type and
//! [`all`]; the rows are in `secret_rules_core` (the widespread kinds) and
//! `secret_rules_extra` (the rest). `builtin::secrets()` is built from them, and the
//! `Redactor` reads each row's [`Check`] to decide what to do after a match.
//!
//! Every regex is written for Hyperscan compiled with `HS_FLAG_SOM_LEFTMOST`: no
//! look-around, no back-references, bounded repeats kept small. Every regex also
//! matches within one line only (no `\s`, no negated class without `\n`), because
//! scans report matches per line and `tests/patterns.rs` checks them line by line
//! against the `regex` crate. Every rule is anchored on a literal of three or more
//! characters (a provider prefix or a keyword) so that the whole set scans at
//! gigabytes per second. This module never decides what a match means; that is the
//! redactor's job.

/// What the redactor does after Hyperscan reports a match of a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// The match is the secret: redact it as it is, unless it is mostly one character
    /// (`secret_placeholder::is_filler`, as for the token checks below).
    None,
    /// A keyword assignment (`password = …`): redact only when the value is not a
    /// placeholder, not a known hash/UUID shape and random enough (see
    /// `secret_value::looks_secret`).
    Entropy,
    /// `Password=…;` of a connection string: a secret whatever its entropy unless a
    /// placeholder (`${VAR}`, `%s`, `<password>`), but only where the text before it
    /// is a connection string's separator (`;`, a quote), which the regex cannot
    /// require without slowing the whole set tenfold (a leading class defeats
    /// Hyperscan's literal prefilter).
    ConnString,
    /// The header of a private key: the span is extended to the END line, or over
    /// the base64 body when END is missing. A PEM header with no body after it is a
    /// marker in code that parses keys, not a key.
    PrivateKey,
    /// `scheme://user:password@`: a secret unless the password is a placeholder or a
    /// sample (plain words, a short number, a constant's name, a respelled word: see
    /// `secret_placeholder`), or the userinfo is one RFC 3986 forbids (a parser's test
    /// vector).
    UrlPassword,
    /// `Authorization: Basic <base64>`: a secret unless it decodes to a sample
    /// password (`secret_placeholder`).
    BasicAuth,
    /// A service-account file's `"type"`: a secret only beside a `private_key` field.
    ServiceAccount,
    /// A key id that is a secret unless it holds `EXAMPLE`, the form the provider's
    /// documentation and SDK tests use (`AKIAIOSFODNN7EXAMPLE` is in every AWS guide,
    /// `ASIA4ZP5EXAMPLETOKEN` in SDK docs); a random key id holds it about once in 10^10
    /// (`secret_inert`).
    DocExample,
    /// A signed token (a JWT): a secret unless it carries no signature (an empty third
    /// part, or `"alg":"none"` in its header), which no server should accept as a
    /// credential (`secret_inert`).
    Signed,
    /// A `.netrc` entry: a secret unless its password is a placeholder or a sample
    /// (`secret_placeholder`).
    Netrc,
    /// A token its issuer percent-encodes (Twitter's bearer tokens): a secret unless
    /// the whole token is standard base64 with a raw `+`, `/` or padding, which is
    /// binary data that starts with zero bytes (a ciphertext, a certificate), not
    /// the issuer's token (whose `+` and `=` are `%2B` and `%3D`, or mid-token when
    /// decoded by hand).
    PercentEncoded,
    /// A Docker config's `"auth"`, `base64(user:password)`: a secret unless it does not
    /// decode to text with a `:` (a Web Push subscription's `"auth"`, 16 random bytes of
    /// base64url, left to the generic rule). `"identitytoken"` is a secret.
    UserPass,
}

/// One kind of secret.
#[derive(Debug, Clone, Copy)]
pub struct SecretRule {
    /// Stable id, shown in `[REDACTED:<id>]` and in counts.
    pub id: &'static str,
    pub description: &'static str,
    /// Hyperscan syntax; see the module comment for the constraints.
    pub regex: &'static str,
    pub caseless: bool,
    pub check: Check,
    /// One line that this rule matches (after its check).
    pub positive: &'static str,
    /// One line that no rule of the set matches.
    pub negative: &'static str,
}

/// A rule whose match is the secret.
pub(super) const fn rule(
    id: &'static str,
    description: &'static str,
    regex: &'static str,
    positive: &'static str,
    negative: &'static str,
) -> SecretRule {
    SecretRule {
        id,
        description,
        regex,
        caseless: false,
        check: Check::None,
        positive,
        negative,
    }
}

impl SecretRule {
    /// Matched regardless of case (keywords).
    pub(super) const fn caseless(mut self) -> SecretRule {
        self.caseless = true;
        self
    }

    pub(super) const fn check(mut self, check: Check) -> SecretRule {
        self.check = check;
        self
    }
}

/// `KEYWORD…` assigned `VALUE`: the keyword, up to 20 identifier characters (so
/// `DATADOG_API_KEY` and `twilio.authToken` count), closing quotes, one assignment
/// operator of the common languages and formats (`=`, `:`, `:=`, `=>`, `?=`, and `,`
/// for `("key", "value")` pairs), opening quotes or backticks, then the value.
macro_rules! assign {
    ($kw:literal, $val:literal) => {
        concat!(
            "(?:",
            $kw,
            r#")[\w.\-]{0,20}[ \t'"]{0,3}(?:=|:=|:|=>|\?=|,)[ \t'"`]{0,5}(?:"#,
            $val,
            ")"
        )
    };
}
pub(super) use assign;

pub use super::secret_rules_core::CORE;

/// Every secret rule, in set order: the widespread kinds first, then the rest.
pub fn all() -> impl Iterator<Item = &'static SecretRule> {
    CORE.iter().chain(super::secret_rules_extra::EXTRA.iter())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hs::{Database, Regex};

    /// The whole table compiles as one database; every positive is matched by its own
    /// rule, every negative by no rule at all; ids are unique.
    #[test]
    fn every_rule_compiles_and_its_examples_behave() {
        let rules: Vec<&SecretRule> = all().collect();
        let mut ids: Vec<&str> = rules.iter().map(|r| r.id).collect();
        ids.sort_unstable();
        let n = ids.len();
        ids.dedup();
        assert_eq!(ids.len(), n, "rule ids are unique");
        let regexes: Vec<Regex<'_>> = rules
            .iter()
            .map(|r| Regex {
                id: r.id,
                regex: r.regex,
                caseless: r.caseless,
            })
            .collect();
        let db = Database::compile(&regexes).expect("the secret rules compile together");
        let scratch = db.alloc_scratch().expect("scratch");
        let compiled = Scanned { db, scratch };
        assert!(rules.len() >= 80, "{} rules", rules.len());
        let mut wrong = Vec::new();
        for (i, r) in rules.iter().enumerate() {
            assert!(!r.positive.contains('\n') && !r.negative.contains('\n'));
            let hits = compiled.scan(r.positive.as_bytes()).expect("scan");
            if !hits.iter().any(|h| h.0 == i) {
                wrong.push(format!(
                    "{} does not match its positive {:?}",
                    r.id, r.positive
                ));
            }
            let hits = compiled.scan(r.negative.as_bytes()).expect("scan");
            let by: Vec<&str> = hits.iter().map(|h| rules[h.0].id).collect();
            if !by.is_empty() {
                wrong.push(format!(
                    "negative of {} ({:?}) is matched by {by:?}",
                    r.id, r.negative
                ));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    struct Scanned {
        db: Database,
        scratch: crate::hs::Scratch,
    }

    impl Scanned {
        fn scan(&self, data: &[u8]) -> Result<Vec<(usize, usize, usize)>, crate::SecretsError> {
            self.db.scan_with(data, &self.scratch)
        }
    }
}
