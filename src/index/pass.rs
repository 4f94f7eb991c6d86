//! One indexing pass over a repository: walk, prepare changed files without holding
//! the writer lock (`prepare`), and commit them in bounded batches.
//!
//! Each batch holds whole files. What a file had before (its chunk count and symbol
//! keys) is read under the writer lock, in the batch that replaces it, so a
//! concurrent indexer, watcher or `jit_index_file` can never leave orphan records. A
//! batch is committed once its files took [`BATCH_MILLIS`] to prepare or it holds as
//! many bytes as the last batches suggest can be applied in about 60 ms (never more
//! than [`BATCH_BYTES`]); the lock is held only while a batch is appended and applied.
//! A pass killed midway leaves every committed batch in place, and the next pass
//! skips those files as unchanged.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::OptionalExtension;
use serde_json::{json, Map};

use super::file::{self, Prepared, Previous};
use super::prepare::{prepare_in_parallel, Outcome, Pending, PrepareJob, Step};
use super::{walk, IndexError, IndexOptions, IndexReport, FILE_TYPE};
use crate::store::{BatchWriter, Store};

/// Records a batch gathers before it is committed, at most.
pub const BATCH_BYTES: usize = 8 << 20;
/// Preparation time a batch gathers before it is committed.
pub const BATCH_MILLIS: u64 = 100;
/// How long a batch should hold the writer lock. Applying a batch (the tracker's
/// B-trees and full-text index, the vector caches) costs far more per byte than
/// preparing it, and that cost grows with the store, so batch size follows the
/// measured cost of the previous batches instead of being fixed.
const TARGET_HOLD: Duration = Duration::from_millis(60);
/// Before every file is taken, the committing thread commits what it has gathered
/// (rather than prepare another file) once applying it would take a quarter of what
/// the helpers still need for the files left: what it gathers after its last commit
/// it applies alone once they are done. Timing a 100K-line two-thread index, a half,
/// a quarter and an eighth came out alike (0.38-0.42 s) and ahead of the whole
/// (0.40-0.42 s, 8 runs each way for it and a quarter) and of a sixteenth.
const EARLY_COMMIT_SHARE: u32 = 4;
/// The smallest batch budget, so one slow commit cannot make batches tiny.
const MIN_BATCH_BYTES: usize = 16 << 10;

/// The byte budget of the next batch, from what the last ones cost under the lock.
struct BatchBudget {
    /// Smoothed lock time per byte of batch, in nanoseconds.
    nanos_per_byte: Option<f64>,
}

impl BatchBudget {
    fn bytes(&self) -> usize {
        match self.nanos_per_byte {
            None => 1 << 20,
            Some(ns) => ((TARGET_HOLD.as_nanos() as f64 / ns.max(1e-3)) as usize)
                .clamp(MIN_BATCH_BYTES, BATCH_BYTES),
        }
    }

    /// How long applying a batch of `bytes` should take, once a batch was measured.
    fn apply_time(&self, bytes: usize) -> Option<Duration> {
        self.nanos_per_byte
            .map(|ns| Duration::from_nanos((ns * bytes as f64) as u64))
    }

    fn observe(&mut self, bytes: usize, held: Duration) {
        if bytes == 0 {
            return;
        }
        let ns = held.as_nanos() as f64 / bytes as f64;
        self.nanos_per_byte = Some(match self.nanos_per_byte {
            None => ns,
            // Lean towards the slower estimate: overshooting the hold time is what
            // other processes feel.
            Some(old) if ns > old => 0.3 * old + 0.7 * ns,
            Some(old) => 0.7 * old + 0.3 * ns,
        });
    }
}

/// What the tracker says of a file.
pub(super) struct Known {
    pub size: u64,
    pub mtime_ms: u64,
    pub hash: String,
    pub chunks: u64,
    pub symbols: u64,
    pub embedder: String,
    /// JSON array of the file's import lines.
    pub imports: String,
}

/// Index the repository at `root` into `store`; see the module doc.
pub fn index(store: &Store, root: &Path, opts: &IndexOptions) -> Result<IndexReport, IndexError> {
    if !opts.splits_keywords_first() {
        return index_pass(store, root, opts, false);
    }
    // Keywords first: every changed file's chunks, symbols and built-in vectors are
    // committed by a fast pass, so search answers (from the keyword lists and the
    // built-in vector space) within seconds; then the configured embedder's vectors
    // are added to the same chunks. Search uses the built-in space until the
    // configured one is as complete (`search::vector_space`).
    let started = Instant::now();
    let first = index_keywords(store, root, opts)?;
    let keyword_seconds = started.elapsed().as_secs_f64();
    let second = index_pass(store, root, opts, false)?;
    Ok(IndexReport {
        files_indexed: first.files_indexed + second.files_indexed,
        files_unchanged: second.files_unchanged,
        files_reembedded: second.files_reembedded,
        files_deleted: first.files_deleted + second.files_deleted,
        chunks: first.chunks + second.chunks,
        chunks_excluded: first.chunks_excluded + second.chunks_excluded,
        symbols: first.symbols + second.symbols,
        redactions: if first.redactions.is_empty() {
            second.redactions.clone()
        } else {
            first.redactions.clone()
        },
        keyword_seconds: Some(keyword_seconds),
        seconds: started.elapsed().as_secs_f64(),
        ..second
    })
}

/// The first pass of a keywords-first [`index`] alone: every file whose content
/// changed is committed with its chunks, symbols and the built-in embedder's vectors;
/// a file whose content is indexed is left as it is, whatever embedder made its
/// vectors. Search answers after it; [`index`] then adds the configured embedder's
/// vectors. For callers that answer between the two (a first search over MCP).
pub fn index_keywords(
    store: &Store,
    root: &Path,
    opts: &IndexOptions,
) -> Result<IndexReport, IndexError> {
    let keywords = IndexOptions {
        embedder: std::sync::Arc::new(crate::embed::default_embedder()),
        ..opts.clone()
    };
    index_pass(store, root, &keywords, true)
}

/// One walk of `root`. With `content_only` (the keywords-first pass) a file whose
/// content is indexed is left alone whichever embedder made its vectors, and a
/// changed file is indexed with `opts.embedder`.
fn index_pass(
    store: &Store,
    root: &Path,
    opts: &IndexOptions,
    content_only: bool,
) -> Result<IndexReport, IndexError> {
    let started = Instant::now();
    if !root.is_dir() {
        return Err(IndexError::Invalid(format!(
            "{} is not a directory",
            root.display()
        )));
    }

    // A hint only, read without the lock: it decides which files to read and prepare.
    // What is replaced is read again under the lock when the file is written.
    let mut hint = store.with_tracker(known_files)?;
    // A file with a grammar but no `refs:` record was indexed before the code graph
    // existed: it is read and indexed again, once.
    let graphed = store.with_tracker(super::graph::table::graphed_paths)?;
    hint.retain(|path, _| {
        !opts.graph || graphed.contains(path) || !super::symbols::has_grammar(walk::language(path))
    });

    let (files, skipped) = walk::walk(root, opts.max_file_bytes)?;
    let mut report = IndexReport {
        skipped_secret_files: skipped.secret_file,
        skipped_too_large: skipped.too_large,
        skipped_unreadable: skipped.unreadable,
        ..IndexReport::default()
    };
    let mut seen: HashSet<String> = HashSet::new();
    let embedder_name = opts.embedder.name().to_string();
    let mut redactions = BTreeMap::new();
    let total = files.len() as u64;
    // Unchanged by size and time: nothing to read. The rest is read and prepared in
    // parallel, and committed here in file order.
    let mut todo: Vec<(usize, &walk::WalkedFile)> = Vec::new();
    for (i, f) in files.iter().enumerate() {
        match hint.get(&f.rel) {
            Some(k)
                if k.size == f.size
                    && k.mtime_ms == f.mtime_ms
                    && (content_only || k.embedder == embedder_name) =>
            {
                seen.insert(f.rel.clone());
                report.files_unchanged += 1;
            }
            _ => todo.push((i, f)),
        }
    }
    let mut batch: Vec<Pending> = Vec::new();
    let mut batch_bytes = 0usize;
    let mut batch_started = Instant::now();
    let mut budget = BatchBudget {
        nanos_per_byte: None,
    };
    let threads = match opts.threads {
        0 => crate::cores::available(),
        n => n,
    };
    let job = PrepareJob {
        hint: &hint,
        embedder_name: &embedder_name,
        opts,
        embed_here: threads == 1 || todo.len() >= 2,
        content_only,
    };
    let mut accept = |step: Step| -> Result<bool, IndexError> {
        let (index, prepared) = match step {
            Step::File(index, prepared) => (index, prepared),
            // The next file is still being prepared: commit what is gathered now
            // rather than leave it to after the last file, once every file is taken
            // or applying it would take a good share of what the helpers still need.
            Step::Idle { helpers_left } => {
                let gathered = budget.apply_time(batch_bytes);
                if batch.is_empty()
                    || (!helpers_left.is_zero()
                        && gathered.is_none_or(|g| g * EARLY_COMMIT_SHARE < helpers_left))
                {
                    return Ok(false);
                }
                let held =
                    commit_files(store, &mut batch, &embedder_name, content_only, &mut report)?;
                budget.observe(batch_bytes, held);
                batch_bytes = 0;
                batch_started = Instant::now();
                return Ok(true);
            }
        };
        if let Some(progress) = &opts.progress {
            progress(index as u64 + 1, total);
        }
        for (rule, n) in prepared.redactions {
            *redactions.entry(rule).or_insert(0) += n;
        }
        let pending = match prepared.outcome {
            Outcome::Unreadable => {
                report.skipped_unreadable += 1;
                return Ok(true);
            }
            Outcome::Binary => {
                report.skipped_binary += 1;
                return Ok(true);
            }
            Outcome::Ready(p) => *p,
        };
        seen.insert(pending.rel.clone());
        batch_bytes += pending.content.as_ref().map_or(256, Prepared::weight);
        batch.push(pending);
        if batch_bytes >= budget.bytes()
            || batch_started.elapsed() >= Duration::from_millis(BATCH_MILLIS)
        {
            let held = commit_files(store, &mut batch, &embedder_name, content_only, &mut report)?;
            budget.observe(batch_bytes, held);
            batch_bytes = 0;
            batch_started = Instant::now();
        }
        Ok(true)
    };
    if threads <= 1 || todo.len() < 2 {
        for (i, f) in &todo {
            accept(Step::File(*i, job.run(f)?))?;
        }
    } else {
        prepare_in_parallel(&job, &todo, threads, &mut accept)?;
    }
    commit_files(store, &mut batch, &embedder_name, content_only, &mut report)?;
    delete_vanished(store, &seen, &mut report)?;
    report.redactions = redactions;
    report.files_skipped = report.skipped_binary
        + report.skipped_secret_files
        + report.skipped_too_large
        + report.skipped_unreadable;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Commit `files` as one batch (emptying it), reading what each replaces under the
/// writer lock. Returns how long the lock was held.
fn commit_files(
    store: &Store,
    files: &mut Vec<Pending>,
    embedder: &str,
    content_only: bool,
    report: &mut IndexReport,
) -> Result<Duration, IndexError> {
    if files.is_empty() {
        return Ok(Duration::ZERO);
    }
    let mut writer = store.begin_batch()?;
    let locked = Instant::now();
    for p in files.drain(..) {
        let now = writer.with_tracker(|db| known_file(db, &p.rel))?;
        // The embedder the file record names: whose vectors its chunks have.
        let mut named = embedder;
        let (chunks, symbols, imports) = match (&p.content, &now) {
            (Some(content), now) => {
                let old_symbols = writer.with_tracker(|db| symbol_keys(db, &p.rel))?;
                let previous = Previous {
                    chunks: now.as_ref().map_or(0, |k| k.chunks),
                    symbol_keys: &old_symbols,
                };
                // Same content under another embedder: when the stored records are
                // exactly what this preparation made, only the new vectors are added,
                // and the old embedder's stay searchable until the switch completes.
                let reembed = match now {
                    Some(k)
                        if k.hash == p.hash
                            && k.embedder != embedder
                            && file::same_records(&writer, content, &previous)? =>
                    {
                        Some(k)
                    }
                    _ => None,
                };
                if let Some(k) = reembed {
                    file::write_vectors(&mut writer, content)?;
                    report.files_reembedded += 1;
                    let imports = serde_json::from_str(&k.imports).unwrap_or_else(|_| json!([]));
                    (k.chunks, k.symbols, imports)
                } else {
                    file::write(&mut writer, content, previous)?;
                    let w = &content.written;
                    report.files_indexed += 1;
                    report.chunks += w.chunks;
                    report.chunks_excluded += w.chunks_excluded;
                    report.symbols += w.symbols;
                    (w.chunks + w.chunks_excluded, w.symbols, json!(w.imports))
                }
            }
            // Same content as indexed: only the file record's size and time change.
            (None, Some(k)) if k.hash == p.hash && (content_only || k.embedder == embedder) => {
                report.files_unchanged += 1;
                named = &k.embedder;
                let imports = serde_json::from_str(&k.imports).unwrap_or_else(|_| json!([]));
                (k.chunks, k.symbols, imports)
            }
            // Another writer changed this file's records since the hint was read; the
            // next pass sees it as changed and indexes it.
            (None, _) => continue,
        };
        put_file_record(&mut writer, &p, named, chunks, symbols, imports)?;
    }
    if !writer.is_empty() {
        writer.finish()?;
    }
    Ok(locked.elapsed())
}

fn put_file_record(
    writer: &mut BatchWriter<'_>,
    p: &Pending,
    embedder: &str,
    chunks: u64,
    symbols: u64,
    imports: serde_json::Value,
) -> Result<(), IndexError> {
    let mut meta = Map::new();
    meta.insert("type".into(), json!(FILE_TYPE));
    meta.insert("path".into(), json!(p.rel));
    meta.insert("lang".into(), json!(p.lang));
    meta.insert("size".into(), json!(p.size));
    meta.insert("mtime_ms".into(), json!(p.mtime_ms));
    meta.insert("hash".into(), json!(p.hash));
    meta.insert("lines".into(), json!(p.lines));
    meta.insert("chunks".into(), json!(chunks));
    meta.insert("symbols".into(), json!(symbols));
    meta.insert("imports".into(), imports);
    meta.insert("embedder".into(), json!(embedder));
    writer.put(&format!("file:{}", p.rel), meta, Vec::new())?;
    Ok(())
}

/// Tombstone every indexed file the walk did not find, with its chunks and symbols,
/// reading what they are under the writer lock.
fn delete_vanished(
    store: &Store,
    seen: &HashSet<String>,
    report: &mut IndexReport,
) -> Result<(), IndexError> {
    let mut writer = store.begin_batch()?;
    let known = writer.with_tracker(known_files)?;
    for (path, k) in &known {
        if seen.contains(path) {
            continue;
        }
        writer.delete(&format!("file:{path}"))?;
        writer.delete(&super::graph::refs_key(path))?;
        for i in 0..k.chunks {
            writer.delete(&format!("chunk:{path}:{i}"))?;
        }
        for key in writer.with_tracker(|db| symbol_keys(db, path))? {
            writer.delete(&key)?;
        }
        report.files_deleted += 1;
    }
    if !writer.is_empty() {
        writer.finish()?;
    }
    Ok(())
}

const KNOWN_COLUMNS: &str = "path, size, mtime_ms, hash, chunks, embedder, symbols, imports";

fn known_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(String, Known)> {
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
}

fn known_files(db: &rusqlite::Connection) -> crate::store::Result<HashMap<String, Known>> {
    let mut stmt = db.prepare(&format!("SELECT {KNOWN_COLUMNS} FROM code_files"))?;
    let rows = stmt.query_map([], known_row)?;
    Ok(rows.collect::<rusqlite::Result<HashMap<_, _>>>()?)
}

fn known_file(db: &rusqlite::Connection, path: &str) -> crate::store::Result<Option<Known>> {
    Ok(db
        .prepare_cached(&format!(
            "SELECT {KNOWN_COLUMNS} FROM code_files WHERE path = ?1"
        ))?
        .query_row([path], known_row)
        .optional()?
        .map(|(_, k)| k))
}

/// The keys of the symbols indexed for `path`.
fn symbol_keys(db: &rusqlite::Connection, path: &str) -> crate::store::Result<Vec<String>> {
    let mut stmt = db.prepare_cached(
        "SELECT r.key FROM code_symbols s JOIN records r ON r.seq = s.seq WHERE s.path = ?1",
    )?;
    let rows = stmt.query_map([path], |r| r.get::<_, String>(0))?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

/// Whether an indexed file's record names `embedder` (its chunks' vectors are, or are
/// still to be, of it): such an embedder's vectors must not be retired.
pub fn embedder_in_use(db: &rusqlite::Connection, embedder: &str) -> crate::store::Result<bool> {
    Ok(db
        .prepare_cached("SELECT 1 FROM code_files WHERE embedder = ?1 LIMIT 1")?
        .query_row([embedder], |_| Ok(()))
        .optional()?
        .is_some())
}

/// Whether any file was ever indexed into the store: none means the repository has
/// never been indexed, and its first search indexes it first.
pub fn has_indexed_files(db: &rusqlite::Connection) -> crate::store::Result<bool> {
    Ok(db
        .prepare_cached("SELECT 1 FROM code_files LIMIT 1")?
        .query_row([], |_| Ok(()))
        .optional()?
        .is_some())
}
