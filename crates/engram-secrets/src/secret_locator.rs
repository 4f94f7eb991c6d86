//! Keyword values and tokens that point at something or stand in for a credential
//! rather than being one (held-out-19's classes: an OpenStack
//! client's plugin entry points and fixtures, a model hub's test tokens, Kerberos
//! keytab URLs, KeePass's XPath queries, a CI file's `$PWD`, a masked CI token).
//!
//! - [`is_entry_point`]: a Python entry point, `module.path:Attribute`
//!   (`password = keystoneauth1.extras._saml2._loading:Saml2Password`): code to load.
//! - [`is_worded_counter`]: lower-case words and a counting run (`hf_oauth_123`).
//! - [`is_key_file`]: the name of a file that holds key material (`app2.keytab`), in a
//!   URL's password place: where the key is, not the key.
//! - [`is_host_setting`]: a host name under a name that says it is one
//!   (`AUTH_HOST = "mtls.auth.openai.com"`).
//! - [`is_shell_pwd`]: the shell's `$PWD`, the working directory (`-v $PWD:/workspace`).
//! - [`is_named_type`]: a class or type whose name ends in the credential word it was
//!   matched under (`'Password', 'V3ADFSPassword'`, `auth: BedrockAwsAuth`).
//! - [`is_xpath`]: an XPath location path with a predicate (`'/String/Key[text()="'`).
//! - [`is_defaulted_binding`]: a setting falling back to an empty literal
//!   (`this.networkPassphrase=r.networkPassphrase||null`, minified).
//! - [`has_masked_tail`]: a token whose end is one character repeated
//!   (`hf_HubCITokenXXXXXXXXXXXXXXXXXXXXX`): a mask over where the token's body goes.
//! - [`is_glued_in_base64url`]: a token prefix found inside a longer base64url run
//!   (`…Iwc_sUKxRq2…hf_Pj3lf…-TesJ…`, a post-quantum signature in a test): a slice of
//!   binary data, not a token.
//!
//! Each judgement only turns a value down; none may make a secret of anything, and
//! each reads a shape no random value of the alphabets secrets are drawn from takes
//! (`secret_locator_tests.rs` counts how often one does). Random values after a
//! credential keyword stay caught whatever the file (keystoneauth1's mocked
//! `auth2_token = 'HW9bB6oY…'` is one).

use super::secret_code::is_same_name_binding;
use super::secret_marker::words;
use super::secret_words::is_identifier_word;

/// Extensions of files that hold keys, keytabs and keystores.
const KEY_FILE_EXTENSIONS: &[&str] = &[
    "keytab", "pem", "key", "p12", "pfx", "jks", "keystore", "kdbx", "ppk", "crt", "cer", "der",
];

/// Last words of a name saying its value is a host.
const HOST_WORDS: &[&str] = &["host", "hostname", "domain"];

/// Empty literals a minified setting falls back to.
const EMPTY_LITERALS: &[&str] = &["null", "undefined", "void 0", "None", "\"\"", "''"];

/// Shortest run of one repeated character that [`has_masked_tail`] reads as a mask.
const MIN_MASK: usize = 12;

/// Shortest base64url run before a token that [`is_glued_in_base64url`] reads as the
/// data the token's prefix was found in.
const MIN_GLUED: usize = 16;

/// A Python identifier: a letter or `_`, then letters, digits and `_`.
fn is_py_identifier(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Whether `value` is a Python entry point, `module.path:Attribute`: two module names
/// or more in lower case joined by `.`, one of them a common identifier word of four
/// letters or more (`loading`), a `:`, then an identifier or a dotted path of them
/// (`keystoneauth1.loading._plugins.identity.v3:OAuth2ClientCredential`). The quoted
/// form is `pyproject.toml`'s, the bare one `entry_points.txt`'s. A random value would
/// need a `:` after a dotted run of lower-case names holding a word (0 of 200,000 of an
/// alphabet heavy in `.` and `:` in the tests).
pub(super) fn is_entry_point(value: &str) -> bool {
    let Some((module, attr)) = value.split_once(':') else {
        return false;
    };
    let parts: Vec<&str> = module.split('.').collect();
    parts.len() >= 2
        && parts.iter().all(|p| {
            is_py_identifier(p) && !p.bytes().any(|b| b.is_ascii_uppercase()) && p.len() >= 2
        })
        && parts.iter().any(|p| {
            let letters = p
                .trim_matches('_')
                .trim_end_matches(|c: char| c.is_ascii_digit());
            letters.len() >= 4 && is_identifier_word(letters)
        })
        && attr.len() >= 3
        && attr.split('.').all(is_py_identifier)
        && attr.starts_with(|c: char| c.is_ascii_alphabetic())
}

/// Whether `value` is lower-case words joined by `_` or `-`, one of four letters or
/// more an identifier word, ending in a counting run of three to six digits from `0`
/// or `1` (`hf_oauth_123`, a test's made-up token). An issued token is random; one
/// that counts `123` after words is typed.
pub(super) fn is_worded_counter(value: &str) -> bool {
    let parts: Vec<&str> = value.split(['_', '-']).collect();
    let Some((last, words)) = parts.split_last() else {
        return false;
    };
    let d = last.as_bytes();
    (3..=6).contains(&d.len())
        && matches!(d[0], b'0' | b'1')
        && d.windows(2).all(|w| w[1] == w[0] + 1)
        && words.len() >= 2
        && words
            .iter()
            .all(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase()))
        && words.iter().any(|w| w.len() >= 4 && is_identifier_word(w))
}

/// Whether `value` is a file's name with a key file's extension (`app2.keytab`,
/// `client.pem`): a letter, then letters, digits, `_`, `-` and `.`, then one of
/// [`KEY_FILE_EXTENSIONS`] in lower case. A URL naming the file that holds the key
/// (`kerberos+keytab://host:app2.keytab@realm`) does not hold it.
pub(super) fn is_key_file(value: &str) -> bool {
    let Some((stem, ext)) = value.rsplit_once('.') else {
        return false;
    };
    KEY_FILE_EXTENSIONS.contains(&ext)
        && stem.len() >= 2
        && stem.starts_with(|c: char| c.is_ascii_alphabetic())
        && stem
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// Whether `value` is a host name (three labels or more of lower-case letters, digits
/// and `-`, one a common identifier word of four letters or more, the last two to six
/// letters) under a name whose last word is one of [`HOST_WORDS`] (`AUTH_HOST =
/// "mtls.auth.openai.com"`).
pub(super) fn is_host_setting(assigned: &str, value: &str) -> bool {
    let labels: Vec<&str> = value.split('.').collect();
    words(assigned)
        .last()
        .is_some_and(|w| HOST_WORDS.contains(&w.as_str()))
        && labels.len() >= 3
        && labels.iter().all(|l| {
            !l.is_empty()
                && !l.starts_with('-')
                && l.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
        && labels.last().is_some_and(|t| {
            (2..=6).contains(&t.len()) && t.bytes().all(|b| b.is_ascii_lowercase())
        })
        && labels.iter().any(|l| l.len() >= 4 && is_identifier_word(l))
}

/// Whether the keyword match at `start`, `ident`, is the shell's `PWD` variable read
/// with `$` or `${` (`docker run -v $PWD:/workspace:ro`): the working directory.
pub(super) fn is_shell_pwd(text: &str, start: usize, ident: &str) -> bool {
    let before = &text[..start];
    ident == "PWD" && (before.ends_with('$') || before.ends_with("${"))
}

/// Whether `value` is a class's or type's name that ends in the last word of the name
/// it is assigned to, capitalised, after three characters or more (`V3ADFSPassword`
/// listed after `'Password'`, `auth: BedrockAwsAuth`): a subclass or an annotation. The
/// word is four letters or more, so a random value of letters and digits ends in it
/// about 62^-4 of the time at most.
pub(super) fn is_named_type(assigned: &str, value: &str) -> bool {
    let Some(last) = words(assigned).pop() else {
        return false;
    };
    let mut word = last.clone();
    if let Some(first) = word.get_mut(..1) {
        first.make_ascii_uppercase();
    }
    last.len() >= 4
        && last.bytes().all(|b| b.is_ascii_lowercase())
        && value.len() >= word.len() + 3
        && value.ends_with(&word)
        && value.starts_with(|c: char| c.is_ascii_uppercase())
        && value.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// Whether `value` opens an XPath location path with a predicate: two steps or more,
/// `/` and a name each, then `[` and a function or an attribute (`/String/Key[text()=`).
pub(super) fn is_xpath(value: &str) -> bool {
    let Some((path, predicate)) = value.split_once('[') else {
        return false;
    };
    let Some(steps) = path.strip_prefix('/') else {
        return false;
    };
    let steps: Vec<&str> = steps.split('/').collect();
    steps.len() >= 2
        && steps.iter().all(|s| {
            s.starts_with(|c: char| c.is_ascii_alphabetic())
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
        })
        && (predicate.starts_with('@')
            || predicate
                .split_once("()")
                .is_some_and(|(f, _)| !f.is_empty() && f.bytes().all(|b| b.is_ascii_lowercase())))
}

/// Whether `value`, unquoted, is a setting's own name or member path falling back to an
/// empty literal with `||` or `??` (`r.networkPassphrase||null` for
/// `networkPassphrase`; see `secret_code::is_fallback_chain` for two settings).
pub(super) fn is_defaulted_binding(name: &str, value: &str) -> bool {
    let Some((binding, literal)) = value.split_once("||").or_else(|| value.split_once("??")) else {
        return false;
    };
    EMPTY_LITERALS.contains(&literal.trim()) && is_same_name_binding(name, binding.trim())
}

/// Whether `token` (a token rule's span, closing quotes aside) ends in a run of `x`,
/// `X` or `*` of [`MIN_MASK`] characters or more (`hf_HubCITokenXXXX…`): a mask written
/// where the body goes. A random body ends so about never. Other letters are not masks:
/// bech32 writes zero bytes as `q` (`AGE-SECRET-KEY-1QQQQ…`, a key all the same).
pub(super) fn has_masked_tail(token: &[u8]) -> bool {
    let body = token
        .strip_suffix(b"\"")
        .or_else(|| token.strip_suffix(b"'"))
        .unwrap_or(token);
    let Some(&last) = body.last() else {
        return false;
    };
    let run = body.iter().rev().take_while(|&&b| b == last).count();
    matches!(last, b'x' | b'X' | b'*') && run >= MIN_MASK
}

/// Whether a token rule's match at `start..end`, extended over the token's characters
/// to `ext_end`, sits inside a longer base64url run: [`MIN_GLUED`] base64url characters
/// or more right before it, a letter or digit last, and `-` or `_` in what extends it
/// (an issued token of these rules is letters and digits after its prefix, and starts
/// where a word does; `%3Dhf_…` in a query is not glued).
pub(super) fn is_glued_in_base64url(
    bytes: &[u8],
    start: usize,
    end: usize,
    ext_end: usize,
) -> bool {
    let before = bytes.get(..start).unwrap_or_default();
    let run = before
        .iter()
        .rev()
        .take_while(|&&b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        .count();
    run >= MIN_GLUED
        && before.last().is_some_and(u8::is_ascii_alphanumeric)
        && bytes
            .get(end..ext_end)
            .is_some_and(|rest| rest.iter().any(|&b| b == b'-' || b == b'_'))
}
