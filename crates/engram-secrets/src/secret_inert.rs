//! Credential-shaped text that cannot authenticate anyone: a JWT with no signature, an
//! AWS key id of the form AWS's documentation reserves, a SigV4 credential scope.
//!
//! It owns these three judgements of a matched token's shape, and nothing about where
//! the token sits. It must never exempt a token that a server would accept: each test
//! reads a property a working credential cannot have (a signature, a random key id,
//! a secret in the scope), never a guess about who wrote it.
//!
//! ## What they let through (false negatives)
//!
//! - [`is_unsigned_jwt`]: a JWT whose signature part is empty, or whose header says
//!   `"alg":"none"`. A signed JWT always has a signature, and a server that accepts
//!   `alg: none` is broken whatever the scanner does; what passes is the claims of an
//!   unsigned token, which may be personal data but are no credential. Random tokens
//!   of the `jwt` rule's shape with a signature never pass (the test below: 0 of
//!   200,000).
//! - [`is_doc_example_key_id`]: an AWS key id holding `EXAMPLE` anywhere
//!   (`AKIAIOSFODNN7EXAMPLE`, `ASIA4ZP5EXAMPLETOKEN`). A random key id holds those
//!   seven letters about 10 × 36^-7 ≈ 1.3 × 10^-10 of the time (0 of 1,000,000 in the
//!   test). Also a made-up id, whose 16 characters after the prefix hold
//!   an ascending run of six (`AKIAABCDEFGUE1234567`): about 11 × 32^-5 ≈ 3 × 10^-7 of
//!   random ids of 32 symbols, 2 × 10^-7 of 36 (the test counts them over 1,000,000).
//!   `EXAMPL` and any last letter (`AKIAIOSFODNN7EXAMPLF`).
//! - [`is_worded_base32`]: base32 of a common word and then other bytes
//!   (`JBSWY3DPEHPK3PXP`, "Hello!" and `DEADBEEF`, the TOTP documentation's key).
//! - [`is_sigv4_scope`]: `<key id>/<date>/<region>/<service>/aws4_request`, the
//!   credential scope of a SigV4 `Authorization` header: the access key id (an
//!   identifier, still caught by `aws_access_key` when it is one of AWS's) and where
//!   it was used, never the secret key, which SigV4 does not send. A value passes only
//!   with the literal `/aws4_request` ending, which no random value has (0 of 200,000).

/// Whether `token` (`header.payload.signature`, base64url parts) is a JWT that carries
/// no signature: an empty third part, or a header whose `alg` is `none`.
pub(super) fn is_unsigned_jwt(token: &str) -> bool {
    let token = token.trim_end_matches(['"', '\'', '`']);
    let mut parts = token.split('.');
    let (Some(header), Some(_payload), Some(signature)) =
        (parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    if parts.next().is_some() || !header.starts_with("eyJ") {
        return false;
    }
    signature.is_empty()
        || header_alg_is_none(header)
        || is_worded_signature(signature)
        || is_word_for_signature(signature)
}

/// A signature part that is a word written in its place (`.fake`, `.invalid`,
/// `.SIGNATURE`): three to twenty letters in one case, a common identifier
/// word. No JWS algorithm signs in so few bytes (HS256's 32 bytes are 43 characters,
/// the shortest there is), and bytes of a real signature, base64url-encoded, are one
/// common word all in one case about never; a real signature wrapped after its first
/// few characters passes only when those happen to spell such a word.
fn is_word_for_signature(signature: &str) -> bool {
    let lower = signature.to_ascii_lowercase();
    (3..=20).contains(&signature.len())
        && (signature == lower || signature == signature.to_ascii_uppercase())
        && lower.bytes().all(|b| b.is_ascii_lowercase())
        && super::secret_words::is_identifier_word(&lower)
}

/// A signature that is base64 of words (`aW52YWxpZF9zaWduYXR1cmU`, `invalid_signature`):
/// 12 bytes or more of common identifier words of three letters or more
/// joined by `_`, `-` or spaces. A real signature is random bytes, which are all
/// letters and those joiners about 4^-12 of the time, and words far more rarely.
fn is_worded_signature(signature: &str) -> bool {
    let Some(out) = super::secret_shape::decode_base64(signature) else {
        return false;
    };
    let Ok(text) = std::str::from_utf8(&out) else {
        return false;
    };
    out.len() >= 12
        && text.split(['_', '-', ' ']).all(|w| {
            w.len() >= 3
                && w.bytes().all(|b| b.is_ascii_lowercase())
                && super::secret_words::is_identifier_word(w)
        })
}

/// Whether a JWT header (base64url of a JSON object) says `"alg": "none"`.
fn header_alg_is_none(header: &str) -> bool {
    let Some(json) = super::secret_value::decode_base64(header) else {
        return false;
    };
    let text: String = String::from_utf8_lossy(&json)
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>()
        .to_ascii_lowercase();
    text.contains("\"alg\":\"none\"")
}

/// Whether an AWS key id holds `EXAMPLE`: the form AWS's documentation and SDK tests use
/// (`AKIAIOSFODNN7EXAMPLE`, `ASIA4ZP5EXAMPLETOKEN`), not an issued key; or is made up,
/// its 16 characters after the prefix holding an ascending run of 6 or more
/// (`AKIAABCDEFGUE1234567`).
pub(super) fn is_doc_example_key_id(id: &[u8]) -> bool {
    // `EXAMPL` then any letter (`AKIAIOSFODNN7EXAMPLF`, the documentation's id
    // with its last letter changed to make a second one): six letters, about
    // 11 × 36^-6 ≈ 5 × 10^-9 of random ids.
    id.windows(6).any(|w| w == b"EXAMPL") || is_made_up_key_id(id)
}

/// Whether `value` is base32 (RFC 4648, the alphabet of TOTP secrets) of bytes that
/// open with a common word of five letters or more, not followed by another letter
/// (`JBSWY3DPEHPK3PXP`, "Hello!" and `DEADBEEF`, the Google Authenticator key-URI
/// documentation's example secret). An issued TOTP secret is random bytes,
/// whose first five are ASCII letters about (52/256)^5 ≈ 3 × 10^-4 of the time and
/// one of the five-thousand-odd common words about never (0 of 200,000 in the tests).
pub(super) fn is_worded_base32(value: &str) -> bool {
    let Some(out) = decode_base32(value) else {
        return false;
    };
    let letters = out.iter().take_while(|b| b.is_ascii_alphabetic()).count();
    let Ok(word) = std::str::from_utf8(&out[..letters]) else {
        return false;
    };
    let lower = word.to_ascii_lowercase();
    let one_case =
        word == lower || word == word.to_ascii_uppercase() || word.get(1..) == lower.get(1..);
    letters >= 5 && one_case && super::secret_words::is_identifier_word(&lower)
}

/// The bytes of `value` read as base32 (RFC 4648, padding optional), 16 characters or
/// more, all in capitals or all in lower case (an otpauth URI's `secret=` is written in
/// either); `None` for anything else.
fn decode_base32(value: &str) -> Option<Vec<u8>> {
    let v = value
        .trim_end_matches(['"', '\'', '`'])
        .trim_end_matches('=');
    let upper = v
        .bytes()
        .all(|b| b.is_ascii_uppercase() || (b'2'..=b'7').contains(&b));
    let lower = v
        .bytes()
        .all(|b| b.is_ascii_lowercase() || (b'2'..=b'7').contains(&b));
    if v.len() < 16 || !(upper || lower) {
        return None;
    }
    let mut bits = 0u32;
    let mut nbits = 0;
    let mut out = Vec::with_capacity(v.len() * 5 / 8);
    for b in v.bytes() {
        let d = if b.is_ascii_alphabetic() {
            b.to_ascii_uppercase() - b'A'
        } else {
            b - b'2' + 26
        };
        bits = (bits << 5) | u32::from(d);
        nbits += 5;
        if nbits >= 8 {
            nbits -= 8;
            out.push((bits >> nbits) as u8);
            bits &= (1 << nbits) - 1;
        }
    }
    Some(out)
}

/// Whether `value` is base32 of text: ten bytes or more, every one a letter,
/// a digit, a space or `. , ! ? _ - @ : /` (`GEZDGNBVGY3TQOJQ…`, "1234567890…", and
/// `KRSXG5CTMVRXEZLUKN2XAZLSKNSWG4TFOQ`, "TestSecretSuperSecret": TOTP libraries' test
/// keys, typed as text and then encoded). An issued TOTP secret is random bytes, ten or
/// more of which are all such characters about (73/256)^10 ≈ 4 × 10^-6 of the time
/// (the test counts random base32 values of 16 to 32 characters).
pub(super) fn is_text_base32(value: &str) -> bool {
    decode_base32(value).is_some_and(|out| {
        out.len() >= 10
            && out.iter().all(|&b| {
                b.is_ascii_alphanumeric()
                    || matches!(
                        b,
                        b' ' | b'.' | b',' | b'!' | b'?' | b'_' | b'-' | b'@' | b':' | b'/'
                    )
            })
    })
}

/// Whether a JWT-shaped value (two or three base64url parts, one opening `eyJ`) is no
/// JWT at all: a part that is not base64 of anything (a length of 4n + 1,
/// which no byte string encodes to: `…IkpXVCJ9A.`, a character added to make a test
/// fail), a header that decodes to text that is no JSON object (`dGVzdA`, "test";
/// `WyJ0ZXN0Il0`, `["test"]`), a payload that decodes to such text (`aW52YWxpZCBjbGFpbQ`,
/// "invalid claim"), or a JWS header (one naming its `alg`) followed by one part only,
/// the payload missing. These are the malformed tokens of a JOSE library's rejection
/// tests. A real JWT's header and claims are JSON objects and its parts are base64url
/// of whole bytes; an opaque payload that decodes to binary is not judged, and neither
/// is a two-part `eyJ….sig` whose first part names no `alg` (a signed cookie of
/// `itsdangerous`). `closed`: the value ended at its closing quote, so that a token cut
/// by a line wrap is never judged malformed for its cut.
pub(super) fn is_malformed_jwt(token: &str, closed: bool) -> bool {
    let parts: Vec<&str> = token.split('.').collect();
    if !closed
        || !(2..=3).contains(&parts.len())
        || !parts.iter().any(|p| p.starts_with("eyJ"))
        || parts.iter().any(|p| {
            p.is_empty()
                || !p
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
    {
        return false;
    }
    if parts.iter().any(|p| p.len() % 4 == 1) {
        return true;
    }
    let text = |part: &str| {
        super::secret_shape::decode_base64(part)
            .filter(|out| out.len() >= 4 && out.iter().all(|&b| b == b' ' || b.is_ascii_graphic()))
            .map(|out| String::from_utf8_lossy(&out).into_owned())
    };
    let object = |t: &str| t.starts_with('{') && t.ends_with('}');
    let (header, second) = (text(parts[0]), text(parts[1]));
    match parts.len() {
        3 => {
            header.as_deref().is_some_and(|h| !object(h))
                || second.as_deref().is_some_and(|p| !object(p))
        }
        _ => {
            header
                .as_deref()
                .is_some_and(|h| object(h) && h.contains("\"alg\""))
                && second.as_deref().is_none_or(|p| !object(p))
        }
    }
}

/// `AKIAABCDEFGUE1234567`: the 16 characters after the four-letter prefix hold an
/// ascending run of six letters or digits (`ABCDEFG`, `123456`), as a person types a
/// key id for a test. An issued id (base32-like, 32 or 36 symbols) holds one about
/// 11 × 32^-5 ≈ 3 × 10^-7 of the time.
fn is_made_up_key_id(id: &[u8]) -> bool {
    id.len() == 20
        && std::str::from_utf8(&id[4..]).is_ok_and(super::secret_value::has_sequential_run)
}

/// Whether `value` is a SigV4 credential scope (`AKID/20220809/us-east-1/s3/aws4_request`),
/// the `Credential=` of an AWS `Authorization` header.
pub(super) fn is_sigv4_scope(value: &str) -> bool {
    let v = value.trim_end_matches(['"', '\'', '`', ',', ';']);
    // Percent-encoded in a presigned URL's query (`minio%2F20150620%2F…%2Faws4_request`).
    v.ends_with("/aws4_request")
        || v.len() > 15
            && v.get(v.len() - 15..)
                .is_some_and(|end| end.eq_ignore_ascii_case("%2Faws4_request"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_random::xorshift;

    #[test]
    fn unsigned_jwts_example_key_ids_and_scopes_are_inert() {
        assert!(is_unsigned_jwt(
            "eyJhbGciOiJIUzI1NiJ9.eyJzb21lIjoicGF5bG9hZCJ9."
        ));
        assert!(is_unsigned_jwt(
            "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.e30.\""
        ));
        // `{"alg":"none"}` with a signature part still says it is unsigned.
        assert!(is_unsigned_jwt(
            "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJl"
        ));
        assert!(!is_unsigned_jwt(
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
        ));
        assert!(is_doc_example_key_id(b"ASIA4ZP5EXAMPLETOKEN"));
        assert!(is_doc_example_key_id(b"AKIAIOSFODNN7EXAMPLE"));
        assert!(!is_doc_example_key_id(b"AKIAHNHEOABTCPM7PCMI"));
        assert!(is_doc_example_key_id(b"AKIAABCDEFGUE1234567"));
        assert!(is_doc_example_key_id(b"AKIAQ2W3123456RT7XYZ"));
        // A run of five, or one that starts in the prefix, is not made up.
        assert!(!is_doc_example_key_id(b"AKIAXBCDEFQ2W3RT7XYZ"));
        assert!(!is_doc_example_key_id(b"AKIABCDEQ2W3RT7XYZ7Q"));
        assert!(is_sigv4_scope(
            "H20ABqCkLZID4rLe/20220809/us-east-1/s3/aws4_request,"
        ));
        assert!(!is_sigv4_scope("H20ABqCkLZID4rLe/20220809/us-east-1/s3"));
    }

    /// The false-negative rates of the module comment: random signed JWTs, random key
    /// ids and random values are never inert.
    #[test]
    fn random_tokens_are_never_inert() {
        let mut next = xorshift(0x9E37_79B9_7F4A_7C15u64);
        let b64url = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let upper = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
        let upper36 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        let mut pick = |alphabet: &[u8], len: usize| -> String {
            (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize] as char)
                .collect::<String>()
        };
        let mut inert = 0;
        for _ in 0..200_000 {
            let jwt = format!(
                "eyJ{}.ey{}.{}",
                pick(b64url, 30),
                pick(b64url, 40),
                pick(b64url, 43)
            );
            inert += usize::from(is_unsigned_jwt(&jwt));
            inert += usize::from(is_sigv4_scope(&pick(b64url, 40)));
        }
        assert_eq!(inert, 0);
        let (mut example, mut made_up) = (0, 0);
        for _ in 0..1_000_000 {
            let alphabet: &[u8] = if pick(b"01", 1) == "0" {
                upper
            } else {
                upper36
            };
            let id = format!("AKIA{}", pick(alphabet, 16));
            example += usize::from(id.contains("EXAMPLE"));
            made_up += usize::from(is_made_up_key_id(id.as_bytes()));
        }
        eprintln!("of 1,000,000 random key ids: {example} hold EXAMPLE, {made_up} made up");
        assert_eq!(example, 0);
        // About 0.25 expected (3 × 10^-7 for 32 symbols, 2 × 10^-7 for 36).
        assert!(made_up <= 2, "{made_up} random key ids read as made up");
    }
}
