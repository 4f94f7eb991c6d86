//! The local JSONL import: reading, embedding and writing side by side.
//!
//! Three threads and the caller's:
//! - the reading thread reads the file in blocks, each parsed and checked on every
//!   core ([`super::jsonl_read::stream_import`]), and hands each block of memories on
//!   while every line so far is good, with their texts to embed;
//! - the embedding thread embeds those texts chunk by chunk, in file order;
//! - the caller takes the writer lock and writes the memories as they come, as one
//!   batch, which the tracker applies while it is written
//!   ([`crate::store::BatchWriter::apply_while_writing`]); each chunk's vectors follow
//!   the puts of the chunk after it.
//!
//! So the tracker's work, most of an import's, starts after the first block of the
//! file rather than after its last, and runs beside the reading, the appending and
//! the embedding. The file is still imported whole or not at all: a bad line found
//! after writing began abandons the batch, and the error names every bad line (up
//! to 20).
//!
//! How long the embedder takes for the first chunk decides how the rest goes. A fast
//! one (the built-in) goes on beside the writing, under the lock: it costs other
//! writers less than the tracker work it runs beside. A slow one (a model, a server)
//! waits until every line has been read and found good, then embeds the rest before
//! the lock is taken, so other writers never wait for it and a bad file costs it at
//! most its first chunk.
//!
//! Owns: the local backend's import. Must never write a memory before every earlier
//! line of the file has been read and found good, nor commit before every line has.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::thread::ScopedJoinHandle;
use std::time::{Duration, Instant};

use super::jsonl::ImportReport;
use super::jsonl_compat;
use super::locked::Locked;
use super::model::Memory;
use super::{embed_texts, embedding_text, Memories, MemoryError, Result};
use crate::embed::Embedder;
use crate::store::WriteBatch;

/// Texts an import embeds per embedder call: the embedder splits a call across the
/// cores, and the writer can start once the first chunk is back.
const EMBED_CHUNK: usize = 1024;

/// How many chunks of puts the writer writes ahead of their vectors: one chunk of
/// slack, so the writer seldom waits for the embedder, whose thread gives way to the
/// tracker's applying thread.
const VECTORS_LAG_CHUNKS: usize = 1;

/// Vector bytes the embedding thread may hold ahead of the writer before it waits.
///
/// With a small allowance (it was 4 chunks, when the writer took the vectors only
/// after every memory) the built-in embedder stopped a quarter of the way in and a
/// core sat idle. 64 MiB holds 64 chunks of 256-dim vectors (65,536 memories), or 10
/// of 1,536-dim.
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
const FAST_EMBED_PER_TEXT: Duration = Duration::from_micros(500);

/// How far a fast embedder's thread lowers its priority (its nice value) while it
/// runs beside the writing; see `crate::cores::give_way`.
const EMBED_GIVES_WAY_BY: i32 = 10;

/// Memories read and found good, with the legacy id each is to be derived from.
type Block = Vec<(Memory, Option<String>)>;

/// What the reading thread hands the embedding thread.
enum Feed {
    /// The texts to embed of the next memories, in file order.
    Texts(Vec<String>),
    /// Every line was read and found good. Without it, the channel closing means a
    /// bad line (or a writer that stopped): nothing more is to be embedded.
    Done,
}

/// One chunk of vectors as the embedding thread sends it.
struct Chunk {
    vectors: Result<Vec<Option<Vec<f32>>>>,
    /// How long the embedder took per text.
    per_text: Duration,
}

impl Memories {
    /// Import a JSONL file; see the module doc. On any bad line nothing is written and
    /// the error names every bad line (up to 20). Lines are at most
    /// [`super::DEFAULT_MAX_LINE_BYTES`]; see [`Memories::import_file_limited`].
    pub fn import_file(&self, path: &Path) -> Result<ImportReport> {
        self.import_file_limited(path, super::DEFAULT_MAX_LINE_BYTES)
    }

    /// [`Memories::import_file`] with lines of at most `max_line_bytes`: a longer one
    /// is an error naming it, found before more than that is read into memory.
    pub fn import_file_limited(&self, path: &Path, max_line_bytes: u64) -> Result<ImportReport> {
        let store = self.store();
        let resolve = |h: u64| store.key_for_hash(h);
        let embedder = self.embedder.as_ref();
        let file_bytes = std::fs::metadata(path).map_or(0, |m| m.len());
        std::thread::scope(|s| {
            let (feed, fed) = channel::<Feed>();
            let (blocks, read) = channel::<(Block, u64)>();
            let reader = s.spawn(move || {
                let report = super::jsonl_read::stream_import(
                    path,
                    &resolve,
                    max_line_bytes,
                    |block, bytes| {
                        let texts = block.iter().map(|(m, _)| embedding_text(m)).collect();
                        // The embedding thread stops early only on a failure, which the
                        // writer meets and reports.
                        let _ = feed.send(Feed::Texts(texts));
                        blocks.send((block, bytes)).is_ok()
                    },
                );
                if report.is_ok() {
                    let _ = feed.send(Feed::Done);
                }
                report
            });
            let (chunks, embedded) = sync_channel(embed_chunks_ahead(embedder.dimensions()));
            s.spawn(move || embed_fed(embedder, fed, chunks));
            let mut input = Input {
                blocks: Some(read),
                waiting: VecDeque::new(),
                reader: Some(reader),
                read: None,
                file_bytes,
                vectors: Embedded::new(embedded),
            };
            let written = self.write_streamed(&mut input);
            // A bad line says more than whatever the writer stopped on because of it
            // (the embedding thread stopping, say).
            let mut report = input.finish_reading()?;
            let written = written?;
            report.imported = written.imported;
            report.replaced = written.replaced;
            Ok(report)
        })
    }

    /// Write what `input` brings, as one batch under the lock. Returns how many
    /// memories were imported and replaced; nothing when the file held none.
    fn write_streamed(&self, input: &mut Input<'_>) -> Result<ImportReport> {
        let mut written = ImportReport::default();
        // An empty file, blank lines only, or a bad line in the first block.
        if !input.wait_for_first() {
            return Ok(written);
        }
        // The first chunk says how fast the embedder is.
        input.vectors.take_next()?;
        if input.vectors.per_text > FAST_EMBED_PER_TEXT {
            input.read_all()?;
            input.vectors.take_all()?;
        }
        self.locked(|l| self.write_import(l, input, &mut written))?;
        Ok(written)
    }

    /// Write an import's memories under the lock, in file order, as one batch: the
    /// import commits whole or not at all. Each chunk's vectors follow the puts of
    /// the chunk after it ([`VECTORS_LAG_CHUNKS`]), so the tracker works on puts while
    /// the embedder finishes a chunk, and the vectors reach the log (and the cache
    /// built beside it) all through the import rather than all at its end.
    fn write_import(
        &self,
        l: &mut Locked<'_>,
        input: &mut Input<'_>,
        report: &mut ImportReport,
    ) -> Result<()> {
        // The tracker work (most of an import's) then runs beside the appending.
        l.apply_while_writing()?;
        // Legacy id -> the id this import gave it, for a legacy id seen twice.
        let expected = input.expected_memories();
        l.expect_vectors(expected);
        let expected = expected.min(1 << 20) as usize;
        let mut legacy: HashMap<String, String> = HashMap::new();
        let mut ids: Vec<String> = Vec::with_capacity(expected);
        // Each id's last line so far: a memory written twice keeps the vector of its
        // last line only. An earlier line's vector, written after the later put, would
        // outlive it; written before it, the put drops it.
        let mut last: HashMap<String, usize> = HashMap::with_capacity(expected);
        let mut vectors_written = 0usize;
        while let Some(block) = input.next_block() {
            // The ids the block's lines give, looked up together rather than one
            // query each.
            let given: Vec<&str> = block
                .iter()
                .filter(|(m, legacy_of)| !m.id.is_empty() && legacy_of.is_none())
                .map(|(m, _)| m.id.as_str())
                .collect();
            let live: std::collections::HashSet<String> = l
                .existing(given.into_iter())?
                .into_iter()
                .map(str::to_string)
                .collect();
            for (mut m, legacy_of) in block {
                if m.id.is_empty() {
                    m.id = self.new_id_locked(l)?;
                } else if let Some(old) = legacy_of {
                    m.id = self.legacy_slot(l, &legacy, &old)?;
                    if l.exists(&m.id)? {
                        report.replaced += 1;
                    }
                    legacy.insert(old, m.id.clone());
                } else if live.contains(&m.id) || l.taken(&m.id) {
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
                last.insert(m.id.clone(), ids.len());
                ids.push(m.id);
                // After a chunk's last put, the vectors of the chunk VECTORS_LAG_CHUNKS
                // before.
                let put = ids.len();
                if put.is_multiple_of(EMBED_CHUNK) && put >= EMBED_CHUNK * (1 + VECTORS_LAG_CHUNKS)
                {
                    let upto = put - EMBED_CHUNK * VECTORS_LAG_CHUNKS;
                    self.write_vectors(l, &ids, &last, &mut input.vectors, vectors_written..upto)?;
                    vectors_written = upto;
                }
            }
        }
        // Every line was read and found good before the batch may commit.
        input.finish_reading()?;
        self.write_vectors(
            l,
            &ids,
            &last,
            &mut input.vectors,
            vectors_written..ids.len(),
        )
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
}

/// The embedding thread: embed the texts `fed` brings, chunk by chunk, in order, and
/// send each chunk's vectors. After the first chunk, a fast embedder gives way to
/// the writing it runs beside; a slow one waits until every line is known good.
fn embed_fed(embedder: &dyn Embedder, fed: Receiver<Feed>, chunks: SyncSender<Chunk>) {
    let mut pending: VecDeque<String> = VecDeque::new();
    let mut done = false;
    let mut first = true;
    let mut wait_for_done = false;
    loop {
        while !done && (pending.len() < EMBED_CHUNK || wait_for_done) {
            match fed.recv() {
                Ok(Feed::Texts(texts)) => pending.extend(texts),
                Ok(Feed::Done) => done = true,
                // A bad line, or the writer stopped: nothing more to embed.
                Err(_) => return,
            }
        }
        if pending.is_empty() {
            return;
        }
        let part: Vec<String> = pending.drain(..EMBED_CHUNK.min(pending.len())).collect();
        let started = Instant::now();
        let vectors = embed_texts(embedder, &part);
        let per_text = started.elapsed() / part.len().max(1) as u32;
        let failed = vectors.is_err();
        if std::mem::take(&mut first) {
            // Decided once, on the first chunk: a fast embedder goes on beside the
            // writing, ahead of the writer, which takes each chunk's vectors a chunk
            // later; where cores are short it gives way to the tracker's applying
            // thread, which bounds the import. A slow one waits for the whole file.
            if per_text <= FAST_EMBED_PER_TEXT {
                crate::cores::give_way(EMBED_GIVES_WAY_BY);
            } else {
                wait_for_done = true;
            }
        }
        if chunks.send(Chunk { vectors, per_text }).is_err() || failed {
            return;
        }
    }
}

/// The writer's side of an import: the blocks read, the reading thread's outcome,
/// and the vectors.
struct Input<'scope> {
    /// Blocks as the reading thread hands them on, with the bytes read so far; `None`
    /// once closed.
    blocks: Option<Receiver<(Block, u64)>>,
    /// Blocks taken from `blocks` ahead of being written.
    waiting: VecDeque<(Block, u64)>,
    reader: Option<ScopedJoinHandle<'scope, Result<ImportReport>>>,
    /// The reading thread's outcome, once joined.
    read: Option<Result<ImportReport>>,
    file_bytes: u64,
    vectors: Embedded,
}

impl Input<'_> {
    /// The next block of memories, waiting for it; `None` at the end of the file or
    /// at a bad line (see [`Input::finish_reading`]).
    fn next_block(&mut self) -> Option<Block> {
        if let Some((block, _)) = self.waiting.pop_front() {
            return Some(block);
        }
        self.blocks.as_ref()?.recv().ok().map(|(block, _)| block)
    }

    /// Wait for the first block without taking it; false if there is none.
    fn wait_for_first(&mut self) -> bool {
        if self.waiting.is_empty() {
            if let Some(first) = self.blocks.as_ref().and_then(|b| b.recv().ok()) {
                self.waiting.push_back(first);
            }
        }
        !self.waiting.is_empty()
    }

    /// Read the whole file before going on; an error for a bad line.
    fn read_all(&mut self) -> Result<()> {
        if let Some(blocks) = &self.blocks {
            self.waiting.extend(blocks.iter());
        }
        self.finish_reading().map(|_| ())
    }

    /// About how many memories the file holds: its size over the bytes a memory
    /// took in the blocks read so far. A hint only.
    fn expected_memories(&self) -> u64 {
        let (memories, bytes) = self
            .waiting
            .iter()
            .fold((0u64, 0u64), |(n, _), (b, bytes)| {
                (n + b.len() as u64, *bytes)
            });
        if memories == 0 || bytes == 0 {
            return memories;
        }
        (self.file_bytes.max(bytes) as u128 * memories as u128 / bytes as u128) as u64
    }

    /// Wait for the reading thread, stopping it first if the writer has not taken
    /// every block: what reading found (blank lines, secrets redacted), or the bad
    /// lines.
    /// The error is returned once, to the first caller after the thread ended.
    fn finish_reading(&mut self) -> Result<ImportReport> {
        if let Some(reader) = self.reader.take() {
            // A reader still handing blocks on stops at its next one.
            self.blocks = None;
            let read = reader
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p));
            self.read = Some(read);
        }
        match self.read.take() {
            Some(Ok(report)) => {
                self.read = Some(Ok(report.clone()));
                Ok(report)
            }
            Some(Err(e)) => Err(e),
            // Its error went to an earlier caller, who returns it.
            None => Ok(ImportReport::default()),
        }
    }
}

/// An import's vectors as the embedding thread sends them, chunk by chunk, in order.
struct Embedded {
    chunks: Receiver<Chunk>,
    /// Every vector received so far, by memory; taken as written.
    got: Vec<Option<Vec<f32>>>,
    /// How long the embedder took per text for the first chunk.
    per_text: Duration,
}

impl Embedded {
    fn new(chunks: Receiver<Chunk>) -> Embedded {
        Embedded {
            chunks,
            got: Vec::new(),
            per_text: Duration::ZERO,
        }
    }

    /// Wait for the next chunk.
    fn take_next(&mut self) -> Result<()> {
        let chunk = self.chunks.recv().map_err(|_| {
            MemoryError::Invalid("the embedding thread stopped before the last text".into())
        })?;
        if self.got.is_empty() {
            self.per_text = chunk.per_text;
        }
        self.got.extend(chunk.vectors?);
        Ok(())
    }

    /// Wait for every chunk: until the embedding thread has embedded every text.
    fn take_all(&mut self) -> Result<()> {
        while let Ok(chunk) = self.chunks.recv() {
            self.got.extend(chunk.vectors?);
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
