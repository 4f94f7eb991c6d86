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
mod file;
mod projection;
mod redact;
mod search;
mod symbol_search;
pub mod symbols;
mod walk;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use serde_json::{json, Map};

pub use chunk::{line_windows, Chunk};
pub use file::symbol_key;
pub use projection::{CodeProjection, CHUNK_TYPE, FILE_TYPE, SYMBOL_TYPE};
pub use redact::SecretAction;
pub use search::{chunk_info, keyword_ranked, ChunkInfo};
pub use symbol_search::{chunk_at, lookup_symbols, symbol_info, symbol_ranked, SymbolInfo};
pub use walk::{is_secrets_file, language, Skipped};

use crate::embed::{default_embedder, EmbedError, Embedder};
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
    symbols: u64,
    embedder: String,
    /// JSON array of the file's import lines.
    imports: String,
}

/// `text` with every match of `ids`' compiled set replaced by `[REDACTED:<id>]`,
/// line breaks kept; counts per pattern id. What the indexer does before writing.
pub fn redact_text(
    text: &str,
    scanner: &mut crate::patterns::Scanner<'_>,
    ids: &[String],
    counts: &mut BTreeMap<String, u64>,
) -> Result<String, PatternError> {
    Ok(redact::redact(text, scanner, ids, counts)?.text)
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
        let mut stmt = db.prepare(
            "SELECT path, size, mtime_ms, hash, chunks, embedder, symbols, imports FROM code_files",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                Known {
                    size: r.get::<_, i64>(1)? as u64,
                    mtime_ms: r.get::<_, i64>(2)? as u64,
                    hash: r.get(3)?,
                    chunks: r.get::<_, i64>(4)? as u64,
                    embedder: r.get(5)?,
                    symbols: r.get::<_, i64>(6)? as u64,
                    imports: r.get(7)?,
                },
            ))
        })?;
        Ok(rows.collect::<rusqlite::Result<HashMap<_, _>>>()?)
    })?;

    // Old symbol keys per file, to tombstone those a changed file no longer has.
    let mut old_symbols: HashMap<String, Vec<String>> = store.with_tracker(|db| {
        let mut stmt = db.prepare(
            "SELECT s.path, r.key FROM code_symbols s JOIN records r ON r.key_hash = s.key_hash",
        )?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
        let mut m: HashMap<String, Vec<String>> = HashMap::new();
        for row in rows {
            let (path, key) = row?;
            m.entry(path).or_default().push(key);
        }
        Ok(m)
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
    let mut redactions = BTreeMap::new();
    let mut cx = file::Context {
        scanner: &mut scanner,
        secret_ids: &secret_ids,
        secret_action: opts.secret_action,
        embedder: opts.embedder.as_ref(),
        redactions: &mut redactions,
    };
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
                // Deleted or made unreadable since the walk: skipped, never fatal.
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
        let (chunks, symbols, imports) = if unchanged_content {
            report.files_unchanged += 1;
            old.map(|k| {
                let imports: serde_json::Value =
                    serde_json::from_str(&k.imports).unwrap_or_else(|_| json!([]));
                (k.chunks, k.symbols, imports)
            })
            .unwrap_or((0, 0, json!([])))
        } else {
            let previous = file::Previous {
                chunks: old.map(|k| k.chunks).unwrap_or(0),
                symbol_keys: old_symbols.get(&f.rel).map(Vec::as_slice).unwrap_or(&[]),
            };
            let w = file::index_file(&mut writer, &f.rel, lang, text, previous, &mut cx)?;
            report.files_indexed += 1;
            report.chunks += w.chunks;
            report.chunks_excluded += w.chunks_excluded;
            report.symbols += w.symbols;
            (w.chunks + w.chunks_excluded, w.symbols, json!(w.imports))
        };
        let mut meta = Map::new();
        meta.insert("type".into(), json!(FILE_TYPE));
        meta.insert("path".into(), json!(f.rel));
        meta.insert("lang".into(), json!(lang));
        meta.insert("size".into(), json!(f.size));
        meta.insert("mtime_ms".into(), json!(f.mtime_ms));
        meta.insert("hash".into(), json!(hash));
        meta.insert("chunks".into(), json!(chunks));
        meta.insert("symbols".into(), json!(symbols));
        meta.insert("imports".into(), imports);
        meta.insert("embedder".into(), json!(embedder_name));
        writer.put(&format!("file:{}", f.rel), meta, Vec::new())?;
    }
    for (path, k) in &known {
        if !seen.contains(path) {
            writer.delete(&format!("file:{path}"))?;
            for i in 0..k.chunks {
                writer.delete(&format!("chunk:{path}:{i}"))?;
            }
            for key in old_symbols.remove(path).unwrap_or_default() {
                writer.delete(&key)?;
            }
            report.files_deleted += 1;
        }
    }
    report.redactions = redactions;
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
