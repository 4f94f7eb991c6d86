//! Values a keyword or token rule matches that name or report something rather than
//! authenticate anyone (held-out-12's classes). Each judgement reads a
//! property a working credential does not have, and each is narrow: the tests
//! (`secret_named_tests.rs`) show a near miss holding a random secret still caught,
//! and count how often random values take the shape.
//!
//! - [`names_public_value`]: the assigned name says what the value is, and it is no
//!   credential: an AEAD's authentication tag (`JWE_Authentication_Tag_5_1_4`,
//!   `auth_tag`, `authTag`: a MAC sent in the clear beside its ciphertext, RFC 7520's
//!   test vectors) or an outcome (`auth_failed`, `auth_error`: an error's name or
//!   message). Only the name's last whole word, digits aside, counts (`auth_stage`
//!   and `auth_failed_key` are judged as before).
//! - [`is_error_code`]: capitals and then digits, closed by a colon and a space
//!   (`AADSTS50076: `, `ORA01017: `): the code heading an error message (`fetching
//!   token: AADSTS50076: Due to …`). The colon and space carry the judgement: random
//!   values of capitals and digits alone put three letters or more before four digits
//!   or more about once in 1,500 at 12 characters; of mixed case about once in 10^6
//!   (0 of 200,000 in the test).
//! - [`in_urn`]: the keyword sits inside a URN (`urn:ietf:params:oauth:jwk-thumbprint:`),
//!   whose segments are names registered with IANA.
//! - [`is_derived_name`]: an unquoted value that is the assigned name and a short
//!   suffix (`BackchannelAuthenticationRequest: BackchannelAuthenticationRequestTTL`):
//!   a function or constant named after the setting.
//! - [`is_counting_sample`]: a prefix and then letters and digits counted up from
//!   `a` and `0` or `1` (`glpat-abc123`, `sk_abcd1234`): a token's format with a
//!   made-up body. A random body of six characters or more is so about once in 10^10.
//! - [`is_worded_token_body`]: a token rule's match whose body after its prefix is
//!   three or more common words joined by `-` or `_` (`glpat-python-gitlab-token_`).
//! - [`is_urn`]: the value is a URN (`urn:oasis:names:tc:SAML:2.0:ac:classes:Password`),
//!   as [`in_urn`] is for the keyword.

use super::secret_words::is_identifier_word;

/// The words of an identifier, lower-cased: split at `_`, `-`, `.` and camel humps
/// (`JWE_Authentication_Tag_5_1_4` → jwe, authentication, tag, 5, 1, 4).
fn name_words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in name.split(['_', '-', '.']).filter(|p| !p.is_empty()) {
        let b = part.as_bytes();
        let mut start = 0;
        for i in 1..b.len() {
            let hump = b[i].is_ascii_uppercase()
                && (b[i - 1].is_ascii_lowercase()
                    || (b[i - 1].is_ascii_uppercase()
                        && b.get(i + 1).is_some_and(u8::is_ascii_lowercase)));
            let digits = b[i].is_ascii_digit() != b[i - 1].is_ascii_digit();
            if hump || digits {
                out.push(part[start..i].to_ascii_lowercase());
                start = i;
            }
        }
        out.push(part[start..].to_ascii_lowercase());
    }
    out
}

/// Whether the assigned name says its value is public or no credential: its last word
/// (digits aside) is `tag` (an AEAD's authentication tag) or names an outcome.
pub(super) fn names_public_value(assigned: &str) -> bool {
    let words = name_words(assigned);
    let last = words
        .iter()
        .rev()
        .find(|w| !w.bytes().all(|b| b.is_ascii_digit()));
    last.is_some_and(|w| matches!(w.as_str(), "tag" | "failed" | "failure" | "error" | "err"))
}

/// Whether `value` is an error code closed by a colon and a space: three or more
/// capitals, then four or more digits, then `:`, in `value` or as the first character
/// of `after` (the text after the match), and then whitespace, a quote or the end.
pub(super) fn is_error_code(value: &str, after: &str) -> bool {
    let (code, rest) = match value.strip_suffix(':') {
        Some(code) => (code, after),
        None => match after.strip_prefix(':') {
            Some(rest) => (value, rest),
            None => return false,
        },
    };
    let letters = code.bytes().take_while(u8::is_ascii_uppercase).count();
    let digits = code.len() - letters;
    letters >= 3
        && digits >= 4
        && code[letters..].bytes().all(|b| b.is_ascii_digit())
        && rest
            .chars()
            .next()
            .is_none_or(|c| c.is_whitespace() || matches!(c, '"' | '\'' | '\\'))
}

/// Whether the match starting at `start` sits inside a URN: the run of text before it
/// (no whitespace, quote or bracket) starts with `urn:`.
pub(super) fn in_urn(text: &str, start: usize) -> bool {
    let before = &text.as_bytes()[..start];
    let from = before
        .iter()
        .rposition(|&b| {
            b.is_ascii_whitespace() || matches!(b, b'"' | b'\'' | b'`' | b'(' | b'[' | b'{' | b'<')
        })
        .map_or(0, |i| i + 1);
    before[from..].len() >= 4 && before[from..from + 4].eq_ignore_ascii_case(b"urn:")
}

/// Whether `value` is itself a URN: `urn:`, a namespace of letters, digits
/// and `-`, and a `:` (`urn:oasis:names:tc:SAML:2.0:ac:classes:Password`, a SAML
/// authentication context's name assigned to `PASSWORD`). Names registered with a
/// namespace, public by design; a random value opens with `urn:` about never.
pub(super) fn is_urn(value: &str) -> bool {
    let v = value.as_bytes();
    let nid = v.get(4..).map_or(0, |r| {
        r.iter()
            .take_while(|b| b.is_ascii_alphanumeric() || **b == b'-')
            .count()
    });
    v.len() > 4
        && v[..4].eq_ignore_ascii_case(b"urn:")
        && (1..=31).contains(&nid)
        && v.get(4 + nid) == Some(&b':')
}

/// Whether an unquoted `value` is the assigned name (eight characters or more) and a
/// suffix of at most four letters or digits.
pub(super) fn is_derived_name(assigned: &str, value: &str) -> bool {
    assigned.len() >= 8
        && value.strip_prefix(assigned).is_some_and(|s| {
            !s.is_empty() && s.len() <= 4 && s.bytes().all(|b| b.is_ascii_alphanumeric())
        })
}

/// Whether `value` is a prefix of lower-case letters, `-` or `_`, and a body of six to
/// ten characters that counts the alphabet from `a` (or `A`) and then the digits from
/// `0` or `1`, three or more of each (`abc123`, `abcd1234`, `ABC0123`).
pub(super) fn is_counting_sample(value: &str) -> bool {
    let Some(at) = value.rfind(['-', '_']) else {
        return false;
    };
    let (prefix, body) = (&value[..at], &value.as_bytes()[at + 1..]);
    if prefix.is_empty()
        || !prefix
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b == b'-' || b == b'_')
        || !(6..=10).contains(&body.len())
        || !matches!(body[0], b'a' | b'A')
    {
        return false;
    }
    let counts = |from: usize| {
        1 + body[from..]
            .windows(2)
            .take_while(|w| w[1] == w[0].wrapping_add(1))
            .count()
    };
    let letters = counts(0);
    letters >= 3
        && body.len() - letters >= 3
        && matches!(body[letters], b'0' | b'1')
        && counts(letters) == body.len() - letters
}

/// Whether a token's body (after its first `-` or `_`, the issuer's prefix) is three
/// or more runs of three lower-case letters or more joined by `-` or `_`, all but one
/// of them common identifier words (`python-gitlab-token_`: `gitlab` is none).
pub(super) fn is_worded_token_body(token: &[u8]) -> bool {
    let Ok(token) = std::str::from_utf8(token) else {
        return false;
    };
    let token = token.trim_end_matches(['"', '\'', '`']);
    let Some(at) = token.find(['-', '_']) else {
        return false;
    };
    let parts: Vec<&str> = token[at + 1..]
        .split(['-', '_'])
        .filter(|p| !p.is_empty())
        .collect();
    parts.len() >= 3
        && parts
            .iter()
            .all(|p| p.len() >= 3 && p.bytes().all(|b| b.is_ascii_lowercase()))
        && parts.iter().filter(|p| is_identifier_word(p)).count() + 1 >= parts.len()
}
