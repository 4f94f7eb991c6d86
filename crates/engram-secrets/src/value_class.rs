//! The one classifier a keyword assignment's value passes (`DB_PASSWORD = "…"` once
//! `secret_keyword` has split it): which named class the value is. Four classes say
//! it is no secret, each in its own file with its tests: identifier or code
//! (`class_code`), placeholder or sample (`class_sample`), reference or public value
//! (`class_reference`), encoded data (`class_encoded`). A value in none of them is
//! [`ValueClass::Random`]'s to judge: a secret when random enough
//! (`secret_value::looks_secret`).
//!
//! Each class only turns values down; none makes a secret of anything, so the order
//! in which they are asked changes no verdict, only which class a value is reported
//! under. It never reads past the text it is given and never fails.

use super::class_code::is_code;
use super::class_encoded::is_encoded;
use super::class_reference::is_reference;
use super::class_sample::is_sample;
use super::secret_value::looks_secret;

/// What a keyword assignment's value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ValueClass {
    /// A name, a type, a path, an expression or words: code, not a literal secret.
    Code,
    /// A placeholder or a sample a person typed (a test's, a document's).
    Sample,
    /// A reference to where a value is, or a value the context shows public.
    Reference,
    /// Encoded data that cannot authenticate (a JWT without a signature, base32 of
    /// text, structured binary).
    Encoded,
    /// None of those: a secret when random enough, else a low-entropy value.
    Random,
}

/// A keyword assignment, split: the text it is in, where the match is, the name
/// assigned to and the value, and how the value was written.
#[derive(Debug)]
pub(super) struct Assignment<'t> {
    /// The whole text the match is in.
    pub text: &'t str,
    /// The match's byte range in `text`.
    pub start: usize,
    pub end: usize,
    /// The identifier the match opens with (`DB_PASSWORD`).
    pub ident: &'t str,
    /// The whole name assigned to (`gcsUseDownscopedCredential` for a match at
    /// `Credential`), from its last `.` on.
    pub assigned: String,
    /// The value, without its closing quote.
    pub value: &'t str,
    /// A quote opened the value.
    pub quoted: bool,
    /// The quote that opened it (0 when none did).
    pub opener: u8,
    /// The quoted value ran to its closing quote, uncut.
    pub closed: bool,
    /// The operator was `,` (a `("name", "value")` pair).
    pub comma: bool,
    /// The character after the match.
    pub next: Option<char>,
}

/// The class of `a`'s value.
pub(super) fn classify(a: &Assignment<'_>) -> ValueClass {
    if is_code(a) {
        ValueClass::Code
    } else if is_sample(a) {
        ValueClass::Sample
    } else if is_reference(a) {
        ValueClass::Reference
    } else if is_encoded(a) {
        ValueClass::Encoded
    } else {
        ValueClass::Random
    }
}

/// Whether `a`'s value is a secret: of no class that turns it down, and random enough.
pub(super) fn is_secret(a: &Assignment<'_>) -> bool {
    classify(a) == ValueClass::Random && looks_secret(a.ident, a.value, a.quoted, a.next)
}

#[cfg(test)]
pub(super) mod test_support {
    use super::*;
    use crate::bytes::find;

    /// The assignment `text` holds, split as `secret_keyword` splits it, with the
    /// keyword `keyword` (the match runs from it to the text's end).
    pub(crate) fn classify_text(text: &str, keyword: &str) -> ValueClass {
        let start = find(text.as_bytes(), keyword.as_bytes()).expect("keyword in text");
        crate::secret_keyword::split(text, start, text.len())
            .map_or(ValueClass::Code, |a| classify(&a))
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::classify_text;
    use super::*;

    #[test]
    fn each_class_is_named_and_a_random_value_is_random() {
        assert_eq!(
            classify_text("token = options.token", "token"),
            ValueClass::Code
        );
        assert_eq!(
            classify_text("password = 'SecurePass123!'", "password"),
            ValueClass::Sample
        );
        assert_eq!(
            classify_text(
                "auth = 'urn:oasis:names:tc:SAML:2.0:ac:classes:Password'",
                "auth"
            ),
            ValueClass::Reference
        );
        assert_eq!(
            classify_text("token = 'eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.'", "token"),
            ValueClass::Encoded
        );
        assert_eq!(
            classify_text(
                "client_secret = 'Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox1Qb3Vc7Nm'",
                "secret"
            ),
            ValueClass::Random
        );
    }
}
