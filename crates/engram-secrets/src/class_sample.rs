//! Value class "placeholder or sample": a value a person typed to stand for a secret
//! in a test, a document or a fixture (`SecurePass123!`, `MySekretPa$$word`,
//! `AbcDef123!@#`, `hf_oauth_123`, a known-answer test vector's token, a made-up
//! account's password). Each shape is judged by the module that owns it
//! (`secret_named`, `secret_made_up`, `secret_placeholder`, `secret_composed`,
//! `secret_sample`, `secret_marker`, `secret_locator`, `secret_shape`); this file only
//! says which of them make this class. It only turns values down.

use super::secret_composed::{is_repeated_half, is_worded_password};
use super::secret_locator::is_worded_counter;
use super::secret_made_up::{is_accented_sample, is_two_words};
use super::secret_marker::{
    holds_respelled_credential, is_camel_sentence, is_sequence_sample, is_short_byte_list,
    says_wrong,
};
use super::secret_named::is_counting_sample;
use super::secret_placeholder::is_sample_phrase;
use super::secret_sample::{
    in_known_answer_vector, is_disowned, is_possessive_name, of_fake_account,
};
use super::secret_shape::is_hex_digest;
use super::value_class::Assignment;

/// Whether `a`'s value is a sample: typed words, runs and counts, a test vector's
/// value, or one its context or its own words show made up.
pub(super) fn is_sample(a: &Assignment<'_>) -> bool {
    let (v, name) = (a.value, a.assigned.as_str());
    // `("password", '5f4dcc3b…')`: a test vector pairing a plaintext, one lower-case
    // word, with its hex digest. A setting's name in a pair (`"DB_PASSWORD"`) is no
    // plaintext, and its hex value is still judged.
    let digest_pair = a.comma
        && name.len() == a.ident.len()
        && a.ident.bytes().all(|b| b.is_ascii_lowercase())
        && is_hex_digest(v);
    digest_pair
        || is_counting_sample(v)
        || is_accented_sample(v)
        || is_two_words(v)
        || is_sample_phrase(v)
        || is_worded_password(v)
        || is_repeated_half(v)
        || in_known_answer_vector(a.text, a.start, name)
        || is_disowned(v)
        || of_fake_account(a.text, a.start, a.end)
        || is_possessive_name(v, name)
        || holds_respelled_credential(v)
        || is_camel_sentence(v)
        || is_sequence_sample(v)
        || is_short_byte_list(v)
        || says_wrong(v)
        || is_worded_counter(v)
}

#[cfg(test)]
mod tests {
    use crate::value_class::test_support::classify_text;
    use crate::value_class::ValueClass;

    #[test]
    fn typed_samples_are_samples() {
        for (text, keyword) in [
            ("password = 'SecurePass123!'", "password"),
            ("password = 'MySekretPa$$word'", "password"),
            ("password = 'AbcDef123!@#'", "password"),
            ("token = \"hf_oauth_123\"", "token"),
            ("password = 'iWishIWereCoolEnoughForRoot!'", "password"),
            (
                "(\"password\", '5f4dcc3b5aa765d61d8327deb882cf99'",
                "password",
            ),
        ] {
            assert_eq!(classify_text(text, keyword), ValueClass::Sample, "{text}");
        }
        assert_ne!(
            classify_text("password = 'hX9kL2mQ7vR4pW8z'", "password"),
            ValueClass::Sample
        );
    }
}
