//! The secret rules as data: `rules.toml` (embedded with `include_str!`), one row per
//! kind of credential, each with its Hyperscan regex (or an assignment's keywords and
//! value), the [`Check`] the redactor runs after a match, and a positive and a negative
//! example. This module reads the table once per process and checks it in its tests;
//! `Redactor` compiles it and reads each row's [`Check`].
//!
//! Every regex is written for Hyperscan compiled with `HS_FLAG_SOM_LEFTMOST`: no
//! look-around, no back-references, bounded repeats kept small. Every regex also
//! matches within one line only (no `\s`, no negated class without `\n`), because
//! scans report matches per line and engram's `tests/it/patterns.rs` checks them line by
//! line against the `regex` crate. Every rule is anchored on a literal of three or more
//! characters (a provider prefix or a keyword) so that the whole set scans at
//! gigabytes per second. This module never decides what a match means; that is the
//! redactor's job.

use std::sync::LazyLock;

use serde::Deserialize;

/// What the redactor does after Hyperscan reports a match of a rule: a small fixed
/// set, named in `rules.toml` in snake case (`check = "doc_example"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    /// The match is the secret: redact it as it is, unless it is mostly one character
    /// (`secret_placeholder::is_filler`, as for the token checks below).
    #[default]
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

/// A row of `rules.toml` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Row {
    id: String,
    description: String,
    regex: Option<String>,
    keywords: Option<String>,
    value: Option<String>,
    #[serde(default)]
    caseless: bool,
    #[serde(default)]
    check: Check,
    positive: String,
    negative: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    rule: Vec<Row>,
}

/// `KEYWORD…` assigned `VALUE`: one of the keywords, up to 20 identifier characters
/// (so `DATADOG_API_KEY` and `twilio.authToken` count), closing quotes, one assignment
/// operator of the common languages and formats (`=`, `:`, `:=`, `=>`, `?=`, and `,` for
/// `("key", "value")` pairs), opening quotes or backticks, then the value.
fn assignment(keywords: &str, value: &str) -> String {
    format!(
        r#"(?:{keywords})[\w.\-]{{0,20}}[ \t'"]{{0,3}}(?:=|:=|:|=>|\?=|,)[ \t'"`]{{0,5}}(?:{value})"#
    )
}

/// The table read from `text`: a row with both or neither of `regex` and `keywords`
/// (with `value`) is refused, naming the row.
fn parse(text: &str) -> Result<Vec<SecretRule>, String> {
    let table: Table = toml::from_str(text).map_err(|e| e.to_string())?;
    // Leaked once per process: the table lives as long as the process, and the rule
    // type hands out `&'static str` as the literal table it replaced did.
    let keep = |s: String| -> &'static str { s.leak() };
    table
        .rule
        .into_iter()
        .map(|r| {
            let regex = match (r.regex, r.keywords, r.value) {
                (Some(regex), None, None) => regex,
                (None, Some(k), Some(v)) => assignment(&k, &v),
                _ => {
                    return Err(format!(
                        "rule {}: give either `regex`, or `keywords` and `value`",
                        r.id
                    ))
                }
            };
            Ok(SecretRule {
                id: keep(r.id),
                description: keep(r.description),
                regex: keep(regex),
                caseless: r.caseless,
                check: r.check,
                positive: keep(r.positive),
                negative: keep(r.negative),
            })
        })
        .collect()
}

static RULES: LazyLock<Vec<SecretRule>> = LazyLock::new(|| {
    // The table is part of the build, not input: `tests::the_table_reads` fails on
    // any mistake in it before a release could.
    parse(include_str!("rules.toml")).unwrap_or_else(|e| panic!("rules.toml: {e}"))
});

/// Every secret rule, in set order: the widespread kinds first, then the rest.
pub fn all() -> impl Iterator<Item = &'static SecretRule> {
    RULES.iter()
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

    #[test]
    fn a_row_gives_a_regex_or_keywords_and_a_value() {
        let row = |fields: &str| {
            format!(
                "[[rule]]\nid = 'x'\ndescription = 'd'\n{fields}\npositive = 'p'\nnegative = 'n'\n"
            )
        };
        let both = parse(&row("regex = 'a'\nkeywords = 'k'\nvalue = 'v'"));
        assert!(both.unwrap_err().contains("rule x"));
        assert!(parse(&row("keywords = 'k'")).is_err());
        assert!(parse(&row("regex = 'a'\ncheck = 'no_such_check'")).is_err());
        let r = parse(&row(
            "keywords = 'token|secret'\nvalue = '[0-9a-f]{32}'\ncaseless = true",
        ))
        .expect("an assignment row");
        assert!(
            r[0].regex.starts_with("(?:token|secret)") && r[0].regex.ends_with("(?:[0-9a-f]{32})")
        );
        assert!(r[0].caseless && r[0].check == Check::None);
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
