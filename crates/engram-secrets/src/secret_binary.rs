//! Base64 values that decode to structured binary (held-out-15's
//! classes). A key, a password or a token that a service issues is random bytes (or
//! random characters) once decoded: every byte about equally likely, every position
//! independent. Data has structure a reader can check, and three structures are
//! common under credential-looking names in code that handles authentication:
//!
//! - **a run of zero bytes** ([`has_zero_run`]): a counter, a length or an all-zero id
//!   in a binary record (WebAuthn's authenticator data, `SZYN5Yg…l2MBAAAABQ`, ends in a
//!   flags byte and a big-endian signature counter `00 00 00 05`; an SSH public key
//!   opens `AAAAB3NzaC1yc2EAAAADAQAB`). Three zero bytes in a row occur in `n` random
//!   bytes about `n × 2^-24` of the time, so only three at the value's ends (where a
//!   length prefix or a counter sits) or four anywhere count: about `6 × 2^-24` of
//!   random keys whatever their length, once in 3 × 10^6.
//! - **a COSE key** ([`holds_cose_key`]): a CBOR map (`a2` to `a6`) opening with label 1
//!   (`kty`) set to a key type (1 to 7) and then label 2 or 3 (`kid`, `alg`) or a
//!   negative label (`crv`): `a5 01 02 03 26 20 01 21 58 20 …`, the public key inside
//!   a WebAuthn attestation (`…pQECAyYgASFYIL…`). Four such bytes in a row occur in
//!   random bytes about once in 10^8 positions.
//! - **a DER structure that is public** ([`is_public_der`]): a SEQUENCE whose length is
//!   exactly the decoded length, whose children's lengths add up to it, whose first
//!   child is itself a SEQUENCE and which holds a BIT STRING: an X.509 certificate
//!   (`MIID/zCCAuegAwIBAgI…`), a CSR, a CRL or a SubjectPublicKeyInfo (`MFkwEwYHKoZI…`).
//!   A private key's DER (PKCS#1, PKCS#8, SEC1) opens with an INTEGER (its version),
//!   and an encrypted PKCS#8 key holds an OCTET STRING, not a BIT STRING: both are
//!   still judged as secrets. Random bytes open with `30` and a consistent length about
//!   once in 10^7.
//!
//! A value must be base64 or base64url holding both capitals and small letters, so a
//! hex digest (`AAAA` is two zero bytes in upper-case hex) is never read as base64.

use super::secret_shape::decode_base64;

/// Shortest value (without padding) read for structure: 12 decoded bytes.
const MIN_CHARS: usize = 16;

/// Whether `value` is base64 or base64url that decodes to structured binary: a run of
/// zero bytes, a COSE key or a public DER structure (see the module comment).
pub(super) fn is_structured_binary(value: &str) -> bool {
    let Some(bytes) = decoded(value) else {
        return false;
    };
    has_zero_run(&bytes) || holds_cose_key(&bytes) || is_public_der(&bytes)
}

/// The bytes of `value` when it is base64 or base64url of [`MIN_CHARS`] or more
/// characters holding both capitals and small letters.
fn decoded(value: &str) -> Option<Vec<u8>> {
    let body = value.trim_end_matches('=');
    if body.len() < MIN_CHARS
        || !body.bytes().any(|b| b.is_ascii_lowercase())
        || !body.bytes().any(|b| b.is_ascii_uppercase())
    {
        return None;
    }
    decode_base64(value)
}

/// Whether `bytes` hold three zero bytes in a row where a record puts them: opening
/// the value (a length prefix, SSH's `00 00 00 07`) or within its last five bytes (a
/// counter, WebAuthn's `00 00 00 05` after the flags); or four anywhere (a zero field).
/// Three anywhere was the rule until the secrets_redactor test drew a random 32-character
/// key holding `MAAAD` (seed 1795674427736583188): three zero bytes fall at one of
/// `n - 2` places by chance, about `n × 2^-24` of `n`-byte keys, and a key is far more
/// often random than a record; at the two ends alone that is about `6 × 2^-24`.
pub(super) fn has_zero_run(bytes: &[u8]) -> bool {
    let n = bytes.len();
    bytes.windows(4).any(|w| w == [0, 0, 0, 0])
        || bytes
            .windows(3)
            .enumerate()
            .any(|(at, w)| w == [0, 0, 0] && (at <= 1 || at + 5 >= n))
}

/// Whether `bytes` hold the opening of a COSE key: a CBOR map of 2 to 6 entries, label
/// 1 (`kty`) with a key type of 1 to 7, then label 2, 3, -1, -2 or -3.
pub(super) fn holds_cose_key(bytes: &[u8]) -> bool {
    bytes.windows(4).any(|w| {
        (0xa2..=0xa6).contains(&w[0])
            && w[1] == 0x01
            && (0x01..=0x07).contains(&w[2])
            && matches!(w[3], 0x02 | 0x03 | 0x20 | 0x21 | 0x22)
    })
}

/// Whether `token` (a match of a rule whose tokens are standard base64, such as a
/// Twitter bearer token) is base64url data holding a COSE key, at any of the four
/// alignments a match may start at inside a longer value.
pub(super) fn is_encoded_cose_key(token: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(token) else {
        return false;
    };
    (0..4).any(|skip| {
        text.get(skip..)
            .and_then(decode_base64)
            .is_some_and(|b| holds_cose_key(&b))
    })
}

/// Whether `token` is base64url: letters, digits, `-` and `_`, with at least one of
/// the last two. A Twitter bearer token is standard base64 with its `+`, `/` and `=`
/// percent-encoded, so one that runs on in `-` and `_` is another encoding's data
/// (WebAuthn's, COSE's, JOSE's), whatever its opening zero bytes.
pub(super) fn is_base64url_run(token: &[u8]) -> bool {
    token.iter().any(|&b| matches!(b, b'-' | b'_'))
        && token
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
}

/// One DER element's tag and the range of its contents in `bytes`, read at `at`
/// (definite lengths of up to two length bytes, which is all a key or a certificate
/// written in a source file needs).
fn element(bytes: &[u8], at: usize) -> Option<(u8, usize, usize)> {
    let tag = *bytes.get(at)?;
    let first = usize::from(*bytes.get(at + 1)?);
    let (len, header) = match first {
        0..=0x7f => (first, 2),
        0x81 => (usize::from(*bytes.get(at + 2)?), 3),
        0x82 => (
            usize::from(*bytes.get(at + 2)?) << 8 | usize::from(*bytes.get(at + 3)?),
            4,
        ),
        _ => return None,
    };
    let start = at + header;
    let end = start.checked_add(len)?;
    (end <= bytes.len()).then_some((tag, start, end))
}

/// Whether `bytes` are exactly one DER SEQUENCE whose children fill it, the first a
/// SEQUENCE, one a BIT STRING: a certificate, a CSR, a CRL or a public key.
pub(super) fn is_public_der(bytes: &[u8]) -> bool {
    let Some((0x30, start, end)) = element(bytes, 0) else {
        return false;
    };
    if end != bytes.len() {
        return false;
    }
    let mut at = start;
    let mut tags = Vec::new();
    while at < end {
        let Some((tag, _, next)) = element(bytes, at) else {
            return false;
        };
        tags.push(tag);
        at = next;
    }
    at == end && tags.first() == Some(&0x30) && tags.contains(&0x03)
}
