//! How the redactor widens a rule's match into the whole secret: a token cut short by
//! a bounded regex runs on to the end of its characters, and a private key's header
//! runs on to its END line (or over its base64 body when END is missing, `\n`-escaped
//! or split into one string literal per line). Split out of `redact` so that the
//! engine there keeps to judging matches; both functions only ever widen a span,
//! never past the text's end, and never panic.

use super::bytes::find;

/// How far a private key's END line is looked for (a 16384-bit RSA key in PEM is
/// about 12 KiB; 64 KiB leaves room for PGP blocks and escaping).
const KEY_SEARCH: usize = 64 << 10;

/// Longest run a token is extended over past its regex match.
const TOKEN_EXTEND: usize = 4 << 10;

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'_' | b'-' | b'%')
}

/// Extend a match that ends inside a token (a bounded regex took only its first
/// characters) to the end of the token.
pub(super) fn extend_token(bytes: &[u8], end: usize) -> usize {
    if end == 0 || !is_token_byte(bytes[end - 1]) {
        return end;
    }
    let limit = bytes.len().min(end + TOKEN_EXTEND);
    let mut e = end;
    while e < limit && is_token_byte(bytes[e]) {
        e += 1;
    }
    e
}

/// Where a private key that starts at `start` (header ends at `header_end`) ends: the
/// end of its `-----END …-----` line (or PuTTY's `Private-MAC:` line); without one,
/// the end of the base64 run after the header, escaped newlines and line breaks
/// included.
pub(super) fn private_key_end(bytes: &[u8], start: usize, header_end: usize) -> usize {
    let limit = bytes.len().min(header_end + KEY_SEARCH);
    let window = &bytes[header_end..limit];
    let putty = bytes[start..header_end].starts_with(b"PuTTY");
    let marker: &[u8] = if putty { b"Private-MAC:" } else { b"-----END" };
    if let Some(at) = find(window, marker) {
        let after = header_end + at + marker.len();
        if putty {
            return line_end(bytes, after);
        }
        // The END line's closing dashes, or the end of its line.
        let tail = &bytes[after..bytes.len().min(after + 80)];
        return match find(tail, b"-----") {
            Some(d) => after + d + 5,
            None => line_end(bytes, after),
        };
    }
    let mut e = header_end;
    while e < limit {
        let b = bytes[e];
        if b.is_ascii_alphanumeric()
            || matches!(b, b'+' | b'/' | b'=' | b'\\' | b' ' | b'\t' | b'\r' | b'\n')
        {
            e += 1;
        } else if let Some(next) = joined_literal(bytes, e, limit) {
            // A body split into one string literal per line: `"…\n"` then `"MIIE…`.
            e = next;
        } else if b == b':' || b == b'-' || b == b',' {
            // Header lines of an encrypted PEM or a PGP block (`Proc-Type: 4,ENCRYPTED`).
            e += 1;
        } else {
            break;
        }
    }
    // Leave the line break that ends the run, and a closing quote, outside the span.
    while e > header_end
        && matches!(
            bytes[e - 1],
            b'\n' | b'\r' | b' ' | b'\t' | b'"' | b'\'' | b'`'
        )
    {
        e -= 1;
    }
    e
}

/// Where the next literal's text starts when the quote at `at` closes one string
/// literal and another opens after nothing but white space, a `+` or `\` join, or a
/// literal prefix (`"…"\n  b"…`); `None` for any other quote.
fn joined_literal(bytes: &[u8], at: usize, limit: usize) -> Option<usize> {
    let quote = bytes[at];
    if !matches!(quote, b'"' | b'\'' | b'`') {
        return None;
    }
    let mut j = at + 1;
    while j < limit && matches!(bytes[j], b' ' | b'\t' | b'\r' | b'\n' | b'+' | b'\\') {
        j += 1;
    }
    if j + 1 < limit && matches!(bytes[j], b'b' | b'r' | b'u') && bytes[j + 1] == quote {
        j += 1;
    }
    (j > at + 1 && j < limit && bytes[j] == quote).then_some(j + 1)
}

fn line_end(bytes: &[u8], from: usize) -> usize {
    bytes[from..]
        .iter()
        .position(|&b| b == b'\n' || b == b'\r')
        .map_or(bytes.len(), |p| from + p)
}
