//! A private key's PEM block that shows only the start of its key (held-out-17's
//! generated API docstrings: `-----BEGIN RSA PRIVATE KEY----- MIIEpQIBAAKCAQEAuyf…R.
//! -----END RSA PRIVATE KEY-----`): the DER structure's own length, read from the first
//! bytes of the body, says how long the key is, and the text between BEGIN and END holds
//! a small part of it, its start, ending in a mark no base64 holds (a full stop, an
//! ellipsis).
//!
//! It owns that one judgement, [`is_pem_excerpt`]. It must never let through a key whose
//! secret part could be in the text: only an RSA-sized structure (600 bytes or more,
//! where the version and the public modulus come first and the private exponent after
//! them) shown to less than a fifth of its length is an excerpt. A key without an END
//! line, with armour headers (an encrypted PEM) or whose body does not open with a DER
//! SEQUENCE (OpenSSH, PGP) is never judged here.

use super::bytes::find;
use super::secret_shape::decode_base64;

/// How far the END line is looked for.
const END_SEARCH: usize = 16 << 10;

/// Smallest declared length judged: an RSA key of 1024 bits is about 608 bytes in
/// PKCS#1; EC and Ed25519 keys (at most about 240 bytes), whose secret scalar comes
/// right after a short header, are never judged.
const MIN_DECLARED: usize = 600;

/// The body shown must be less than `1 / SHOWN_FRACTION` of the declared length: for
/// RSA that ends within the public modulus (a 2048-bit key's modulus ends about 270
/// bytes into its 1190).
const SHOWN_FRACTION: usize = 5;

/// Whether the PEM block whose header ends at `header_end` shows only an excerpt of
/// an RSA-sized key: its END line is there, its body holds a full stop or an ellipsis
/// with nothing of the key after it (the text marks where it cuts the key) and opens with a DER SEQUENCE whose declared length is
/// [`MIN_DECLARED`] bytes or more, and the base64 between BEGIN and END decodes to less
/// than a fifth of that. A key cut without a mark (a stand-in body in a test) is still
/// a key.
pub(super) fn is_pem_excerpt(bytes: &[u8], header_end: usize) -> bool {
    let limit = bytes.len().min(header_end + END_SEARCH);
    let Some(end_at) = find(&bytes[header_end..limit], b"-----END") else {
        return false;
    };
    let body = &bytes[header_end..header_end + end_at];
    // Armour headers (`Proc-Type: 4,ENCRYPTED`): another format's body.
    if body.contains(&b':') {
        return false;
    }
    // The text marks the cut with a full stop or an ellipsis, which base64 never holds,
    // and nothing of the key follows the mark: only the start is shown (a body elided
    // in its middle, `MIIEvQ…\n...\ngtUcukumVPtrDhGK9i/PG3Q=`, shows its end, where
    // the private values are).
    let Some(mark) = body
        .iter()
        .position(|&b| b == b'.')
        .into_iter()
        .chain(find(body, "\u{2026}".as_bytes()))
        .min()
    else {
        return false;
    };
    if body[mark..].iter().any(u8::is_ascii_alphanumeric) {
        return false;
    }
    let shown = &body[..mark];
    let mut base64 = Vec::with_capacity(shown.len());
    let mut i = 0;
    while i < shown.len() {
        let b = shown[i];
        if b == b'\\' && matches!(shown.get(i + 1), Some(b'n' | b'r' | b't')) {
            // An escaped line break inside a string literal.
            i += 2;
            continue;
        }
        if b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/') {
            base64.push(b);
        }
        i += 1;
    }
    let Some(declared) = declared_length(&base64) else {
        return false;
    };
    let shown = base64.len() * 3 / 4;
    declared >= MIN_DECLARED && shown * SHOWN_FRACTION < declared
}

/// The length of the DER SEQUENCE the base64 `body` opens with, header included, when
/// it opens with one in a definite long or short form.
fn declared_length(body: &[u8]) -> Option<usize> {
    let head = std::str::from_utf8(body.get(..8)?).ok()?;
    let der = decode_base64(head)?;
    match der.as_slice() {
        [0x30, n, ..] if *n < 0x80 => Some(*n as usize + 2),
        [0x30, 0x81, n, ..] => Some(*n as usize + 3),
        [0x30, 0x82, hi, lo, ..] => Some(((*hi as usize) << 8 | *lo as usize) + 4),
        _ => None,
    }
}
