//! Checks of secrets whose framing, not their characters, says what they are: a
//! connection string's `Password=…;`, a URL's `user:password@`, an HTTP Basic
//! header's base64 `user:password`, `.netrc` entries that span lines, a private key's
//! header followed by its body, and a service-account file's `"type"` beside its key.
//!
//! Each check gets a rule's match and says whether (and over which span) it is a
//! secret; the redactor calls them. They reject what documentation and code put in
//! those frames (placeholders, plain-word example passwords, `password =
//! request.form[…]` at the start of a line, prose that mentions a login) and nothing
//! that could be a real credential.

use super::bytes::find;
use super::secret_code::is_camel_words;
use super::secret_locator::is_key_file;
use super::secret_marker::{says_wrong, without_trailing_escape};
use super::secret_placeholder::{is_plain_words, is_sample_conn_password, is_sample_password};
use super::secret_sample::is_possessive_name;
use super::secret_value::{
    decode_base64, has_sequential_run, has_test_word, is_placeholder, looks_secret,
};
use super::secret_views::percent_decode;
use super::secret_words::is_code_like;

/// `Password=…;` counts only after a connection string's separator (`;`, a quote,
/// the start of a line); the span leaves the closing `;` in place.
pub(super) fn conn_string(bytes: &[u8], start: usize, end: usize) -> Option<(usize, usize)> {
    let mut p = start;
    while p > 0 && matches!(bytes[p - 1], b' ' | b'\t') {
        p -= 1;
    }
    if p > 0 && !matches!(bytes[p - 1], b';' | b'"' | b'\'' | b'\n') {
        return None;
    }
    let line_start = p == 0 || bytes[p - 1] == b'\n';
    let m = std::str::from_utf8(&bytes[start..end]).ok()?;
    let value = m
        .split_once('=')
        .map_or("", |(_, v)| v)
        .trim()
        .trim_end_matches([';', '"', '\''])
        .trim();
    // `Password=\"…\"` inside a string literal: the regex stops at the escaped quote,
    // and the password is the quoted value after it, judged (and redacted) whole.
    if value == "\\" {
        let inner_end = quoted_value_end(bytes, end);
        let inner = std::str::from_utf8(&bytes[end..inner_end]).ok()?;
        let sample = inner.is_empty() || is_placeholder(inner) || is_sample_conn_password(inner);
        return (!sample).then_some((start, inner_end));
    }
    // A placeholder, or a sample as in URLs and `.netrc` lines (`Password=pw;`,
    // `pwd=Naukio;`, `Password=café`): a document's or a parser test's value.
    // (`secret_marker`) judged without a literal's `\n` after it
    // (`"password=plaintext\n"`); a counting run (`password=123456`) and camel words
    // saying the value is wrong (`password=ObviouslyWrong;`) are samples too.
    let value = without_trailing_escape(value);
    if is_placeholder(value)
        || is_sample_conn_password(value)
        || has_sequential_run(value)
        || says_wrong(value)
    {
        return None;
    }
    // `password=bar&username=foo` is a form body; its password is the part before `&`,
    // and a plain word there is a test's or a document's.
    if let Some((password, _)) = value.split_once('&') {
        if is_plain_words(password) {
            return None;
        }
    }
    // At the start of a line, `password = request.form["password"]` is code; a
    // connection string's `Password=…;` there is a value without spaces, calls or
    // subscripts.
    // So is one of three characters or fewer (`password=b"…"`, a bytes literal's prefix).
    if line_start
        && (value.len() < 4 || value.contains(['(', '[', ' ', '\t']) || is_code_like(value))
    {
        return None;
    }
    let end = if bytes[end - 1] == b';' { end - 1 } else { end };
    Some((start, end))
}

/// Where a value that opens with an escaped quote (`\"`) ends: at the next quote, `\`,
/// `;` or line break after `from`.
fn quoted_value_end(bytes: &[u8], from: usize) -> usize {
    bytes[from..]
        .iter()
        .position(|b| matches!(b, b'"' | b'\'' | b'\\' | b';' | b'\r' | b'\n'))
        .map_or(bytes.len(), |p| from + p)
}

/// Password lines of multi-line `.netrc` entries: `password <token>` on a line of
/// `.netrc` pairs whose entry began, within three lines above, with `machine`,
/// `default` or `login` on a line of `.netrc` pairs too (so prose that says "the
/// default … with a password encoded …" is not an entry).
pub(super) fn netrc_lines(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    if !text.contains("password") {
        return out;
    }
    let mut since_entry = usize::MAX;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let first = trimmed.split_whitespace().next().unwrap_or("");
        let pairs = is_netrc_pairs(trimmed);
        if matches!(first, "machine" | "default" | "login") && pairs {
            since_entry = 0;
        }
        if since_entry <= 3 && pairs {
            if let Some(span) = password_word(line) {
                if netrc_password_is_secret(&line[span.0..span.1]) {
                    out.push((offset + span.0, offset + span.1));
                }
            }
        }
        since_entry = since_entry.saturating_add(1);
        offset += line.len();
    }
    out
}

/// Whether the value after the last `password` in a `.netrc` match is a secret: not a
/// placeholder (`password example-password`, `password {}`) nor a plain word
/// (`password pass`), the examples of documents and tests. A string literal's end
/// (`pass\n",`) ends the value.
pub(super) fn netrc_password_is_secret(m: &str) -> bool {
    let value = m.rsplit_once("password").map_or(m, |(_, v)| v).trim_start();
    let value = value.split(['"', '\'', '`', '\\']).next().unwrap_or(value);
    !(is_placeholder(value) || is_sample_password(value))
}

/// Whether a line is nothing but `.netrc` tokens: `machine|login|password|account|port
/// <value>` pairs and a bare `default`.
fn is_netrc_pairs(line: &str) -> bool {
    let mut words = line.split_whitespace();
    let mut any = false;
    while let Some(w) = words.next() {
        any = true;
        match w {
            "default" => {}
            "machine" | "login" | "password" | "account" | "port" => {
                // `password =`: an INI file's key with no value, not a
                // `.netrc` token, whose values are never a bare `=` or `:`.
                if words.next().is_none_or(|v| v == "=" || v == ":") {
                    return false;
                }
            }
            _ => return false,
        }
    }
    any
}

/// The span of `password <value>` in a line, `password` standing as a word.
fn password_word(line: &str) -> Option<(usize, usize)> {
    let b = line.as_bytes();
    let mut from = 0;
    while let Some(p) = line[from..].find("password").map(|p| p + from) {
        let word_before = p == 0 || b[p - 1].is_ascii_whitespace();
        let mut v = p + "password".len();
        let gap = v;
        while v < b.len() && matches!(b[v], b' ' | b'\t') {
            v += 1;
        }
        if word_before && v > gap {
            let mut e = v;
            while e < b.len() && !b[e].is_ascii_whitespace() {
                e += 1;
            }
            if e > v {
                return Some((p, e));
            }
        }
        from = p + 1;
    }
    None
}

/// The password of `scheme://user:password@` (the match ends at `@`) is a secret unless
/// it is a placeholder or a sample (`password`, `pass`, `xxx`, `123123`, `SAS_KEY`,
/// `p@ss`), as in documentation's examples and tests.
pub(super) fn url_password_is_secret(text: &str, start: usize, end: usize) -> bool {
    let Some(m) = text.get(start..end) else {
        return true;
    };
    let Some(userinfo) = m.trim_end_matches('@').rsplit("://").next() else {
        return true;
    };
    // A userinfo RFC 3986 forbids (`&a:foo(b]c`, `😅:🙂`, a bare `%`) is a URL
    // parser's test vector: a real URL's credentials are percent-encoded. Except a
    // raw `#` or `@` in the password (`admin:Zq8#mP2v@db`): people write those, and
    // clients take the password up to the last `@`.
    let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
    if !is_valid_userinfo(user) || !is_valid_userinfo(&password.replace(['#', '@'], "")) {
        return false;
    }
    let decoded = percent_decode(password);
    let password = decoded.as_ref().map_or(password, |v| v.text.as_str());
    // `https://abc:123@…`, `user3:123123@`, `SAS_POLICY_NAME:SAS_KEY@`, `us%40r:p%40ss@`:
    // a document's or a test's sample (`secret_placeholder`), not a password.
    // `kerberos+keytab://host:app2.keytab@…` names the file the key is in.
    !(is_placeholder(password)
        || is_sample_password(password)
        || is_key_file(password)
        || password.chars().all(|c| c == '*' || c == 'x' || c == 'X'))
}

/// Whether `userinfo` holds only what RFC 3986 allows there: unreserved characters,
/// sub-delimiters, `:` and `%` followed by two hex digits (not a control character's).
fn is_valid_userinfo(userinfo: &str) -> bool {
    let b = userinfo.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                if i + 2 >= b.len()
                    || !(b[i + 1].is_ascii_hexdigit() && b[i + 2].is_ascii_hexdigit())
                {
                    return false;
                }
                // `%12`: a control character, which no typed password holds.
                if matches!(b[i + 1], b'0' | b'1') {
                    return false;
                }
                i += 3;
                continue;
            }
            c if c.is_ascii_alphanumeric() => {}
            b'-' | b'.' | b'_' | b'~' | b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+'
            | b',' | b';' | b'=' | b':' => {}
            _ => return false,
        }
        i += 1;
    }
    true
}

/// `Authorization: Basic <base64>` is a secret unless its `user:password` decodes to
/// a plain-word password (`dXNlcjpwYXNz`, `user:pass`) or one with a test word
/// (`fake_login:fake_password`), or it is no `user:password` at
/// all and, judged as an assigned value, not random (`Basic notreally`).
pub(super) fn basic_auth_is_secret(text: &str, start: usize, end: usize) -> bool {
    let Some(m) = text.get(start..end) else {
        return true;
    };
    let encoded = m.rsplit([' ', '\t']).next().unwrap_or("");
    let decoded = decode_base64(encoded).and_then(|d| String::from_utf8(d).ok());
    match decoded.as_deref().and_then(|d| d.split_once(':')) {
        // Also a password holding a test word between punctuation
        // (`fake_login:fake_password`), as a keyword's value is read
        // (`secret_value::has_test_word`, about once in 10^6 random passwords).
        // Also one counting up (`1234567890abcdef…`, a README's made-up
        // client secret), as a keyword's value is read (`has_sequential_run`, about
        // once in 10^8 random values).
        // Also a possessive placeholder (`myName:myPassword`).
        Some((_, pw)) => {
            !(is_sample_password(pw)
                || has_test_word(pw)
                || has_sequential_run(pw)
                || is_possessive_name(pw, "password"))
        }
        // Not `user:password` (RFC 7617), so not base64 of credentials: a test's
        // `Basic notreally`, or a raw token, judged as any assigned value is.
        // Nor a type's name in camel words with padding where the
        // credentials go (`Authorization: Basic Base64String===`, a docstring's).
        None => {
            !is_camel_words(encoded.trim_end_matches('='), "")
                && looks_secret("", encoded, true, None)
        }
    }
}

/// Standard base64 with at least one `+`, `/` or padding, `=` only at the end (the
/// length is not checked: test vectors are not always padded right).
pub(super) fn is_base64_blob(token: &[u8]) -> bool {
    let body_len = token.len() - token.iter().rev().take_while(|&&b| b == b'=').count();
    let (body, pad) = token.split_at(body_len);
    pad.len() <= 2
        && body
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
        && (!pad.is_empty() || body.iter().any(|&b| b == b'+' || b == b'/'))
}

/// Whether a PEM header (`-----BEGIN … PRIVATE KEY-----`, ending at `header_end`) is
/// followed by a key's body: base64 after any armour headers (`Proc-Type: …`,
/// `Version: …`), line breaks (real or escaped), string-literal joins (`"…\n" + "…`,
/// `b"…"`) and comment leaders. A header with no body (`("-----BEGIN RSA PRIVATE
/// KEY-----", "-----END …")`, `-----BEGIN PRIVATE KEY-----...`, a regex of headers) is
/// a marker in code that parses keys, not a key.
pub(super) fn pem_has_body(bytes: &[u8], header_end: usize) -> bool {
    let limit = bytes.len().min(header_end + 1024);
    let mut i = header_end;
    let mut armour_lines = 0;
    loop {
        while i < limit {
            match bytes[i] {
                b' ' | b'\t' | b'\r' | b'\n' | b'"' | b'\'' | b'`' | b'+' | b'#' | b'*' | b',' => {
                    i += 1
                }
                b';' | b'%' | b'!' => i += 1,
                // Comment leaders: `// `, `-- ` (a body never starts with `//`).
                b'/' if bytes[i..limit].starts_with(b"//") => i += 2,
                b'-' if bytes[i..limit].starts_with(b"-- ") => i += 3,
                b'\\' if i + 1 < limit && matches!(bytes[i + 1], b'n' | b'r') => i += 2,
                b'\\' => i += 1,
                // A literal's prefix (`b"…"`, `r"…"`) before its opening quote.
                b'b' | b'r' | b'f' | b'u'
                    if i + 1 < limit && matches!(bytes[i + 1], b'"' | b'\'') =>
                {
                    i += 1
                }
                _ => break,
            }
        }
        let name = bytes[i..limit]
            .iter()
            .take_while(|b| b.is_ascii_alphabetic() || **b == b'-')
            .count();
        if name >= 3 && bytes.get(i + name) == Some(&b':') && armour_lines < 8 {
            armour_lines += 1;
            while i < limit && bytes[i] != b'\n' && !bytes[i..].starts_with(b"\\n") {
                i += 1;
            }
            continue;
        }
        break;
    }
    let body = bytes[i..limit]
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
        .count();
    body >= 16
}

/// Whether a PuTTY key header (ending at `header_end`) is followed, within 4 KiB, by
/// the key's lines: `Public-Lines:` or `Private-Lines:`, a count, a line break (real or
/// escaped) and 16 base64 characters or more. Code that writes the format
/// (`"PuTTY-User-Key-File-2: ssh-rsa\r\n";c+="Encryption: "+a+…`, minified
/// node-forge) builds those lines from variables and holds no key. Every key file has
/// them: PuTTY reads its public and private blobs from there.
pub(super) fn putty_has_body(bytes: &[u8], header_end: usize) -> bool {
    let limit = bytes.len().min(header_end + 4096);
    let w = &bytes[header_end..limit];
    (0..w.len()).any(|i| {
        let rest = &w[i..];
        let after = if rest.starts_with(b"Public-Lines:") {
            &rest[13..]
        } else if rest.starts_with(b"Private-Lines:") {
            &rest[14..]
        } else {
            return false;
        };
        let mut j = after
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\t'))
            .count();
        let digits = after[j..].iter().take_while(|b| b.is_ascii_digit()).count();
        j += digits;
        while j < after.len() && matches!(after[j], b'\r' | b'\n' | b' ' | b'\t') {
            j += 1;
        }
        while after[j..].starts_with(b"\\r") || after[j..].starts_with(b"\\n") {
            j += 2;
        }
        let body = after[j..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
            .count();
        digits >= 1 && body >= 16
    })
}

/// Whether a service-account file's `"type": "service_account"` (at `start`) sits
/// within 4 KiB of a `"private_key"` field: the file itself, not code or a test that
/// names the type. A field whose PEM block has no body (`-----BEGIN
/// PRIVATE KEY-----\nBLAHBLAHBLAH\n-----END…`, fewer than 16 base64 characters, which
/// the `private_key` rule does not take either) holds no key, and such a file is a
/// made-up one; every other value of the field (an empty one included) still counts.
pub(super) fn near_private_key_field(bytes: &[u8], start: usize) -> bool {
    let from = start.saturating_sub(4096);
    let to = bytes.len().min(start + 4096);
    let w = &bytes[from..to];
    let names: Vec<usize> = (0..w.len().saturating_sub(10))
        .filter(|&i| w[i..].starts_with(b"private_key"))
        .collect();
    // The `private_key` fields themselves (a quote after the name, not `private_key_id`)
    // decide when there are any; else any name holding `private_key`, as before.
    let fields: Vec<usize> = names
        .iter()
        .copied()
        .filter(|&i| matches!(w.get(i + 11), Some(b'"' | b'\'' | b'\\')))
        .collect();
    if fields.is_empty() {
        return !names.is_empty();
    }
    fields
        .iter()
        .any(|&i| !holds_bodiless_pem(&w[i + 11..]) && !holds_placeholder(&w[i + 11..]))
}

/// After a `private_key` name: whether the field's value is a placeholder
/// (`"private_key": "your-private-key"` in a README's template), judged by
/// `secret_reference::is_placeholder` on the quoted value. A key's PEM text is never
/// one: it opens with `-----BEGIN`, which is judged by [`holds_bodiless_pem`].
fn holds_placeholder(after: &[u8]) -> bool {
    let Some(&quote) = after.first() else {
        return false;
    };
    if !matches!(quote, b'"' | b'\'') {
        return false;
    }
    let skip = after
        .iter()
        .take(16)
        .take_while(|b| matches!(b, b'"' | b'\'' | b' ' | b'\t' | b':'))
        .count();
    let value = &after[skip..];
    let Some(end) = value.iter().position(|&b| b == quote || b == b'\n') else {
        return false;
    };
    let Ok(text) = std::str::from_utf8(&value[..end]) else {
        return false;
    };
    !text.starts_with("-----") && !text.is_empty() && is_placeholder(text)
}

/// After a `private_key` name: whether the field's value is a PEM block without a body.
/// `private_key_id` and the like (another name) are never such a field.
fn holds_bodiless_pem(after: &[u8]) -> bool {
    if !matches!(after.first(), Some(b'"' | b'\'' | b'\\')) {
        return false;
    }
    let skip = after
        .iter()
        .take(16)
        .take_while(|b| matches!(b, b'"' | b'\'' | b'\\' | b' ' | b'\t' | b':'))
        .count();
    let value = &after[skip..];
    if !value.starts_with(b"-----BEGIN") {
        return false;
    }
    let Some(close) = find(&value[10..], b"-----") else {
        return false;
    };
    !pem_has_body(value, 10 + close + 5)
}
