//! Embedders: text in, fixed-length vectors out.
//!
//! Everything that makes vectors (code chunks, memories, queries) goes through the
//! [`Embedder`] trait, so a model-based or HTTP embedder can replace the built-in one
//! without touching the callers. The store records the embedder's [`Embedder::name`]
//! with every vector and keeps one vector cache per name: vectors of two embedders are
//! never compared, and switching embedder means re-embedding, not mixing spaces.
//!
//! This module never touches the store or the network; the built-in
//! [`HashedEmbedder`] needs no model file and no API key.

mod hashed;
mod lexicon;

pub use hashed::HashedEmbedder;

/// What can go wrong while embedding.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The embedder could not produce vectors (a provider down, a bad response …).
    #[error("embedder {embedder} failed: {reason}")]
    Failed { embedder: String, reason: String },
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

/// The embedder used when none is configured: [`HashedEmbedder`] with its defaults.
pub fn default_embedder() -> HashedEmbedder {
    HashedEmbedder::default()
}

/// The embedder a configuration names: `hash-v2-DIMS` (the built-in, DIMS from 16 to
/// 4096). Names of embedders this build does not have are refused with the ones it has.
pub fn embedder_by_name(name: &str) -> Result<std::sync::Arc<dyn Embedder>, String> {
    if let Some(dims) = name.strip_prefix("hash-v2-") {
        if let Ok(d) = dims.parse::<usize>() {
            if (16..=4096).contains(&d) {
                return Ok(std::sync::Arc::new(HashedEmbedder::new(d)));
            }
        }
    }
    Err(format!(
        "unknown embedder {name:?}; this build has hash-v2-DIMS (DIMS 16..4096, default hash-v2-256)"
    ))
}

/// True when `v` carries no direction (all zeros): such a vector matches nothing.
pub fn is_zero(v: &[f32]) -> bool {
    v.iter().all(|&x| x == 0.0)
}
