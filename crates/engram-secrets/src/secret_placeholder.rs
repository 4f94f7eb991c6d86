//! Sample credentials: what a person writes where a password or token goes in a test,
//! a document or a template, told apart from a credential by its shape alone.
//!
//! It owns these judgements, and nothing about where a value sits:
//! - [`is_sample_password`]: the password of a credential frame (a URL's
//!   `user:password@`, an HTTP Basic header's `user:password`, a `.netrc` line, a
//!   connection string's `Password=…;`) that is a person's sample rather than a
//!   credential: plain words ([`is_plain_words`], also used for the password inside
//!   base64 `user:password`), identifier words in camel humps (`withPwd`), a short
//!   number (`postgres://user3:123123@`), a constant's name standing for the value
//!   (`SAS_POLICY_NAME:SAS_KEY@`), a word respelled with look-alike characters, perhaps
//!   with a few digits after it (`p@ss`, `P@ssw0rd1`, `admin123`), a word with
//!   non-ASCII letters (`café`) or a word in padded base64 (`Zm9vYmFy==`);
//!   [`is_sample_conn_password`] is its narrower form for a connection string's
//!   `Password=…;` (one word in one case, a non-ASCII or base64 word, words joined by
//!   `=`);
//! - [`is_sample_phrase`]: an assigned value made of such words and numbers joined by
//!   separators (`p@ss;word=42`);
//! - [`holds_keyword_word`]: a value that names what it stands for (`mySecret`,
//!   `testpassword`), the keyword written in one case;
//! - [`is_filler`]: a token that is mostly one character (`AAAA…A`, `ghp_0000…0`),
//!   a buffer of zero bytes in base64 or a mask, not an issued token.
//!
//! ## What they let through (false negatives)
//!
//! Measured by the tests below over 200,000 random values per alphabet and length
//! (fixed seed): a random password of 8 characters or more from the base62 or
//! password alphabets is a short number, a constant's name or a respelled word about
//! once in 10^5 or less (see the test for the exact counts), and one of 12 or more
//! never in those runs. What does get through are passwords a person chose: numbers of
//! at most 8 digits, `UPPER_SNAKE` names and dictionary words with look-alikes
//! (`P@ssw0rd1`) — the weak passwords the module comment of `secret_value` already
//! says the scanner misses, here only inside a credential frame. A filler token needs
//! nine in ten of its characters to be one character: a random token of 16 characters
//! or more from an alphabet of 16 or more never is (below once in 10^15). The bar sits
//! that high so that a key whose prefix is a tenth of it or more and whose body is one
//! character (age's `AGE-SECRET-KEY-1QQQ…`, bech32 zeros, 78% `Q`) is still judged a
//! key, as the rule's own example expects. The word and phrase forms, over the same 200,000
//! random values per alphabet and length: a padded base64 word 1 at 8 characters and
//! none at 12 or 16, a non-ASCII word or a sample phrase never; a connection string's
//! sample password at the plain-word rate (580 of base62 at 8 characters, 14 at 12,
//! none at 16); a keyword in one case about 36 × 3 × 66^-5 at 40 characters.

use super::secret_value::decode_base64;
use super::secret_words::{is_code_like, is_identifier_word, loosely_words};

/// Longest number taken for a sample password (`123123`, `12345678`): a PIN-like
/// choice. A random 8-character password of the base62 alphabet is digits alone about
/// once in 2 × 10^6.
const MAX_SAMPLE_DIGITS: usize = 8;

/// Digits or `!` after a word that still leave it a sample (`admin123`, `Secret1!`).
const MAX_SUFFIX: usize = 4;

/// Shortest dictionary word a respelled or suffixed sample is built on: three-letter
/// words are too easily spelled by chance.
const MIN_WORD: usize = 4;

/// Whether `password`, the password of a credential frame, is a person's sample: plain
/// words, a short number, a constant's name, or a respelled word; see the module
/// comment.
pub(super) fn is_sample_password(password: &str) -> bool {
    is_plain_words(password)
        || is_camel_words(password)
        || is_short_number(password)
        || is_constant_name(password)
        || is_respelled_word(password)
        || is_non_ascii_word(password)
        || is_encoded_word(password)
}

/// `café`, `Straße`: one word of at most 12 letters with one outside ASCII or more, all
/// lower case (or caseless) after the first: a word a person typed, as a parser's test of
/// non-ASCII input does. Password generators draw from ASCII alphabets, so no random
/// value of the base62 or password alphabets ever passes (none can hold a non-ASCII
/// letter).
fn is_non_ascii_word(password: &str) -> bool {
    let mut chars = password.chars();
    !password.is_ascii()
        && password.chars().count() <= 12
        && chars.next().is_some_and(char::is_alphabetic)
        && chars.all(|c| c.is_alphabetic() && !c.is_uppercase())
}

/// `Zm9vYmFy==` ("foobar"): padded base64 of six lower-case letters or more: a parser's
/// test of a value with `=` in it, or an encoded sample word. The padding is required
/// (random base62 values have none), and random bytes decode to six lower-case letters
/// about once in 10^6: the test counts padded random values of 8 to 16 characters.
fn is_encoded_word(password: &str) -> bool {
    let body = password.trim_end_matches('=');
    let pad = password.len() - body.len();
    if body.len() < 8 || !(1..=2).contains(&pad) {
        return false;
    }
    let Some(decoded) = decode_base64(body) else {
        return false;
    };
    decoded.len() >= MIN_WORD && decoded.iter().all(u8::is_ascii_lowercase)
}

/// The credential keywords, written into a value by a person.
const KEYWORD_WORDS: &[&str] = &["password", "passwd", "secret", "token"];

/// Whether `value` holds a credential keyword as a word a person writes: all lower case,
/// all capitals, or capitalized (`testpassword`, `mySecret`, `HTTP_X_CSRFTOKEN`): the
/// value names what it stands for. Letters in a random mix of cases (`tOkEn`) are not
/// such a word: matched regardless of case, a random 40-character value of mixed-case
/// letters held one about once in 10^6, and the redactor test's random client secrets
/// leaked that way. In these three forms it is about 36 × 3 × 66^-5, under 10^-7.
pub(super) fn holds_keyword_word(value: &str) -> bool {
    KEYWORD_WORDS.iter().any(|word| {
        let capitalized: String = word
            .char_indices()
            .map(|(i, c)| if i == 0 { c.to_ascii_uppercase() } else { c })
            .collect();
        value.contains(word)
            || value.contains(&word.to_ascii_uppercase())
            || value.contains(&capitalized)
    }) && reads_as_written(value)
}

/// Whether a value holding a keyword reads as written by a person (`testpassword`,
/// `HTTP_X_CSRFTOKEN`, `your_secret_here_2`, `Tokenizer`): apart from the keywords and
/// common identifier words of three letters or more, at most [`MAX_UNEXPLAINED`]
/// letters and digits. Random characters around a keyword are mostly unexplained: a
/// random URL password that held `token` in one case passed for a placeholder about
/// once in 10^7 values before this test, enough to fail the redactor test now and then;
/// `random_values_holding_a_keyword_are_not_placeholders` counts how often now.
fn reads_as_written(value: &str) -> bool {
    let mut unexplained = value.bytes().filter(u8::is_ascii_digit).count();
    for run in value.split(|c: char| !c.is_ascii_alphabetic()) {
        let b = run.as_bytes();
        // Words start at the run's start and at a capital after a lower-case letter.
        let mut starts: Vec<usize> = vec![0];
        starts.extend(
            (1..b.len()).filter(|&i| b[i].is_ascii_uppercase() && b[i - 1].is_ascii_lowercase()),
        );
        starts.push(b.len());
        for w in starts.windows(2) {
            unexplained += unexplained_letters(&run[w[0]..w[1]].to_ascii_lowercase());
        }
    }
    unexplained <= MAX_UNEXPLAINED
}

/// The fewest letters of `word` (lower case) left over when it is read as keywords and
/// common identifier words of three letters or more run together (`notabase` is `not`,
/// `a`, `base`: one letter left).
fn unexplained_letters(word: &str) -> usize {
    let n = word.len();
    let mut best = vec![usize::MAX; n + 1];
    best[0] = 0;
    for i in 0..n {
        if best[i] == usize::MAX {
            continue;
        }
        best[i + 1] = best[i + 1].min(best[i] + 1);
        for len in 3..=(n - i).min(16) {
            let Some(part) = word.get(i..i + len) else {
                continue;
            };
            if KEYWORD_WORDS.contains(&part) || is_identifier_word(part) {
                best[i + len] = best[i + len].min(best[i]);
            }
        }
    }
    best[n]
}

/// Letters and digits of a value holding a keyword that may be neither a keyword nor a
/// common word (`my`, `X`, `izer`, `_v2`).
const MAX_UNEXPLAINED: usize = 5;

/// The password of a connection string's `Password=…;` that is a sample: one word of
/// letters in one case (`pw`, `a`, `Naukio`; the rate of [`is_plain_words`]), a
/// non-ASCII word (`café`) or a padded word in base64 (`Zm9vYmFy==`), or such words
/// joined by `=` (`ab=cd`, a parser's test of `=` in a value). Narrower than
/// [`is_sample_password`]: a connection string's value is not a URL's, and a respelled
/// word (`s3cr3t!`) or words joined by `.` (`request.form`) there are taken as given.
pub(super) fn is_sample_conn_password(password: &str) -> bool {
    password.split('=').all(|word| {
        let one_word = !word.is_empty()
            && word.len() <= 12
            && word.bytes().all(|b| b.is_ascii_alphabetic())
            && (word.bytes().all(|b| b.is_ascii_uppercase())
                || word
                    .get(1..)
                    .is_some_and(|rest| rest.bytes().all(|b| b.is_ascii_lowercase())));
        one_word || is_non_ascii_word(word)
    }) || is_encoded_word(password)
}

/// `p@ss;word=42`, `admin=secret1`: words and numbers joined by `;`, `=`, `,`, `&`, `+`
/// or `|`, as a document writes a password with separators in it to show they are
/// escaped. Two parts or more, none empty (so base64 padding is no separator), each a
/// short number or a dictionary word of [`MIN_WORD`] letters or more, plain or
/// respelled (`p@ss`), and one at least a word. Random values hold a run of four
/// letters or more that is an identifier word between such separators rarely: the test
/// counts at most the numbers it states over 200,000 values per alphabet and length.
pub(super) fn is_sample_phrase(value: &str) -> bool {
    let mut words = 0;
    let mut parts = 0;
    for part in value.split([';', '=', ',', '&', '+', '|']) {
        parts += 1;
        if is_short_number(part) {
            continue;
        }
        let lower = part.to_ascii_lowercase();
        let plain = part.len() >= MIN_WORD
            && part
                .get(1..)
                .is_some_and(|rest| rest.bytes().all(|b| b.is_ascii_lowercase()))
            && part.bytes().all(|b| b.is_ascii_alphabetic())
            && is_identifier_word(&lower);
        if !(plain || is_respelled_word(part)) {
            return false;
        }
        words += 1;
    }
    parts >= 2 && words >= 1
}

/// A documentation example's password: at most 12 letters, one word written in one
/// case (`pass`, `Secret`, `PASS`) or lower-case words separated by spaces, `:` or `#`
/// (`pass pass`, `bar:baz`); or one or two lower-case words with punctuation and no
/// digits, 4 to 14 letters (`apples/oranges`, `some_pass`, `pass!@#$%^&*()_+`), the way
/// URL parsers' tests and database docs write a password. "One case" matters: letters
/// in any mix of cases took a quarter of random 8-character base62 passwords (48,766 of
/// 200,000) and an eighth at 12; in one case, about 3 in 1,000 at 8 characters (563 of
/// 200,000 base62, 734 of the password alphabet), 1 in 10,000 at 12 (16 and 17), and
/// none at 16. A generated password holds digits or mixed capitals by rule; a random
/// one of letters alone is the false negative this leaves.
pub(super) fn is_plain_words(password: &str) -> bool {
    let letters = password.bytes().filter(u8::is_ascii_alphabetic).count();
    let one_word = password.bytes().all(|b| b.is_ascii_alphabetic())
        && (password.bytes().all(|b| b.is_ascii_uppercase())
            || password
                .get(1..)
                .is_some_and(|rest| rest.bytes().all(|b| b.is_ascii_lowercase())));
    let one_case_words = letters <= 12
        && (one_word
            || password
                .bytes()
                .all(|b| b.is_ascii_lowercase() || matches!(b, b' ' | b':' | b'#')));
    let words = password
        .split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| !w.is_empty())
        .count();
    // The words must read as words, three in four of their letter pairs common
    // (`secret_words::loosely_words`): without that, a random password of lower-case
    // letters and `!` passed (`lfdjiax!vgktbk`, secrets_corpus seed 1795614668656831359).
    let joined_words = (1..=2).contains(&words)
        && (4..=14).contains(&letters)
        && password
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_punctuation())
        && loosely_words(
            password
                .split(|c: char| !c.is_ascii_alphabetic())
                .filter(|w| !w.is_empty()),
            0.75,
        );
    one_case_words || joined_words
}

/// `withPwd`, `secretKey`, `AdminUser`: two or more camel humps of letters, each a
/// common identifier word of three letters or more: a name typed as a sample, which
/// the one-case rule of [`is_plain_words`] turns down. Random letters fall into such
/// humps almost never (over the test's 1,200,000 random values it adds none).
fn is_camel_words(password: &str) -> bool {
    if !password.bytes().all(|b| b.is_ascii_alphabetic()) {
        return false;
    }
    let mut humps = Vec::new();
    let mut start = 0;
    for (i, b) in password.bytes().enumerate() {
        if i > start && b.is_ascii_uppercase() {
            humps.push(&password[start..i]);
            start = i;
        }
    }
    humps.push(&password[start..]);
    humps.len() >= 2
        && humps.iter().all(|h| {
            h.len() >= 3
                && h.bytes().skip(1).all(|b| b.is_ascii_lowercase())
                && is_identifier_word(&h.to_ascii_lowercase())
        })
}

/// `123123`, `5555`: at most [`MAX_SAMPLE_DIGITS`] digits and nothing else.
fn is_short_number(password: &str) -> bool {
    !password.is_empty()
        && password.len() <= MAX_SAMPLE_DIGITS
        && password.bytes().all(|b| b.is_ascii_digit())
}

/// `SAS_KEY`, `DB_PASSWD`: capital words of two letters or more joined by `_` that read
/// as an identifier (`secret_words::is_code_like`): the name of the value in a
/// template, not the value. A random value is all capitals and underscores in that
/// order rarely, and reads as words more rarely still.
fn is_constant_name(password: &str) -> bool {
    let mut parts = 0;
    for part in password.split('_') {
        if part.len() < 2 || !part.bytes().all(|b| b.is_ascii_uppercase()) {
            return false;
        }
        parts += 1;
    }
    parts >= 2 && is_code_like(password)
}

/// `p@ss`, `s3cret`, `P@ssw0rd1`, `admin123`, `Root!`: a dictionary word of
/// [`MIN_WORD`] letters or more (the identifier words of `secret_words`), all lower
/// case after an optional capital, with look-alike digits or symbols for some letters
/// (`@` or `4` for a, `3` for e, `1` or `!` for i, `0` for o, `$` or `5` for s, `7`
/// for t), then up to [`MAX_SUFFIX`] digits or `!`. The word must be respelled or
/// followed by something: a plain word alone is `is_plain_words`'s.
fn is_respelled_word(password: &str) -> bool {
    let b = password.as_bytes();
    let suffix = b
        .iter()
        .rev()
        .take_while(|&&c| c.is_ascii_digit() || c == b'!')
        .count()
        .min(MAX_SUFFIX);
    // Try the longest suffix first, then give digits back to the word (`r00t`).
    (0..=suffix).rev().any(|s| {
        let core = &b[..b.len() - s];
        let mut word = String::with_capacity(core.len());
        let mut respelled = 0;
        for (i, &c) in core.iter().enumerate() {
            let letter = match c {
                b'a'..=b'z' => c,
                b'A'..=b'Z' if i == 0 => c.to_ascii_lowercase(),
                b'@' | b'4' | b'3' | b'1' | b'!' | b'0' | b'$' | b'5' | b'7' => {
                    super::secret_marker::unrespelled(c)
                }
                _ => return false,
            };
            respelled += usize::from(letter != c.to_ascii_lowercase());
            word.push(char::from(letter));
        }
        (respelled > 0 || s > 0) && word.len() >= MIN_WORD && is_identifier_word(&word)
    })
}

/// Whether a token is mostly one character: nine in ten of its bytes or more the
/// same (`AAAAAAAAAAAAAAAAAAAAAAAA…` as a Twitter bearer token, `ghp_000…0`). A buffer of
/// zero bytes in base64, or a mask, not an issued token, which is random after its
/// prefix. Tokens shorter than 16 bytes are not judged.
pub(super) fn is_filler(token: &[u8]) -> bool {
    token.len() >= 16 && commonest_byte_count(token) * 10 >= token.len() * 9
}

/// How many times `token`'s most frequent byte occurs in it.
pub(super) fn commonest_byte_count(token: &[u8]) -> usize {
    let mut counts = [0usize; 256];
    for &b in token {
        counts[usize::from(b)] += 1;
    }
    counts.iter().copied().max().unwrap_or(0)
}

#[cfg(test)]
#[path = "secret_placeholder_tests.rs"]
mod tests;
