//! Is this assigned value a secret? The judgement the redactor applies after a
//! keyword rule (`password = …`, `token: …`, `Bearer …`) has matched, where the regex
//! alone cannot tell a credential from a variable name, a placeholder or a hash.
//!
//! It owns the Shannon-entropy threshold and the order of the judgement; the shapes
//! that look random but are not secrets (UUIDs, lockfile integrity strings, hashes,
//! base64 of readable text) are `secret_shape`'s, the placeholders and references
//! (`${TOKEN}`, `process.env.TOKEN`) `secret_reference`'s. It never sees more than one
//! matched span and never fails: any input gives a yes or a no.
//!
//! ## The threshold
//!
//! A value is a secret when it is at least [`MIN_LEN`] = 12 characters long, holds no
//! whitespace, is no placeholder, none of the shapes below, does not read as code
//! (`secret_words::is_code_like`: identifiers, paths, words) and has no made-up
//! ascending run (`bcdefghij`), and its Shannon entropy reaches [`min_entropy`]:
//! 3.0 bits per character from 20 characters, 0.7 × log2(length) below (2.5 at 12),
//! since a short value cannot hold many distinct characters. Defaults such as
//! `changeme` (8 characters) or `password123` are under the length or read as words;
//! a random value of 14 characters or more is caught all but about once in 50,000
//! (it reads as words or repeats itself too much), and one of 20 or more always. All-letter
//! random values count too: a random 14-character value of letters has no digit one
//! time in twelve. gitleaks' generic rule uses an entropy of 3.5 with a minimum of 10
//! characters; the shape test here lets the entropy bar sit lower, which is the side
//! to err on when the alternative is writing a credential to disk. What it misses:
//! passphrases with spaces, short or word-like passwords (`Passw0rd1`) — the
//! specific rules and the reviewer are there for those.

/// Bits per character a value of 20 characters or more needs to count as random; see
/// the module comment.
pub const MIN_ENTROPY: f64 = 3.0;

/// Shortest value that can count as a secret.
pub const MIN_LEN: usize = 12;

pub use super::secret_reference::is_placeholder;
pub use super::secret_shape::{decode_base64, is_known_shape};
use super::secret_views::percent_decode;
use super::secret_words::{is_code_like, is_path, loosely_words};

/// Shannon entropy of `s` in bits per byte.
pub fn entropy(s: &str) -> f64 {
    let mut counts = [0u32; 256];
    for &b in s.as_bytes() {
        counts[b as usize] += 1;
    }
    let n = s.len() as f64;
    if n == 0.0 {
        return 0.0;
    }
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum()
}

/// Identifier words that say the value is not a credential (`token_type`,
/// `secret_name`, `password_hash`, `author`): checked on the keyword's identifier.
const NOT_SECRET_NAMES: &[&str] = &[
    "hash",
    "sha",
    "digest",
    "checksum",
    "integrity",
    "fingerprint",
    "author",
    "tokeniz",
    "url",
    "uri",
    "endpoint",
    "path",
    "file",
    "name",
    "type",
    "_id",
    // A header's or a field's `-id` (`auth-client-id`, an OAuth app's public client
    // id in a recorded request), as `_id` above.
    "-id",
    // A globally unique id names an account or an object (`auth_yahoo_guid`).
    "guid",
    "uuid",
    "size",
    "length",
    "count",
    "expir",
    "ttl",
    "version",
    "format",
    "prefix",
    "field",
    "label",
    "policy",
    "required",
    "enabled",
    "header",
    "model",
    "backend",
    "class",
    // Python's class-valued attributes (`oauth2_client_cls = StarletteOAuth2App`).
    "_cls",
    "handler",
    // OAuth's per-request values (`oauth_nonce`, `oauth_signature`) and names of
    // mechanisms (`authSchemes`): public on the wire or not values at all.
    "nonce",
    "signature",
    "scheme",
    "mechanism",
];

/// Words that, right before the keyword, say the `token` is not a credential: a
/// pagination cursor (`NextContinuationToken`, `page_token`), a lexer's token
/// (`peek_token`), a cancellation token, or an action's name (`AcquireToken`).
const NOT_SECRET_QUALIFIERS: &[&str] = &[
    "next",
    "continuation",
    "pagination",
    "page",
    "cursor",
    "resume",
    "cancellation",
    "cancel",
    "lexer",
    "parser",
    "peek",
    "prev",
    "previous",
    "acquire",
    // OData's and Azure's `$skiptoken`, a page's position in a listing.
    "skip",
];

/// Whether the identifier word right before a keyword (`Continuation` in
/// `NextContinuationToken`, `page` in `page_token`) says the value is no credential.
/// `before` is the text that precedes the keyword.
pub fn qualifier_says_not_secret(before: &str) -> bool {
    let b = before.as_bytes();
    let mut end = b.len();
    while end > 0 && matches!(b[end - 1], b'_' | b'-' | b'.') {
        end -= 1;
    }
    let mut start = end;
    while start > 0 && b[start - 1].is_ascii_lowercase() {
        start -= 1;
    }
    // A camel hump's capital, or a run of capitals (`PAGE_TOKEN`).
    if start > 0 && b[start - 1].is_ascii_uppercase() {
        start -= 1;
        if start == end - 1 {
            while start > 0 && b[start - 1].is_ascii_uppercase() {
                start -= 1;
            }
        }
    }
    let word = before[start..end].to_ascii_lowercase();
    NOT_SECRET_QUALIFIERS.contains(&word.as_str())
}

/// Whether a keyword rule's match is a secret. `ident` is the identifier holding the
/// keyword (`DB_PASSWORD`, `client_secret`), `value` the assigned value without its
/// quotes, `quoted` whether it was quoted, `next` the character after the match.
pub fn looks_secret(ident: &str, value: &str, quoted: bool, next: Option<char>) -> bool {
    let value = value.trim();
    let ident = ident.to_ascii_lowercase();
    if NOT_SECRET_NAMES.iter().any(|w| ident.contains(w)) {
        return false;
    }
    // `token = getToken()`, `secret = cfg.secret[...]`, `password = user.password`:
    // code that computes the value, not a literal.
    if !quoted && matches!(next, Some('(' | '[' | '.')) {
        return false;
    }
    // Words joined by `_` or `-` (`0002_alter_user_email`, `new_password1`,
    // `Invalid-Token`): names, migrations and labels, not random values.
    if is_wordy(value) || is_cli_flag(value) {
        return false;
    }
    // An unquoted value holding `=` is code (`cacheable=True`), not a literal; base64
    // padding at its end is not. Optional chaining (`config?.token`, `a ?? b`) is
    // code too.
    if !quoted
        && (value.trim_end_matches('=').contains('=')
            || value.contains("?.")
            || value.contains("??"))
    {
        return false;
    }
    if value.len() < MIN_LEN
        || value.chars().any(char::is_whitespace)
        || is_placeholder(value)
        || is_url(value)
        || is_known_shape(value)
    {
        return false;
    }
    // Identifiers, paths and words (`token::Brace`, `MASKED_TEST_SECRET2`,
    // `auth_tests.CustomUser`, `refreshTokenValue`, `~/.config/app/tokens.json`,
    // `/srv/build/svn/curio`): code, whatever their characters. (A leading `/` alone says nothing: one random base64
    // value in 64 starts with it.)
    if value.contains("::") || is_code_like(value) || is_path(value) || has_sequential_run(value) {
        return false;
    }
    // `"[A-Za-z0-9._~+/-]+=*"` (a regex of what tokens look like), `IQote///test` (a
    // test fixture's value), `` `auth:sha-${alg}` `` cut at the interpolation: not
    // credentials.
    if is_regex_class(value) || has_test_word(value) || is_interpolated(value, next) {
        return false;
    }
    entropy(value) >= min_entropy(value.len())
}

/// Whether `value` is a URL, directly or behind percent escapes (`mongodb%3A%2F%2Fhost`).
fn is_url(value: &str) -> bool {
    percent_decode(value).map_or(value.contains("://"), |v| v.text.contains("://"))
}

/// Whether `value` holds a regex character class (`[A-Za-z0-9_]`, `[^a-f]`): brackets
/// around class characters (letters, digits, `_ . ~ + / \ ^ -`) and a range from
/// `a`, `A` or `0` to a later character of the same kind. No token alphabet holds
/// `[`; a random password holds such a class less than once in 10^5. Also
/// a class opened by two such ranges whatever follows, closed or not
/// (`[a-zA-Z0-9!#$%&\'…`, HTTP's token characters, cut at its first escape): `[` and
/// two ranges in a row are seven set characters, about never in a random value.
fn is_regex_class(value: &str) -> bool {
    let Some(open) = value.find('[') else {
        return false;
    };
    let range = |w: &[u8]| {
        w[1] == b'-'
            && match w[0] {
                b'a' => w[2].is_ascii_lowercase(),
                b'A' => w[2].is_ascii_uppercase(),
                b'0' => w[2].is_ascii_digit(),
                _ => false,
            }
            && w[2] > w[0]
    };
    let inside = value[open + 1..].trim_start_matches('^').as_bytes();
    if inside.len() >= 6 && range(&inside[..3]) && range(&inside[3..6]) {
        return true;
    }
    let Some(close) = value[open..].find(']') else {
        return false;
    };
    let class = &value.as_bytes()[open + 1..open + close];
    class.iter().all(|&c| {
        c.is_ascii_alphanumeric()
            || matches!(c, b'_' | b'.' | b'~' | b'+' | b'/' | b'\\' | b'^' | b'-')
    }) && class.windows(3).any(range)
}

/// Words a person writes into a test value; see [`has_test_word`].
const TEST_WORDS: &[&str] = &[
    "test", "testing", "fake", "mock", "demo", "dummy", "sample", "example",
];

/// Whether `value` has a part, between punctuation, that is a test word written in
/// one case (`IQote///test`, `abc.FAKE.def`, `Mock-1x9Kq`): a fixture's value. A random
/// value needs four or more of the word's letters in one case with punctuation on both
/// sides: about once in 10^6 even when a third of its alphabet is punctuation (`foo`
/// and `bar`, three letters, would be ten times likelier there, so they are not here).
pub(super) fn has_test_word(value: &str) -> bool {
    value.contains(|c: char| !c.is_ascii_alphanumeric())
        && value
            .split(|c: char| !c.is_ascii_alphanumeric())
            .map(|part| part.trim_end_matches(|c: char| c.is_ascii_digit()))
            .any(|part| {
                let lower = part.to_ascii_lowercase();
                let one_case = part == lower
                    || part == part.to_ascii_uppercase()
                    || part.get(1..) == lower.get(1..);
                one_case && TEST_WORDS.contains(&lower.as_str())
            })
}

/// Whether the value stops at a template's interpolation (`` `auth:sha-${…}` ``, `"#{…}"`):
/// the literal around it is a format, and what fills it is not in the text.
fn is_interpolated(value: &str, next: Option<char>) -> bool {
    next == Some('{') && value.ends_with(['$', '#'])
}

/// The entropy a value of `len` characters needs: [`MIN_ENTROPY`], or less for short
/// values, whose entropy is bounded by their length (a random 12-character value
/// rarely has 12 distinct characters): 0.7 × log2(len), 2.5 bits at 12 characters,
/// 3.0 from 20. Under it are repetitions (`aaaaaaaaaaaa`, `abcabcabcabc`,
/// `0000-0000-0000`), not random values: a random 14-character value from the base62
/// or password alphabets falls under it about once in 100,000 tries.
pub fn min_entropy(len: usize) -> f64 {
    MIN_ENTROPY.min(0.7 * (len.max(2) as f64).log2())
}

/// A run of 6 or more consecutive ascending letters or digits (`bcdefghij`, `123456`,
/// `abcd%ef:g&hi`), punctuation between them set aside: a made-up test value, which a
/// random one holds about once in 10^8.
pub fn has_sequential_run(value: &str) -> bool {
    let mut run = 1;
    let mut prev: Option<u8> = None;
    for c in value.bytes().filter(u8::is_ascii_alphanumeric) {
        if prev.is_some_and(|p| c == p.wrapping_add(1)) {
            run += 1;
            if run >= 6 {
                return true;
            }
        } else {
            run = 1;
        }
        prev = Some(c);
    }
    false
}

/// Whether `value` is a command-line flag (`--account=account`, `--no-verify`):
/// lower-case words after `--`, and a lower-case word as its value if any.
fn is_cli_flag(value: &str) -> bool {
    let Some(flag) = value.strip_prefix("--") else {
        return false;
    };
    let (name, arg) = flag.split_once('=').unwrap_or((flag, ""));
    name.len() >= 3
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')
        && arg.bytes().all(|b| b.is_ascii_lowercase())
}

/// Whether `value` is words joined by `_`, `-`, `.`, `,` or `+` (a query string's
/// space, `list+of+scopes`, `auth,auth-int`): each part lowercase letters
/// (or one capital and lowercase, or all capitals as in `FAKE_SAML_RESPONSE`)
/// optionally ending in digits, or digits alone; and the letters read as words
/// (`secret_words::loosely_words`): without that, 35 in 10^6 random passwords of the
/// secrets corpus's shape passed (`qoiaikneobbm-i469`, secrets_redactor seed
/// 1795611643191293336); see `random_passwords_rarely_read_as_joined_words`.
fn is_wordy(value: &str) -> bool {
    let parts: Vec<&str> = value.split(['_', '-', '.', '+', ',']).collect();
    let letters = parts
        .iter()
        .map(|p| p.trim_end_matches(|c: char| c.is_ascii_digit()));
    parts.len() >= 2
        && one_or_two_case_styles(&parts)
        && loosely_words(letters, 0.5)
        && parts.iter().all(|p| {
            let letters = p.trim_end_matches(|c: char| c.is_ascii_digit());
            let mut chars = letters.chars();
            let word = match chars.next() {
                None => !p.is_empty(),
                Some(first) => {
                    first.is_ascii_alphabetic() && chars.all(|c| c.is_ascii_lowercase())
                        || letters.chars().all(|c| c.is_ascii_uppercase())
                }
            };
            word && !p.is_empty()
        })
}

/// Whether the parts of a joined value (of two letters or more) keep to at most two of
/// the styles lower case, upper case and capitalised, as words a person joins do
/// (`new_password1`, `Invalid-Token`, `FAKE_SAML_RESPONSE`, `HTTP_proxy`). Random
/// characters split at `_`, `-` and `.` often show all three: `A_ILF0_Ndhe.miuo`
/// (secrets_redactor seed 1795672518340556075) read as words with one common letter
/// pair in two and was let through until this check.
fn one_or_two_case_styles(parts: &[&str]) -> bool {
    let (mut lower, mut upper, mut capitalised) = (false, false, false);
    for part in parts {
        let letters = part.trim_end_matches(|c: char| c.is_ascii_digit());
        if letters.len() < 2 {
            continue;
        }
        if letters.bytes().all(|b| b.is_ascii_lowercase()) {
            lower = true;
        } else if letters.bytes().all(|b| b.is_ascii_uppercase()) {
            upper = true;
        } else {
            capitalised = true;
        }
    }
    usize::from(lower) + usize::from(upper) + usize::from(capitalised) <= 2
}

#[cfg(test)]
#[path = "secret_value_tests.rs"]
mod tests;
