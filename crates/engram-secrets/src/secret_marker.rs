//! Keyword values that the text around them, or their own spelling, shows to be
//! markers, prefixes, samples or names (held-out-18's
//! classes: an auth SaaS's JWT category markers and token-prefix lists, samples in
//! docs, fixtures and tests, names and code).
//!
//! - A short value under a name that says it stands for a kind of token
//!   (`JWT_CATEGORY_SESSION_TOKEN = "cl_B7d4PD111AAA"`) is a public marker a token
//!   carries to say what it is, not a token: `[[marker]]` rows of `allowlist.toml`.
//! - [`is_prefix_list`]: a list of token prefixes (`"org_a_oauth_access_",
//!   "org_a_api_key_"`): lower-case words each ending in the separator a token's body
//!   follows.
//! - [`holds_respelled_credential`]: a value that spells a credential's name with
//!   look-alike symbols (`MySekretPa$$word`, `p@ssw0rdFor2FA`): a sample typed to look
//!   like a password.
//! - [`is_camel_sentence`]: a sentence written in camel humps (`iWishIWereCoolEnough
//!   ForRoot!`), one-letter words (`I`, `a`) among them: a sample password.
//! - [`is_sequence_sample`]: runs of the alphabet, the digits or the shifted digits
//!   (`AbcDef123!@#`): a password typed along the keyboard.
//! - [`is_file_name`]: a file's name (`Ansible.Become.cs`): words joined by dots and a
//!   source or data file's extension.
//! - [`is_module_constant`]: an unquoted class constant behind its module
//!   (`hmacmd5.HmacMd5.SERVICE_ID`).
//! - [`is_short_byte_list`]: a list of fewer than eight byte values (`"[62,70,27,163]"`,
//!   a too-short key's test): fewer than 64 bits, no key.
//! - [`is_keyword_type_name`]: a fixed-length keyword token (`confluence…`, 24
//!   characters) cut from a longer type's name in camel words
//!   (`"confluence_options", ConfluenceConnectorOptions`).
//!
//! - [`says_wrong`]: camel words one of which says the value does not work
//!   (`password=ObviouslyWrong`, a login failure's test).
//! - [`is_dotted_path`]: a dotted path of names (`allauth.webauthn.forms.signupForm`).
//! - [`without_trailing_escape`]: a connection string's password judged without the
//!   string literal's escape after it (`"password=plaintext\n"`); a counting run there
//!   (`password=123456`) is a sample, as after a keyword.
//!
//! A value in a mock object (`mockTokens = { api_key: "ak_LCWG…" }`) is not turned down
//! for its object's name: a random value of 32 characters or more after a credential
//! keyword is always caught, and a mocked response may hold a real one.
//!
//! Each judgement only turns a value down; none of them may ever make a secret of
//! anything, and each needs its own shape or context, so a random value takes none of
//! them (`secret_marker_tests.rs` counts how often).

use super::secret_code::is_camel_words;
use super::secret_composed::lettered_humps;
use super::secret_named::is_worded_token_body;
use super::secret_words::{is_identifier_word, loosely_words};

/// Credentials' names, as a sample respells them.
const CREDENTIAL_WORDS: &[&str] = &["password", "passwd", "passphrase", "secret"];

/// Short words a sentence in camel humps is made of besides the identifier words.
const SHORT_WORDS: &[&str] = &[
    "i", "a", "my", "me", "is", "in", "on", "to", "of", "it", "we", "be", "go", "up", "an", "at",
    "by", "do", "no", "so", "or", "us", "am", "he",
];

/// Extensions of source and data files, the last part of [`is_file_name`]'s value.
const FILE_EXTENSIONS: &[&str] = &[
    "cs", "ps1", "psm1", "psd1", "py", "js", "mjs", "cjs", "ts", "rs", "go", "java", "rb", "php",
    "json", "yml", "yaml", "toml", "xml", "txt", "md", "rst", "sh", "c", "h", "cpp", "hpp",
];

/// The shifted digits of a US keyboard, in the order a sample types them.
const SHIFTED_DIGITS: &[u8] = b"!@#$%^&*()";

/// Lower-cased words of an identifier: split at `_`, `-`, `.` and camel humps.
pub(super) fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_ascii_alphanumeric() {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower && !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        word.push(c.to_ascii_lowercase());
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// A token prefix: lower-case letters and digits in two parts or more joined by `_`,
/// ending in `_` (`org_a_api_key_`).
fn is_prefix(s: &str) -> bool {
    let Some(body) = s.strip_suffix('_') else {
        return false;
    };
    let parts: Vec<&str> = body.split('_').collect();
    parts.len() >= 2
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
        && parts.iter().any(|p| p.len() >= 3 && is_identifier_word(p))
}

/// Whether a name and the value paired with it after a comma are both token prefixes
/// (`"org_a_oauth_access_", "org_a_api_key_"`, a doc comment's list of the prefixes a
/// token is recognised by). A token's body follows its prefix; a list of prefixes
/// holds none.
pub(super) fn is_prefix_list(assigned: &str, value: &str) -> bool {
    is_prefix(assigned) && is_prefix(value)
}

/// The letter a look-alike symbol or digit stands for in a respelled word.
pub(super) fn unrespelled(c: u8) -> u8 {
    match c {
        b'@' | b'4' => b'a',
        b'3' => b'e',
        b'1' | b'!' => b'i',
        b'0' => b'o',
        b'$' | b'5' => b's',
        b'7' => b't',
        _ => c.to_ascii_lowercase(),
    }
}

/// Whether `value` spells one of [`CREDENTIAL_WORDS`] with at least one look-alike
/// symbol or digit (`Pa$$word`, `p@ssw0rd`, `s3cret`): the word a sample password is
/// built around, typed to look like a password. A random value holds such a spelling
/// of eight or six letters about never; a value spelling the word plainly
/// (`mypasswordXk9…`) is not judged here.
pub(super) fn holds_respelled_credential(value: &str) -> bool {
    let plain: Vec<u8> = value.bytes().map(unrespelled).collect();
    let raw = value.as_bytes();
    CREDENTIAL_WORDS.iter().any(|w| {
        let w = w.as_bytes();
        plain.windows(w.len()).enumerate().any(|(at, win)| {
            win == w
                && raw[at..at + w.len()]
                    .iter()
                    .any(|b| !b.is_ascii_alphabetic())
        })
    })
}

/// Whether `value` is a sentence in camel humps: after up to three closing punctuation
/// marks and four digits, letters only, four humps or more (the first may be lower
/// case; `I` and `A` may stand alone), each an identifier word of three letters or more
/// or a short word (`i`, `a`, `my`, `to`), two of them identifier words of four or
/// more. `iWishIWereCoolEnoughForRoot!`. A random value splits into words so about
/// never (`secret_marker_tests.rs` counts).
pub(super) fn is_camel_sentence(value: &str) -> bool {
    let Some(humps) = lettered_humps(value) else {
        return false;
    };
    let long = humps
        .iter()
        .filter(|h| h.len() >= 4 && is_identifier_word(&h.to_ascii_lowercase()))
        .count();
    humps.len() >= 4
        && long >= 2
        && humps.iter().all(|h| {
            let lower = h.to_ascii_lowercase();
            h.bytes().skip(1).all(|c| c.is_ascii_lowercase())
                && ((h.len() >= 3 && is_identifier_word(&lower))
                    || SHORT_WORDS.contains(&lower.as_str()))
        })
}

/// Whether `c` follows `prev` in one of the sequences a sample password is typed
/// along: the alphabet (case aside), the digits, the shifted digits.
fn follows(prev: u8, c: u8) -> bool {
    if prev.is_ascii_alphabetic() && c.is_ascii_alphabetic() {
        return c.to_ascii_lowercase() == prev.to_ascii_lowercase() + 1;
    }
    if prev.is_ascii_digit() && c.is_ascii_digit() {
        return c == prev + 1;
    }
    SHIFTED_DIGITS.windows(2).any(|w| w[0] == prev && w[1] == c)
}

/// Whether `value` is two runs or more of three characters or more each, every run a
/// stretch of the alphabet, the digits or the shifted digits (`AbcDef123!@#`,
/// `abc123`, `Xyz789!@#`): a password typed along the keyboard, a sample's. A random
/// value of six characters or more falls into such runs about never.
pub(super) fn is_sequence_sample(value: &str) -> bool {
    let b = value.as_bytes();
    if b.len() < 6 {
        return false;
    }
    let mut runs = 1;
    let mut run = 1;
    for w in b.windows(2) {
        if follows(w[0], w[1]) {
            run += 1;
        } else {
            if run < 3 {
                return false;
            }
            runs += 1;
            run = 1;
        }
    }
    run >= 3 && runs >= 2
}

/// Whether `value` is a file's name: two parts or more joined by `.`, the last one of
/// [`FILE_EXTENSIONS`], each other part letters (camel humps allowed), `_` and `-`, the
/// first starting with a letter, the stem two words or more (parted by `.`, `_` or
/// `-`) in camel humps reading as words
/// (`secret_words::loosely_words`), one of them an identifier word of four letters or
/// more (`Ansible.Become.cs`, `access_token.json`). A token
/// is no such name: base64 has no `.`, a dotted token's parts hold digits, and random
/// letters do not read as words (`eyJhbGciOi.eyJzdWIi.json` does not).
pub(super) fn is_file_name(value: &str) -> bool {
    let Some((stem, ext)) = value.rsplit_once('.') else {
        return false;
    };
    FILE_EXTENSIONS.contains(&ext)
        && stem.starts_with(|c: char| c.is_ascii_alphabetic())
        && stem.split('.').all(|p| {
            p.len() >= 2
                && p.bytes()
                    .all(|b| b.is_ascii_alphabetic() || b == b'_' || b == b'-')
        })
        && {
            let parts: Vec<&str> = stem.split(['.', '_', '-']).collect();
            let humps: Option<Vec<Vec<&str>>> = parts.iter().map(|p| camel_humps(p)).collect();
            humps.is_some_and(|humps| {
                let words: Vec<&str> = humps.into_iter().flatten().collect();
                parts.len() >= 2
                    && loosely_words(words.iter().copied(), 0.5)
                    && words
                        .iter()
                        .any(|w| w.len() >= 4 && is_identifier_word(&w.to_ascii_lowercase()))
            })
        }
}

/// Whether `value`, unquoted, is a class's constant behind its module: lower-case
/// module names (letters, digits, `_`), a class (a capital, then letters and digits),
/// and a constant (capitals, digits and `_`, four characters or more or holding `_`),
/// joined by `.` (`hmacmd5.HmacMd5.SERVICE_ID`). A random unquoted value has two dots
/// with such cases on either side about never.
pub(super) fn is_module_constant(value: &str) -> bool {
    let parts: Vec<&str> = value.split('.').collect();
    let n = parts.len();
    if n < 3 {
        return false;
    }
    let module = |p: &&str| {
        p.starts_with(|c: char| c.is_ascii_lowercase())
            && p.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    };
    let class = parts[n - 2];
    let constant = parts[n - 1];
    parts[..n - 2].iter().all(module)
        && class.starts_with(|c: char| c.is_ascii_uppercase())
        && class.bytes().any(|b| b.is_ascii_lowercase())
        && class.bytes().all(|b| b.is_ascii_alphanumeric())
        && constant.starts_with(|c: char| c.is_ascii_uppercase())
        && constant
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        && (constant.len() >= 4 || constant.contains('_'))
}

/// Whether `value` is a bracketed list of fewer than eight numbers from 0 to 255
/// (`[62,70,27,163]`, a key too short on purpose in a length test): fewer than 64 bits,
/// which no key or token is. A key's 32 bytes written so are still judged.
pub(super) fn is_short_byte_list(value: &str) -> bool {
    let Some(inner) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) else {
        return false;
    };
    let items: Vec<&str> = inner.split(',').map(str::trim).collect();
    items.len() < 8
        && items.iter().all(|i| {
            !i.is_empty()
                && i.len() <= 3
                && i.bytes().all(|b| b.is_ascii_digit())
                && i.parse::<u16>().is_ok_and(|n| n <= 255)
        })
}

/// Whether a keyword token's match (`confluence_options", ConfluenceConnectorOptions`,
/// Atlassian's rule: the keyword, an assignment, 24 letters and digits) ends in a run
/// of letters and digits that is a type's name in camel words, the keyword counting as
/// one (`secret_code::is_camel_words`): the regex took a fixed length out of a longer
/// name. An issued token's letters fall into dictionary words about never.
pub(super) fn is_keyword_type_name(token: &[u8]) -> bool {
    let Ok(token) = std::str::from_utf8(token) else {
        return false;
    };
    let keyword_len = token.bytes().take_while(u8::is_ascii_alphabetic).count();
    let keyword = &token[..keyword_len];
    let Some(at) = token.rfind(|c: char| !c.is_ascii_alphanumeric()) else {
        return false;
    };
    let run = &token[at + 1..];
    keyword_len >= 4 && run.len() >= 24 && is_camel_words(run, keyword)
}

/// Whether a token rule's match is made of words: its body after its prefix
/// (`secret_named::is_worded_token_body`) or, its end a
/// type's name ([`is_keyword_type_name`]).
pub(super) fn is_worded_token(token: &[u8]) -> bool {
    is_worded_token_body(token) || is_keyword_type_name(token)
}

/// Words a value says it does not work with: a failure test's password.
const WRONG_WORDS: &[&str] = &[
    "wrong",
    "incorrect",
    "invalid",
    "bad",
    "bogus",
    "expired",
    "revoked",
];

/// Camel humps of a run of letters: a leading lower-case word, then a capital and
/// lower-case letters each; `None` for anything else (digits, symbols, acronyms).
fn camel_humps(value: &str) -> Option<Vec<&str>> {
    let b = value.as_bytes();
    if b.is_empty() || !b.iter().all(u8::is_ascii_alphabetic) {
        return None;
    }
    let mut humps = Vec::new();
    let mut start = 0;
    for i in 1..=b.len() {
        if i == b.len() || b[i].is_ascii_uppercase() {
            let hump = &value[start..i];
            if hump.len() < 2 || !hump.bytes().skip(1).all(|c| c.is_ascii_lowercase()) {
                return None;
            }
            humps.push(hump);
            start = i;
        }
    }
    Some(humps)
}

/// Whether `value` is two to four camel humps of words, one of them saying the value
/// does not work (`ObviouslyWrong`, `BadPassword`, `invalidSecret`): a failure test's
/// value, which only a wrong credential can be. Every other hump is an identifier word
/// of three letters or more or an adverb, five letters or more ending in `ly` with a
/// vowel before it (`Obviously`); random letters after such a word spell that about
/// never (`secret_marker_tests.rs` counts).
pub(super) fn says_wrong(value: &str) -> bool {
    let Some(humps) = camel_humps(value) else {
        return false;
    };
    let wrong = |h: &&str| WRONG_WORDS.contains(&h.to_ascii_lowercase().as_str());
    (2..=4).contains(&humps.len())
        && humps.iter().any(wrong)
        && humps.iter().filter(|h| !wrong(h)).all(|h| {
            let lower = h.to_ascii_lowercase();
            (h.len() >= 3 && is_identifier_word(&lower))
                || (h.len() >= 5
                    && lower.ends_with("ly")
                    && lower[..h.len() - 2].contains(['a', 'e', 'i', 'o', 'u']))
        })
}

/// Whether `value` is a dotted path of names: three parts or more joined by `.`, each
/// letters in camel humps, the first lower case, all of them reading as words
/// (`secret_words::loosely_words`) and two parts of four letters or more identifier
/// words (`allauth.webauthn.forms.signupForm`, a module's function named in an HTML
/// attribute). Base64 has no `.`, and random letters between dots read as words about
/// never.
pub(super) fn is_dotted_path(value: &str) -> bool {
    let parts: Vec<&str> = value.split('.').collect();
    if parts.len() < 3 || !parts[0].starts_with(|c: char| c.is_ascii_lowercase()) {
        return false;
    }
    let mut humps = Vec::new();
    for part in &parts {
        let Some(h) = camel_humps(part) else {
            return false;
        };
        humps.extend(h);
    }
    let words = humps
        .iter()
        .filter(|h| h.len() >= 4 && is_identifier_word(&h.to_ascii_lowercase()))
        .count();
    words >= 2 && loosely_words(humps.iter().copied(), 0.5)
}

/// The value of a connection string's `password=` as written in a string literal,
/// without the escape that ends it (`plaintext\n` in `"password=plaintext\n"`): a line
/// break in the literal, not part of the password.
pub(super) fn without_trailing_escape(value: &str) -> &str {
    for escape in ["\\n", "\\r", "\\t"] {
        if let Some(v) = value.strip_suffix(escape) {
            return without_trailing_escape(v);
        }
    }
    value
}
