//! Is this assigned value a secret? The judgement the redactor applies after a
//! keyword rule (`password = …`, `token: …`, `Bearer …`) has matched, where the regex
//! alone cannot tell a credential from a variable name, a placeholder or a hash.
//!
//! It owns the Shannon-entropy threshold and the allowlist of shapes that look random
//! but are not secrets (UUIDs, lockfile integrity strings, hashes, base64 of readable
//! text). It never sees more than one matched span and never fails: any input gives
//! a yes or a no.
//!
//! ## The threshold
//!
//! A value is a secret when it is at least 8 characters long, holds no whitespace,
//! contains a digit (or a symbol) as well as letters, is none of the shapes below,
//! and its Shannon entropy is at least [`MIN_ENTROPY`] = 3.0 bits per character.
//! Why 3.0: an 8-character value reaches 3.0 only when all 8 characters differ, so
//! short dictionary-like defaults stay out (`changeme` has 2.75, `password` 2.75,
//! `hunter22` 2.75), while a random 32-character value is far above it whatever its
//! alphabet (base62 ≈ 4.6, lowercase hex ≈ 3.8; the chance of a random 32-character
//! hex string falling under 3.0 is negligible). gitleaks' generic rule uses 3.5 with
//! a minimum of 10 characters; 3.0 with a minimum of 8 redacts more short passwords,
//! which is the side to err on when the alternative is writing a credential to disk.
//! What it misses: passphrases with spaces, all-letter passwords and weak ones such as
//! `Passw0rd1` (2.95) — the specific rules and the reviewer are there for those.

/// Bits per character a value needs to count as random; see the module comment.
pub const MIN_ENTROPY: f64 = 3.0;

/// Shortest value that can count as a secret.
pub const MIN_LEN: usize = 12;

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
];

/// Substrings of placeholders and references rather than values.
const PLACEHOLDERS: &[&str] = &[
    "${",
    "{{",
    "}}",
    "%s",
    "%(",
    "{0}",
    "{}",
    "<",
    ">",
    "example",
    "placeholder",
    "changeme",
    "change_me",
    "change-me",
    "redacted",
    "dummy",
    "sample",
    "xxxx",
    "****",
    "....",
    "your_",
    "your-",
    "yourp",
    "yours",
    "fake",
    "insert",
    "replace",
    "process.env",
    "environ",
    "getenv",
    "env[",
    "env.",
    "secrets.",
    "vault:",
];

/// Whether `value` is a placeholder or reference (`${TOKEN}`, `%s`, `<password>`,
/// `os.environ`, `your-api-key`) rather than a literal credential.
pub fn is_placeholder(value: &str) -> bool {
    let v = value.trim();
    if v.is_empty() || v.starts_with(['$', '%', '{', '#', '@', '&', '*']) {
        return true;
    }
    let lower = v.to_ascii_lowercase();
    PLACEHOLDERS.iter().any(|p| lower.contains(p))
}

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

/// Base64 whose decoding is mostly printable text with a space: an encoded sentence
/// (a test vector), not key material, which decodes to arbitrary bytes.
fn is_base64_of_text(v: &str) -> bool {
    let body = v.trim_end_matches('=');
    if body.len() < 12 || !v.len().is_multiple_of(4) {
        return false;
    }
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
            _ => return false,
        };
        bits = (bits << 6) | d as u32;
        nbits += 6;
        if nbits >= 8 {
            nbits -= 8;
            out.push((bits >> nbits) as u8);
            bits &= (1 << nbits) - 1;
        }
    }
    let printable = out
        .iter()
        .filter(|&&c| c == b' ' || c.is_ascii_graphic())
        .count();
    out.contains(&b' ') && !out.contains(&b':') && printable * 10 >= out.len() * 9
}

/// Whether a keyword rule's match is a secret. `ident` is the identifier holding the
/// keyword (`DB_PASSWORD`, `client_secret`), `value` the assigned value without its
/// quotes, `quoted` whether it was quoted, `next` the character after the match.
pub fn looks_secret(ident: &str, value: &str, quoted: bool, next: Option<char>) -> bool {
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
    if is_wordy(value) {
        return false;
    }
    // An unquoted value holding `=` is code (`cacheable=True`), not a literal.
    if !quoted && value.contains('=') {
        return false;
    }
    if value.len() < MIN_LEN
        || value.chars().any(char::is_whitespace)
        || is_placeholder(value)
        || value.contains("://")
        || value.starts_with(['/', '.', '~', '\\'])
        || is_known_shape(value)
    {
        return false;
    }
    // Words and identifiers (`access_token`, `Bearer-Token`, `refreshToken`): a random
    // value of 8+ characters without a digit or symbol is rare, a name without one is
    // the rule.
    let has_other = value
        .bytes()
        .any(|b| !b.is_ascii_alphabetic() && !matches!(b, b'_' | b'-' | b'.'));
    if !has_other {
        return false;
    }
    // `base64.b64decode`, `settings.SECRET_KEY2`: a dotted path of identifiers.
    if !quoted
        && value.contains('.')
        && value.split('.').all(|seg| {
            seg.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && seg.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
    {
        return false;
    }
    entropy(value) >= MIN_ENTROPY
}

/// Whether `value` is words joined by `_`, `-` or `.`: each part lowercase letters
/// (or one capital and lowercase) optionally ending in digits, or digits alone.
fn is_wordy(value: &str) -> bool {
    let parts: Vec<&str> = value.split(['_', '-', '.']).collect();
    parts.len() >= 2
        && parts.iter().all(|p| {
            let letters = p.trim_end_matches(|c: char| c.is_ascii_digit());
            let mut chars = letters.chars();
            let word = match chars.next() {
                None => !p.is_empty(),
                Some(first) => first.is_ascii_alphabetic() && chars.all(|c| c.is_ascii_lowercase()),
            };
            word && !p.is_empty()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threshold_separates_defaults_from_random_values() {
        assert!(entropy("changeme") < MIN_ENTROPY);
        assert!(!looks_secret("password", "changeme", true, None));
        assert!(!looks_secret("password", "hunter22", true, None));
        assert!(looks_secret(
            "password",
            "Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox1Qb3Vc7Nm",
            true,
            None
        ));
        assert!(looks_secret(
            "secret",
            "0f1e2d3c4b5a69788796a5b4c3d2e1f0",
            true,
            None
        ));
    }

    #[test]
    fn placeholders_shapes_and_code_are_not_secrets() {
        for v in [
            "${TOKEN}",
            "%s",
            "<password>",
            "your-api-key-here",
            "os.environ",
        ] {
            assert!(!looks_secret("token", v, true, None), "{v}");
        }
        assert!(!looks_secret(
            "token",
            "123e4567-e89b-12d3-a456-426614174000",
            true,
            None
        ));
        assert!(!looks_secret(
            "token",
            "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==",
            true,
            None
        ));
        assert!(!looks_secret(
            "secret",
            "base64.b64decode",
            false,
            Some('(')
        ));
        assert!(!looks_secret("password", "user_password", false, None));
        assert!(!looks_secret(
            "token_hash",
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            true,
            None
        ));
        assert!(!looks_secret(
            "secret",
            "dGhlIHNhbXBsZSBub25jZQ==",
            true,
            None
        ));
    }
}
