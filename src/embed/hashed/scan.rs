//! The words of a text, found a byte at a time.
//!
//! `hash-v2`'s words are the non-empty pieces of
//! `text.split(|c: char| !(c.is_alphanumeric() || c == '_'))`; reading ASCII a byte at
//! a time and decoding only other characters finds the same pieces faster, and notes
//! while reading what each word needs next (split or not).

#[cfg(doc)]
use crate::text::{is_one_word, split_ascii_identifier, split_identifier};

/// What [`for_each_word`] saw of a word's bytes, so it need not be read again.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum WordKind {
    /// ASCII lower-case letters and digits: its own one part ([`is_one_word`]).
    OneWord,
    /// Other ASCII: split with [`split_ascii_identifier`].
    Ascii,
    /// Not ASCII: split with [`split_identifier`].
    Other,
}

/// Calls `f` with each word of `text` in order: the non-empty pieces of
/// `text.split(|c: char| !(c.is_alphanumeric() || c == '_'))`, reading ASCII a byte
/// at a time and decoding only non-ASCII characters.
pub(super) fn for_each_word(text: &str, mut f: impl FnMut(&str, WordKind)) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        let (mut one_word, mut ascii) = (true, true);
        // The separator ending the word: none at the end of the text.
        let mut separator = 0;
        while i < bytes.len() {
            let class = BYTE_CLASS[usize::from(bytes[i])];
            if class & NOT_ASCII == 0 {
                if class & IN_WORD == 0 {
                    separator = 1;
                    break;
                }
                one_word &= class & LOWER_OR_DIGIT != 0;
                i += 1;
            } else {
                // `i` is on a character boundary: every step is one whole character.
                let c = text[i..]
                    .chars()
                    .next()
                    .unwrap_or(char::REPLACEMENT_CHARACTER);
                if !c.is_alphanumeric() {
                    separator = c.len_utf8();
                    break;
                }
                (one_word, ascii) = (false, false);
                i += c.len_utf8();
            }
        }
        if i > start {
            f(&text[start..i], kind(one_word, ascii));
        }
        i += separator;
    }
}

/// [`BYTE_CLASS`] bits: an ASCII byte of a word (letter, digit, `_`); an ASCII
/// lower-case letter or digit; a byte of a non-ASCII character.
const IN_WORD: u8 = 1;
const LOWER_OR_DIGIT: u8 = 2;
const NOT_ASCII: u8 = 4;

/// What [`for_each_word`] needs to know of each byte, looked up rather than worked out
/// with a chain of comparisons.
static BYTE_CLASS: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        if !c.is_ascii() {
            table[b] = NOT_ASCII;
        } else {
            if c.is_ascii_alphanumeric() || c == b'_' {
                table[b] |= IN_WORD;
            }
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                table[b] |= LOWER_OR_DIGIT;
            }
        }
        b += 1;
    }
    table
};

fn kind(one_word: bool, ascii: bool) -> WordKind {
    match (one_word, ascii) {
        (true, _) => WordKind::OneWord,
        (false, true) => WordKind::Ascii,
        (false, false) => WordKind::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::{for_each_word, WordKind};
    use crate::text::is_one_word;

    /// The pieces `split` finds, with their kind worked out from scratch.
    fn by_split(text: &str) -> Vec<(String, WordKind)> {
        text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .map(|w| {
                let kind = if is_one_word(w) {
                    WordKind::OneWord
                } else if w.is_ascii() {
                    WordKind::Ascii
                } else {
                    WordKind::Other
                };
                (w.to_string(), kind)
            })
            .collect()
    }

    #[test]
    fn words_and_kinds_are_those_of_split() {
        // Every pair of a few characters of each kind, and some whole texts.
        let chars = [
            "a", "Z", "7", "_", " ", "-", "é", "İ", "日", "🦀", "\u{301}", "ǅ", "\n",
        ];
        let mut texts: Vec<String> = vec![
            String::new(),
            "fn parse_http_request(buf: &[u8]) -> Request".into(),
            "İstanbul ÖZEL straße naïve café MAßE ǅemal 日本語 e\u{301}te\u{301}".into(),
        ];
        for a in chars {
            for b in chars {
                for c in chars {
                    texts.push(format!("{a}{b}{c}"));
                }
            }
        }
        for t in &texts {
            let mut ours = Vec::new();
            for_each_word(t, |w, kind| ours.push((w.to_string(), kind)));
            assert_eq!(ours, by_split(t), "{t:?}");
        }
    }
}
