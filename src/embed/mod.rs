//! Embedders: text in, fixed-length vectors out.
//!
//! Everything that makes vectors (code chunks, memories, queries) goes through the
//! [`Embedder`] trait, so a model-based or HTTP embedder can replace the built-in one
//! without touching the callers. The store records the embedder's [`Embedder::name`]
//! with every vector and keeps one vector cache per name: vectors of two embedders are
//! never compared, and switching embedder means re-embedding, not mixing spaces.
//!
//! Embedders reached over HTTP (`openai:…`, `voyage:…`, `ollama:…`) are named here
//! ([`parse_remote`]) and built by `llm::embeddings` (feature `llm`).
//!
//! This module never touches the store or the network; the built-in
//! [`HashedEmbedder`] needs no model file and no API key. With the `neural` feature,
//! [`neural`] adds local sentence-transformers (all-MiniLM-L6-v2, bge-small-en-v1.5)
//! loaded from a model directory. [`StaticEmbedder`] (`static-…`) reads a static token
//! table distilled from such a model (`examples/distil_static.rs`) from
//! `$ENGRAM_STATIC_DIR`: no model run, one lookup per word piece.

mod hashed;
mod lexicon;
#[cfg(feature = "neural")]
pub mod neural;
mod remote_name;
pub mod static_table;

pub use hashed::HashedEmbedder;
pub use remote_name::{parse_remote, RemoteApi, RemoteName};
pub use static_table::StaticEmbedder;

/// What can go wrong while embedding.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The embedder could not produce vectors (a provider down, a bad response …).
    #[error("embedder {embedder} failed: {reason}")]
    Failed { embedder: String, reason: String },
}

/// A name that is no embedder this build can make.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmbedderNameError {
    /// No embedder of any kind has this name; the text lists those that do.
    #[error("{}", unknown(name))]
    Unknown { name: String },
    /// A provider over HTTP, in a build without the HTTP client.
    #[error("embedder {name:?} is reached over HTTP; this build has no HTTP client (build with --features llm)")]
    NeedsHttpClient { name: String },
}

/// Turns texts into vectors of one fixed dimension.
///
/// Implementations must be deterministic for a given [`name`](Embedder::name): the
/// vectors are stored, and a query embedded later is compared against them. Change the
/// name whenever the output for the same text would change.
pub trait Embedder: Send + Sync {
    /// A stable name that identifies the vector space (`hash-v2-256`).
    fn name(&self) -> &str;
    /// The length of every vector this embedder returns.
    fn dimensions(&self) -> usize;
    /// One vector per text, in order. A text with nothing to embed (empty, or only
    /// punctuation) gets an all-zero vector, which callers should not store.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

thread_local! {
    static ON_THIS_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Run `f` with embedders asked to embed on the calling thread rather than split a
/// large batch across the cores: for callers that already run one such thread per
/// core (the indexer prepares files on every core), where more threads would only
/// compete with them. Embedders that cannot honour it ignore it; the vectors are the
/// same either way.
pub fn on_this_thread<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            ON_THIS_THREAD.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(ON_THIS_THREAD.with(|c| c.replace(true)));
    f()
}

/// True inside [`on_this_thread`].
pub(crate) fn is_on_this_thread() -> bool {
    ON_THIS_THREAD.with(std::cell::Cell::get)
}

/// The built-in embedder with its defaults (`hash-v2-256`): what is used when none is
/// configured and no default model's files are present ([`default_choice`]).
pub fn default_embedder() -> HashedEmbedder {
    HashedEmbedder::default()
}

/// The model a build with the `neural` feature uses when no embedder is configured
/// and its files are present.
pub const DEFAULT_MODEL: &str = "all-minilm-l6-v2";

/// Which embedder to use when none is configured, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultChoice {
    /// The embedder's name: [`DEFAULT_MODEL`] or `hash-v2-256`.
    pub name: String,
    /// True when the default model's files were found.
    pub model_present: bool,
    /// Where the files are, or where they were looked for and how to get them.
    pub detail: String,
}

/// The embedder to use when none is configured: [`DEFAULT_MODEL`] when its files are
/// in `model_dir` (the `model_dir` setting: the model's own directory or one of models
/// by name) or, without it, in the default models directory, all of the pinned sizes;
/// else the built-in `hash-v2-256`. Only `stat`s files: nothing is hashed or loaded
/// here (the files' checksums are checked when the model is loaded).
pub fn default_choice(model_dir: Option<&std::path::Path>) -> DefaultChoice {
    let builtin = |detail: String| DefaultChoice {
        name: HashedEmbedder::default().name().to_string(),
        model_present: false,
        detail,
    };
    #[cfg(feature = "neural")]
    {
        let Some(model) = neural::models::find(DEFAULT_MODEL) else {
            return builtin("no default model in this build".into());
        };
        match neural::models::resolve_dir(model, model_dir) {
            Ok(dir) if neural::verify::looks_complete(model, &dir) => DefaultChoice {
                name: model.name.to_string(),
                model_present: true,
                detail: format!("{}'s files are in {}", model.name, dir.display()),
            },
            Ok(dir) => builtin(format!(
                "{}'s files in {} are incomplete or of the wrong size (tools/setup.sh or `engram model fetch {}` puts them right)",
                model.name,
                dir.display(),
                model.name
            )),
            Err(looked) => builtin(format!(
                "no {} files in {} (tools/setup.sh installs them)",
                model.name,
                if looked.is_empty() {
                    "any models directory (set model_dir or HOME)".to_string()
                } else {
                    looked
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(" or ")
                }
            )),
        }
    }
    #[cfg(not(feature = "neural"))]
    {
        let _ = model_dir;
        builtin("this build has no neural embedder (feature neural)".into())
    }
}

/// The embedder a configuration names: `hash-v2-DIMS` (the built-in, DIMS from 16 to
/// 4096), or with the `neural` feature a known model (`minilm`, `bge-small`, …) loaded
/// from `$ENGRAM_MODEL_DIR` or the default models directory, or a static token table
/// `static-…` read from `$ENGRAM_STATIC_DIR/NAME.bin`. Names of embedders this build
/// does not have are refused with the ones it has.
pub fn embedder_by_name(name: &str) -> Result<std::sync::Arc<dyn Embedder>, String> {
    let dir = std::env::var_os("ENGRAM_MODEL_DIR").filter(|d| !d.is_empty());
    embedder_for(name, dir.as_deref().map(std::path::Path::new))
}

/// [`embedder_by_name`] with the model directory given (the `model_dir` setting);
/// `None` looks in the default models directory. A neural model's directory is found
/// here (an error when it has no files), but the model is loaded only when a text is
/// first embedded ([`neural::LazyNeural`]), once per process and directory, then shared.
pub fn embedder_for(
    name: &str,
    model_dir: Option<&std::path::Path>,
) -> Result<std::sync::Arc<dyn Embedder>, String> {
    if let Some(d) = hashed_dims(name) {
        return Ok(std::sync::Arc::new(HashedEmbedder::new(d)));
    }
    if name.starts_with("static-") {
        return static_embedder(name);
    }
    #[cfg(feature = "neural")]
    if neural::models::find(name).is_some() {
        return neural_cached(name, model_dir);
    }
    let _ = model_dir;
    if name == "auto" || parse_remote(name).is_some() {
        return Err(format!(
            "embedder {name:?} is reached over HTTP: build it with engram::llm::RemoteEmbedder (feature llm)"
        ));
    }
    Err(unknown(name))
}

/// The built-in embedder `name` names (`hash-v2-DIMS`), if it is one: these need no
/// model file, no network and no configuration, so any of them can be made from the
/// name alone (search uses that to read another embedder's vectors).
pub fn builtin_embedder(name: &str) -> Option<std::sync::Arc<dyn Embedder>> {
    hashed_dims(name).map(|d| std::sync::Arc::new(HashedEmbedder::new(d)) as _)
}

/// Checks that `name` is an embedder this build has, without loading a model (for
/// validating configuration).
pub fn check_embedder_name(name: &str) -> Result<(), EmbedderNameError> {
    if hashed_dims(name).is_some() || name.starts_with("static-") {
        return Ok(());
    }
    #[cfg(feature = "neural")]
    if neural::models::find(name).is_some() {
        return Ok(());
    }
    if name == "auto" || parse_remote(name).is_some() {
        #[cfg(feature = "llm")]
        return Ok(());
        #[cfg(not(feature = "llm"))]
        return Err(EmbedderNameError::NeedsHttpClient { name: name.into() });
    }
    Err(EmbedderNameError::Unknown { name: name.into() })
}

/// The static token table `name`, from `$ENGRAM_STATIC_DIR/NAME.bin`.
fn static_embedder(name: &str) -> Result<std::sync::Arc<dyn Embedder>, String> {
    let dir = std::env::var_os("ENGRAM_STATIC_DIR")
        .filter(|d| !d.is_empty())
        .ok_or_else(|| {
            format!("embedder {name:?} is a static token table: set ENGRAM_STATIC_DIR to the directory of {name}.bin (made by examples/distil_static.rs)")
        })?;
    StaticEmbedder::load(name, std::path::Path::new(&dir))
        .map(|e| std::sync::Arc::new(e) as _)
        .map_err(|e| format!("embedder {name}: {e}"))
}

fn hashed_dims(name: &str) -> Option<usize> {
    let d = name.strip_prefix("hash-v2-")?.parse::<usize>().ok()?;
    (16..=4096).contains(&d).then_some(d)
}

fn unknown(name: &str) -> String {
    #[cfg(feature = "neural")]
    let neural = format!(", and the local models {}", neural::models::names());
    #[cfg(not(feature = "neural"))]
    let neural = "; local models (minilm, bge-small) need a build with --features neural";
    format!(
        "unknown embedder {name:?}; this build has hash-v2-DIMS (DIMS 16..4096, default hash-v2-256), static-NAME (a token table in $ENGRAM_STATIC_DIR){neural}; over HTTP: openai[:MODEL], voyage[:MODEL], ollama[:MODEL], or auto"
    )
}

#[cfg(feature = "neural")]
fn neural_cached(
    name: &str,
    model_dir: Option<&std::path::Path>,
) -> Result<std::sync::Arc<dyn Embedder>, String> {
    type Loaded = Vec<(
        String,
        Option<std::path::PathBuf>,
        std::sync::Arc<neural::LazyNeural>,
    )>;
    static LOADED: std::sync::Mutex<Loaded> = std::sync::Mutex::new(Vec::new());
    let canonical = neural::models::find(name).map_or(name, |m| m.name);
    let key_dir = model_dir.map(std::path::Path::to_path_buf);
    let mut loaded = LOADED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, _, e)) = loaded
        .iter()
        .find(|(n, d, _)| n == canonical && *d == key_dir)
    {
        return Ok(e.clone());
    }
    let e = std::sync::Arc::new(
        neural::LazyNeural::new(canonical, model_dir)
            .map_err(|e| format!("embedder {canonical}: {e}"))?,
    );
    loaded.push((canonical.to_string(), key_dir, e.clone()));
    Ok(e)
}

/// True when `v` carries no direction (all zeros): such a vector matches nothing.
pub fn is_zero(v: &[f32]) -> bool {
    v.iter().all(|&x| x == 0.0)
}
