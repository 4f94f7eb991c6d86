//! Names and values of the authentication protocols' data that are no credential,
//! (held-out-15's classes: WebAuthn, OAuth 2 and SSH libraries).
//!
//! - [`auth_in_protocol_word`]: the generic rule's keyword `auth` inside a longer word
//!   that names a protocol or an act, not a credential: `webauthn`, `oauth2`,
//!   `otpauth`, SSH's `userauth`, `authn`, `authz`, `authenticator`, `authenticated`,
//!   `authority` (`authenticatorData: "SZYN5Yg…"`, `"webauthn": "flask_security.…"`,
//!   `BACKOFF_CACHE_PREFIX = "oauth2_provider:cimd:…"`, `MSG_USERAUTH_PK_OK: "…"`). The
//!   word is read as the identifier spells it: the letters glued to `auth` in the same
//!   case (`WebAuthn` is two words, `webauthn` and `OAuth` one). A name that goes on
//!   with a credential's word (`oauth_token`, `webauthn_secret`, `authenticatorKey`) is
//!   still judged, as is `auth` alone and any other word holding it (`basicauth`,
//!   `authtoken`). The name alone does not decide: other checks keep a bare random
//!   token under such a name a secret (`authn: Zk5Hc9Jd…`, `"oauth:Zk5Hc9Jd…"`), so
//!   the value must read as code too ([`reads_as_code`]): a dotted name, a path, a
//!   URI or a call (`.`, `/`, `:`, `(`), or a type's name in camel humps
//!   (`WebAuthnMixin`).
//! - [`is_timestamp`]: an ISO 8601 date and time (`"2019-03-11T11:25:22Z"`, an
//!   `authenticated_at` or a SAML `AuthnInstant`): a moment, which no issued secret
//!   spells.

/// Words holding `auth` that name a protocol, a role or an act (lower case, any
/// trailing digits of the identifier set aside: `oauth2`).
const PROTOCOL_WORDS: &[&str] = &[
    "oauth",
    "webauthn",
    "otpauth",
    "userauth",
    "authn",
    "authz",
    "authenticator",
    "authenticators",
    "authenticated",
    "authenticate",
    "authentication",
    "authority",
    "authorities",
];

/// Words that, later in the identifier, say it names a credential after all
/// (`oauth_token`, `webauthn_secret`, `authenticatorKey`, `oauth2_client_password`,
/// OAuth 1's `oauth_verifier`, an authorization `code`).
const CREDENTIAL_WORDS: &[&str] = &[
    "token", "secret", "key", "pass", "pwd", "cred", "cookie", "bearer", "session", "verifier",
    "code",
];

/// Whether a keyword match whose identifier `ident` starts at `start` in `text` with
/// `auth` has it inside a protocol's word, names no credential and is assigned a
/// `value` that reads as code (module comment).
pub(super) fn auth_in_protocol_word(text: &str, start: usize, ident: &str, value: &str) -> bool {
    protocol_name(text, start, ident) && reads_as_code(value)
}

/// Whether `value` holds a dotted name's, a path's, a URI's or a call's punctuation
/// (`.`, `/`, `:`, `(`), or is a type's name: two or more capitalised words of small
/// letters (`WebAuthnMixin`).
fn reads_as_code(value: &str) -> bool {
    if value.contains(['.', '/', ':', '(']) {
        return true;
    }
    let b = value.as_bytes();
    b.first().is_some_and(u8::is_ascii_uppercase)
        && b.iter().all(u8::is_ascii_alphabetic)
        && b.iter().filter(|c| c.is_ascii_uppercase()).count() >= 2
        && value
            .split(|c: char| c.is_ascii_uppercase())
            .skip(1)
            .all(|w| w.len() >= 2)
}

/// Whether the identifier `ident` at `start` in `text` opens with `auth` inside a
/// protocol's word and goes on with no credential's word.
fn protocol_name(text: &str, start: usize, ident: &str) -> bool {
    let id = ident.as_bytes();
    if id.len() < 4 || !id[..4].eq_ignore_ascii_case(b"auth") {
        return false;
    }
    // `AUTHN`, `USERAUTH`: capitals glue to capitals. `authn`, `Authn`, `webauthn`:
    // small letters glue after, and before a small `a`. `OAuth`: a capital before a
    // capital `A` followed by small letters glues too (one word in camel case).
    let all_caps = id[..4].iter().all(u8::is_ascii_uppercase);
    let glued_after = |b: &u8| {
        if all_caps {
            b.is_ascii_uppercase()
        } else {
            b.is_ascii_lowercase()
        }
    };
    let after = 4 + id[4..].iter().take_while(|b| glued_after(b)).count();
    let digits = after
        + id[after..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
    let capital = id[0].is_ascii_uppercase();
    let before = text.as_bytes().get(..start).unwrap_or(&[]);
    let glued_before = before
        .iter()
        .rev()
        .take_while(|b| {
            if capital {
                b.is_ascii_uppercase()
            } else {
                b.is_ascii_lowercase()
            }
        })
        .count();
    // `OAuth` glues one capital; a run of capitals before `Auth` (`HTTPAuth`) is an
    // acronym and its own word, whose last capital is still glued (`PAuth`): read
    // the word the way `OAuth` reads and let the list decide.
    let glued_before = if capital && !all_caps {
        glued_before.min(1)
    } else {
        glued_before
    };
    let word = format!(
        "{}{}",
        String::from_utf8_lossy(&before[before.len() - glued_before..]),
        &ident[..after]
    )
    .to_ascii_lowercase();
    if !PROTOCOL_WORDS.contains(&word.as_str()) {
        return false;
    }
    let rest = ident[digits..].to_ascii_lowercase();
    !CREDENTIAL_WORDS.iter().any(|w| rest.contains(w))
}

/// Whether `value` is an ISO 8601 date and time: `YYYY-MM-DD`, `T` or a space,
/// `hh:mm`, then seconds, a fraction and a zone (`Z`, `+02:00`) if any.
pub(super) fn is_timestamp(value: &str) -> bool {
    let b = value.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    digits(0..4)
        && b.get(4) == Some(&b'-')
        && digits(5..7)
        && b.get(7) == Some(&b'-')
        && digits(8..10)
        && matches!(b.get(10), Some(b'T' | b' '))
        && digits(11..13)
        && b.get(13) == Some(&b':')
        && digits(14..16)
        && b[16..]
            .iter()
            .all(|&c| c.is_ascii_digit() || matches!(c, b':' | b'.' | b'+' | b'-' | b'Z'))
}
