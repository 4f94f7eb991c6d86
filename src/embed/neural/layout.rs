//! Reading a sentence-transformer's Hugging Face layout directory: the BERT config,
//! the tokenizer, the window, the pooling and whether vectors are normalised.
//!
//! Owns the interpretation of `config.json`, `sentence_bert_config.json`,
//! `modules.json`, `1_Pooling/config.json` and `tokenizer_config.json`, with the
//! defaults sentence-transformers uses when one is absent. It reads files only, never
//! runs the model, and never trusts their contents: every malformed or missing value is
//! a typed error naming the file, not a panic.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::NeuralError;

/// How token vectors become one sentence vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// The average of the non-padding token vectors (all-MiniLM-L6-v2).
    Mean,
    /// The first token's vector, `[CLS]` (bge-small-en-v1.5).
    Cls,
    /// The element-wise maximum over the non-padding tokens.
    Max,
}

/// What the directory says about running the model.
#[derive(Debug)]
pub struct Layout {
    pub dir: PathBuf,
    pub bert: candle_transformers::models::bert::Config,
    pub pooling: Pooling,
    pub normalize: bool,
    /// Most tokens per text, special tokens included.
    pub max_tokens: usize,
    /// Lower-case texts before tokenising (sentence_bert_config's `do_lower_case`).
    pub lowercase: bool,
}

fn read(path: &Path) -> Result<String, NeuralError> {
    std::fs::read_to_string(path).map_err(|source| NeuralError::Read {
        path: path.to_path_buf(),
        source,
    })
}

fn parse<T: for<'de> Deserialize<'de>>(path: &Path, text: &str) -> Result<T, NeuralError> {
    serde_json::from_str(text).map_err(|e| NeuralError::Parse {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })
}

/// Parse `dir/name` when it exists; `None` when it does not.
fn optional<T: for<'de> Deserialize<'de>>(
    dir: &Path,
    name: &str,
) -> Result<Option<T>, NeuralError> {
    let path = dir.join(name);
    if !path.is_file() {
        return Ok(None);
    }
    parse(&path, &read(&path)?).map(Some)
}

#[derive(Deserialize)]
struct SentenceBertConfig {
    max_seq_length: Option<usize>,
    #[serde(default)]
    do_lower_case: bool,
}

#[derive(Deserialize)]
struct Module {
    #[serde(default)]
    path: String,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
    #[serde(default)]
    pooling_mode_weightedmean_tokens: bool,
    #[serde(default)]
    pooling_mode_lasttoken: bool,
}

#[derive(Deserialize)]
struct TokenizerConfig {
    model_max_length: Option<f64>,
}

impl Layout {
    /// Read `dir`'s description of the model (not the weights or the tokenizer).
    pub fn read(dir: &Path) -> Result<Layout, NeuralError> {
        for f in super::models::REQUIRED_FILES {
            if !dir.join(f).is_file() {
                return Err(NeuralError::MissingFile {
                    dir: dir.to_path_buf(),
                    file: f,
                });
            }
        }
        let config_path = dir.join("config.json");
        let config_text = read(&config_path)?;
        #[derive(Deserialize)]
        struct Kind {
            model_type: Option<String>,
        }
        let kind: Kind = parse(&config_path, &config_text)?;
        if let Some(t) = kind.model_type.as_deref() {
            if t != "bert" {
                return Err(NeuralError::Unsupported {
                    path: config_path,
                    reason: format!("model_type {t:?}; only BERT models are supported"),
                });
            }
        }
        let bert: candle_transformers::models::bert::Config = parse(&config_path, &config_text)?;
        if bert.num_attention_heads == 0
            || !bert.hidden_size.is_multiple_of(bert.num_attention_heads)
        {
            return Err(NeuralError::Unsupported {
                path: config_path,
                reason: "hidden_size is not a multiple of num_attention_heads".into(),
            });
        }

        // Pooling and normalisation follow modules.json; a directory without one is
        // treated as sentence-transformers treats a plain transformer: mean pooling.
        let modules: Option<Vec<Module>> = optional(dir, "modules.json")?;
        let (mut pooling, mut normalize) = (Pooling::Mean, false);
        match &modules {
            None => normalize = true,
            Some(modules) => {
                for m in modules {
                    let kind = m.kind.rsplit('.').next().unwrap_or("");
                    match kind {
                        "Transformer" => {}
                        "Normalize" => normalize = true,
                        "Pooling" => {
                            let file = Path::new(&m.path).join("config.json");
                            let file = file.to_string_lossy();
                            let cfg: PoolingConfig =
                                optional(dir, &file)?.ok_or_else(|| NeuralError::MissingFile {
                                    dir: dir.to_path_buf(),
                                    file: "1_Pooling/config.json",
                                })?;
                            pooling = pooling_mode(&dir.join(&*file), &cfg)?;
                        }
                        other => {
                            return Err(NeuralError::Unsupported {
                                path: dir.join("modules.json"),
                                reason: format!(
                                    "module {other:?} (a Dense or other layer after pooling)"
                                ),
                            })
                        }
                    }
                }
            }
        }

        // The window: sentence-transformers' max_seq_length, else the tokenizer's
        // model_max_length, never past the position table.
        let st: Option<SentenceBertConfig> = optional(dir, "sentence_bert_config.json")?;
        let tk: Option<TokenizerConfig> = optional(dir, "tokenizer_config.json")?;
        let declared = st
            .as_ref()
            .and_then(|s| s.max_seq_length)
            .or_else(|| {
                tk.and_then(|t| t.model_max_length)
                    .filter(|n| (1.0..1e9).contains(n))
                    .map(|n| n as usize)
            })
            .unwrap_or(bert.max_position_embeddings);
        let max_tokens = declared.min(bert.max_position_embeddings).max(2);
        Ok(Layout {
            dir: dir.to_path_buf(),
            bert,
            pooling,
            normalize,
            max_tokens,
            lowercase: st.is_some_and(|s| s.do_lower_case),
        })
    }
}

fn pooling_mode(path: &Path, c: &PoolingConfig) -> Result<Pooling, NeuralError> {
    let chosen = [
        (c.pooling_mode_cls_token, Some(Pooling::Cls), "cls_token"),
        (
            c.pooling_mode_mean_tokens,
            Some(Pooling::Mean),
            "mean_tokens",
        ),
        (c.pooling_mode_max_tokens, Some(Pooling::Max), "max_tokens"),
        (
            c.pooling_mode_mean_sqrt_len_tokens,
            None,
            "mean_sqrt_len_tokens",
        ),
        (
            c.pooling_mode_weightedmean_tokens,
            None,
            "weightedmean_tokens",
        ),
        (c.pooling_mode_lasttoken, None, "lasttoken"),
    ];
    let on: Vec<_> = chosen.iter().filter(|(on, _, _)| *on).collect();
    match on.as_slice() {
        [(_, Some(p), _)] => Ok(*p),
        [(_, None, name)] => Err(NeuralError::Unsupported {
            path: path.to_path_buf(),
            reason: format!("pooling mode {name}"),
        }),
        [] => Err(NeuralError::Unsupported {
            path: path.to_path_buf(),
            reason: "no pooling mode is on".into(),
        }),
        _ => Err(NeuralError::Unsupported {
            path: path.to_path_buf(),
            reason: "more than one pooling mode (concatenated poolings)".into(),
        }),
    }
}
