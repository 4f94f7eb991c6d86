//! BERT's own tokenisation (the `BertNormalizer`, `BertPreTokenizer`, `WordPiece` and
//! `[CLS] … [SEP]` template of a `tokenizer.json`), read in one pass into a single
//! vocabulary table.
//!
//! Why not the `tokenizers` crate for these files: building its WordPiece model
//! builds two 30,522-entry hash maps (token to id and back) and the added-token
//! machinery, 12-25 ms of every CLI search that embeds a query, for one lookup
//! direction. This reads the vocabulary into one pre-sized map and nothing else.
//!
//! It must give exactly the ids the crate gives, so it takes only a file of exactly
//! that shape (`BertTokens::from_json` says `None` for anything else, and the caller
//! uses the crate); `tests/it/neural_reference.rs` holds it to the crate's output on
//! real and random text. It reads the file and never writes.

use std::hash::BuildHasher;

use hashbrown::{DefaultHashBuilder, HashTable};
use serde::de::{DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use unicode_categories::UnicodeCategories;
use unicode_normalization_alignments::UnicodeNormalization;

/// A BERT tokenizer: text to token ids, `[CLS]` first and `[SEP]` last.
pub(super) struct BertTokens {
    vocab: Vocab,
    /// Added tokens matched in the raw text before anything else (`[CLS]` written in
    /// the text is the id of `[CLS]`), longest first.
    added: Vec<(Box<str>, u32)>,
    unk: u32,
    cls: u32,
    sep: u32,
    /// Words of more characters are `[UNK]` whole.
    max_word_chars: usize,
    clean_text: bool,
    chinese: bool,
    strip_accents: bool,
    lowercase: bool,
    /// Most ids of an encoding, `[CLS]` and `[SEP]` included.
    max_tokens: usize,
}

#[derive(Deserialize)]
struct File {
    added_tokens: Vec<Added>,
    normalizer: Normalizer,
    pre_tokenizer: Tagged,
    post_processor: serde_json::Value,
    model: Model,
}

#[derive(Deserialize)]
struct Added {
    id: u32,
    content: String,
    single_word: bool,
    lstrip: bool,
    rstrip: bool,
    normalized: bool,
}

#[derive(Deserialize)]
struct Normalizer {
    #[serde(rename = "type")]
    kind: String,
    clean_text: bool,
    handle_chinese_chars: bool,
    strip_accents: Option<bool>,
    lowercase: bool,
}

#[derive(Deserialize)]
struct Tagged {
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct Model {
    #[serde(rename = "type")]
    kind: String,
    unk_token: String,
    continuing_subword_prefix: String,
    max_input_chars_per_word: usize,
    vocab: Vocab,
}

/// The vocabulary: every token's text in one string, and a table of ids by text.
/// One allocation for 30,522 tokens rather than one each, and a fast hash: building
/// it is most of loading the tokenizer.
struct Vocab {
    text: String,
    /// (start, end) in `text`, by id.
    spans: Vec<(u32, u32)>,
    /// Ids, found by their token's text.
    table: HashTable<u32>,
    hasher: DefaultHashBuilder,
}

impl Vocab {
    fn get(&self, token: &str) -> Option<u32> {
        let hash = self.hasher.hash_one(token);
        self.table
            .find(hash, |&id| self.token(id) == token)
            .copied()
    }

    fn token(&self, id: u32) -> &str {
        let (s, e) = self.spans[id as usize];
        &self.text[s as usize..e as usize]
    }

    fn len(&self) -> usize {
        self.table.len()
    }
}

impl<'de> Deserialize<'de> for Vocab {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(VocabVisitor)
    }
}

struct VocabVisitor;

impl<'de> Visitor<'de> for VocabVisitor {
    type Value = Vocab;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a map of tokens to ids")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Vocab, A::Error> {
        let capacity = m.size_hint().unwrap_or(32_768);
        let mut v = Vocab {
            text: String::with_capacity(capacity * 8),
            spans: Vec::with_capacity(capacity),
            table: HashTable::with_capacity(capacity),
            hasher: DefaultHashBuilder::default(),
        };
        let mut at = Vec::with_capacity(capacity);
        while let Some(span) = m.next_key_seed(Append(&mut v.text))? {
            let id: u32 = m.next_value()?;
            at.push((id, span));
        }
        let n = at.len();
        v.spans = vec![(0, 0); n];
        for (id, span) in at {
            // Ids must be 0..n, each once: anything else is not a file this reads.
            let slot = v
                .spans
                .get_mut(id as usize)
                .filter(|s| **s == (0, 0))
                .ok_or_else(|| serde::de::Error::custom("vocabulary ids are not 0..n"))?;
            *slot = span;
        }
        for id in 0..n as u32 {
            let hash = v.hasher.hash_one(v.token(id));
            if v.table
                .find(hash, |&other| v.token(other) == v.token(id))
                .is_some()
            {
                return Err(serde::de::Error::custom(
                    "a token is in the vocabulary twice",
                ));
            }
            let (text, spans, hasher) = (&v.text, &v.spans, &v.hasher);
            v.table.insert_unique(hash, id, |&i| {
                let (s, e) = spans[i as usize];
                hasher.hash_one(&text[s as usize..e as usize])
            });
        }
        Ok(v)
    }
}

/// A map key appended to the vocabulary's text; gives its span.
struct Append<'a>(&'a mut String);

impl<'de> DeserializeSeed<'de> for Append<'_> {
    type Value = (u32, u32);

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(u32, u32), D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Append<'_> {
    type Value = (u32, u32);

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a token")
    }

    fn visit_str<E: serde::de::Error>(self, token: &str) -> Result<(u32, u32), E> {
        let start = u32::try_from(self.0.len()).map_err(E::custom)?;
        self.0.push_str(token);
        let end = u32::try_from(self.0.len()).map_err(E::custom)?;
        Ok((start, end))
    }
}

impl BertTokens {
    /// The tokenizer `bytes` (a `tokenizer.json`) describes, encodings cut at
    /// `max_tokens`; `None` when it is not exactly BERT's shape.
    pub(super) fn from_json(bytes: &[u8], max_tokens: usize) -> Option<Self> {
        let f: File = serde_json::from_slice(bytes).ok()?;
        let n = &f.normalizer;
        let m = &f.model;
        if n.kind != "BertNormalizer"
            || f.pre_tokenizer.kind != "BertPreTokenizer"
            || m.kind != "WordPiece"
            || m.continuing_subword_prefix != "##"
            || max_tokens < 2
        {
            return None;
        }
        let id = |t: &str| m.vocab.get(t);
        let (cls, sep) = (id("[CLS]")?, id("[SEP]")?);
        if !is_cls_a_sep(&f.post_processor, cls, sep) {
            return None;
        }
        // Added tokens matched anywhere, as written, and nothing subtler.
        let plain = |a: &Added| !(a.single_word || a.lstrip || a.rstrip || a.normalized);
        if !f
            .added_tokens
            .iter()
            .all(|a| plain(a) && !a.content.is_empty())
        {
            return None;
        }
        let mut added: Vec<(Box<str>, u32)> = f
            .added_tokens
            .into_iter()
            .map(|a| (a.content.into_boxed_str(), a.id))
            .collect();
        added.sort_by_key(|(t, _)| std::cmp::Reverse(t.len()));
        Some(BertTokens {
            unk: id(&m.unk_token)?,
            cls,
            sep,
            added,
            max_word_chars: m.max_input_chars_per_word,
            clean_text: n.clean_text,
            chinese: n.handle_chinese_chars,
            strip_accents: n.strip_accents.unwrap_or(n.lowercase),
            lowercase: n.lowercase,
            max_tokens,
            vocab: f.model.vocab,
        })
    }

    /// Entries in the vocabulary.
    pub(super) fn vocab_size(&self) -> usize {
        self.vocab.len()
    }

    /// The ids of `text`: `[CLS]`, its tokens (cut so the whole fits `max_tokens`),
    /// `[SEP]`.
    pub(super) fn encode(&self, text: &str) -> Vec<u32> {
        let mut ids = vec![self.cls];
        let room = self.max_tokens - 2;
        let mut rest = text;
        let mut norm = String::new();
        let mut piece = String::new();
        while !rest.is_empty() && ids.len() <= room {
            // The next added token written in the text, leftmost, longest there.
            let next = self
                .added
                .iter()
                .filter_map(|(t, id)| rest.find(&**t).map(|at| (at, t.len(), *id)))
                .min_by_key(|&(at, len, _)| (at, std::cmp::Reverse(len)));
            let (plain, special) = match next {
                Some((at, len, id)) => (&rest[..at], Some((id, at + len))),
                None => (rest, None),
            };
            self.normalize(plain, &mut norm);
            self.words(&norm, &mut piece, &mut ids);
            match special {
                Some((id, end)) => {
                    ids.push(id);
                    rest = &rest[end..];
                }
                None => rest = "",
            }
        }
        ids.truncate(room + 1);
        ids.push(self.sep);
        ids
    }

    /// `BertNormalizer`: control characters out, whitespace to spaces, CJK
    /// ideographs spaced apart, accents stripped (NFD, non-spacing marks out), lower
    /// case, each char on its own.
    fn normalize(&self, text: &str, out: &mut String) {
        out.clear();
        let mut spaced = String::with_capacity(text.len());
        for c in text.chars() {
            if self.clean_text {
                if c == '\0' || c == '\u{fffd}' || is_control(c) {
                    continue;
                }
                if is_whitespace(c) {
                    spaced.push(' ');
                    continue;
                }
            }
            if self.chinese && is_chinese(c) {
                spaced.push(' ');
                spaced.push(c);
                spaced.push(' ');
            } else {
                spaced.push(c);
            }
        }
        let mut push = |c: char| {
            if self.lowercase {
                out.extend(c.to_lowercase());
            } else {
                out.push(c);
            }
        };
        if self.strip_accents {
            for (c, _) in spaced.nfd() {
                if !c.is_mark_nonspacing() {
                    push(c);
                }
            }
        } else {
            spaced.chars().for_each(push);
        }
    }

    /// `BertPreTokenizer` then WordPiece over normalised text: words split at
    /// whitespace, each punctuation character a word of its own.
    /// Stops once `ids` is past the window: what follows would be cut.
    fn words(&self, text: &str, buf: &mut String, ids: &mut Vec<u32>) {
        for word in text.split(char::is_whitespace) {
            if ids.len() > self.max_tokens - 2 {
                return;
            }
            let mut start = 0;
            for (i, c) in word.char_indices() {
                if is_punctuation(c) {
                    self.word(&word[start..i], buf, ids);
                    self.word(&word[i..i + c.len_utf8()], buf, ids);
                    start = i + c.len_utf8();
                }
            }
            self.word(&word[start..], buf, ids);
        }
    }

    /// WordPiece over one word: the longest vocabulary entry from the start, then
    /// `##`-continuations; a word with a part no entry matches is one `[UNK]`.
    fn word(&self, word: &str, buf: &mut String, ids: &mut Vec<u32>) {
        if word.is_empty() {
            return;
        }
        if word.chars().count() > self.max_word_chars {
            ids.push(self.unk);
            return;
        }
        let before = ids.len();
        let mut start = 0;
        while start < word.len() {
            let mut end = word.len();
            let found = loop {
                buf.clear();
                if start > 0 {
                    buf.push_str("##");
                }
                buf.push_str(&word[start..end]);
                if let Some(id) = self.vocab.get(buf.as_str()) {
                    break Some(id);
                }
                match word[start..end].chars().next_back() {
                    Some(c) if end - c.len_utf8() > start => end -= c.len_utf8(),
                    _ => break None,
                }
            };
            let Some(id) = found else {
                ids.truncate(before);
                ids.push(self.unk);
                return;
            };
            ids.push(id);
            start = end;
        }
    }
}

/// Whether a post-processor is `[CLS] $A [SEP]` for a single text (the template
/// form, or `BertProcessing`) with the vocabulary's own ids for both.
fn is_cls_a_sep(p: &serde_json::Value, cls: u32, sep: u32) -> bool {
    let ids = |name: &str| {
        p.pointer(&format!("/special_tokens/{name}/ids"))
            .and_then(|v| v.as_array())
            .map(|a| a.iter().filter_map(|v| v.as_u64()).collect::<Vec<_>>())
    };
    match p.get("type").and_then(|t| t.as_str()) {
        Some("TemplateProcessing") => {
            let single = serde_json::json!([
                {"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": "[SEP]", "type_id": 0}}
            ]);
            p.get("single") == Some(&single)
                && ids("[CLS]") == Some(vec![u64::from(cls)])
                && ids("[SEP]") == Some(vec![u64::from(sep)])
        }
        Some("BertProcessing") => {
            p.get("cls") == Some(&serde_json::json!(["[CLS]", cls]))
                && p.get("sep") == Some(&serde_json::json!(["[SEP]", sep]))
        }
        _ => false,
    }
}

/// Tab, newline and carriage return are whitespace here, not control characters.
fn is_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || c.is_whitespace()
}

/// Unicode's "other" categories (control, format, unassigned, private use,
/// surrogate), but for the three whitespace controls.
fn is_control(c: char) -> bool {
    !matches!(c, '\t' | '\n' | '\r') && c.is_other()
}

/// BERT's ASCII punctuation (`$`, `+`, `<`, `^`, `` ` ``, `|`, `~` included, which
/// Unicode files as symbols) and Unicode's punctuation categories.
fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || c.is_punctuation()
}

/// The CJK ideograph blocks BERT spaces apart (Hangul, Hiragana and Katakana are not
/// among them: they are written with spaces).
fn is_chinese(c: char) -> bool {
    matches!(
        u32::from(c),
        0x4E00..=0x9FFF
            | 0x3400..=0x4DBF
            | 0x20000..=0x2A6DF
            | 0x2A700..=0x2B73F
            | 0x2B740..=0x2B81F
            | 0x2B920..=0x2CEAF
            | 0xF900..=0xFAFF
            | 0x2F800..=0x2FA1F
    )
}
