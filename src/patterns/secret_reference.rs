//! Values that stand for a credential instead of being one: placeholders (`${TOKEN}`,
//! `%s`, `<password>`, `your-api-key`, masks such as `sk-xxxx…xxxx`) and references to
//! where the value comes from (`process.env.TOKEN`, `os.environ[…]`, `vault:…`).
//!
//! It owns the placeholder and reference word lists and how a word must be written to
//! count (as a person writes it: lower case, capitals or capitalised), and nothing
//! about entropy or where the value sits (`secret_value` asks it, as do the framing
//! checks). A random value holds one of these words in those forms about 3 × 62^-5 per
//! position for a five-letter word.

use super::secret_placeholder::holds_keyword_word;

/// Substrings of placeholders and references rather than values: symbols no random
/// value of the common alphabets holds, and words of 5 letters or more, which one
/// holds about once in 10^7 (so `fake`, 4 letters, is not among them).
const PLACEHOLDERS: &[&str] = &[
    "${",
    "{{",
    "}}",
    "%s",
    "%d",
    "%(",
    "{0}",
    "{}",
    "<",
    ">",
    "example",
    "placeholder",
    "changeme",
    "change_me",
    "change-me",
    "redacted",
    "dummy",
    "sample",
    "your_",
    "your-",
    "yourp",
    "yours",
    "insert",
    "replace",
];

/// References to where a value comes from (`process.env.TOKEN`, `os.environ[…]`,
/// `ENV["TOKEN"]`, `vault:…`): counted only at the start of a word and written all in
/// lower or all in upper case: a random value holds `env.` in some mix of cases about
/// once in 100,000, in one of those two forms four times less often.
const REFERENCES: &[&str] = &[
    "process.env",
    "environ",
    "getenv",
    "env[",
    "env.",
    "secrets.",
    "vault:",
];

/// Whether `v` holds the placeholder word `p` (lower case) as a person writes it: all
/// lower case, all capitals, or capitalised (`your_key`, `YOUR_KEY`, `Yours`). Matched
/// in any mix of cases, a random password (`YctDp0RnQ50jBhyouRP5`, the corpus test's
/// seed 1795608266854813693) held `yourp` and was let through; in these three forms a
/// random base62 value holds a given five-letter word about 3 × 62^-5 per position.
fn holds_written_word(v: &str, lower: &str, p: &str) -> bool {
    lower.match_indices(p).any(|(i, _)| {
        let Some(found) = v.get(i..i + p.len()) else {
            return false;
        };
        let rest_lower = found
            .get(1..)
            .is_some_and(|r| !r.bytes().any(|b| b.is_ascii_uppercase()));
        found == p || found == p.to_ascii_uppercase() || rest_lower
    })
}

/// Whether `value` is a placeholder or reference (`${TOKEN}`, `%s`, `<password>`,
/// `os.environ`, `your-api-key`) rather than a literal credential.
pub fn is_placeholder(value: &str) -> bool {
    let v = value.trim();
    if v.is_empty() || v.starts_with(['$', '%', '{', '#', '@', '&', '*']) {
        return true;
    }
    // Masks (`xxxxxxxx`, `****`, `sk-xxxx…xxxx`): mostly x, * or dots. A substring
    // test would also take random values that happen to hold `xXxX`.
    let masked = v
        .bytes()
        .filter(|b| matches!(b, b'x' | b'X' | b'*' | b'.'))
        .count();
    if masked * 2 >= v.len() {
        return true;
    }
    let lower = v.to_ascii_lowercase();
    let at_word_start = |r: &str| {
        lower.match_indices(r).any(|(i, _)| {
            let written = &v.as_bytes()[i..i + r.len()];
            let one_case = written == r.as_bytes()
                || written
                    .iter()
                    .zip(r.bytes())
                    .all(|(w, l)| *w == l.to_ascii_uppercase());
            one_case && (i == 0 || !v.as_bytes()[i - 1].is_ascii_alphanumeric())
        })
    };
    // `(whatever)`, `[password]`: a word in brackets stands for the value.
    let bracketed_word = v.len() > 2
        && matches!(
            (v.as_bytes()[0], v.as_bytes()[v.len() - 1]),
            (b'(', b')') | (b'[', b']')
        )
        && v[1..v.len() - 1]
            .bytes()
            .all(|b| b.is_ascii_alphabetic() || matches!(b, b' ' | b'_' | b'-'));
    bracketed_word
        || PLACEHOLDERS
            .iter()
            .any(|p| holds_written_word(v, &lower, p))
        || holds_keyword_word(v)
        || REFERENCES.iter().any(|r| at_word_start(r))
}
