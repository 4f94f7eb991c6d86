//! Keyword values that the text around them shows to be samples or code
//! (held-out-17's classes: PASETO test vectors, documentation samples, names
//! and placeholders).
//!
//! - [`in_known_answer_vector`]: a `token` in a known-answer test vector, the record
//!   that publishes the key the token was made with before it and the payload it holds
//!   after it (`"key": "7071…", "nonce": …, "token": "v4.local.…", "payload": …`; the
//!   PASETO, JOSE and Fernet suites). Whoever reads the record has the key; the key
//!   itself is still judged on its own.
//! - [`is_disowned`]: a value that opens by saying it does not work (`revokedoqsMk5…`,
//!   `invalidht4wd50gk`, `expired…`): a documentation sample that shows a credential's
//!   shape.
//! - [`of_fake_account`]: credentials written beside an account named as made up
//!   (`username="fakebot3"` within a few lines): a sample configuration.
//! - [`is_possessive_name`]: `yourPassphrase`, `myApiKey`: a placeholder in camel case
//!   naming what goes there.
//! - [`closes_message_literal`]: the keyword inside a message string, the quote after it
//!   closing that string and the value concatenation (`throw "wrong hex password: "+h.hex`).
//! - [`is_name_list`]: a pair of lower camel-case names (`"secretSubkeyPackets",
//!   "subkeyPassphrase"`, a source map's `names`).
//!
//! Each judgement only turns a value down; none of them may ever make a secret of
//! anything, and each needs its own context, so a random value takes none of them
//! (`secret_sample_tests.rs` counts how often).

use super::secret_code::is_camel_words;

/// Field names of a test vector's key, quoted as JSON writes them.
const KEY_FIELDS: &[&str] = &[
    "\"key\"",
    "\"secret-key\"",
    "\"public-key\"",
    "\"secret_key\"",
    "\"public_key\"",
    "\"secretKey\"",
    "\"publicKey\"",
];

/// How far before a token its record's key is looked for, and after it its payload.
const RECORD_SPAN: usize = 2048;

/// Words a value opens with to say it does not work.
const DISOWNING: &[&str] = &["revoked", "invalid", "expired"];

/// Words naming an account as made up.
const MADE_UP_ACCOUNT: &[&str] = &["fake", "dummy", "bogus"];

/// Field names of the account credentials belong to.
const ACCOUNT_FIELDS: &[&str] = &["username", "user_name", "user", "login"];

/// Credentials' names, a hump of a name that says what it holds.
const CREDENTIAL_NAMES: &[&str] = &[
    "passphrase",
    "password",
    "passwd",
    "secret",
    "token",
    "credential",
    "credentials",
];

/// How many lines either side of a credential its account is looked for.
const ACCOUNT_LINES: usize = 5;

/// Whether the `token` at `start` sits in a known-answer test vector: a key field
/// (`"key"`, `"secret-key"`, `"public-key"`) in the 2 KiB before it and a `"payload"`
/// field in the 2 KiB after it, with no other `"token"` field between (the record's
/// own fields, not a neighbour's).
pub(super) fn in_known_answer_vector(text: &str, start: usize, name: &str) -> bool {
    if !name.eq_ignore_ascii_case("token") {
        return false;
    }
    let bytes = text.as_bytes();
    let from = start.saturating_sub(RECORD_SPAN);
    let before = &bytes[from..start];
    let before = match rfind(before, b"\"token\"") {
        Some(at) => &before[at + 7..],
        None => before,
    };
    let after_from = (start + 6).min(bytes.len());
    let after = &bytes[after_from..bytes.len().min(after_from + RECORD_SPAN)];
    let after = match find_bytes(after, b"\"token\"") {
        Some(at) => &after[..at],
        None => after,
    };
    KEY_FIELDS
        .iter()
        .any(|field| has_field(before, field.as_bytes()))
        && has_field(after, b"\"payload\"")
}

/// Whether `hay` holds `field` (a quoted name) followed by optional blanks and `:`.
fn has_field(hay: &[u8], field: &[u8]) -> bool {
    let mut rest = hay;
    while let Some(at) = find_bytes(rest, field) {
        let after = &rest[at + field.len()..];
        let blanks = after
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\t'))
            .count();
        if after.get(blanks) == Some(&b':') {
            return true;
        }
        rest = &rest[at + 1..];
    }
    false
}

fn find_bytes(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

/// Whether `word` opens `value` as a person writes it: lower case, capitalised or all
/// capitals (a random value's mix of cases does not count).
fn opens_with_written(value: &str, word: &str) -> bool {
    let Some(head) = value.get(..word.len()) else {
        return false;
    };
    let capitalised = format!("{}{}", word[..1].to_ascii_uppercase(), &word[1..]);
    head == word || head == word.to_ascii_uppercase() || head == capitalised
}

/// Whether `value` opens with a word saying it does not work (`revoked`, `invalid`,
/// `expired`) and goes on for four characters or more: a sample of a credential's shape.
/// A random base62 value opens with one of them about 3 × 62^-7 of the time.
pub(super) fn is_disowned(value: &str) -> bool {
    DISOWNING
        .iter()
        .any(|w| value.len() >= w.len() + 4 && opens_with_written(value, w))
}

/// Whether, within five lines either side of the match at `start..end`, a user name
/// field (`username=`, `"user":`, `login:`) is assigned an account named as made up
/// (`fakebot3`, `dummy_user`, `BogusUser`): the credentials are that sample account's.
pub(super) fn of_fake_account(text: &str, start: usize, end: usize) -> bool {
    let bytes = text.as_bytes();
    let mut from = start.min(bytes.len());
    for _ in 0..=ACCOUNT_LINES {
        match bytes[..from].iter().rposition(|&b| b == b'\n') {
            Some(at) => from = at,
            None => {
                from = 0;
                break;
            }
        }
    }
    let mut to = end.min(bytes.len());
    for _ in 0..=ACCOUNT_LINES {
        match bytes[to..].iter().position(|&b| b == b'\n') {
            Some(at) => to += at + 1,
            None => {
                to = bytes.len();
                break;
            }
        }
    }
    let window = String::from_utf8_lossy(&bytes[from..to]);
    window.lines().any(names_made_up_account)
}

/// Whether one line assigns a user name field an account named as made up.
fn names_made_up_account(line: &str) -> bool {
    let line = line.trim_start_matches([' ', '\t', '"', '\'', '-', ',', '(', '{']);
    let lower = line.to_ascii_lowercase();
    ACCOUNT_FIELDS.iter().any(|field| {
        let Some(rest) = lower.strip_prefix(field) else {
            return false;
        };
        let rest = rest.trim_start_matches([' ', '\t', '"', '\'']);
        let Some(rest) = rest.strip_prefix(['=', ':']) else {
            return false;
        };
        let value = rest.trim_start_matches([' ', '\t', '"', '\'']);
        let at = line.len() - value.len();
        MADE_UP_ACCOUNT
            .iter()
            .any(|w| line.get(at..).is_some_and(|v| opens_with_written(v, w)))
    })
}

/// Whether `value` is `your` or `my` followed by camel humps that name what goes there:
/// the assigned name itself (`yourPassphrase` for `passphrase`) or identifier words
/// (`yourApiKey`, `myClientSecret`).
pub(super) fn is_possessive_name(value: &str, name: &str) -> bool {
    ["your", "Your", "my", "My"].iter().any(|p| {
        let Some(rest) = value.strip_prefix(p) else {
            return false;
        };
        rest.starts_with(|c: char| c.is_ascii_uppercase())
            && (rest.eq_ignore_ascii_case(name) || is_camel_words(rest, name))
    })
}

/// Whether the keyword at `start` sits inside a message string whose closing quote is
/// `quote`, the byte before `value`, and `value` is concatenation (`+h.hex}…`,
/// `+ err.message`): the quote opening the message is at most 80 bytes before the
/// keyword with only words, blanks and light punctuation between (a space among them),
/// and the value is `+`, an identifier and code punctuation or a blank.
pub(super) fn closes_message_literal(text: &str, start: usize, value: &str, quote: u8) -> bool {
    if !matches!(quote, b'"' | b'\'' | b'`') {
        return false;
    }
    let Some(rest) = value.strip_prefix('+') else {
        return false;
    };
    let rest = rest.trim_start_matches(' ');
    let ident = rest
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$'))
        .count();
    if ident == 0 || rest.as_bytes()[0].is_ascii_digit() {
        return false;
    }
    let after_ident = rest.as_bytes().get(ident);
    if !matches!(
        after_ident,
        None | Some(b'.' | b'(' | b')' | b'}' | b';' | b',' | b'+' | b' ' | b'[')
    ) {
        return false;
    }
    let bytes = text.as_bytes();
    let from = start.saturating_sub(80);
    let Some(open) = bytes[from..start].iter().rposition(|&b| b == quote) else {
        return false;
    };
    let message = &bytes[from + open + 1..start];
    message.contains(&b' ')
        && message.iter().all(|&b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b' ' | b':' | b',' | b'.' | b'-' | b'_' | b'!' | b'?' | b'(' | b')'
                )
        })
}

/// Whether `value`, paired with a name by a comma, is itself a lower camel-case name
/// (`subkeyPassphrase` after `"secretSubkeyPackets",`): a list of names (a source map's
/// `names`, an export list), not a name and its value. Only letters, humps of two
/// letters or more, and either every hump a common identifier word or one of them a
/// credential's name (`Passphrase`, `Secret`): a name that says what it holds.
pub(super) fn is_name_list(value: &str, name: &str) -> bool {
    let b = value.as_bytes();
    if b.is_empty() || !b[0].is_ascii_lowercase() || !b.iter().all(u8::is_ascii_alphabetic) {
        return false;
    }
    let mut humps = Vec::new();
    let mut start = 0;
    for i in 1..=b.len() {
        if i == b.len() || b[i].is_ascii_uppercase() {
            humps.push(value[start..i].to_ascii_lowercase());
            start = i;
        }
    }
    if humps.len() < 2 || humps.iter().any(|h| h.len() < 2) {
        return false;
    }
    let capitalised = format!("{}{}", value[..1].to_ascii_uppercase(), &value[1..]);
    is_camel_words(&capitalised, name)
        || humps[1..]
            .iter()
            .any(|h| CREDENTIAL_NAMES.contains(&h.as_str()))
}
