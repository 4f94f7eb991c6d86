//! Does a value read as words and identifiers (code) rather than random characters?
//!
//! The keyword rules (`token = …`, `password: …`) match code all day: `token::Brace`,
//! `MASKED_TEST_SECRET2`, `auth_tests.CustomUser`, `+dollarToken`,
//! `custom_admin/password_change_form.html`. This module owns telling such values from
//! credentials by their shape alone, and nothing else: no keyword, no context.
//!
//! A value is code-like when, leading operators and path characters (`+`, `!`, `/`,
//! `./`, `~/`) set aside, it splits (at `::`, `.`, `/`, `\`, `:`, `|`, `@`, then at `_`
//! and `-`) into segments that are each letters with at most three trailing digits,
//! whose letters form words the way identifiers do — all lower case, all upper case,
//! or camel humps (`getElementById`, at most one acronym such as `HTTPServer`, no
//! one-letter humps, one hump of two or more a common identifier word) — where every word of two letters or more holds a vowel (or is a
//! common vowel-less abbreviation such as `html`, `ctx`, `src`), and at least 3 in 4 of
//! the letter pairs inside words are common English pairs (`COMMON_PAIRS`).
//!
//! Why it is safe for secrets: random characters break these constraints almost at
//! once. Over 300,000 random values each (measured when the rule was written), a
//! 14-character value from the base62 or password alphabets reads as code about once
//! in 50,000 to 100,000 tries, a 20-character one never, and a 32-character one never.

/// Letter pairs that make up 90% of the letter pairs inside the words of English
/// identifiers and prose (counted, case-folded, over this repository's own Rust
/// sources and docs when the rule was written: 168 of the 676 pairs).
const COMMON_PAIRS: &str = "ac ad ag ai al am an ap ar as at au ba be bl bo bu by ca ce ch ck cl \
co cr ct da de di ds ea ec ed ef el em en ep eq er es et ev ew ex ey fa fi fn fo fr ge gr ha he \
hi ho ic id ie if ig il im in io ir is it iz ke ki la ld le lf li ll lo ls lt lu ma mb me mi mm \
mo mp mu na nc nd ne ng no ns nt nw od of ok ol om on oo op or os ot ou ow pa pe pl po pr pt pu \
qu ra rc rd re ri rm rn ro rr rs rt ru ry sc se sh si so ss st su sy ta tc td te th ti to tr ts \
tt ty ub ue ul un ur us ut va ve wh wi wr xt yt ze";

/// Vowel-less words common in identifiers.
const ABBREVIATIONS: &[&str] = &[
    "html", "http", "https", "xml", "src", "cfg", "ctx", "msg", "std", "pkg", "str", "fn", "db",
    "js", "css", "rs", "py", "ts", "md", "rb", "tmp", "dst", "ptr", "cnt", "cmd", "mgr", "svc",
    "srv", "ws", "tcp", "ssl", "tls", "dns", "sql", "crt", "pwd", "pw", "tx", "rx", "px", "ln",
    "sz", "rgb", "dt", "tz", "kw", "btn", "lbl", "txt", "sh", "gz", "npm", "sdk", "vm", "ssh",
    "smtp", "ftp", "rpc", "grpc", "jwt", "hmac", "csrf", "xsrf", "xss", "crlf", "www", "cls",
    "jwk", "jwks", "dsn", "mgmt",
];

/// Share of a value's in-word letter pairs that must be common for it to read as words.
const MIN_COMMON_SHARE: f64 = 0.75;

/// Most digits a code-like value holds (`proc_macro2`, `sha256`, `SECRET_KEY2`).
const MAX_DIGITS: usize = 3;

fn pair_table() -> &'static [[bool; 26]; 26] {
    static TABLE: std::sync::OnceLock<[[bool; 26]; 26]> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = [[false; 26]; 26];
        for p in COMMON_PAIRS.split_whitespace() {
            let b = p.as_bytes();
            t[(b[0] - b'a') as usize][(b[1] - b'a') as usize] = true;
        }
        t
    })
}

/// Tally of a value's words: letter pairs seen and how many were common.
#[derive(Default)]
struct Tally {
    pairs: usize,
    common: usize,
    digits: usize,
    single_letters: usize,
}

impl Tally {
    /// Count one word (ASCII letters, any case); false when it cannot be a word.
    fn word(&mut self, w: &[u8]) -> bool {
        if w.len() == 1 {
            self.single_letters += 1;
            return true;
        }
        let lower: Vec<u8> = w.iter().map(u8::to_ascii_lowercase).collect();
        if ABBREVIATIONS
            .iter()
            .any(|a| a.as_bytes() == lower.as_slice())
        {
            return true;
        }
        if !lower.iter().any(|c| b"aeiouy".contains(c)) {
            return false;
        }
        let t = pair_table();
        for p in lower.windows(2) {
            self.pairs += 1;
            if t[(p[0] - b'a') as usize][(p[1] - b'a') as usize] {
                self.common += 1;
            }
        }
        true
    }

    /// Count one segment (between separators); false when it is not identifier-shaped.
    fn segment(&mut self, seg: &[u8]) -> bool {
        let letters_end = seg
            .iter()
            .position(|c| !c.is_ascii_alphabetic())
            .unwrap_or(seg.len());
        let (letters, digits) = seg.split_at(letters_end);
        if !digits.iter().all(u8::is_ascii_digit) || digits.len() > MAX_DIGITS {
            return false;
        }
        self.digits += digits.len();
        if letters.is_empty() {
            return true;
        }
        let all_lower = letters.iter().all(u8::is_ascii_lowercase);
        let all_upper = letters.iter().all(u8::is_ascii_uppercase);
        if all_lower || all_upper {
            return self.word(letters);
        }
        let Some(words) = humps(letters) else {
            return false;
        };
        // Camel humps name things with words (`getElementById`, `refreshTokenValue`):
        // of two humps or more, one of three letters or more is a common identifier
        // word (`secret_words`' list; a lone capitalised word, `Authenticator`, needs
        // none). Random
        // characters make pronounceable humps out of common pairs (`jicLimTuleBU`,
        // secrets_redactor seed 1795914407269407800) but spell a listed word rarely.
        let named = words.len() < 2
            || words.iter().any(|w| {
                w.len() >= 3 && is_identifier_word(&String::from_utf8_lossy(w).to_ascii_lowercase())
            });
        named && words.iter().all(|w| self.word(w))
    }
}

/// Whether `words`, runs of letters each in one case or capitalised (the parts of a
/// value of words joined by punctuation, `secret_value`'s `is_wordy`), read as words
/// by a looser bar than [`is_code_like`]'s: each of two letters or more holds a vowel
/// or is a common abbreviation, at most one is a single letter, and at least
/// `min_share` of their letter pairs are common (a quarter of all pairs are). Words a
/// test writes (`some-gibbberish`, `redis_works_perfectly`) pass at a half; random
/// characters (`qoiaikneobbm-i469`, `h4.wm_a11-or_T`) mostly do not.
pub(super) fn loosely_words<'a>(words: impl IntoIterator<Item = &'a str>, min_share: f64) -> bool {
    let mut tally = Tally::default();
    for w in words.into_iter().filter(|w| !w.is_empty()) {
        if !w.bytes().all(|b| b.is_ascii_alphabetic()) || !tally.word(w.as_bytes()) {
            return false;
        }
    }
    tally.single_letters <= 1 && tally.common as f64 >= min_share * tally.pairs as f64
}

/// Camel humps of a mixed-case run of letters: a leading lower-case word, humps of a
/// capital and lower-case letters, at most one acronym (a run of capitals); `None`
/// when the run has a one-letter hump or more than one acronym.
fn humps(s: &[u8]) -> Option<Vec<&[u8]>> {
    let mut out = Vec::new();
    let mut acronyms = 0;
    let mut i = 0;
    while i < s.len() {
        let start = i;
        if s[i].is_ascii_lowercase() {
            while i < s.len() && s[i].is_ascii_lowercase() {
                i += 1;
            }
        } else {
            let mut j = i;
            while j < s.len() && s[j].is_ascii_uppercase() {
                j += 1;
            }
            if j < s.len() && j - i >= 2 {
                // `HTTPServer`: the last capital starts the next hump.
                j -= 1;
                acronyms += 1;
                i = j;
            } else if j == s.len() && j - i >= 2 {
                acronyms += 1;
                i = j;
            } else {
                i = j;
                while i < s.len() && s[i].is_ascii_lowercase() {
                    i += 1;
                }
            }
        }
        if i - start < 2 || acronyms > 1 {
            return None;
        }
        out.push(&s[start..i]);
    }
    Some(out)
}

/// Words identifiers are made of, most frequent first, counted over the tuning corpus's
/// sources (`tools/fp-corpus/identifier_words.py`).
fn identifier_words() -> &'static std::collections::HashSet<&'static str> {
    static WORDS: std::sync::OnceLock<std::collections::HashSet<&'static str>> =
        std::sync::OnceLock::new();
    WORDS.get_or_init(|| {
        include_str!("identifier_words.txt")
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect()
    })
}

/// Whether `word` (lower case) is one of the common identifier words.
pub(super) fn is_identifier_word(word: &str) -> bool {
    identifier_words().contains(word)
}

/// Most of a value's letters are in common identifier words of three letters or more
/// (`SignInWithOAuthCredentials`, `Base64URLString`, `DjangoOAuth1App`),
/// one of them of four or more: names made of acronyms and words, which the letter-pair
/// test above turns down for their acronyms (`OAuth`, `URL`) or their rarer pairs.
/// Random characters almost never spell a dictionary word at a hump's start; the test
/// `random_values_rarely_read_as_code` measures how often.
fn covered_by_identifier_words(value: &str) -> bool {
    if !value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'/' | b':' | b'$'))
        || value.bytes().filter(u8::is_ascii_digit).count() > MAX_DIGITS
    {
        return false;
    }
    let words = identifier_words();
    let (mut letters, mut covered, mut long_words) = (0usize, 0usize, 0usize);
    for run in value.split(|c: char| !c.is_ascii_alphabetic()) {
        let b = run.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let start = i;
            if b[i].is_ascii_uppercase() {
                let mut j = i;
                while j < b.len() && b[j].is_ascii_uppercase() {
                    j += 1;
                }
                if j - i == 1 {
                    // A capital and its lower-case letters: `Auth`.
                    i = j;
                    while i < b.len() && b[i].is_ascii_lowercase() {
                        i += 1;
                    }
                } else if j < b.len() {
                    // `OAuth`, `URLString`: the last capital starts the next hump.
                    i = j - 1;
                } else {
                    i = j;
                }
            } else {
                while i < b.len() && b[i].is_ascii_lowercase() {
                    i += 1;
                }
            }
            let hump = &run[start..i];
            letters += hump.len();
            if hump.len() >= 3 && words.contains(hump.to_ascii_lowercase().as_str()) {
                covered += hump.len();
                long_words += usize::from(hump.len() >= 4);
            }
        }
    }
    letters >= 8 && long_words >= 1 && covered * 10 >= letters * 7
}

/// Whether `value` reads as identifiers and words (a path, a name, a type) rather than
/// random characters; see the module comment.
pub fn is_code_like(value: &str) -> bool {
    pair_shaped(value) || covered_by_identifier_words(value)
}

/// The letter-pair test of the module comment.
fn pair_shaped(value: &str) -> bool {
    let v = value.trim_start_matches(['+', '!', '&', '*', '/', '.', '~', '\\']);
    let mut tally = Tally::default();
    let parts = v
        .split("::")
        .flat_map(|p| p.split(['.', '/', '\\', ':', '|', '@']));
    for part in parts {
        for seg in part.split(['_', '-']).filter(|s| !s.is_empty()) {
            if !tally.segment(seg.as_bytes()) {
                return false;
            }
        }
    }
    tally.digits <= MAX_DIGITS
        && tally.single_letters <= 1
        && tally.pairs >= 3
        && tally.common as f64 >= MIN_COMMON_SHARE * tally.pairs as f64
}

/// Whether `value` is a file path: starting at `/`, `~/`, `./` or `../`, three or
/// more `/` in all, only path characters (letters, digits, `.`, `_`, `-`, `~`) between
/// them, and at least one part that reads as a word
/// (`/srv/build/svn/curio_project`). A random base64 value meets all of that
/// about once in a million: it starts with `/` one time in 64, holds two more only one
/// time in twelve, and its parts do not read as words.
pub fn is_path(value: &str) -> bool {
    let starts = ["/", "~/", "./", "../"]
        .iter()
        .any(|p| value.starts_with(p));
    starts
        && value.matches('/').count() >= 3
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'.' | b'_' | b'-' | b'~'))
        && value.split('/').any(is_code_like)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_paths_and_names_read_as_code() {
        for v in [
            "token::Brace",
            "proc_macro2::TokenStream",
            "input.parse::",
            "MASKED_TEST_SECRET2",
            "FORBIDDEN_VALUE2",
            "IsActiveTestUser1",
            "custom_admin/password_change_form.html",
            "+dollarToken",
            "settings.SECRET_KEY2",
            "self.access_token",
            "XMLHttpRequest",
            "HTTPServer2",
            "refreshTokenValue",
            "variable|default:",
            "some:password",
            "~/.config/app/tokens.json",
            "/usr/local/share/credentials",
            "WWW-Authenticate",
            "cls.CREDENTIAL_SOURCE",
            "RequestParameterBuilder.addSshJwk",
            "SignInWithOAuthCredentials",
            "Base64URLString",
            "AsyncOAuth2Mixin",
        ] {
            assert!(is_code_like(v), "{v}");
        }
    }

    #[test]
    fn random_values_do_not() {
        for v in [
            "ZHPD1t9arV5lueZ.K",
            "ohuwxlVJ9r_8vmFl62ay1zHtao2.Jl5tZ2Ik4c0e",
            "Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox1Qb3Vc7Nm",
            "hbAqmVcOdrfoqy",
            "a06b-c462cffae87a",
            "LH~eSq3aSGN.v4viswk~pxdibOx",
            "192b9bdd22ab9ed4d12e236c78afcb9a",
            "Passw0rd1",
            "/q7Xv2Lm9Rt4Kp8Wz1Nc6Hb3Jd5Fg0Sa",
            // Pronounceable humps of common pairs, none a listed word (a pypirc
            // password of the secrets corpus, seed 1795914407269407800).
            "l-jicLimTuleBU",
            "VampZebdICA860",
        ] {
            assert!(!is_code_like(v), "{v}");
        }
    }

    /// The claim of the module comment, checked: random values of 14 characters from
    /// the base62 and password alphabets read as code at most about once in 50,000
    /// (measured over 2,000,000 each: base62 once in 125,000, the password alphabet once
    /// in 250,000), and values of 20 never. A fixed-seed generator keeps the count exact from run to run.
    #[test]
    fn random_values_rarely_read_as_code() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let base62 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        let password =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#%&*+-=?@^_~.";
        // The secrets corpus's password alphabet (`tests/it/support/secrets.rs`), whose
        // `-`, `_` and `.` cut values into short segments: 20 in 10^6 of 14 characters
        // read as code until camel humps had to hold a listed word, 2 in 10^6 since.
        let corpus = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~!*";
        for alphabet in [&base62[..], &password[..], &corpus[..]] {
            for (len, allowed) in [(14usize, 4usize), (20, 0)] {
                let tries = 200_000;
                let mut code_like = 0;
                for _ in 0..tries {
                    let v: String = (0..len)
                        .map(|_| alphabet[(next() % alphabet.len() as u64) as usize] as char)
                        .collect();
                    if is_code_like(&v) {
                        code_like += 1;
                    }
                }
                eprintln!(
                    "{len} characters of {}: {code_like} of {tries}",
                    alphabet.len()
                );
                assert!(
                    code_like <= allowed,
                    "{code_like} of {tries} random {len}-character values read as code"
                );
            }
        }
    }

    #[test]
    fn paths_are_paths_and_base64_with_slashes_is_not() {
        assert!(is_path("/srv/build/svn/curio_project"));
        assert!(is_path("~/.config/app/credentials.json"));
        assert!(!is_path("/q7Xv2Lm9/Rt4Kp8Wz1N/c6Hb3Jd5Fg0Sa"));
        assert!(!is_path("/q7Xv2Lm9/Rt4Kp8+Wz1N/c6Hb3Jd5Fg0Sa"));
        assert!(!is_path("/srv/build"));
    }
}
