//! Value class "reference or public value": the value points at something or the text
//! around it shows it public (a URN, a host name, a resource name, a SigV4 scope, a
//! template or a value cut short, a timestamp, a digest keying a cache, an ACME
//! challenge's token, a Web Push subscription's `auth`, a kind's marker). Each shape
//! is judged by the module that owns it (`secret_named`, `secret_reference`,
//! `secret_inert`, `secret_protocol`, `secret_context`, `secret_locator`,
//! `secret_fixture`) or by a row of `allowlist.toml`; this file only says which make
//! this class. It only turns values down.

use super::allowlist;
use super::secret_context::{in_acme_challenge, is_push_subscription_auth};
use super::secret_fixture::{is_cache_key_digest, is_cut_signing_scope};
use super::secret_inert::is_sigv4_scope;
use super::secret_locator::{is_host_setting, is_shell_pwd};
use super::secret_marker::words;
use super::secret_named::{in_urn, is_urn, names_public_value};
use super::secret_protocol::is_timestamp;
use super::secret_reference::{is_elided, is_format_template, is_path_template};
use super::value_class::Assignment;

/// Whether `a`'s value is a reference or shown public.
pub(super) fn is_reference(a: &Assignment<'_>) -> bool {
    let (v, name) = (a.value, a.assigned.as_str());
    let allow = allowlist::get();
    names_public_value(name)
        || in_urn(a.text, a.start)
        || is_urn(v)
        || is_sigv4_scope(v)
        || is_cut_signing_scope(v)
        || is_elided(v)
        || is_path_template(v)
        || cut_at_field(a.text, a.end).is_some_and(|f| is_format_template(&format!("{v}{f}")))
        || is_timestamp(v)
        || in_acme_challenge(a.text, a.start, name, v)
        || is_push_subscription_auth(a.text, a.start, name, v)
        || is_host_setting(name, v)
        || is_shell_pwd(a.text, a.start, a.ident)
        || is_cache_key_digest(name, v)
        || allow.is_marker(&words(name), v)
        || allow.allows_value(v)
        || allow.allows_token(a.text, a.start)
}

/// The replacement field (`{0}`, `{}`, `{name}`, at most 24 characters inside) that
/// opens the text after a match cut at its `{`, as an unquoted value is cut: the value
/// goes on as a format string's literal (`"dpapi_machinekey:0x{0}` with the escape
/// decoded).
fn cut_at_field(text: &str, end: usize) -> Option<&str> {
    let rest = text.get(end..)?;
    let close = rest.strip_prefix('{')?.find('}')?;
    (close <= 24).then(|| &rest[..close + 2])
}

#[cfg(test)]
mod tests {
    use crate::value_class::test_support::classify_text;
    use crate::value_class::ValueClass;

    #[test]
    fn references_and_public_values_are_references() {
        for (text, keyword) in [
            ("auth = 'urn:oasis:names:tc:SAML:2.0:ac:classes:Password'", "auth"),
            ("AUTH_HOST = \"mtls.auth.openai.com\"", "AUTH"),
            (
                "\"ARN\": \"arn:aws:secretsmanager:us-west-2:123456789012:secret:MyTestDatabaseSecret1-d4e5f6\"",
                "secret",
            ),
            ("JWT_CATEGORY_SESSION_TOKEN = \"cl_B7d4PD111AAA\"", "TOKEN"),
            ("token = \"ya29.c.b0Aaekm...\"", "token"),
        ] {
            assert_eq!(classify_text(text, keyword), ValueClass::Reference, "{text}");
        }
        assert_ne!(
            classify_text("AUTH_TOKEN = \"Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox1Qb3Vc7Nm\"", "TOKEN"),
            ValueClass::Reference
        );
    }
}
