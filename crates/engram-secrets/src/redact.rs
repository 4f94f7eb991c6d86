//! The redaction engine: every secret in a text replaced by `[REDACTED:<id>]`
//! followed by as many line breaks as the secret spanned, so line numbers stay.
//!
//! It owns turning Hyperscan matches of the secret rules into whole secret spans:
//! keyword matches are judged by `secret_keyword` and `secret_value` (entropy,
//! placeholders, known shapes, code), framed ones by `secret_framing` (connection
//! strings, URLs, Basic headers, multi-line `.netrc` entries), tokens that are mostly
//! one character are dropped (`secret_placeholder::is_filler`), and so are credentials
//! that cannot authenticate (unsigned JWTs, documented AWS key ids: `secret_inert`);
//! a private key header is extended to its END line (or over its base64 body when
//! END is missing, `\n`-escaped or not), a token
//! cut short by a bounded regex is extended to the end of its run (both in
//! `redact_span`), text is scanned
//! also as it reads decoded (`secret_views`: escapes, percent-encoding), and
//! overlapping spans are merged. Where framing hides a boundary it redacts more
//! rather than less. It must never panic on any input, never return text holding a
//! span it judged secret, and never change the number of lines. The index and the
//! gate both call it before anything is written.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use super::allowlist;
use super::bytes::{ceil_boundary, floor_boundary};
use super::hs::{cache_file, Database, Regex, Scratch};
use super::redact_span::{extend_token, private_key_end};
use super::secret_binary::{is_base64url_run, is_encoded_cose_key};
use super::secret_context::{docker_auth_is_secret, in_public_pem_block};
use super::secret_excerpt::is_pem_excerpt;
use super::secret_framing::{
    basic_auth_is_secret, conn_string, is_base64_blob, near_private_key_field, netrc_lines,
    netrc_password_is_secret, pem_has_body, putty_has_body, url_password_is_secret,
};
use super::secret_inert::{is_doc_example_key_id, is_malformed_jwt, is_unsigned_jwt};
use super::secret_keyword::keyword_secret;
use super::secret_locator::{has_masked_tail, is_glued_in_base64url};
use super::secret_made_up::is_made_up_tail;
use super::secret_marker::is_worded_token;
use super::secret_placeholder::is_filler;
use super::secret_rules::{self, Check, SecretRule};
use super::secret_script::is_mostly_one_byte;
use super::secret_value::{entropy_bytes, entropy_floor, MIN_ENTROPY};
use super::secret_views::views;
use super::SecretsError;

/// Most times a keyword match judged no secret is scanned again for a keyword inside
/// its value (`find_spans`).
const MAX_RESCANS: usize = 4;

/// A text with its secrets replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redacted {
    pub text: String,
    /// 1-based inclusive line ranges that held a secret.
    pub secret_lines: Vec<(u64, u64)>,
    /// Secrets found, by rule id.
    pub counts: BTreeMap<String, u64>,
}

impl Redacted {
    /// True when lines `start..=end` hold any secret.
    pub fn touches(&self, start: u64, end: u64) -> bool {
        self.secret_lines
            .iter()
            .any(|&(a, b)| a <= end && start <= b)
    }
}

/// One secret span in a text: rule index, byte range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finding {
    pub rule: usize,
    pub start: usize,
    pub end: usize,
}

/// The secret rules compiled once, with a pool of Hyperscan scratch spaces so that
/// threads redact concurrently without allocating one per call.
pub struct Redactor {
    db: Database,
    rules: Vec<&'static SecretRule>,
    /// Each rule's secret-group regex, compiled on the rule's first match (matches
    /// are rare, and most processes never need one).
    groups: Vec<OnceLock<Option<regex::bytes::Regex>>>,
    scratch: Mutex<Vec<Scratch>>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor")
            .field("rules", &self.rules.len())
            .finish()
    }
}

impl Redactor {
    /// The built-in secret rules, compiled once per process (not cached on disk; see
    /// [`Redactor::builtin_cached`]).
    pub fn builtin() -> Result<&'static Redactor, SecretsError> {
        Redactor::builtin_cached(None)
    }

    /// The built-in secret rules, compiled once per process, the database cached in
    /// `cache_dir` by the call that compiles them: the first call of this or
    /// [`Redactor::builtin`] in the process decides where (later calls share it).
    pub fn builtin_cached(cache_dir: Option<&Path>) -> Result<&'static Redactor, SecretsError> {
        static BUILTIN: OnceLock<Result<Redactor, SecretsError>> = OnceLock::new();
        BUILTIN
            .get_or_init(|| Redactor::new(cache_dir))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Compile the built-in secret rules (prefer [`Redactor::builtin_cached`]).
    /// Compiling them takes seconds, which every short-lived process would pay, so with
    /// `cache_dir` the compiled database is cached there, keyed by the rules and the
    /// Hyperscan version; an unreadable or foreign cache is simply recompiled.
    pub fn new(cache_dir: Option<&Path>) -> Result<Redactor, SecretsError> {
        let rules: Vec<&'static SecretRule> = secret_rules::all().collect();
        let regexes: Vec<Regex<'_>> = rules
            .iter()
            .map(|r| Regex {
                id: r.id,
                regex: r.regex,
                caseless: r.caseless,
            })
            .collect();
        let path = cache_dir.map(|dir| cache_file(dir, "secrets", &regexes));
        Ok(Redactor {
            db: Database::compile_cached(&regexes, path.as_deref())?,
            groups: rules.iter().map(|_| OnceLock::new()).collect(),
            rules,
            scratch: Mutex::new(Vec::new()),
        })
    }

    /// The rule behind a finding.
    pub fn rule(&self, index: usize) -> Option<&'static SecretRule> {
        self.rules.get(index).copied()
    }

    fn scan(&self, data: &[u8]) -> Result<Vec<(usize, usize, usize)>, SecretsError> {
        let pooled = self
            .scratch
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .pop();
        let scratch = match pooled {
            Some(s) => s,
            None => self.db.alloc_scratch()?,
        };
        let hits = self.db.scan_with(data, &scratch);
        let mut pool = self
            .scratch
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if pool.len() < 64 {
            pool.push(scratch);
        }
        hits
    }

    /// Every secret span of `text`, after the rules' checks and extensions, in order
    /// of start (spans may overlap).
    ///
    /// Text holding backslash escapes (`\n`, `\"`, as in JSON strings and code
    /// literals) or percent-encoding (URL queries) is also scanned as it reads decoded
    /// (`secret_views`): a `\"password\": \"…\"` inside a string, a key with escaped
    /// line breaks, a `%3A_authToken%3D…` in a URL. A span found in a decoded reading
    /// covers every source byte its characters came from.
    pub fn find(&self, text: &str) -> Result<Vec<Finding>, SecretsError> {
        let mut out = self.find_in(text)?;
        let views = views(text);
        if !views.is_empty() {
            for view in &views {
                for f in self.find_in(&view.text)? {
                    let (start, end) = view.source_span(f.start, f.end);
                    out.push(Finding { start, end, ..f });
                }
            }
            out.sort_by_key(|f| (f.start, std::cmp::Reverse(f.end), f.rule));
            out.dedup();
        }
        Ok(out)
    }

    fn find_in(&self, text: &str) -> Result<Vec<Finding>, SecretsError> {
        let mut out = Vec::new();
        self.find_spans(text, 0, text.len(), 0, &mut out)?;
        if let Some(rule) = self.rules.iter().position(|r| r.id == "netrc_password") {
            for (start, end) in netrc_lines(text) {
                out.push(Finding { rule, start, end });
            }
        }
        out.sort_by_key(|f| (f.start, std::cmp::Reverse(f.end), f.rule));
        // A rescan may find again what the first scan found.
        out.dedup();
        Ok(out)
    }

    /// The rules' spans in `text[from..to]` (judged with the whole text), pushed to `out`. A keyword match judged no
    /// secret whose span holds a second operator is scanned again from its second
    /// character to its end: Hyperscan reports the leftmost start of a match
    /// only, so a keyword inside another's value (`otpauth://totp/…?secret=…`, where
    /// `auth` opens a match whose value `//totp/…` is no secret) was never judged on its
    /// own. A keyword inside the value ends where the value does, so the span is enough.
    /// `depth` bounds the rescans of one match.
    fn find_spans(
        &self,
        text: &str,
        from: usize,
        to: usize,
        depth: usize,
        out: &mut Vec<Finding>,
    ) -> Result<(), SecretsError> {
        let bytes = text.as_bytes();
        for (rule, start, end) in self.scan(&bytes[from..to])? {
            let (start, end) = (start + from, end + from);
            let Some(r) = self.rules.get(rule) else {
                continue;
            };
            let end = end.min(bytes.len());
            if start >= end {
                continue;
            }
            let span = match r.check {
                Check::UrlPassword => {
                    url_password_is_secret(text, start, end).then_some((start, end))
                }
                Check::ServiceAccount => {
                    near_private_key_field(bytes, start).then_some((start, end))
                }
                Check::BasicAuth => basic_auth_is_secret(text, start, end)
                    .then_some((start, extend_token(bytes, end))),
                Check::None => Some((start, extend_token(bytes, end))),
                Check::Netrc => text
                    .get(start..end)
                    .is_none_or(netrc_password_is_secret)
                    .then_some((start, extend_token(bytes, end))),
                // Nor one half of which is one byte (`AAAAAAAAAAAAAAAAAAAAAAAAABFjcHJ0…`,
                // zero bytes in an armored OpenPGP block; `secret_script::is_mostly_one_byte`).
                // Only here: the rules' own positive samples (`AGE-SECRET-KEY-1QQQQ…`) are
                // half one letter, and only this rule's prefix is a run.
                // Nor one running on in base64url (`…BQ-Km2G7…`: Twitter's tokens
                // are standard base64, percent-encoded) or holding a COSE key (WebAuthn's
                // attested credential data; `secret_binary`).
                Check::PercentEncoded => {
                    let end = extend_token(bytes, end);
                    let token = &bytes[start..end];
                    // Nor a line of a certificate's, a CSR's or a public
                    // key's PEM body (`secret_context::in_public_pem_block`).
                    (!is_base64_blob(token)
                        && !in_public_pem_block(bytes, start)
                        && !is_mostly_one_byte(token)
                        && !is_base64url_run(token)
                        && !is_encoded_cose_key(token))
                    .then_some((start, end))
                }
                // A Docker `"auth"` is base64 of `user:password`
                // (`secret_context::docker_auth_is_secret`).
                Check::UserPass => {
                    let end = extend_token(bytes, end);
                    docker_auth_is_secret(text, start, end).then_some((start, end))
                }
                Check::DocExample => (!is_doc_example_key_id(&bytes[start..end]))
                    .then_some((start, extend_token(bytes, end))),
                Check::Signed => {
                    let end = extend_token(bytes, end);
                    // A JWT-shaped token that is none (a rejection test's),
                    // judged only where a quote closes it right after.
                    let closed = matches!(bytes.get(end), Some(b'"' | b'\'' | b'`'));
                    text.get(start..end)
                        .is_none_or(|t| !is_unsigned_jwt(t) && !is_malformed_jwt(t, closed))
                        .then_some((start, end))
                }
                Check::Entropy => {
                    let floor = r.entropy.unwrap_or(MIN_ENTROPY);
                    let secret = keyword_secret(text, start, end, floor);
                    // Only a value holding a second operator can hold an assignment.
                    let operators = bytes[start..end]
                        .iter()
                        .filter(|&&b| matches!(b, b'=' | b':' | b','))
                        .count();
                    if !secret && depth < MAX_RESCANS && operators >= 2 {
                        let next = ceil_boundary(text, start + 1);
                        let mut inner = Vec::new();
                        self.find_spans(text, next, end.max(next), depth + 1, &mut inner)?;
                        out.extend(inner);
                    }
                    secret.then_some((start, end))
                }
                Check::ConnString => conn_string(bytes, start, end),
                // Nor one showing only the start of an RSA-sized key
                // (`secret_excerpt`).
                Check::PrivateKey
                    if bytes[start..].starts_with(b"-----BEGIN")
                        && (!pem_has_body(bytes, end) || is_pem_excerpt(bytes, end)) =>
                {
                    None
                }
                Check::PrivateKey
                    if bytes[start..].starts_with(b"PuTTY-User-Key-File-")
                        && !putty_has_body(bytes, end) =>
                {
                    None
                }
                Check::PrivateKey => Some((start, private_key_end(bytes, start, end))),
            };
            // A token that is mostly one character (`AAAA…A`, `ghp_000…0`) is a zero
            // buffer or a mask, not an issued token (`secret_placeholder::is_filler`).
            let token_rule = matches!(
                r.check,
                Check::None
                    | Check::DocExample
                    | Check::PercentEncoded
                    | Check::Signed
                    | Check::UserPass
            );
            // Also one whose value after its name or prefix is so
            // (`"private_key_id": "ffff…f"`, `secret_made_up::is_made_up_tail`).
            let span = span.filter(|&(s, e)| {
                // One whose body after its prefix is words (`glpat-python-gitlab-token`);
                // or one cut from a type's name (`secret_marker::is_worded_token`).
                !(token_rule
                    && (is_filler(&bytes[s..e])
                        || is_made_up_tail(&bytes[s..e])
                        || is_worded_token(&bytes[s..e])
                        // A masked tail, or a slice of base64url data.
                        || has_masked_tail(&bytes[s..e])
                        || is_glued_in_base64url(bytes, s, end, e)))
            });
            let span = span.and_then(|span| self.secret_part(rule, bytes, (start, end), span));
            if let Some((start, end)) = span {
                out.push(Finding { rule, start, end });
            }
        }
        Ok(())
    }

    /// The part of a judged span `span` that is the secret: from the secret group of
    /// rule `index` (found in the Hyperscan match `hit`) to the span's end, or the whole
    /// span when the rule has none or the group is not where the match starts. `None`
    /// when the rule has an entropy floor (other than the entropy check's own) that the
    /// secret does not reach. Only the start moves, and only forward; the end stays where
    /// the check put it, but for the quote closing a value whose opening quote is kept,
    /// so no byte judged secret is let through.
    fn secret_part(
        &self,
        index: usize,
        bytes: &[u8],
        (start, end): (usize, usize),
        (s, e): (usize, usize),
    ) -> Option<(usize, usize)> {
        let rule = self.rules.get(index)?;
        let (mut s, mut e) = (s, e);
        if rule.secret_group > 0 && s == start {
            let regex = self.groups.get(index).and_then(|cell| {
                cell.get_or_init(|| secret_rules::group_regex(rule).ok())
                    .as_ref()
            });
            let group = regex
                .and_then(|re| re.captures(&bytes[start..end]))
                .and_then(|c| c.get(rule.secret_group));
            if let Some(g) = group.filter(|g| !g.is_empty() && start + g.start() < e) {
                s = start + g.start();
                // The quote that closes a quoted value is no part of it: a value's
                // class never holds its own quote (`['"][^'"]…['"]`).
                let opener = bytes.get(s.wrapping_sub(1)).copied();
                if e > s + 1
                    && matches!(opener, Some(b'"' | b'\'' | b'`'))
                    && bytes.get(e - 1).copied() == opener
                {
                    e -= 1;
                }
            }
        }
        match rule.entropy {
            Some(floor) if rule.check != Check::Entropy => {
                let secret = &bytes[s..e];
                (entropy_bytes(secret) >= entropy_floor(floor, secret.len())).then_some((s, e))
            }
            _ => Some((s, e)),
        }
    }

    /// `text` with every secret replaced by `[REDACTED:<id>]` and as many `\n` as
    /// it spanned. Overlapping secrets become one, named by the most specific rule
    /// (a provider's over a keyword assignment's) and counted once.
    pub fn redact(&self, text: &str) -> Result<Redacted, SecretsError> {
        self.redact_found(text, self.find(text)?)
    }

    /// [`Redactor::find`] for a file's text, `path` relative to the root it was found
    /// under (`/` between parts): a finding a path row of the allowlists allows there
    /// is left out (`allowlist.toml`'s `[[path]]`).
    pub fn find_at(&self, path: &str, text: &str) -> Result<Vec<Finding>, SecretsError> {
        let mut found = self.find(text)?;
        let allow = allowlist::get();
        if !allow.paths.is_empty() {
            found.retain(|f| {
                let id = self.rules.get(f.rule).map_or("", |r| r.id);
                let matched = text.get(f.start..f.end).unwrap_or_default();
                !allow.allows_at(path, id, matched)
            });
        }
        Ok(found)
    }

    /// [`Redactor::redact`] for a file's text at `path` (see [`Redactor::find_at`]).
    pub fn redact_at(&self, path: &str, text: &str) -> Result<Redacted, SecretsError> {
        self.redact_found(text, self.find_at(path, text)?)
    }

    fn redact_found(&self, text: &str, found: Vec<Finding>) -> Result<Redacted, SecretsError> {
        let mut out = String::with_capacity(text.len());
        let mut secret_lines = Vec::new();
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        let (mut at, mut line, mut i) = (0usize, 1u64, 0usize);
        while i < found.len() {
            let first = found[i];
            let (start, mut end, mut label) = (first.start, first.end, first.rule);
            i += 1;
            while i < found.len() && found[i].start < end {
                end = end.max(found[i].end);
                if self.weight(found[i].rule) > self.weight(label) {
                    label = found[i].rule;
                }
                i += 1;
            }
            let start = floor_boundary(text, start.max(at));
            let end = ceil_boundary(text, end);
            if end <= start || start < at {
                continue;
            }
            let before = &text[at..start];
            line += newlines(before);
            out.push_str(before);
            let id = self.rules.get(label).map_or("secret", |r| r.id);
            out.push_str("[REDACTED:");
            out.push_str(id);
            out.push(']');
            let breaks = newlines(&text[start..end]);
            secret_lines.push((line, line + breaks));
            out.extend(std::iter::repeat_n('\n', breaks as usize));
            line += breaks;
            at = end;
            *counts.entry(id.to_string()).or_default() += 1;
        }
        out.push_str(&text[at..]);
        Ok(Redacted {
            text: out,
            secret_lines,
            counts,
        })
    }

    /// Which label wins when spans overlap: private keys, then provider rules, then
    /// the generic framings judged by entropy.
    fn weight(&self, rule: usize) -> u8 {
        match self.rules.get(rule).map(|r| r.check) {
            Some(Check::PrivateKey) => 3,
            Some(
                Check::None
                | Check::DocExample
                | Check::Signed
                | Check::Netrc
                | Check::PercentEncoded
                | Check::UserPass
                | Check::UrlPassword
                | Check::BasicAuth
                | Check::ServiceAccount,
            ) => 2,
            Some(Check::ConnString) => 1,
            _ => 0,
        }
    }
}

fn newlines(s: &str) -> u64 {
    s.bytes().filter(|&b| b == b'\n').count() as u64
}

#[cfg(test)]
#[path = "redact_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "redact_corpus_tests.rs"]
mod corpus_tests;
