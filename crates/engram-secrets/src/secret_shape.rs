//! Shapes that look random but are identifiers or digests, not credentials: UUIDs,
//! lockfile integrity strings (`sha512-…`), `sha256:…` digests, password hashes
//! (`pbkdf2_sha256$…`, `$2b$…`, any `<scheme>$…$…` naming a hash:
//! `sha1$salt$e4a1…`), and base64 of readable text (an encoded sentence, a
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
    if is_digest(value) {
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
    if hash_prefixes.iter().any(|p| lower.starts_with(p)) || is_named_hash(value) {
        return true;
    }
    is_uuid(value) || is_base64_of_text(value) || is_der_certificate(value)
}

/// Names of the hash functions and password-hashing schemes that open a stored hash
/// (see [`is_named_hash`]).
const HASH_NAMES: &[&str] = &[
    "md4", "md5", "sha1", "sha224", "sha256", "sha384", "sha512", "crypt", "bcrypt", "scrypt",
    "argon2", "argon2i", "argon2d", "argon2id", "pbkdf2", "nthash", "lmhash", "des", "bsdi",
];

/// Django's and passlib's `<scheme>$<field>$…$<hash>`: `sha1$123abcdef$e4a1…`,
/// `md5$salt$c827…`, `unsalted_md5$…`, `crypt$c2$c2M87q...WWcU`. The scheme is lower-case
/// words joined by `_` or `-`, one of them a hash's name ([`HASH_NAMES`]); two `$`
/// fields or more follow, the last one of eight characters or more. A stored hash
/// verifies a password and does not give it. A random value opens with a hash's name
/// and `$` about never: it needs a `$` right after three or more given letters, and
/// the password alphabets of the tests hold no `$` at all.
pub(super) fn is_named_hash(value: &str) -> bool {
    let v = value.trim_end_matches(['"', '\'', '`']);
    let fields: Vec<&str> = v.split('$').collect();
    let scheme = fields[0];
    fields.len() >= 3
        && fields[fields.len() - 1].len() >= 8
        && scheme.split(['_', '-']).all(|w| {
            !w.is_empty()
                && w.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
        && scheme.split(['_', '-']).any(|w| HASH_NAMES.contains(&w))
}

/// Whether `value` is a hex digest: 16 (MySQL's old hash, an LM half), 32 (MD5, NT
/// hash), 40 (SHA-1), 56, 64, 96 or 128 (SHA-2) hex digits in one case. Alone that is
/// no sign of a hash: `openssl rand -hex 16` makes passwords of this shape. Only
/// `secret_keyword` asks it, for a test vector's pair, and
/// `secret_fixture`, for a cache key.
pub(super) fn is_hex_digest(value: &str) -> bool {
    let v = value.trim_end_matches(['"', '\'', '`']);
    [16, 32, 40, 56, 64, 96, 128].contains(&v.len())
        && (v
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            || v.bytes()
                .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b)))
}

/// Whether `value` is base64 of a DER X.509 certificate (a SAML service
/// provider's `…_PUBLIC_CERT`, a pinned CA): public by design, what a TLS server sends
/// every client. It reads the certificate's first bytes: `SEQUENCE` (two length bytes)
/// holding the `tbsCertificate` `SEQUENCE` (two length bytes, no longer than the
/// outer one) that opens with the explicit version tag of a v2 or v3 certificate and
/// then the serial number's `INTEGER` tag (`30 82 .. .. 30 82 .. .. A0 03 02 01 0v 02`).
/// A private key's encodings open otherwise (PKCS#1 and PKCS#8 `30 82 .. .. 02 01 00`,
/// PKCS#12 `… 02 01 03`, SEC1 `30 77 02 01 01`), and a random value matches those ten
/// fixed bytes about 2^-78 of the time.
pub(super) fn is_der_certificate(value: &str) -> bool {
    let v = value.trim_end_matches(['"', '\'', '`']);
    // A certificate is hundreds of bytes; its first 20 characters hold the 14 read.
    if v.len() < 100
        || !v
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
    {
        return false;
    }
    let Some(der) = decode_base64(&v[..20]) else {
        return false;
    };
    let outer = usize::from(der[2]) << 8 | usize::from(der[3]);
    let inner = usize::from(der[6]) << 8 | usize::from(der[7]);
    der[..2] == [0x30, 0x82]
        && der[4..6] == [0x30, 0x82]
        && inner + 4 <= outer
        && der[8..12] == [0xA0, 0x03, 0x02, 0x01]
        && der[12] <= 2
        && der[13] == 0x02
}

/// Digest algorithms as integrity strings and content digests name them, with the
/// sizes in bytes a digest of theirs has (BLAKE2b's is chosen by its user).
const DIGESTS: &[(&str, &[usize])] = &[
    ("sha1", &[20]),
    ("sha224", &[28]),
    ("sha256", &[32]),
    ("sha384", &[48]),
    ("sha512", &[64]),
    ("md5", &[16]),
    ("blake2b", &[32, 48, 64]),
    ("blake3", &[32]),
];

/// `sha512-<base64>` (a lockfile's integrity), `sha256:<hex>` (a content digest): an
/// algorithm's name in lower or upper case, `-` or `:`, then a digest of that
/// algorithm's size, in hex or base64. The size matters: matched on the name alone and
/// regardless of case, a random bearer token starting `mD5-` passed for a digest
/// (secrets_redactor seed 1795613264221144678); a random token of the right length
/// now needs the prefix written as a person writes it too (about 62^-4 per try).
fn is_digest(value: &str) -> bool {
    DIGESTS.iter().any(|(name, sizes)| {
        let upper = name.to_ascii_uppercase();
        let body = [*name, upper.as_str()].iter().find_map(|n| {
            value
                .strip_prefix(n)
                .and_then(|r| r.strip_prefix(['-', ':']))
        });
        body.is_some_and(|b| {
            let hex = b
                .bytes()
                .all(|c| c.is_ascii_hexdigit())
                .then_some(b.len() / 2);
            let hex = hex.filter(|_| b.len() % 2 == 0);
            let b64 = decode_base64(b).map(|d| d.len());
            sizes.iter().any(|&n| hex == Some(n) || b64 == Some(n))
        })
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_have_their_algorithms_size() {
        for v in [
            "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==",
            "sha1-W4o6d2Xf4AEmHd6RVYnngvjJTR4=",
            "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            "md5-XUFAKrxLKna5cZ2REBfFkg==",
            "SHA256:n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg",
        ] {
            assert!(is_digest(v), "{v}");
        }
        for v in [
            "mD5-YxmKQpgWF4qZJvdlfFpUF1T7AzDsAeRA7jYIgcUTay0x",
            "md5-YxmKQpgWF4qZJvdlfFpUF1T7AzDsAeRA7jYIgcUTay0x",
            "sha256:Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox",
            "Sha1-W4o6d2Xf4AEmHd6RVYnngvjJTR4=",
        ] {
            assert!(!is_digest(v), "{v}");
        }
    }

    /// Random base64url tokens of 20 to 99 characters are never digests (a token
    /// passes only when it starts with a digest's name in one case, about 2 × 64^-4
    /// for `md5-`, and its body has that digest's size).
    #[test]
    fn random_tokens_are_never_digests() {
        let mut state = 0xBF58_476D_1CE4_E5B9u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let b64url = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let mut digests = 0;
        for _ in 0..1_000_000 {
            let len = 20 + (next() % 80) as usize;
            let v: String = (0..len)
                .map(|_| b64url[(next() % 64) as usize] as char)
                .collect();
            digests += usize::from(is_known_shape(&v) && is_digest(&v));
        }
        assert_eq!(digests, 0, "of 1,000,000 random tokens");
    }
}
