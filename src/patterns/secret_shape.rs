//! Shapes that look random but are identifiers or digests, not credentials: UUIDs,
//! lockfile integrity strings (`sha512-…`), `sha256:…` digests, password hashes
//! (`pbkdf2_sha256$…`, `$2b$…`), and base64 of readable text (an encoded sentence, a
//! JSON object, `user:password` with a plain-word password). Also the base64 decoder
//! the other checks share.
//!
//! It owns these shape tests and nothing about where a value sits; `secret_value`
//! asks it after the keyword and placeholder checks.

use super::secret_placeholder::is_plain_words;
use super::secret_reference::is_placeholder;

/// Shapes that look random but are identifiers or digests: UUIDs, lockfile
/// integrity strings (`sha512-…`), `sha256:…` digests, and base64 of readable text
/// (test vectors such as `dGhlIHNhbXBsZSBub25jZQ==`).
pub fn is_known_shape(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    let digest_prefixes = [
        "sha1-", "sha224-", "sha256-", "sha384-", "sha512-", "md5-", "sha1:", "sha256:", "sha384:",
        "sha512:", "md5:", "blake2b-", "blake3:",
    ];
    if digest_prefixes.iter().any(|p| lower.starts_with(p)) {
        return true;
    }
    // Password hashes (Django's `pbkdf2_sha256$…`, crypt's `$2b$…`, `$argon2id$…`):
    // stored verifiers, not credentials.
    let hash_prefixes = [
        "pbkdf2_",
        "argon2$",
        "bcrypt$",
        "bcrypt_sha256$",
        "scrypt$",
        "$2a$",
        "$2b$",
        "$2y$",
        "$argon2",
        "$1$",
        "$5$",
        "$6$",
        "$pbkdf2",
        "$scrypt$",
    ];
    if hash_prefixes.iter().any(|p| lower.starts_with(p)) {
        return true;
    }
    is_uuid(value) || is_base64_of_text(value)
}

fn is_uuid(v: &str) -> bool {
    let b = v.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, &c)| match i {
            8 | 13 | 18 | 23 => c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// Base64 whose decoding is mostly printable text: an encoded sentence (a test
/// vector), a JSON object (a JWT's header alone), or `user:password` with an empty or
/// plain-word password (`dXNlcm5hbWU6cGFzc3dvcmQ=`, `username:password`); not key
/// material, which decodes to arbitrary bytes.
pub(super) fn is_base64_of_text(v: &str) -> bool {
    let Some(out) = decode_base64(v) else {
        return false;
    };
    if v.trim_end_matches('=').len() < 12 {
        // Short values: only an encoded phrase (`YSBzZWNyZXQ=`, "a secret"), padded
        // as an encoder pads it, of letters and spaces with at least one space.
        // Random bytes decode so about once in 10^6 (8 bytes, each one of 53 of 256).
        return v.len().is_multiple_of(4)
            && out.contains(&b' ')
            && out.iter().all(|&c| c == b' ' || c.is_ascii_alphabetic());
    }
    let printable = out
        .iter()
        .filter(|&&c| c == b' ' || c.is_ascii_graphic())
        .count();
    if printable * 10 < out.len() * 9 {
        return false;
    }
    let sentence = out.contains(&b' ') && !out.contains(&b':') && v.len().is_multiple_of(4);
    let json = out.first() == Some(&b'{') && out.last() == Some(&b'}');
    let plain_login = printable == out.len()
        && std::str::from_utf8(&out)
            .ok()
            .and_then(|t| t.split_once(':'))
            .is_some_and(|(_, pw)| pw.is_empty() || is_plain_words(pw) || is_placeholder(pw));
    sentence || json || plain_login
}

/// The bytes of standard or URL-safe base64 (padding optional), or `None` when `v`
/// holds another character.
pub fn decode_base64(v: &str) -> Option<Vec<u8>> {
    let body = v.trim_end_matches('=');
    let mut bits = 0u32;
    let mut nbits = 0;
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    for c in body.bytes() {
        let d = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        bits = (bits << 6) | d as u32;
        nbits += 6;
        if nbits >= 8 {
            nbits -= 8;
            out.push((bits >> nbits) as u8);
            bits &= (1 << nbits) - 1;
        }
    }
    Some(out)
}
