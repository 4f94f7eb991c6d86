//! Allowlists as data: `allowlist.toml` (embedded with `include_str!`), read once per
//! process. Stop words (a placeholder's or a reference's substring), value patterns,
//! token patterns and short markers under a kind's name, each row with the reason it
//! exists and the corpus or package it came from. The checks ask this module; it
//! only turns values down, never makes a secret of anything.
//!
//! A false positive of one package or one corpus belongs here as a row, not as code:
//! the row names its source, and the table's test refuses a row without a reason.

use std::sync::LazyLock;

use regex::Regex;
use serde::Deserialize;

/// How a stop word is looked for in a value (see `allowlist.toml`'s header).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopwordKind {
    /// Written as a word: lower case, capitals or capitalised, where a word starts.
    Placeholder,
    /// Where a value is read from: at a word's start, all lower or all upper case.
    Reference,
}

/// A placeholder's or a reference's substring.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stopword {
    pub word: String,
    pub kind: StopwordKind,
    pub reason: String,
    pub source: String,
}

/// A pattern a value or a token is matched against.
#[derive(Debug)]
pub struct Pattern {
    pub regex: Regex,
    pub reason: String,
    pub source: String,
}

/// A short value under a name holding `name_word`: a marker a token carries.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Marker {
    pub name_word: String,
    pub max_len: usize,
    pub reason: String,
    pub source: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPattern {
    regex: String,
    reason: String,
    source: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    #[serde(default)]
    stopword: Vec<Stopword>,
    #[serde(default)]
    value: Vec<RawPattern>,
    #[serde(default)]
    token: Vec<RawPattern>,
    #[serde(default)]
    marker: Vec<Marker>,
}

/// The allowlists, read.
#[derive(Debug)]
pub struct Allowlist {
    pub stopwords: Vec<Stopword>,
    pub values: Vec<Pattern>,
    pub tokens: Vec<Pattern>,
    pub markers: Vec<Marker>,
}

/// `text` read as allowlists: a row without a reason or a source, or whose regex does
/// not compile, is refused, named.
fn parse(text: &str) -> Result<Allowlist, String> {
    let raw: RawTable = toml::from_str(text).map_err(|e| e.to_string())?;
    let explained = |what: &str, reason: &str, source: &str| {
        if reason.trim().is_empty() || source.trim().is_empty() {
            Err(format!("{what}: every row needs a reason and a source"))
        } else {
            Ok(())
        }
    };
    for s in &raw.stopword {
        explained(&format!("stop word {:?}", s.word), &s.reason, &s.source)?;
    }
    for m in &raw.marker {
        explained(&format!("marker {:?}", m.name_word), &m.reason, &m.source)?;
    }
    let patterns = |rows: Vec<RawPattern>, kind: &str| -> Result<Vec<Pattern>, String> {
        rows.into_iter()
            .map(|r| {
                explained(&format!("{kind} {:?}", r.regex), &r.reason, &r.source)?;
                let regex =
                    Regex::new(&r.regex).map_err(|e| format!("{kind} {:?}: {e}", r.regex))?;
                Ok(Pattern {
                    regex,
                    reason: r.reason,
                    source: r.source,
                })
            })
            .collect()
    };
    Ok(Allowlist {
        values: patterns(raw.value, "value")?,
        tokens: patterns(raw.token, "token")?,
        stopwords: raw.stopword,
        markers: raw.marker,
    })
}

static ALLOWLIST: LazyLock<Allowlist> = LazyLock::new(|| {
    // Part of the build, not input: `tests::the_table_reads` fails on any mistake.
    parse(include_str!("allowlist.toml")).unwrap_or_else(|e| panic!("allowlist.toml: {e}"))
});

/// The built-in allowlists.
pub fn get() -> &'static Allowlist {
    &ALLOWLIST
}

impl Allowlist {
    /// The stop words of one kind.
    pub fn words(&self, kind: StopwordKind) -> impl Iterator<Item = &str> {
        self.stopwords
            .iter()
            .filter(move |s| s.kind == kind)
            .map(|s| s.word.as_str())
    }

    /// Whether a keyword assignment's `value` matches a value row.
    pub fn allows_value(&self, value: &str) -> bool {
        self.values.iter().any(|p| p.regex.is_match(value))
    }

    /// Whether the token the keyword at `start` of `text` is in (back to white space, a
    /// quote or an escape) matches a token row from its start.
    pub fn allows_token(&self, text: &str, start: usize) -> bool {
        let before = &text.as_bytes()[..start.min(text.len())];
        let from = before
            .iter()
            .rposition(|&b| b.is_ascii_whitespace() || matches!(b, b'"' | b'\'' | b'`' | b'\\'))
            .map_or(0, |i| i + 1);
        text.get(from..)
            .is_some_and(|token| self.tokens.iter().any(|p| p.regex.is_match(token)))
    }

    /// Whether `value` is a marker: at most a row's `max_len` bytes under a name one of
    /// whose `name_words` is the row's word.
    pub fn is_marker(&self, name_words: &[String], value: &str) -> bool {
        self.markers
            .iter()
            .any(|m| value.len() <= m.max_len && name_words.contains(&m.name_word))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The embedded table reads: every row has a reason and a source, every regex
    /// compiles, and no stop word or marker is listed twice.
    #[test]
    fn the_table_reads() {
        let a = parse(include_str!("allowlist.toml")).expect("allowlist.toml reads");
        assert!(!a.stopwords.is_empty() && !a.values.is_empty() && !a.markers.is_empty());
        let mut words: Vec<(&str, StopwordKind)> = a
            .stopwords
            .iter()
            .map(|s| (s.word.as_str(), s.kind))
            .collect();
        words.sort_by_key(|w| w.0);
        let n = words.len();
        words.dedup();
        assert_eq!(words.len(), n, "a stop word is listed twice");
        let mut markers: Vec<&str> = a.markers.iter().map(|m| m.name_word.as_str()).collect();
        markers.sort_unstable();
        markers.dedup();
        assert_eq!(markers.len(), a.markers.len(), "a marker is listed twice");
    }

    #[test]
    fn a_row_without_a_reason_or_source_is_refused() {
        let no_reason =
            "[[stopword]]\nword = 'x'\nkind = 'placeholder'\nreason = ''\nsource = 's'\n";
        assert!(parse(no_reason).unwrap_err().contains("reason"));
        let no_source = "[[value]]\nregex = 'x'\nreason = 'r'\nsource = ' '\n";
        assert!(parse(no_source).unwrap_err().contains("source"));
        let missing = "[[marker]]\nname_word = 'x'\nmax_len = 3\nsource = 's'\n";
        assert!(parse(missing).is_err());
        let bad_regex = "[[token]]\nregex = '('\nreason = 'r'\nsource = 's'\n";
        assert!(parse(bad_regex).is_err());
    }

    #[test]
    fn resource_names_and_markers_are_allowed_and_random_values_not() {
        let a = get();
        let arn = "arn:aws:secretsmanager:ap-south-1:111122223333:secret:snowflake-XHb67j";
        assert!(a.allows_value(arn));
        assert!(a.allows_token(arn, arn.find("secret:").unwrap()));
        assert!(!a.allows_value("arn:gcp:secretsmanager:ap-south-1:111122223333:secret:x"));
        assert!(!a.allows_value("arn:aws:secretsmanager:ap-south-1:1111:secret:x"));
        assert!(!a.allows_value("Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox1Qb3Vc7Nm"));
        let name = vec![
            "jwt".to_string(),
            "category".into(),
            "session".into(),
            "token".into(),
        ];
        assert!(a.is_marker(&name, "cl_B7d4PD111AAA"));
        assert!(!a.is_marker(&name, "cl_B7d4PD111AAAZk5Hc9Jd0Pa6"));
        assert!(!a.is_marker(&["session".to_string(), "token".into()], "cl_B7d4PD111AAA"));
    }
}
