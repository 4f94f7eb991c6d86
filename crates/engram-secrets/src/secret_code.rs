//! A keyword assigned code rather than a literal: an unquoted value that is another
//! name or a member of an object (`const gcsUseDownscopedCredential =
//! options.gcsUseDownscopedCredential`, `exports.WebAuthnError = WebAuthnError`,
//! `credentials:this.opts.withCredentials?`). The keyword rules match inside such
//! identifiers all day, and the value, made of names the identifier-word list may lack
//! (`gcs`, `Authn`), is not always read as code by `secret_words`.
//!
//! It owns two judgements of an unquoted value's shape, and is asked
//! only by `secret_keyword`, which knows the assigned name:
//!
//! - [`is_same_name_binding`]: the value is a name or a member path whose last part is
//!   the assigned name itself (`x = options.x`, `exports.X = X`). A secret would have
//!   to end with its own variable's name; random values never do (the test: 0 of
//!   200,000 per alphabet).
//! - [`is_member_expression`]: the value is `receiver.member…`, where the receiver is
//!   one of the words code reads settings from (`this`, `self`, `options`, `config`,
//!   `props`, `ctx`, …) and each member an identifier. A random value starts so about
//!   68^-4 ≈ 5 × 10^-8 of the time per three-letter receiver, and only in an alphabet
//!   with `.` (the test: 0 of 200,000 per alphabet and length).
//! - [`is_fallback_chain`]: operands joined by `||`, each a binding of the
//!   assigned name as above (`auth=g.auth||v.auth`, minified code).
//! - [`is_type_name`]: the value is a capitalised name ending in a word that names a
//!   kind of type (`authn: MFAVerifyWebauthnParams`, `credentials:
//!   EthereumWeb3Credentials`, `auth2_provision_cb: XOAuth2ProvisionCallback`): a type
//!   annotation. The words are of five letters or more, written capitalised, so a
//!   random base62 value ends in one about 62^-5 ≈ 10^-9 of the time per word (the
//!   test: 0 of 200,000 per alphabet and length).

/// Receivers that code reads a setting or a credential from: `options.token`,
/// `this.opts.withCredentials`, `self.secret_key`.
const RECEIVERS: &[&str] = &[
    "this",
    "self",
    "cls",
    "options",
    "opts",
    "config",
    "cfg",
    "conf",
    "settings",
    "props",
    "params",
    "args",
    "kwargs",
    "ctx",
    "context",
    "request",
    "req",
    "response",
    "res",
    "init",
    "state",
    "input",
    "credentials",
    "creds",
    "exports",
    "module",
    "window",
];

/// Words that end a type's name (`…Params`, `…Callback`): capitalised, five letters or
/// more (see the module comment for why no shorter one).
const TYPE_WORDS: &[&str] = &[
    "Params",
    "Parameters",
    "Options",
    "Credentials",
    "Credential",
    "Callback",
    "Handler",
    "Provider",
    "Config",
    "Settings",
    "Request",
    "Response",
    "Result",
    "Error",
    "Exception",
    "Context",
    "Client",
    "Factory",
    "Builder",
    "Manager",
    "Service",
    "Interface",
    "Props",
    "State",
    "Event",
];

/// An identifier of the common languages: `_`, `$`, letters and digits, not starting
/// with a digit.
fn is_identifier(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$')
}

/// A name or a dotted member path of identifiers (`options.gcsUseDownscopedCredential`).
fn member_parts(value: &str) -> Option<Vec<&str>> {
    let parts: Vec<&str> = value.split('.').collect();
    parts.iter().all(|p| is_identifier(p)).then_some(parts)
}

/// Whether `value`, unquoted, is `name` itself or a member path ending in it
/// (`options.gcsUseDownscopedCredential` for `gcsUseDownscopedCredential`); see the
/// module comment. `name` is the whole assigned identifier, the part of it before the
/// keyword included.
pub(super) fn is_same_name_binding(name: &str, value: &str) -> bool {
    is_identifier(name)
        && member_parts(value).is_some_and(|p| {
            let last = p.last().copied().unwrap_or("");
            last == name || ends_with_name(last, name)
        })
}

/// `auth=g.auth||v.auth` (minified code taking the first of two settings):
/// an unquoted value of two or more operands joined by `||`, each a name or member path
/// ending in the assigned name ([`is_same_name_binding`]). A random value would have to
/// hold `||` and end in its own variable's name twice (0 of 200,000 in the tests).
pub(super) fn is_fallback_chain(name: &str, value: &str) -> bool {
    let operands: Vec<&str> = value.split("||").collect();
    operands.len() >= 2 && operands.iter().all(|o| is_same_name_binding(name, o))
}

/// `msalNodeFlowVSCodeCredentialControl` for `vsCodeCredentialControl`: a
/// member whose name ends with the assigned name of eight characters or more, its
/// case aside (a bundler's renamed import). Also a member that shares
/// its last eight characters or more with the assigned name (`old_use_webauthn =
/// asyncssh.sk.sk_use_webauthn`, a test saving a module's function before patching
/// it): the same name under another prefix. A random value ends with a given eight
/// characters, case aside, about 31^-8 ≈ 10^-12 of the time.
fn ends_with_name(last: &str, name: &str) -> bool {
    let shared = last
        .bytes()
        .rev()
        .zip(name.bytes().rev())
        .take_while(|(a, b)| a.eq_ignore_ascii_case(b))
        .count();
    shared >= 8
}

/// Whether `value`, unquoted, is a member of a receiver object (`this.opts.withCredentials`,
/// with a ternary's `?` or TypeScript's `!` after it); see the module comment.
pub(super) fn is_member_expression(value: &str) -> bool {
    let value = value.strip_suffix(['?', '!']).unwrap_or(value);
    member_parts(value).is_some_and(|p| p.len() >= 2 && RECEIVERS.contains(&p[0]))
}

/// Whether `value`, unquoted, is a type's name (`MFAVerifyWebauthnParams`): a capital,
/// then letters and digits, ending in one of [`TYPE_WORDS`] after at least one more
/// character; see the module comment. The type may stand behind module
/// names (`sts.StsCredentials`, `models.AuthProvider`): lower-case identifiers, each
/// followed by `.`, which add nothing a random value could use to pass (it must still
/// end in a type word).
pub(super) fn is_type_name(value: &str) -> bool {
    let mut value = value;
    while let Some((module, rest)) = value.split_once('.') {
        if !is_module_name(module) {
            return false;
        }
        value = rest;
    }
    value.starts_with(|c: char| c.is_ascii_uppercase())
        && value.bytes().all(|b| b.is_ascii_alphanumeric())
        && TYPE_WORDS
            .iter()
            .any(|w| value.len() > w.len() && value.ends_with(w))
}

/// A module's name in a qualified type (`sts`, `google_auth`): a lower-case letter, then
/// lower-case letters, digits and `_`.
fn is_module_name(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Whether `value`, unquoted, is a name in camel humps made of words:
/// `Curve25519SeedBin`, `_PassphraseArg` (a private type alias) after `passphrase:`.
/// An optional leading `_`, then two or more humps each a capital and lower-case
/// letters or a run of digits, at least two of them letter humps; every letter hump,
/// lower-cased, of three letters or more and a common identifier word
/// (`secret_words::is_identifier_word`) or the assigned name itself (`name`, its case
/// aside). Such a value names a type or a constant; a random value spells two
/// dictionary words at hump starts with nothing else between them about never (0 of
/// 200,000 per alphabet and length in `secret_code_shapes_tests.rs`).
pub(super) fn is_camel_words(value: &str, name: &str) -> bool {
    let v = value.strip_prefix('_').unwrap_or(value);
    let b = v.as_bytes();
    if b.is_empty() || !b[0].is_ascii_uppercase() || !b.iter().all(u8::is_ascii_alphanumeric) {
        return false;
    }
    let name = name.to_ascii_lowercase();
    let mut words = 0;
    let mut i = 0;
    while i < b.len() {
        let start = i;
        if b[i].is_ascii_digit() {
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            continue;
        }
        i += 1;
        while i < b.len() && b[i].is_ascii_lowercase() {
            i += 1;
        }
        let hump = v[start..i].to_ascii_lowercase();
        if hump.len() < 3 || !(super::secret_words::is_identifier_word(&hump) || (hump == name)) {
            return false;
        }
        words += 1;
    }
    words >= 2
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_random::xorshift;

    #[test]
    fn names_and_members_are_code() {
        assert!(is_same_name_binding(
            "gcsUseDownscopedCredential",
            "options.gcsUseDownscopedCredential"
        ));
        assert!(is_same_name_binding("isWebAuthnError", "isWebAuthnError"));
        assert!(is_same_name_binding("WebAuthnError", "WebAuthnError"));
        assert!(!is_same_name_binding(
            "CLIENT_SECRET",
            "Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox1Qb3Vc7Nm"
        ));
        assert!(!is_same_name_binding("token", "cfg.token2"));
        assert!(!is_same_name_binding("token", "Zk5.Hc9-token"));
        assert!(is_member_expression("options.gcsUseDownscopedCredential"));
        assert!(is_member_expression("this.opts.withCredentials?"));
        assert!(is_member_expression("self.secret_key"));
        assert!(!is_member_expression("Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox1Qb3Vc7Nm"));
        assert!(!is_member_expression("options"));
        assert!(!is_member_expression("options.Zk5Hc9-Jd0Pa6"));
        assert!(!is_member_expression("opt.Zk5Hc9Jd0Pa6"));
        assert!(is_type_name("MFAVerifyWebauthnParams"));
        assert!(is_type_name("EthereumWeb3Credentials"));
        assert!(is_type_name("XOAuth2ProvisionCallback"));
        assert!(!is_type_name("Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox1Qb3Vc7Nm"));
        assert!(!is_type_name("zk5Hc9Jd0Pa6Params"));
        assert!(!is_type_name("Params"));
        assert!(!is_type_name("Zk5Hc9Jd0Pa6params"));
    }

    /// The false-negative rates of the module comment: random values are never a
    /// binding of their own name nor a receiver's member.
    #[test]
    fn random_values_are_never_names_or_members() {
        let mut next = xorshift(0xA076_1D64_78BD_642Fu64);
        let base62 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        let password = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~!*";
        let printable: Vec<u8> = (b'!'..=b'~').collect();
        let names = [
            "token",
            "CLIENT_SECRET",
            "apiKey",
            "db_password",
            "AuthToken",
        ];
        for alphabet in [&base62[..], &password[..], &printable[..]] {
            for len in [8usize, 12, 16, 40] {
                let tries = 200_000;
                let mut code = 0;
                for i in 0..tries {
                    let v: String = (0..len)
                        .map(|_| alphabet[(next() % alphabet.len() as u64) as usize] as char)
                        .collect();
                    code += usize::from(
                        is_same_name_binding(names[i % names.len()], &v)
                            || is_member_expression(&v)
                            || is_type_name(&v),
                    );
                }
                assert_eq!(code, 0, "{len} of {} characters", alphabet.len());
            }
        }
    }
}
