//! JSON Lines import and export of memories.
//!
//! One memory per line: a JSON object with the fields of [`Memory`] (`text` required;
//! `id`, `task`, `insights`, `contexts`, `tags`, `symbols`, `provenance`, `trust`,
//! `session`, `version`, `metadata`, `created_ms`, `updated_ms` optional). An unknown
//! field is refused, so a misspelt one is not silently dropped. The seeds' spellings
//! (Galaxybrain's `context`, `symbol_keys`, `created_at`, `key_hash`; memory_lib's
//! UUID ids, `timestamp` and non-code entries) are read too: see `jsonl_compat`.
//! Export writes engram's spelling.
//! Import reads the file once, on every core, validating every line (reporting each
//! bad one by number) and preparing what parsed (secrets redacted; see `jsonl_read`);
//! only when every line is good does it start embedding the memories, chunk by chunk,
//! on a thread of its own. Then it takes the writer lock, checks ids, and writes
//! everything as one batch: a file is imported whole or not at all. In the batch each
//! chunk's vectors follow the next chunk's puts, and the tracker applies it while
//! it is written ([`crate::store::BatchWriter::apply_while_writing`]), so the tracker
//! work, the appending and the embedding of the last chunks run side by side. How
//! long the embedder took for the first chunk decides whether it may go on under the
//! lock: a fast one (the built-in) does, as it costs other writers less than the
//! tracker work it runs beside; a slow one (a model, a server) finishes before the
//! lock is taken, so other writers never wait for it. The prepared memories are held
//! in memory (their text and vector) until that batch is written.

use std::io::Write;
use std::path::Path;

use std::collections::HashMap;
use std::sync::mpsc::{sync_channel, Receiver};

use super::jsonl_compat;
use super::locked::Locked;
use super::model::Memory;
use super::{embed_texts, embedding_text, Memories, MemoryError, Result};
use crate::store::WriteBatch;

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ImportReport {
    pub imported: u64,
    /// Lines whose id already existed, now replaced.
    pub replaced: u64,
    pub skipped_blank: u64,
    /// Secrets replaced before anything was written.
    pub redacted: u64,
}

/// Texts an import embeds per embedder call: the embedder splits a call across the
/// cores, and the writer can start once the first chunk is back.
const EMBED_CHUNK: usize = 1024;

/// How many chunks of puts the writer writes ahead of their vectors: one chunk of
/// slack, so the writer seldom waits for the embedder, whose thread gives way to the
/// tracker's applying thread.
const VECTORS_LAG_CHUNKS: usize = 1;

/// Vector bytes the embedding thread may hold ahead of the writer before it waits.
///
/// The writer takes an import's vectors only after all of its memories, so with a
/// small allowance (it was 4 chunks) the built-in embedder stopped a quarter of the way
/// in, a core sat idle while the tracker applied the memories, and the tracker then
/// waited for the last vectors: about 100 ms of an 850 ms import of 20,000 memories.
/// 64 MiB holds 64 chunks of 256-dim vectors (65,536 memories), or 10 of 1,536-dim.
const EMBED_AHEAD_BYTES: usize = 64 << 20;

/// Chunks embedded ahead of the writer before the embedding thread waits: what
/// [`EMBED_AHEAD_BYTES`] holds of vectors of `dims` dimensions, at least 4.
fn embed_chunks_ahead(dims: usize) -> usize {
    (EMBED_AHEAD_BYTES / (EMBED_CHUNK * dims.max(1) * std::mem::size_of::<f32>())).max(4)
}

/// An embedder at most this slow per text keeps embedding while the import holds the
/// writer lock; a slower one finishes before the lock is taken. The built-in takes
/// about 20 µs a text (several times that on a loaded machine), the tracker work of
/// a memory 50 to 100 µs; a model or a server takes milliseconds.
const FAST_EMBED_PER_TEXT: std::time::Duration = std::time::Duration::from_micros(500);

/// How far a fast embedder's thread lowers its priority (its nice value) while it
/// runs beside the writing; see `crate::cores::give_way`.
const EMBED_GIVES_WAY_BY: i32 = 10;

/// An import's vectors as the embedding thread sends them, chunk by chunk, in order.
struct Embedded {
    chunks: Receiver<Result<Vec<Option<Vec<f32>>>>>,
    /// Every vector received so far, by memory; taken as written.
    got: Vec<Option<Vec<f32>>>,
    expected: usize,
}

impl Embedded {
    fn new(chunks: Receiver<Result<Vec<Option<Vec<f32>>>>>, expected: usize) -> Embedded {
        Embedded {
            chunks,
            got: Vec::with_capacity(expected),
            expected,
        }
    }

    /// How many vectors have arrived.
    fn len(&self) -> usize {
        self.got.len()
    }

    /// Wait for the next chunk.
    fn take_next(&mut self) -> Result<()> {
        let chunk = self.chunks.recv().map_err(|_| {
            MemoryError::Invalid("the embedding thread stopped before the last text".into())
        })??;
        self.got.extend(chunk);
        Ok(())
    }

    /// Wait for every chunk.
    fn take_all(&mut self) -> Result<()> {
        while self.got.len() < self.expected {
            self.take_next()?;
        }
        Ok(())
    }

    /// The vector of memory `i` (in file order), waiting for its chunk if need be.
    fn get(&mut self, i: usize) -> Result<Option<Vec<f32>>> {
        while self.got.len() <= i {
            self.take_next()?;
        }
        Ok(self.got[i].take())
    }
}

impl Memories {
    /// Import a JSONL file; see the module doc. On any bad line nothing is written and
    /// the error names every bad line (up to 20).
    pub fn import_file(&self, path: &Path) -> Result<ImportReport> {
        let store = self.store();
        let resolve = |h: u64| store.key_for_hash(h).map_err(|e| e.to_string());
        let Prepared {
            memories: prepared,
            mut report,
        } = super::jsonl_read::prepare_import(path, &resolve)?;
        if prepared.is_empty() {
            return Ok(report);
        }
        let texts: Vec<String> = prepared.iter().map(|(m, _)| embedding_text(m)).collect();
        let embedder = self.embedder.as_ref();
        std::thread::scope(|s| {
            let (chunks, embedded) = sync_channel(embed_chunks_ahead(embedder.dimensions()));
            s.spawn(move || {
                for (i, part) in texts.chunks(EMBED_CHUNK).enumerate() {
                    let started = std::time::Instant::now();
                    let vectors = embed_texts(embedder, part);
                    let failed = vectors.is_err();
                    // A fast embedder goes on beside the writing (below), ahead of the
                    // writer, which takes each chunk's vectors a chunk later: where
                    // cores are short it gives way to the tracker's applying thread,
                    // which bounds the import.
                    if i == 0 && started.elapsed() / part.len().max(1) as u32 <= FAST_EMBED_PER_TEXT
                    {
                        crate::cores::give_way(EMBED_GIVES_WAY_BY);
                    }
                    if chunks.send(vectors).is_err() || failed {
                        return;
                    }
                }
            });
            let mut vectors = Embedded::new(embedded, prepared.len());
            // The first chunk says how fast the embedder is. A fast one (the built-in)
            // goes on beside the writing, under the lock: it costs the lock less than
            // the tracker work it overlaps. A slow one (a model, a server) finishes
            // first, so no other writer ever waits for it.
            let started = std::time::Instant::now();
            vectors.take_next()?;
            let per_text = started.elapsed() / vectors.len().max(1) as u32;
            if per_text > FAST_EMBED_PER_TEXT {
                vectors.take_all()?;
            }
            self.locked(|l| self.write_import(l, prepared, &mut vectors, &mut report))
        })?;
        Ok(report)
    }

    /// Write an import's memories under the lock, in file order, as one batch: the
    /// import commits whole or not at all. Each chunk's vectors follow the puts of
    /// the chunk after it ([`VECTORS_LAG_CHUNKS`]), so the tracker works on puts while
    /// the embedder finishes a chunk, and the vectors reach the log (and the cache
    /// built beside it) all through the import rather than all at its end.
    fn write_import(
        &self,
        l: &mut Locked<'_>,
        prepared: Vec<(Memory, Option<String>)>,
        vectors: &mut Embedded,
        report: &mut ImportReport,
    ) -> Result<()> {
        // The tracker work (most of an import's) then runs beside the appending.
        l.apply_while_writing()?;
        let total = prepared.len();
        l.expect_vectors(total as u64);
        // Legacy id -> the id this import gave it, for a legacy id seen twice.
        let mut legacy: HashMap<String, String> = HashMap::new();
        let mut ids: Vec<String> = Vec::with_capacity(total);
        // Each id's last line so far: a memory written twice keeps the vector of its
        // last line only. An earlier line's vector, written after the later put, would
        // outlive it; written before it, the put drops it.
        let mut last: HashMap<String, usize> = HashMap::with_capacity(total);
        // The ids lines give, looked up together rather than one query each.
        let given: Vec<String> = prepared
            .iter()
            .filter(|(m, legacy_of)| !m.id.is_empty() && legacy_of.is_none())
            .map(|(m, _)| m.id.clone())
            .collect();
        let live = l.existing(given.iter().map(String::as_str))?;
        let mut vectors_written = 0usize;
        for (i, (mut m, legacy_of)) in prepared.into_iter().enumerate() {
            if m.id.is_empty() {
                m.id = self.new_id_locked(l)?;
            } else if let Some(old) = legacy_of {
                m.id = self.legacy_slot(l, &legacy, &old)?;
                if l.exists(&m.id)? {
                    report.replaced += 1;
                }
                legacy.insert(old, m.id.clone());
            } else if live.contains(m.id.as_str()) || l.taken(&m.id) {
                report.replaced += 1;
            }
            // Anchors a line brings are kept (they say what the code was when it
            // was written); a line without any is anchored to the code here.
            if m.anchors.is_empty() {
                self.anchor_locked(l, &mut m)?;
            }
            let mut batch = WriteBatch::new();
            batch.put_keeping_history(&m.id, m.to_meta(), m.text.as_bytes())?;
            l.add(&batch)?;
            report.imported += 1;
            last.insert(m.id.clone(), i);
            ids.push(m.id);
            // After a chunk's last put, the vectors of the chunk VECTORS_LAG_CHUNKS before.
            let put = i + 1;
            if put % EMBED_CHUNK == 0 && put >= EMBED_CHUNK * (1 + VECTORS_LAG_CHUNKS) {
                let upto = put - EMBED_CHUNK * VECTORS_LAG_CHUNKS;
                self.write_vectors(l, &ids, &last, vectors, vectors_written..upto)?;
                vectors_written = upto;
            }
        }
        self.write_vectors(l, &ids, &last, vectors, vectors_written..total)
    }

    /// Write the vectors of the memories `range` (in file order) whose line is the
    /// last of its id so far.
    fn write_vectors(
        &self,
        l: &mut Locked<'_>,
        ids: &[String],
        last: &HashMap<String, usize>,
        vectors: &mut Embedded,
        range: std::ops::Range<usize>,
    ) -> Result<()> {
        for i in range {
            let vector = vectors.get(i)?;
            if let (Some(v), Some(&j)) = (vector, last.get(&ids[i])) {
                if j == i {
                    let mut batch = WriteBatch::new();
                    batch.put_vector(&ids[i], self.embedder.name(), &v)?;
                    l.add(&batch)?;
                }
            }
        }
        Ok(())
    }

    /// The id for a memory imported under the legacy id `old`: the one this import or
    /// an earlier one gave it, else the derived id, re-rolled while another memory
    /// holds it.
    fn legacy_slot(
        &self,
        l: &Locked<'_>,
        seen: &HashMap<String, String>,
        old: &str,
    ) -> Result<String> {
        if let Some(id) = seen.get(old) {
            return Ok(id.clone());
        }
        for round in 0..64 {
            let id = jsonl_compat::derived_id(old, round);
            if l.taken(&id) {
                continue;
            }
            match l.get(&id)? {
                None if !l.exists(&id)? => return Ok(id),
                Some(m) if jsonl_compat::legacy_id(&m) == Some(old) => return Ok(id),
                _ => {}
            }
        }
        Err(MemoryError::Invalid(format!(
            "no free memory id for legacy id {old:?} in 64 tries"
        )))
    }

    /// Write every memory as one JSON line, oldest first. Returns how many.
    pub fn export(&self, out: &mut dyn Write) -> Result<u64> {
        let mut n = 0u64;
        let page = 1000usize;
        let mut after: (i64, i64) = (i64::MIN, i64::MIN);
        loop {
            let rows: Vec<(String, i64, i64)> = self.store().with_tracker(|db| {
                let mut stmt = db.prepare_cached(
                    "SELECT id, created_ms, seq FROM memories WHERE (created_ms, seq) > (?1, ?2)
                     ORDER BY created_ms, seq LIMIT ?3",
                )?;
                let rows = stmt
                    .query_map(rusqlite::params![after.0, after.1, page as i64], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                    })?;
                Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
            })?;
            let Some(last) = rows.last() else { break };
            after = (last.1, last.2);
            for (id, _, _) in &rows {
                if let Some(m) = self.get(id)? {
                    let line = serde_json::to_string(&m)
                        .map_err(|e| MemoryError::Invalid(e.to_string()))?;
                    writeln!(out, "{line}").map_err(|source| MemoryError::Io {
                        path: "export".into(),
                        source,
                    })?;
                    n += 1;
                }
            }
        }
        out.flush().map_err(|source| MemoryError::Io {
            path: "export".into(),
            source,
        })?;
        Ok(n)
    }
}

/// A JSONL file read and checked, ready to write.
pub(crate) struct Prepared {
    /// Each memory (secrets redacted, times defaulted) with the legacy id its id is
    /// to be derived from, if its line had one.
    pub memories: Vec<(Memory, Option<String>)>,
    /// What reading found (blank lines, secrets redacted); nothing imported yet.
    pub report: ImportReport,
}

/// The id a legacy (non-`mem:`) id maps to; `round` > 0 re-rolls after a collision.
pub(crate) fn derived_id(legacy: &str, round: u32) -> String {
    jsonl_compat::derived_id(legacy, round)
}

/// The legacy id a memory was imported under, if any.
pub(crate) fn legacy_id(m: &Memory) -> Option<&str> {
    jsonl_compat::legacy_id(m)
}
