//! Values that stand for a credential instead of being one: placeholders (`${TOKEN}`,
//! `%s`, `<password>`, `your-api-key`, masks such as `sk-xxxx…xxxx`) and references to
//! where the value comes from (`process.env.TOKEN`, `os.environ[…]`, `vault:…`).
//!
//! It owns how a placeholder or reference word (the stop words of `allowlist.toml`,
//! each with its reason and source) must be written to count (as a person writes it:
//! lower case, capitals or capitalised), and nothing
//! about entropy or where the value sits (`secret_value` asks it, as do the framing
//! checks). A random value holds one of these words in those forms about 3 × 62^-5 per
//! position for a five-letter word.
//!
//! Two forms only a keyword's value is judged by (`secret_keyword`):
//!
//! - [`is_elided`]: a value cut short with `...` or `…` (`"ya29.c.b0Aaekm1Le…..."` in
//!   a test's mocked response): what is shown is a prefix, and the token it stood for
//!   is not in the text. A random value ends so only when its alphabet holds `.`: 1 in
//!   68^3 ≈ 3 × 10^-6 for a password alphabet with `.` (the test counts them), never
//!   for base62 or base64.
//! - [`is_path_template`]: a route with a named field between slashes
//!   (`admin/realms/{realm-name}/users/{id}/credentials`), whose other segments read
//!   as code (`secret_words::is_code_like`). No random value of the token or password
//!   alphabets holds `/{name}` (0 of 200,000 printable values in the test), and a
//!   template with a random 16-character segment passes only when that segment reads
//!   as code (the test counts them).
//! - [`is_format_template`]: a format string's literal, a replacement field
//!   (`{0}`, `{name}`, `%s`, `%(name)s`) and text that reads as code around it
//!   (`"dpapi_machinekey:0x{0}\n…"`, cut at its escape).

use super::allowlist::{self, StopwordKind};
use super::secret_placeholder::holds_keyword_word;
use super::secret_words::{is_code_like, is_identifier_word, loosely_words};

/// Whether `v` holds the placeholder word `p` (lower case) as a person writes it: all
/// lower case, all capitals, or capitalised (`your_key`, `YOUR_KEY`, `Yours`), and, for
/// a word of letters, where a word starts ([`starts_word`]). Matched in any mix of
/// cases, a random password (`YctDp0RnQ50jBhyouRP5`, the corpus test's seed
/// 1795608266854813693) held `yourp` and was let through; in these three forms a
/// random base62 value holds a given five-letter word about 3 × 62^-5 per position.
/// Matched anywhere, a password made of word-like pieces (`G6ETbjyYour_LibDh0FrN`,
/// the redactor test's seed 1795709879410126813) held `Your_` and was let through.
/// A word of six letters or more written in capitals counts anywhere: AWS's documented
/// keys run it into random characters (`wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY`,
/// `AKIDEXAMPLE`), and a random base62 value holds a given six capitals about 62^-6
/// (2·10^-11) per position.
fn holds_written_word(v: &str, lower: &str, p: &str) -> bool {
    let wordy = p.as_bytes().first().is_some_and(u8::is_ascii_alphabetic);
    let long_word = p.len() >= 6 && p.bytes().all(|b| b.is_ascii_lowercase());
    lower.match_indices(p).any(|(i, _)| {
        let Some(found) = v.get(i..i + p.len()) else {
            return false;
        };
        let capitals = found == p.to_ascii_uppercase();
        let rest_lower = found
            .get(1..)
            .is_some_and(|r| !r.bytes().any(|b| b.is_ascii_uppercase()));
        (found == p || capitals || rest_lower)
            && (!wordy || starts_word(v.as_bytes(), i) || (capitals && long_word))
    })
}

/// Whether a word starts at byte `i` of `v`: at the start, after a character that is
/// neither a letter nor a digit (`<your_key>`, `replace_with_your_key`), or at a
/// capital after a run of letters written as words are (`insertYourKey`,
/// `MyExamplePassword`: letters only, no two capitals in a row), not inside a random
/// run (`G6ETbjyYour_`).
fn starts_word(v: &[u8], i: usize) -> bool {
    if i == 0 || !v[i - 1].is_ascii_alphanumeric() {
        return true;
    }
    let run_start = v[..i]
        .iter()
        .rposition(|c| !c.is_ascii_alphanumeric())
        .map_or(0, |p| p + 1);
    let run = &v[run_start..i];
    v[i].is_ascii_uppercase()
        && run.iter().all(u8::is_ascii_alphabetic)
        && !run
            .windows(2)
            .any(|w| w[0].is_ascii_uppercase() && w[1].is_ascii_uppercase())
}

/// Whether `value` is a placeholder or reference (`${TOKEN}`, `%s`, `<password>`,
/// `os.environ`, `your-api-key`) rather than a literal credential.
pub fn is_placeholder(value: &str) -> bool {
    let v = value.trim();
    if v.is_empty() || v.starts_with(['$', '%', '{', '#', '@', '&', '*']) {
        return true;
    }
    // Masks (`xxxxxxxx`, `****`, `sk-xxxx…xxxx`): mostly x, * or dots. A substring
    // test would also take random values that happen to hold `xXxX`.
    let masked = v
        .bytes()
        .filter(|b| matches!(b, b'x' | b'X' | b'*' | b'.'))
        .count();
    if masked * 2 >= v.len() {
        return true;
    }
    let lower = v.to_ascii_lowercase();
    let stopwords = allowlist::get();
    let at_word_start = |r: &str| {
        lower.match_indices(r).any(|(i, _)| {
            let written = &v.as_bytes()[i..i + r.len()];
            let one_case = written == r.as_bytes()
                || written
                    .iter()
                    .zip(r.bytes())
                    .all(|(w, l)| *w == l.to_ascii_uppercase());
            one_case && (i == 0 || !v.as_bytes()[i - 1].is_ascii_alphanumeric())
        })
    };
    // `(whatever)`, `[password]`: a word in brackets stands for the value.
    let bracketed_word = v.len() > 2
        && matches!(
            (v.as_bytes()[0], v.as_bytes()[v.len() - 1]),
            (b'(', b')') | (b'[', b']')
        )
        && v[1..v.len() - 1]
            .bytes()
            .all(|b| b.is_ascii_alphabetic() || matches!(b, b' ' | b'_' | b'-'));
    bracketed_word
        || stopwords
            .words(StopwordKind::Placeholder)
            .any(|p| holds_written_word(v, &lower, p))
        || holds_keyword_word(v)
        || stopwords.words(StopwordKind::Reference).any(at_word_start)
}

/// Whether `value` is cut short with `...` or `…` (`ewogICJ0eXBl…IsCiAgIn...`); see the
/// module comment.
pub(super) fn is_elided(value: &str) -> bool {
    value.ends_with("...") || value.ends_with('\u{2026}')
}

/// Whether `segment` is a template's named field: `{name}`, `{realm-name}`, `{id}`.
fn is_named_field(segment: &str) -> bool {
    let Some(name) = segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) else {
        return false;
    };
    name.len() >= 2
        && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
}

/// Whether `value` is a route template (`/v1/auth/{mount_point}/config/identity`): a
/// named field between slashes, and the other segments reading as code; see the
/// module comment.
pub(super) fn is_path_template(value: &str) -> bool {
    let segments: Vec<&str> = value.split('/').collect();
    if segments.len() < 2 || !segments.iter().any(|s| is_named_field(s)) {
        return false;
    }
    let rest: Vec<&str> = segments
        .into_iter()
        .filter(|s| !s.is_empty() && !is_named_field(s))
        .collect();
    !rest.is_empty() && is_code_like(&rest.join("/"))
}

/// Whether `value` is a format string's literal (`"dpapi_machinekey:0x{0}\n…"`
/// cut at its escape, `"user=%s;secret=%(key)s"`): it holds a replacement field
/// (`{}`, `{0}`, `{name}`, `{name!r}`, `%s`, `%d`, `%x`, `%(name)s`) and, with its fields
/// taken out, what is left reads as code (`secret_words::is_code_like`) or as words
/// joined by a format's punctuation. The value is filled in at run time and is not in
/// the text. A value holding a field is a placeholder already ([`is_placeholder`]);
/// `secret_keyword` asks this of a value the rule's regex cut at the field's `{`, with
/// the field put back (the unescaped reading of `"dpapi_machinekey:0x{0}\n…"`). A
/// random value followed by a field passes only when it reads as code, as it would
/// without one (0 of 200,000 per alphabet and length in the tests).
pub(super) fn is_format_template(value: &str) -> bool {
    let v = value.trim_end_matches(['"', '\'', '`']);
    if !v.is_ascii() {
        return false;
    }
    let b = v.as_bytes();
    let mut rest = String::with_capacity(v.len());
    let mut fields = 0;
    let mut i = 0;
    while i < b.len() {
        let field_end = match b[i] {
            b'{' => v[i + 1..].find('}').map(|n| i + 1 + n + 1).filter(|&e| {
                let inner = &v[i + 1..e - 1];
                let name = inner.split(['!', ':']).next().unwrap_or("");
                inner.len() <= 24
                    && (name.is_empty()
                        || name.bytes().all(|c| c.is_ascii_digit())
                        || is_named_field(&format!("{{{name}}}")))
                    && inner
                        .bytes()
                        .all(|c| c.is_ascii_alphanumeric() || b"_-!:<>^.".contains(&c))
            }),
            b'%' => {
                let mut e = i + 1;
                if b.get(e) == Some(&b'(') {
                    e = v[e..].find(')').map_or(b.len(), |n| e + n + 1);
                }
                b.get(e)
                    .filter(|c| matches!(c, b's' | b'd' | b'x' | b'r' | b'i'))
                    .map(|_| e + 1)
            }
            _ => None,
        };
        match field_end {
            Some(e) => {
                fields += 1;
                rest.push('_');
                i = e;
            }
            None => {
                rest.push(b[i] as char);
                i += 1;
            }
        }
    }
    let rest = rest.trim_matches('_');
    let runs: Vec<&str> = rest
        .split(|c: char| !c.is_ascii_alphabetic())
        .filter(|r| !r.is_empty())
        .collect();
    let letters: usize = runs.iter().map(|r| r.len()).sum();
    // What is left reads as code, or as words by the looser bar of a value of words
    // joined by punctuation (`dpapi_machinekey:0x`): runs of letters each in one case
    // or capitalised, two of four letters or more and one a word, two thirds of it
    // letters and the rest a format's punctuation (one at least) and two digits at most.
    let one_case = |r: &&str| {
        let tail = &r[1..];
        tail.bytes().all(|c| c.is_ascii_lowercase()) || r.bytes().all(|c| c.is_ascii_uppercase())
    };
    // One run is a common word of five letters or more, or two run together
    // (`machinekey`): random letters spell one about never.
    let worded = |r: &&str| {
        let l = r.to_ascii_lowercase();
        (l.len() >= 5 && is_identifier_word(&l))
            || (l.len() >= 8
                && (3..=l.len() - 3)
                    .any(|i| is_identifier_word(&l[..i]) && is_identifier_word(&l[i..])))
    };
    let loose = runs.iter().filter(|r| r.len() >= 4).count() >= 2
        && runs.iter().all(one_case)
        && runs.iter().any(worded)
        && rest.bytes().any(|c| b"_-.:/=&;, ".contains(&c))
        && rest.bytes().filter(u8::is_ascii_digit).count() <= 2
        && letters * 3 >= rest.len() * 2
        && rest
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"_-.:/=&;, ".contains(&c))
        && loosely_words(runs, 0.5);
    fields >= 1 && !rest.is_empty() && (is_code_like(rest) || loose)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_random::xorshift;

    #[test]
    fn elided_values_and_route_templates() {
        assert!(is_elided("ya29.c.b0Aaekm1Le-n2NCqrzZjdMtjpbgRji2yhiJkO..."));
        assert!(is_elided(
            "ewogICJ0eXBlIjogInNlcnZpY2VfYWNjb3VudCIsCiAgIn\u{2026}"
        ));
        assert!(!is_elided("Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox1Qb3Vc7Nm"));
        assert!(!is_elided("Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox1Qb3Vc7N.."));
        for v in [
            "admin/realms/{realm-name}/users/{id}/credentials",
            "admin/realms/{realm-name}/users/{id}/credentials/{credential_id}",
            "admin/realms/{realm-name}/authentication/config/{id}",
            "/v1/auth/{mount_point}/config/identity",
        ] {
            assert!(is_path_template(v), "{v}");
        }
        for v in [
            "/v1/{id}/Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox1Qb3Vc7Nm",
            "{id}/{name}",
            "{token}",
            "/hooks/{x}/config",
            "Zk5Hc9Jd0Pa6/{Sg2Ue4Ti8}",
        ] {
            assert!(!is_path_template(v), "{v}");
        }
    }

    /// The false-negative rates of the module comment.
    #[test]
    fn random_values_are_rarely_elided_or_templates() {
        let mut next = xorshift(0xD1B5_4A32_D192_ED03u64);
        let base64 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let password = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~!*";
        let printable: Vec<u8> = (b'!'..=b'~').collect();
        let mut pick = |alphabet: &[u8], len: usize| -> String {
            (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize] as char)
                .collect()
        };
        for alphabet in [&base64[..], &password[..], &printable[..]] {
            for len in [12usize, 16, 40] {
                let tries = 200_000;
                let (mut elided, mut template) = (0, 0);
                for _ in 0..tries {
                    let v = pick(alphabet, len);
                    elided += usize::from(is_elided(&v));
                    template += usize::from(is_path_template(&v));
                }
                eprintln!(
                    "{len} of {} characters: {elided} elided, {template} templates of {tries}",
                    alphabet.len()
                );
                // 3 × 10^-6 expected where the alphabet holds `.`: 0.6 in 200,000.
                assert!(elided <= 3, "{elided} of {tries} random values elided");
                assert_eq!(template, 0, "{len} of {}", alphabet.len());
            }
        }
        // A real token in a route template is still caught unless it reads as code.
        let mut passed = 0;
        for _ in 0..200_000 {
            let v = format!("/v1/hooks/{{id}}/{}", pick(&base64[..62], 16));
            passed += usize::from(is_path_template(&v));
        }
        eprintln!("templates holding a random 16-character segment: {passed} of 200,000");
        assert!(passed <= 10, "{passed}");
    }

    #[test]
    fn placeholder_words_count_only_where_a_word_starts() {
        // The redactor test's seed 1795709879410126813: a netrc password of word-like
        // pieces that holds `Your_` inside a random run.
        assert!(!is_placeholder("G6ETbjyYour_LibDh0FrN"));
        assert!(!is_placeholder("k9Example7Qz"));
        assert!(!is_placeholder("k9Yours7QzSAMPL"));
        // AWS's documented example credentials run the word into random characters.
        for documented in [
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            "AKIAIOSFODNN7EXAMPLE",
            "AKIDEXAMPLE",
            "AQoEXAMPLEH4aoAH0gNCAPyJxz4BlCFFxWNE1OPTgk5TthT",
        ] {
            assert!(is_placeholder(documented), "{documented}");
        }
        for placeholder in [
            "your_api_key",
            "YOUR_TOKEN",
            "<your-password>",
            "replace_with_your_key",
            "insertYourKeyHere",
            "MyExamplePassword",
            "Your_Password",
            "sample-token",
        ] {
            assert!(is_placeholder(placeholder), "{placeholder}");
        }
        let r = crate::Redactor::builtin().expect("builtin rules");
        let text = "CREDENTIAL = \"machine api.acme-corp.com login deployer password G6ETbjyYour_LibDh0FrN\"\n";
        assert!(
            !r.redact(text)
                .expect("redact")
                .text
                .contains("G6ETbjyYour_LibDh0FrN"),
            "the password was let through"
        );
    }
}
