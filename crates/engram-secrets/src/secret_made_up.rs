//! Values assigned to a credential-named key that are no credential:
//! a constant or an enum member named in code, a JWT that holds only claims, a sample
//! word with accents, and a value made up by repeating a few characters. Each reads a
//! property that a random value of the alphabets a secret is drawn from does not have;
//! the tests at the end measure how often one does.
//!
//! - [`is_constant_reference`]: an unquoted `Type.MEMBER` (`AuthMode.SYSASM`), the type
//!   a capitalised name of common identifier words, the member in capitals; or an
//!   unquoted constant of capitals joined by `_` (`DPI_OCI_AUTH`,
//!   `TNS_AUTH_MODE_LOGON`), three parts or more with one a common word of four
//!   letters or more. Random values: 0 of 200,000 per alphabet and length. Also
//!   one-capital inner parts (`RPC_C_AUTHN_LEVEL_PKT_PRIVACY`, with two words)
//!   and such a constant behind a lower-case module path (`ntlm.NTLM_AUTH_PKT_INTEGRITY`).
//! - [`is_claims_only_jwt`]: `eyJ<header>.<payload…>` with no third part, both parts
//!   base64 of JSON text: a JWT cut at a line's end, whose signature (the only secret
//!   part) is on another line. A random value never decodes to JSON.
//! - [`is_accented_sample`]: a value of one to three lower-case words of three letters
//!   or more joined by punctuation, with an accented Latin letter, one of them a
//!   common identifier word of five letters or more and half their letter pairs
//!   common (`secret_words::loosely_words`) once its accents are dropped (`café-pässwörd`, a test of encodings). An ASCII value never
//!   passes; the test measures random lower-case values with accented letters.
//! - [`is_repeated_unit`]: a run of one to four characters repeated at least three
//!   times over the whole value (`BLAHBLAHBLAH`, `ffff…f`, `abcabcabc`). A random value
//!   of 12 characters or more from 16 symbols or more repeats so under 16^-8.

use super::secret_shape::decode_base64;
use super::secret_words::{is_identifier_word, loosely_words};

/// Whether `value`, unquoted, names a constant or an enum member; see the module comment.
pub(super) fn is_constant_reference(value: &str) -> bool {
    let v = value.trim_end_matches([';', ',', ')']);
    match v.rsplit_once('.') {
        Some((ty, member)) => {
            (is_camel_type(ty) && is_caps_name(member) && member.len() >= 2)
                || (is_module_path(ty) && is_caps_constant(member))
        }
        None => is_caps_constant(v),
    }
}

/// `ntlm`, `impacket.dcerpc.v5.rpcrt`: lower-case identifiers joined by `.`,
/// each starting with a letter, the module a constant is read from
/// (`ntlm.NTLM_AUTH_PKT_INTEGRITY`). The constant behind it must be one on its own
/// ([`is_caps_constant`]), so the module adds no way in for a random value.
fn is_module_path(path: &str) -> bool {
    path.split('.').all(|p| {
        p.starts_with(|c: char| c.is_ascii_lowercase())
            && p.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    })
}

/// `AuthMode`: a capital, then letters, in camel humps of two or more letters each a
/// common identifier word of three letters or more.
fn is_camel_type(ty: &str) -> bool {
    if !ty.starts_with(|c: char| c.is_ascii_uppercase())
        || !ty.bytes().all(|b| b.is_ascii_alphabetic())
    {
        return false;
    }
    let mut humps = Vec::new();
    let mut start = 0;
    for (i, b) in ty.bytes().enumerate() {
        if i > start && b.is_ascii_uppercase() {
            humps.push(&ty[start..i]);
            start = i;
        }
    }
    humps.push(&ty[start..]);
    humps.len() >= 2
        && humps.iter().all(|h| {
            h.len() >= 3
                && h.bytes().skip(1).all(|b| b.is_ascii_lowercase())
                && is_identifier_word(&h.to_ascii_lowercase())
        })
}

/// `SYSASM`, `AUTH_MODE_2`: capitals, digits and `_`, starting with a capital.
fn is_caps_name(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_uppercase())
        && s.bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// `DPI_OCI_AUTH`: three or more parts of two or more capitals or digits (each starting
/// with a capital) joined by `_`, one a common identifier word of four letters or more.
/// A part that is no such word has at most five characters (an
/// abbreviation: `OCI`, `PKT`, `AUTHN`): a random run of capitals and digits
/// (`FUNC_TXA99ORYT3VQQGO_N0Z`, which a looser form took) is longer. An inner part
/// may be one capital (`RPC_C_AUTHN_LEVEL_PKT_PRIVACY`,
/// Windows' `C` for a C constant) when at most a third of the parts are so short and
/// two parts are such words: a random value of capitals and `_` splits into words so
/// twice about never (0 of 200,000 per length in the tests).
pub(super) fn is_caps_constant(v: &str) -> bool {
    let parts: Vec<&str> = v.split('_').collect();
    let word = |p: &&str| {
        p.len() >= 4
            && p.bytes().all(|b| b.is_ascii_uppercase())
            && is_identifier_word(&p.to_ascii_lowercase())
    };
    let short = parts.iter().filter(|p| p.len() == 1).count();
    let words = parts.iter().filter(|p| word(p)).count();
    parts.len() >= 3
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.starts_with(|c: char| c.is_ascii_uppercase())
                && p.bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        })
        && parts[0].len() >= 2
        && parts[parts.len() - 1].len() >= 2
        && parts.iter().all(|p| p.len() <= 5 || word(p))
        && short * 3 <= parts.len()
        && words > usize::from(short > 0)
}

/// Whether `value` is a JWT's header and (part of) its payload with no signature part,
/// both decoding to JSON text; see the module comment.
pub(super) fn is_claims_only_jwt(value: &str) -> bool {
    let v = value.trim_end_matches(['"', '\'', '`']);
    let Some((header, payload)) = v.split_once('.') else {
        return false;
    };
    header.starts_with("eyJ")
        && payload.starts_with("eyJ")
        && !payload.contains('.')
        && json_text(header)
        && json_text(payload)
}

/// Whether a base64url part (possibly cut short), 16 characters or more, decodes to
/// printable text starting `{"`.
fn json_text(part: &str) -> bool {
    let whole = part.len() - part.len() % 4;
    if whole < 16 {
        return false;
    }
    decode_base64(&part[..whole]).is_some_and(|out| {
        out.starts_with(b"{\"") && out.iter().all(|&c| c == b' ' || c.is_ascii_graphic())
    })
}

/// Whether `value` holds an accented Latin letter and, with its accents dropped, is one
/// or two plain words (`secret_placeholder::is_plain_words`); see the module comment.
pub(super) fn is_accented_sample(value: &str) -> bool {
    let v = value.trim_end_matches(['"', '\'', '`']);
    let mut folded = String::with_capacity(v.len());
    let mut accented = 0;
    for c in v.chars() {
        if c.is_ascii() {
            folded.push(c);
            continue;
        }
        let Some(base) = unaccented(c) else {
            return false;
        };
        accented += 1;
        folded.push(base);
    }
    let words: Vec<&str> = folded
        .split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| !w.is_empty())
        .collect();
    accented >= 1
        && (1..=3).contains(&words.len())
        && words.iter().all(|w| w.len() >= 3)
        && folded
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_punctuation() || b == b' ')
        && words.iter().any(|w| w.len() >= 5 && is_identifier_word(w))
        && loosely_words(words, 0.5)
}

/// The base letter of a lower-case accented Latin-1 letter.
fn unaccented(c: char) -> Option<char> {
    Some(match c {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' => 'a',
        'ç' => 'c',
        'è' | 'é' | 'ê' | 'ë' => 'e',
        'ì' | 'í' | 'î' | 'ï' => 'i',
        'ñ' => 'n',
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' => 'o',
        'ù' | 'ú' | 'û' | 'ü' => 'u',
        'ý' | 'ÿ' => 'y',
        _ => return None,
    })
}

/// Whether `value` (8 bytes or more) is a unit of one to four bytes repeated over its
/// whole length, at least three times (`BLAHBLAHBLAH`, `ffff…f`).
pub(super) fn is_repeated_unit(value: &[u8]) -> bool {
    value.len() >= 8
        && (1..=4)
            .any(|p| value.len() >= 3 * p && (p..value.len()).all(|i| value[i] == value[i - p]))
}

/// Whether a match ends in a quoted value of letters and digits, 16 characters or more,
/// that is made up: mostly one character (`secret_placeholder::is_filler`) or a short
/// unit repeated ([`is_repeated_unit`]), as in `"private_key_id": "ffff…f"`. An issued
/// key's or token's random part never is. Only a quoted field's value is judged so: a
/// bare token (`AGE-SECRET-KEY-1QQQ…`) is judged whole.
pub(super) fn is_made_up_tail(token: &[u8]) -> bool {
    let quotes = token
        .iter()
        .rev()
        .take_while(|b| matches!(b, b'"' | b'\'' | b'`'))
        .count();
    let body = &token[..token.len() - quotes];
    let run = body
        .iter()
        .rev()
        .take_while(|b| b.is_ascii_alphanumeric())
        .count();
    let tail = &body[body.len() - run..];
    let opened = body.len() > run && matches!(body[body.len() - run - 1], b'"' | b'\'' | b'`');
    quotes >= 1
        && opened
        && run >= 16
        && (super::secret_placeholder::is_filler(tail) || is_repeated_unit(tail))
}

/// Whether `value` is two common words run together in lower case (`totallybogus`, a
/// test's bogus credential): 12 to 24 letters (shorter values are never
/// secrets to the keyword rules, `secret_value::MIN_LEN`) that split into two common
/// identifier words of four letters or more each. Words joined by punctuation were
/// already read so (`secret_value`'s `is_wordy`); a person's two-word password is let
/// through alike. Random lower-case values of 12 letters or more split so about never
/// (0 of 200,000 at 12, 16, 24 and 40 in the test; at 8 letters, which the rule does
/// not take, 2 did), and a random value of a mixed-case or digit alphabet is all
/// lower-case letters rarer still.
pub(super) fn is_two_words(value: &str) -> bool {
    let v = value.trim_end_matches(['"', '\'', '`']);
    (12..=24).contains(&v.len())
        && v.bytes().all(|b| b.is_ascii_lowercase())
        && (4..=v.len() - 4).any(|i| is_identifier_word(&v[..i]) && is_identifier_word(&v[i..]))
}

#[cfg(test)]
#[path = "secret_made_up_tests.rs"]
mod tests;
