//! Indexing a repository: walk it, redact secrets, chunk files, store them, and
//! find them again by keyword.
//!
//! A run is incremental: a file whose size and modification time are unchanged costs a
//! `stat`; one whose content hash is unchanged costs a read; changed files replace
//! their chunks; vanished files leave tombstones. The whole run is one streamed batch,
//! so a crash leaves the previous index intact. Secrets are redacted (or their chunk
//! excluded) before a record is built, so their bytes never reach the store. This
//! layer knows files and chunks; symbols (tree-sitter) come on top of it.

mod chunk;
mod projection;
mod redact;
mod search;
mod walk;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use serde_json::{json, Map};

pub use chunk::{line_windows, Chunk};
pub use projection::{CodeProjection, CHUNK_TYPE, FILE_TYPE};
pub use redact::SecretAction;
pub use search::{chunk_info, keyword_ranked, ChunkInfo};
pub use walk::{is_secrets_file, language, Skipped};

use crate::embed::{default_embedder, is_zero, EmbedError, Embedder};
use crate::key::hash64;
use crate::patterns::{builtin, compile, PatternError};
use crate::store::{Store, StoreError};

/// What can go wrong while indexing or searching.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Patterns(#[from] PatternError),
    #[error(transparent)]
    Embed(#[from] EmbedError),
    #[error("{0}")]
    Invalid(String),
}

/// How to index.
#[derive(Clone)]
pub struct IndexOptions {
    /// Files larger than this are skipped (default 1 MiB).
    pub max_file_bytes: u64,
    pub secret_action: SecretAction,
    /// Makes each chunk's vector (default: the built-in [`HashedEmbedder`]). Files
    /// embedded by another embedder are re-embedded, never mixed.
    ///
    /// [`HashedEmbedder`]: crate::embed::HashedEmbedder
    pub embedder: Arc<dyn Embedder>,
    /// Called after each file with (files done, files found), for progress bars.
    pub progress: Option<Arc<dyn Fn(u64, u64) + Send + Sync>>,
}

impl Default for IndexOptions {
    fn default() -> Self {
        IndexOptions {
            max_file_bytes: 1 << 20,
            secret_action: SecretAction::Redact,
            embedder: Arc::new(default_embedder()),
            progress: None,
        }
    }
}

impl std::fmt::Debug for IndexOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexOptions")
            .field("max_file_bytes", &self.max_file_bytes)
            .field("secret_action", &self.secret_action)
            .field("embedder", &self.embedder.name())
            .finish()
    }
}

/// What an indexing run did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct IndexReport {
    pub files_indexed: u64,
    pub files_unchanged: u64,
    pub files_deleted: u64,
    /// Binary, secrets, too large or unreadable.
    pub files_skipped: u64,
    pub skipped_binary: u64,
    pub skipped_secret_files: u64,
    pub skipped_too_large: u64,
    pub skipped_unreadable: u64,
    pub symbols: u64,
    pub chunks: u64,
    pub chunks_excluded: u64,
    /// Secrets redacted, by pattern.
    pub redactions: BTreeMap<String, u64>,
    pub seconds: f64,
}

struct Known {
    size: u64,
    mtime_ms: u64,
    hash: String,
    chunks: u64,
    embedder: String,
}

/// Index the repository at `root` into `store`.
pub fn index(store: &Store, root: &Path, opts: &IndexOptions) -> Result<IndexReport, IndexError> {
    let started = Instant::now();
    if !root.is_dir() {
        return Err(IndexError::Invalid(format!(
            "{} is not a directory",
            root.display()
        )));
    }
    let secrets = builtin::secrets();
    let secret_ids: Vec<String> = secrets.patterns.iter().map(|p| p.id.clone()).collect();
    let compiled = compile(&secrets)?;
    let mut scanner = compiled.scanner()?;

    let known: HashMap<String, Known> = store.with_tracker(|db| {
        let mut stmt =
            db.prepare("SELECT path, size, mtime_ms, hash, chunks, embedder FROM code_files")?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                Known {
                    size: r.get::<_, i64>(1)? as u64,
                    mtime_ms: r.get::<_, i64>(2)? as u64,
                    hash: r.get(3)?,
                    chunks: r.get::<_, i64>(4)? as u64,
                    embedder: r.get(5)?,
                },
            ))
        })?;
        Ok(rows.collect::<rusqlite::Result<HashMap<_, _>>>()?)
    })?;

    let (files, skipped) = walk::walk(root, opts.max_file_bytes);
    let mut report = IndexReport {
        skipped_secret_files: skipped.secret_file,
        skipped_too_large: skipped.too_large,
        skipped_unreadable: skipped.unreadable,
        ..IndexReport::default()
    };
    let mut seen: HashSet<String> = HashSet::new();
    let embedder_name = opts.embedder.name().to_string();
    let mut writer = store.begin_batch()?;
    let total = files.len() as u64;
    for (done, f) in files.iter().enumerate() {
        if let Some(progress) = &opts.progress {
            progress(done as u64, total);
        }
        let old = known.get(&f.rel);
        if let Some(k) = old {
            if k.size == f.size && k.mtime_ms == f.mtime_ms && k.embedder == embedder_name {
                seen.insert(f.rel.clone());
                report.files_unchanged += 1;
                continue;
            }
        }
        let bytes = match std::fs::read(&f.abs) {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!("skipping {}: {e}", f.rel);
                report.skipped_unreadable += 1;
                continue;
            }
        };
        let text = match std::str::from_utf8(&bytes) {
            Ok(t) if !bytes.contains(&0) => t,
            _ => {
                report.skipped_binary += 1;
                continue;
            }
        };
        seen.insert(f.rel.clone());
        let hash = format!("{:016x}", hash64(text));
        let lang = walk::language(&f.rel);
        let unchanged_content = old.is_some_and(|k| k.hash == hash && k.embedder == embedder_name);
        let chunks = if unchanged_content {
            old.map(|k| k.chunks).unwrap_or(0)
        } else {
            let chunks = line_windows(text);
            let mut to_embed: Vec<(String, String)> = Vec::new();
            for (i, c) in chunks.iter().enumerate() {
                let Some(clean) = redact::redact(
                    &c.text,
                    &mut scanner,
                    &secret_ids,
                    opts.secret_action,
                    &mut report.redactions,
                )?
                else {
                    report.chunks_excluded += 1;
                    writer.delete(&format!("chunk:{}:{i}", f.rel))?;
                    continue;
                };
                let mut meta = Map::new();
                meta.insert("type".into(), json!(CHUNK_TYPE));
                meta.insert("path".into(), json!(f.rel));
                meta.insert("chunk_id".into(), json!(i));
                meta.insert("lang".into(), json!(lang));
                meta.insert("start_line".into(), json!(c.start_line));
                meta.insert("end_line".into(), json!(c.end_line));
                let key = format!("chunk:{}:{i}", f.rel);
                writer.put(&key, meta, clean.as_bytes())?;
                to_embed.push((key, clean));
                report.chunks += 1;
            }
            // Vectors follow their chunks in the same batch: only redacted text is
            // ever embedded, and a put makes older vectors of the key stale.
            let texts: Vec<&str> = to_embed.iter().map(|(_, t)| t.as_str()).collect();
            let vectors = opts.embedder.embed(&texts)?;
            for ((key, _), v) in to_embed.iter().zip(&vectors) {
                if !is_zero(v) {
                    writer.put_vector(key, &embedder_name, v)?;
                }
            }
            for i in chunks.len() as u64..old.map(|k| k.chunks).unwrap_or(0) {
                writer.delete(&format!("chunk:{}:{i}", f.rel))?;
            }
            report.files_indexed += 1;
            chunks.len() as u64
        };
        if unchanged_content {
            report.files_unchanged += 1;
        }
        let mut meta = Map::new();
        meta.insert("type".into(), json!(FILE_TYPE));
        meta.insert("path".into(), json!(f.rel));
        meta.insert("lang".into(), json!(lang));
        meta.insert("size".into(), json!(f.size));
        meta.insert("mtime_ms".into(), json!(f.mtime_ms));
        meta.insert("hash".into(), json!(hash));
        meta.insert("chunks".into(), json!(chunks));
        meta.insert("embedder".into(), json!(embedder_name));
        writer.put(&format!("file:{}", f.rel), meta, Vec::new())?;
    }
    for (path, k) in &known {
        if !seen.contains(path) {
            writer.delete(&format!("file:{path}"))?;
            for i in 0..k.chunks {
                writer.delete(&format!("chunk:{path}:{i}"))?;
            }
            report.files_deleted += 1;
        }
    }
    if !writer.is_empty() {
        writer.finish()?;
    }
    report.files_skipped = report.skipped_binary
        + report.skipped_secret_files
        + report.skipped_too_large
        + report.skipped_unreadable;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}
