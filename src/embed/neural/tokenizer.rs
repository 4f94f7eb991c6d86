//! Reading `tokenizer.json`: BERT's WordPiece files into `wordpiece::BertTokens`
//! (one map, no `tokenizers` model), anything else through the `tokenizers` crate.
//!
//! The crate's `Tokenizer::from_file` reads the model section through an untagged
//! enum, so all-MiniLM-L6-v2's 30,522-entry vocabulary is buffered, copied into a JSON
//! value and parsed again. When the crate is used, a WordPiece model is read here
//! straight into its vocabulary, and only the small remainder (normaliser,
//! pre-tokeniser, post-processor, decoder, added tokens) goes through the crate's own
//! deserialiser; the added tokens are added after the real vocabulary is in place, as
//! `from_file` adds them, so they get the same ids. Anything this reading does not
//! understand falls back to the crate's reading of the same bytes, so the result is
//! never different, only faster. It reads the file and never writes.

use std::path::Path;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};
use tokenizers::models::wordpiece::WordPiece;
use tokenizers::{AddedToken, Tokenizer};

use super::wordpiece::BertTokens;
use super::NeuralError;

/// A loaded tokenizer: text to the ids the model reads.
pub(super) enum Tokens {
    /// BERT's own shape, read by `wordpiece`.
    Bert(BertTokens),
    /// Anything else, through the `tokenizers` crate.
    Crate(Box<Tokenizer>),
}

impl Tokens {
    /// The tokenizer in `path`, its encodings cut at `max_tokens` ids (special
    /// tokens included) and never padded.
    pub(super) fn load(path: &Path, max_tokens: usize) -> Result<Tokens, NeuralError> {
        let bytes = std::fs::read(path).map_err(|source| NeuralError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        if let Some(bert) = BertTokens::from_json(&bytes, max_tokens) {
            return Ok(Tokens::Bert(bert));
        }
        let failed = |e: tokenizers::Error| NeuralError::Tokenizer {
            path: path.to_path_buf(),
            reason: e.to_string(),
        };
        let mut tk = match wordpiece_fast(&bytes) {
            Some(tk) => tk,
            None => Tokenizer::from_bytes(&bytes).map_err(failed)?,
        };
        // Batches are padded by the caller, not by the tokenizer; the file's own
        // truncation (128 in all-MiniLM-L6-v2's) is replaced by the model's window.
        tk.with_padding(None);
        tk.with_truncation(Some(tokenizers::TruncationParams {
            max_length: max_tokens,
            ..Default::default()
        }))
        .map_err(failed)?;
        Ok(Tokens::Crate(Box::new(tk)))
    }

    /// The ids of `text`, special tokens included.
    pub(super) fn encode(&self, text: &str) -> Result<Vec<u32>, NeuralError> {
        match self {
            Tokens::Bert(b) => Ok(b.encode(text)),
            Tokens::Crate(tk) => tk
                .encode(text, true)
                .map(|e| e.get_ids().to_vec())
                .map_err(|e| NeuralError::Tokenize(e.to_string())),
        }
    }

    /// Entries in the vocabulary, added tokens included.
    pub(super) fn vocab_size(&self) -> usize {
        match self {
            Tokens::Bert(b) => b.vocab_size(),
            Tokens::Crate(tk) => tk.get_vocab_size(true),
        }
    }

    /// Which reading was used: `"wordpiece"` (engram's own) or `"tokenizers"`.
    pub(super) fn kind(&self) -> &'static str {
        match self {
            Tokens::Bert(_) => "wordpiece",
            Tokens::Crate(_) => "tokenizers",
        }
    }
}

/// The top level of tokenizer.json with the model read as WordPiece when it is one.
struct Split {
    model: Option<WordPiece>,
    rest: Map<String, Value>,
}

impl<'de> Deserialize<'de> for Split {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Split;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a tokenizer.json object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Split, A::Error> {
                let mut split = Split {
                    model: None,
                    rest: Map::new(),
                };
                while let Some(key) = map.next_key::<String>()? {
                    if key == "model" {
                        // Not WordPiece: an error here sends the caller to the slow path.
                        split.model = Some(map.next_value::<WordPiece>()?);
                    } else {
                        split.rest.insert(key, map.next_value::<Value>()?);
                    }
                }
                Ok(split)
            }
        }
        d.deserialize_map(V)
    }
}

fn wordpiece_fast(bytes: &[u8]) -> Option<Tokenizer> {
    let Split {
        model: Some(model),
        mut rest,
    } = serde_json::from_slice(bytes).ok()?
    else {
        return None;
    };
    let added: Vec<AddedToken> = match rest.remove("added_tokens") {
        Some(v) => serde_json::from_value(v).ok()?,
        None => Vec::new(),
    };
    // A stand-in model for the crate's deserialiser, replaced at once.
    rest.insert(
        "model".into(),
        serde_json::json!({
            "type": "WordPiece",
            "unk_token": "[UNK]",
            "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100,
            "vocab": {}
        }),
    );
    let mut tk: Tokenizer = serde_json::from_value(Value::Object(rest)).ok()?;
    tk.with_model(model);
    tk.add_tokens(added).ok()?;
    Some(tk)
}
