//! The built-in embedder's knowledge of words: which carry no meaning (stop words and
//! language keywords), how to reduce a word to its stem, and which words programmers
//! use for the same idea (`remove`, `delete`, `erase`, `drop`).
//!
//! The words are data, in `lexicon.txt` beside this file (compiled in with
//! `include_str!`, parsed once). That table is part of the embedder's vector space:
//! changing a word's group or stem changes the vectors, so any change to it or to
//! [`stem`] must come with a new embedder name. Pure: no I/O.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

/// The lexicon's sets are looked up for every word the embedder reads, and their keys
/// come from this file, not from users: a fast unkeyed hash rather than SipHash.
type Fast = foldhash::fast::FixedState;

/// The lexicon's text: `[stop words]`, then `[groups]`, one group a line.
const LEXICON: &str = include_str!("lexicon.txt");

/// The lexicon, parsed.
struct Lexicon {
    stop_words: HashSet<&'static str, Fast>,
    /// In file order: when a word sits in two groups the first one wins.
    groups: Vec<Vec<&'static str>>,
}

/// Parse `text` (see `lexicon.txt`); panics on a malformed table, which is a build
/// mistake caught by the unit tests.
fn parse(text: &'static str) -> Lexicon {
    let mut lex = Lexicon {
        stop_words: HashSet::default(),
        groups: Vec::new(),
    };
    let mut section = "";
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name;
            continue;
        }
        let words = line.split_whitespace();
        match section {
            "stop words" => lex.stop_words.extend(words),
            "groups" => lex.groups.push(words.collect()),
            other => panic!("lexicon.txt: words outside a known section ({other:?})"),
        }
    }
    lex
}

fn lexicon() -> &'static Lexicon {
    static LEX: OnceLock<Lexicon> = OnceLock::new();
    LEX.get_or_init(|| parse(LEXICON))
}

/// True for words that carry no meaning on their own.
pub fn is_stop_word(word: &str) -> bool {
    lexicon().stop_words.contains(word)
}

/// The idea a word names, as its group's first word, looked up by the word's
/// [`stem`] so inflections (`removed`, `removing`) find their group too. When a word
/// sits in two groups the first one listed wins.
pub fn concept(stemmed: &str) -> Option<&'static str> {
    static BY_STEM: OnceLock<HashMap<&'static str, &'static str, Fast>> = OnceLock::new();
    BY_STEM
        .get_or_init(|| {
            let mut m = HashMap::default();
            for g in &lexicon().groups {
                for w in g {
                    m.entry(stem(w)).or_insert(g[0]);
                }
            }
            m
        })
        .get(stemmed)
        .copied()
}

/// A crude English stem: common inflections removed so `parsing`, `parsed` and
/// `parses` share a feature with `parse`. Deliberately conservative; a wrong stem only
/// costs a little recall because the unstemmed word's n-grams are features too.
pub fn stem(word: &str) -> &str {
    const SUFFIXES: &[&str] = &[
        "ations", "ation", "ings", "ing", "ers", "ies", "ied", "ed", "er", "es", "s",
    ];
    if word.len() <= 4 || !word.is_ascii() {
        return word;
    }
    for suf in SUFFIXES {
        if let Some(base) = word.strip_suffix(suf) {
            if base.len() >= 3 {
                return base;
            }
        }
    }
    // `parse` must meet `parsing`: a final e goes too.
    match word.strip_suffix('e') {
        Some(base) if base.len() >= 4 => base,
        _ => word,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_reads_as_it_was_written() {
        let lex = lexicon();
        assert_eq!(lex.stop_words.len(), 148);
        assert_eq!(lex.groups.len(), 61);
        assert!(lex.groups.iter().all(|g| !g.is_empty()));
        assert_eq!(lex.groups[0][..3], ["delete", "remove", "erase"]);
        assert_eq!(
            lex.groups.last().unwrap()[..],
            ["math", "compute", "calculate", "calc", "arithmetic"]
        );
    }

    #[test]
    fn synonyms_share_a_concept_and_inflections_share_a_stem() {
        assert_eq!(concept(stem("remove")), Some("delete"));
        assert_eq!(concept(stem("removing")), Some("delete"));
        assert_eq!(concept(stem("erased")), Some("delete"));
        assert_eq!(concept("signin"), Some("auth"));
        assert_eq!(concept("frobnicate"), None);
        assert_eq!(stem("parse"), "pars");
        assert_eq!(stem("parsing"), "pars");
        assert_eq!(stem("parses"), "pars");
        assert_eq!(stem("parsed"), "pars");
        assert_eq!(stem("tokens"), "token");
        assert_eq!(stem("is"), "is");
        assert!(is_stop_word("the") && is_stop_word("fn") && !is_stop_word("parse"));
    }
}
