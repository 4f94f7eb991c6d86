//! Random values for the scanner's tests: a seeded xorshift generator and the alphabets
//! secrets are drawn from, so each test that measures how often random values pass a
//! judgement draws them the same way. Test-only; nothing here is used by the scanner.

/// A xorshift64 generator from `seed` (not zero): deterministic, so a count a test
/// states is the count every run sees.
pub(super) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// `len` characters drawn from `alphabet`.
pub(super) fn random(next: &mut impl FnMut() -> u64, alphabet: &[u8], len: usize) -> String {
    (0..len)
        .map(|_| alphabet[(next() % alphabet.len() as u64) as usize] as char)
        .collect()
}

pub(super) const BASE62: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
pub(super) const BASE64: &[u8] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
pub(super) const B64URL: &[u8] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
pub(super) const PASSWORD: &[u8] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~!*";
pub(super) const LOWER: &[u8] = b"abcdefghijklmnopqrstuvwxyz";
/// Capitals, digits, `_` and `.`: the alphabet a constant's name is written in, where
/// a random value comes closest to one.
pub(super) const CAPS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.";
