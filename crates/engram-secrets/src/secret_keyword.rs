//! Judging a keyword rule's match (`DB_PASSWORD = "…"`, `token: …`, `Bearer …`): it
//! splits the match into the identifier and the assigned value, turns down what the
//! text around the value says is no assignment of a literal (paths like
//! `token::Brace`, argument lists, union types, an empty string with more code, a
//! qualifier such as `page_token`), and hands the [`Assignment`] to the value
//! classifier (`value_class`). It never widens a span and never fails: any match
//! gives a yes or a no.

use super::bytes::{ceil_boundary, find, floor_boundary};
use super::secret_value::qualifier_says_not_secret;
use super::secret_words::is_code_like;
use super::value_class::{is_secret, Assignment};

/// Split a keyword match (`DB_PASSWORD = "…"`, `token: …`, `Bearer …`) into its
/// identifier and value, and judge the value.
pub(super) fn keyword_secret(text: &str, start: usize, end: usize) -> bool {
    if text.get(start..end).is_none() {
        // A match ending inside a UTF-8 character: the value holds non-ASCII text;
        // judge what is there rather than guess.
        return keyword_secret_lossy(text, start, end);
    }
    split(text, start, end).is_some_and(|a| is_secret(&a))
}

/// The assignment a keyword match holds, or `None` when the text around it says it
/// assigns no literal (see the module comment).
pub(super) fn split(text: &str, start: usize, end: usize) -> Option<Assignment<'_>> {
    let m = text.get(start..end)?;
    let b = m.as_bytes();
    let mut i = 0;
    while i < b.len() && (b[i].is_ascii_alphanumeric() || matches!(b[i], b'_' | b'.' | b'-')) {
        i += 1;
    }
    let ident = &m[..i];
    // `NextContinuationToken`, `page_token`: the word before the keyword says what
    // kind of token it is.
    if qualifier_says_not_secret(&text[..start]) {
        return None;
    }
    let mut name_quoted = false;
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\'' | b'"') {
        name_quoted |= b[i] != b' ' && b[i] != b'\t';
        i += 1;
    }
    // `token::Brace`, `crate::token::Custom`: a path, not an assignment.
    if m[i..].starts_with("::") {
        return None;
    }
    let mut comma = false;
    for op in [":=", "=>", "?=", "=", ":", ","] {
        if m[i..].starts_with(op) {
            i += op.len();
            comma = op == ",";
            break;
        }
    }
    let mut quoted = false;
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\'' | b'"' | b'`') {
        // `token = "".join(…)`: an empty string whose method is called, code that
        // builds the value; `password=""}` or `secret = "";`, an empty
        // string and more code. Not a triple-quoted string's opening, and not a
        // value that merely starts with the quote character: a random password does
        // so and then reads `.name(` about 10^-6 of the time.
        if quoted
            && b[i] == b[i - 1]
            && matches!(b[i], b'\'' | b'"' | b'`')
            && b.get(i + 1) != Some(&b[i])
            && (i < 2 || b[i - 2] != b[i])
            && text
                .get(start + i + 1..)
                .is_some_and(|rest| is_method_call(rest) || ends_expression(rest))
        {
            return None;
        }
        quoted |= b[i] != b' ' && b[i] != b'\t';
        i += 1;
    }
    // `("TOKEN", "value")` pairs a name with a literal; `parser, token, func=…` is an
    // argument list, and `[Events.AcquireToken, "label"]` an enum member with a label.
    if comma && !(quoted && name_quoted) {
        return None;
    }
    // The quote that opened the value, when one did.
    let opener = if quoted { b[i - 1] } else { 0 };
    let mut value = &m[i..];
    // The quoted value ran to its closing quote, uncut (malformed JWTs,
    // `secret_inert::is_malformed_jwt`, are judged only so).
    let closed = quoted && value.ends_with(['\'', '"', '`']) && !value.contains('\\');
    // `None\r\nAccess-…` in a literal: the escape ends the value here (the decoded
    // reading of the text judges what follows it on its own line).
    if let Some(at) = find(value.as_bytes(), b"\\") {
        value = &value[..at];
    }
    let value = value.trim_end_matches(['\'', '"', '`']);
    // `access_token=abc&expires_in=…`: in a query string, `&` ends the value.
    let value = if quoted {
        value
    } else {
        value.split('&').next().unwrap_or(value)
    };
    let next = text[end..].chars().next();
    // `cred: CcsCredential | undefined`, `private_key: Ed25519PrivateKey | Ed448PrivateKey`:
    // a union type (TypeScript, Python), not a value.
    if !quoted {
        let after = text[end..].trim_start_matches([' ', '\t']);
        let after = after.strip_prefix('|').unwrap_or("").trim_start();
        // A name made of words with a number or two in it (`Ed25519PrivateKey`), not
        // any capitalised run: a random token before a table cell's `|`
        // (`Bearer Zk5Hc9Jd0…\t|A`) scatters its digits and spells no words.
        let type_name = value.starts_with(|c: char| c.is_ascii_uppercase())
            && value.bytes().all(|b| b.is_ascii_alphanumeric())
            && value
                .split(|c: char| !c.is_ascii_digit())
                .filter(|run| !run.is_empty())
                .count()
                <= 2
            && is_code_like(&value.replace(|c: char| c.is_ascii_digit(), ""));
        // Python's `X | None` too (`_passphrase_helper: _PassphraseHelper | None`).
        if after.starts_with("undefined")
            || after.starts_with("null")
            || after.starts_with("None")
            || (type_name && after.starts_with(|c: char| c.is_ascii_uppercase()))
        {
            return None;
        }
    }
    Some(Assignment {
        text,
        start,
        end,
        ident,
        assigned: assigned_name(text, start, ident),
        value,
        quoted,
        opener,
        closed,
        comma,
        next,
    })
}

/// The whole identifier the keyword's match starts inside (`gcsUseDownscopedCredential`
/// for a match at `Credential`; `isWebAuthnError` for `exports.isWebAuthnError`): the
/// identifier characters before `start`, then `ident`, from its last `.` on.
fn assigned_name(text: &str, start: usize, ident: &str) -> String {
    let before = &text.as_bytes()[..start];
    let from = before
        .iter()
        .rposition(|&b| !(b.is_ascii_alphanumeric() || b == b'_' || b == b'$'))
        .map_or(0, |i| i + 1);
    let whole = format!("{}{ident}", &text[from..start]);
    match whole.rfind('.') {
        Some(dot) => whole[dot + 1..].to_string(),
        None => whole,
    }
}

/// Whether `rest`, after an empty string literal, ends the expression (`password=""}`,
/// `secret = "";`, `("token", "")`): the value is the empty string, and what follows
/// is more code, not the value (`password=""}if(wordlist==null){…` in a
/// minified bundle).
fn ends_expression(rest: &str) -> bool {
    rest.starts_with(['}', ')', ']', ';', ','])
}

/// Whether `rest` opens with a method call: `.`, an identifier, `(` (`.join(`).
fn is_method_call(rest: &str) -> bool {
    let Some(after_dot) = rest.strip_prefix('.') else {
        return false;
    };
    let name = after_dot
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
        .count();
    name >= 1
        && after_dot.as_bytes()[0].is_ascii_alphabetic()
        && after_dot.as_bytes().get(name) == Some(&b'(')
}

fn keyword_secret_lossy(text: &str, start: usize, end: usize) -> bool {
    let s = floor_boundary(text, start);
    let e = ceil_boundary(text, end);
    text.get(s..e)
        .is_some_and(|m| keyword_secret(m, 0, m.len()))
}
