//! Value class "encoded data": the value is an encoding of something that cannot
//! authenticate anyone: a JWT without a signature, its claims alone or one malformed,
//! base32 of text or of a word, base64 of structured binary (authenticator data, a
//! COSE key, a certificate's DER). Each shape is judged by the module that owns it
//! (`secret_inert`, `secret_made_up`, `secret_binary`); this file only says which of
//! them make this class. It only turns values down.

use super::secret_binary::is_structured_binary;
use super::secret_inert::{is_malformed_jwt, is_text_base32, is_unsigned_jwt, is_worded_base32};
use super::secret_made_up::is_claims_only_jwt;
use super::value_class::Assignment;

/// Whether `a`'s value is encoded data that authenticates no one.
pub(super) fn is_encoded(a: &Assignment<'_>) -> bool {
    let v = a.value;
    is_unsigned_jwt(v)
        || is_claims_only_jwt(v)
        || is_malformed_jwt(v, a.closed)
        || is_worded_base32(v)
        || is_text_base32(v)
        || is_structured_binary(v)
}

#[cfg(test)]
mod tests {
    use crate::value_class::test_support::classify_text;
    use crate::value_class::ValueClass;

    #[test]
    fn unsigned_tokens_and_encoded_text_are_encoded() {
        for (text, keyword) in [
            ("token = 'eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.'", "token"),
            ("secret = 'JBSWY3DPEHPK3PXP'", "secret"),
        ] {
            assert_eq!(classify_text(text, keyword), ValueClass::Encoded, "{text}");
        }
        assert_ne!(
            classify_text("secret = 'Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox1Qb3Vc7Nm'", "secret"),
            ValueClass::Encoded
        );
    }
}
