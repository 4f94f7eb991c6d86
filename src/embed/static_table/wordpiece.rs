//! WordPiece, as BERT's uncased tokenizer cuts words (greedy longest match, `##` for
//! a piece inside a word), over a table's own vocabulary: no `tokenizers` crate, so
//! the static embedder builds without the `neural` feature.
//!
//! Before WordPiece, the text is cut into code-aware words ([`split_identifier`]:
//! `parseHttpRequest` and `parse_http_request` both give parse, http, request), which
//! BERT's own pre-tokenizer would leave whole or cut at `_` only. Punctuation is
//! dropped: in code it is syntax, and its rows would pull every chunk the same way.

use std::collections::HashMap;

use crate::text::split_identifier;

/// Why a list of pieces is no vocabulary.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VocabError {
    #[error("empty vocabulary")]
    Empty,
    #[error("{count} pieces: too many")]
    TooMany { count: usize },
    #[error("piece {index} is longer than 255 bytes")]
    TooLong { index: usize },
    #[error("piece {piece:?} appears twice")]
    Repeated { piece: String },
}

/// Longest word WordPiece tries, in characters, as BERT's tokenizer (longer: unknown).
const MAX_WORD_CHARS: usize = 100;

/// The pieces of a vocabulary, by id, and the id of each piece.
#[derive(Debug, Clone)]
pub struct Vocab {
    pieces: Vec<String>,
    ids: HashMap<String, u32>,
}

impl Vocab {
    /// A vocabulary from its pieces in id order (as in BERT's `vocab.txt`). Refused
    /// when empty, when a piece repeats or is longer than 255 bytes, or when there are
    /// more than `u32::MAX` pieces.
    pub fn new(pieces: Vec<String>) -> Result<Vocab, VocabError> {
        if pieces.is_empty() {
            return Err(VocabError::Empty);
        }
        if u32::try_from(pieces.len()).is_err() {
            return Err(VocabError::TooMany {
                count: pieces.len(),
            });
        }
        let mut ids = HashMap::with_capacity(pieces.len());
        for (i, p) in pieces.iter().enumerate() {
            if p.len() > 255 {
                return Err(VocabError::TooLong { index: i });
            }
            if ids.insert(p.clone(), i as u32).is_some() {
                return Err(VocabError::Repeated { piece: p.clone() });
            }
        }
        Ok(Vocab { pieces, ids })
    }

    /// How many pieces.
    pub fn len(&self) -> usize {
        self.pieces.len()
    }

    /// Never true (a vocabulary has pieces); for clippy's `len_without_is_empty`.
    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// The piece with id `i` (empty past the end).
    pub fn piece(&self, i: usize) -> &str {
        self.pieces.get(i).map_or("", String::as_str)
    }

    /// The id of `piece`, if the vocabulary has it.
    pub fn id(&self, piece: &str) -> Option<u32> {
        self.ids.get(piece).copied()
    }

    /// The pieces in id order.
    pub fn pieces(&self) -> &[String] {
        &self.pieces
    }

    /// The ids of `text`'s pieces, in order: code-aware words (see the module
    /// documentation), each cut by WordPiece. A word WordPiece cannot cut is left out
    /// (BERT would give `[UNK]`, which carries nothing).
    pub fn tokenize(&self, text: &str, out: &mut Vec<u32>) {
        let mut buf = String::new();
        for raw in text.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if raw.is_empty() {
                continue;
            }
            for word in split_identifier(raw) {
                // CJK ideographs are words of their own to BERT; others, whole.
                let mut start = 0;
                for (i, c) in word.char_indices() {
                    if is_cjk(c) {
                        self.word(&word[start..i], &mut buf, out);
                        self.word(&word[i..i + c.len_utf8()], &mut buf, out);
                        start = i + c.len_utf8();
                    }
                }
                self.word(&word[start..], &mut buf, out);
            }
        }
    }

    /// WordPiece on one lower-cased word.
    fn word(&self, word: &str, buf: &mut String, out: &mut Vec<u32>) {
        if word.is_empty() || word.chars().count() > MAX_WORD_CHARS {
            return;
        }
        let before = out.len();
        let mut start = 0;
        while start < word.len() {
            let mut end = word.len();
            let mut found = None;
            while end > start {
                if word.is_char_boundary(end) {
                    buf.clear();
                    if start > 0 {
                        buf.push_str("##");
                    }
                    buf.push_str(&word[start..end]);
                    if let Some(&id) = self.ids.get(buf.as_str()) {
                        found = Some(id);
                        break;
                    }
                }
                end -= 1;
            }
            match found {
                Some(id) => {
                    out.push(id);
                    start = end;
                }
                None => {
                    // As BERT: a word with an uncuttable rest is unknown as a whole.
                    out.truncate(before);
                    return;
                }
            }
        }
    }
}

/// The CJK ideograph blocks BERT's basic tokenizer puts spaces around.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F | 0x2B820..=0x2CEAF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}

#[cfg(test)]
mod tests {
    use super::{Vocab, VocabError};

    fn vocab() -> Vocab {
        let pieces = [
            "[PAD]", "[UNK]", "parse", "http", "request", "##s", "get", "user", "##name", "un",
            "##able", "中",
        ];
        Vocab::new(pieces.iter().map(|s| s.to_string()).collect()).unwrap()
    }

    fn ids(text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        vocab().tokenize(text, &mut out);
        out
    }

    #[test]
    fn identifiers_split_into_words() {
        assert_eq!(ids("parseHttpRequest"), [2, 3, 4]);
        assert_eq!(ids("parse_http_requests"), [2, 3, 4, 5]);
        assert_eq!(ids("getUsername()"), [6, 7, 8]);
    }

    #[test]
    fn unknown_words_and_punctuation_are_dropped() {
        assert_eq!(ids("{ xyz; parse }"), [2]);
        assert_eq!(ids("unable"), [9, 10]);
        assert_eq!(ids("unablex"), Vec::<u32>::new());
        assert_eq!(ids(&"a".repeat(500)), Vec::<u32>::new());
        assert_eq!(ids("中中"), [11, 11]);
        assert_eq!(ids(""), Vec::<u32>::new());
    }

    #[test]
    fn bad_vocabularies_are_refused() {
        assert_eq!(Vocab::new(Vec::new()).err(), Some(VocabError::Empty));
        assert_eq!(
            Vocab::new(vec!["a".into(), "a".into()]).err(),
            Some(VocabError::Repeated { piece: "a".into() })
        );
        assert_eq!(
            Vocab::new(vec!["x".repeat(300)]).err(),
            Some(VocabError::TooLong { index: 0 })
        );
    }
}
