//! Indexing one changed file: redact, parse, chunk and embed it without holding any
//! lock ([`prepare`]), then write its records under the writer lock ([`write`]).
//!
//! Secrets are replaced before the text is parsed or chunked, so symbols, chunks and
//! vectors are all made from redacted text; with [`SecretAction::Exclude`] chunks
//! that held a secret are left out as well.

use std::collections::{BTreeMap, HashSet};

use serde_json::{json, Map};

use super::graph;
use super::projection::{CHUNK_TYPE, SYMBOL_TYPE};
use super::redact::{self, SecretAction};
use super::symbols::{self, Symbol};
use super::IndexError;
use crate::embed::{is_zero, Embedder};
use crate::key::hash64;
use crate::store::{BatchOp, BatchWriter, WriteBatch};

/// What a file's records were, read under the writer lock just before its new
/// records are written.
pub(super) struct Previous<'a> {
    pub chunks: u64,
    pub symbol_keys: &'a [String],
}

/// A changed file made ready to write without holding any lock: redacted, parsed,
/// chunked and embedded, its records already encoded.
///
/// The records are built here, on the preparing thread, rather than by the writer:
/// encoding the metadata is work the one committing thread would otherwise do under
/// the lock, and a file's metadata as JSON maps is dozens of small allocations per
/// record that the committing thread then frees. Freed on another thread than the one
/// that allocated them, glibc's allocator takes the allocating thread's arena lock for
/// each, and with two threads that was about 2,000 futex waits per 100K lines.
pub(super) struct Prepared {
    pub path: String,
    /// One op per chunk, in order: its put, or a delete for a chunk left out because
    /// it held a secret.
    chunks: WriteBatch,
    /// One put per symbol.
    symbols: WriteBatch,
    /// The chunks' vectors; they follow their puts, which make older vectors stale.
    vectors: WriteBatch,
    /// The file's `refs:` record (calls and imports), for a language with a grammar.
    refs: WriteBatch,
    pub written: Written,
}

impl Prepared {
    /// Bytes this file will add to a batch, roughly: for bounding batches.
    pub fn weight(&self) -> usize {
        self.chunks.payload_bytes()
            + self.symbols.payload_bytes()
            + self.vectors.payload_bytes()
            + self.refs.payload_bytes()
    }
}

/// What indexing one file wrote.
#[derive(Default, Clone)]
pub(super) struct Written {
    pub chunks: u64,
    pub chunks_excluded: u64,
    pub symbols: u64,
    pub imports: Vec<String>,
}

/// Everything that stays the same across the files of one run.
pub(super) struct Context<'s> {
    pub secret_action: SecretAction,
    pub embedder: &'s dyn Embedder,
    pub redactions: &'s mut BTreeMap<String, u64>,
    /// Whether to build the `refs:` record ([`super::IndexOptions::graph`]).
    pub graph: bool,
}

/// The key of a symbol (`sym:{path}#{name}:{kind}:{start}:{end}`); `#` cannot be
/// part of a name, so one in a qualified name becomes `_`.
pub fn symbol_key(path: &str, s: &Symbol) -> String {
    format!(
        "sym:{path}#{}:{}:{}:{}",
        s.qualified_name.replace('#', "_"),
        s.kind.as_str(),
        s.start_line,
        s.end_line
    )
}

/// The hash that says whether a symbol's body changed (`format-spec/staleness.md`):
/// hash64 of its lines, each trimmed, empty ones dropped, its own name removed, so
/// that re-indenting changes nothing and a rename with the same body hashes the same.
pub fn body_hash(lines: &[&str], s: &Symbol) -> String {
    let from = (s.start_line.max(1) - 1) as usize;
    let to = (s.end_line as usize).min(lines.len());
    let mut body = String::new();
    for l in lines.get(from..to).unwrap_or_default() {
        let l = l.trim();
        if l.is_empty() {
            continue;
        }
        if !s.name.is_empty() {
            body.push_str(&l.replace(s.name.as_str(), ""));
        } else {
            body.push_str(l);
        }
        body.push('\n');
    }
    format!("{:016x}", hash64(&body))
}

/// What the embedder is given for a chunk: its context line, then its text.
fn embed_text(path: &str, context: &str, text: &str) -> String {
    if context.is_empty() {
        format!("{path}\n{text}")
    } else {
        format!("{path} · {context}\n{text}")
    }
}

/// Redact, parse, chunk and embed one file's text; writes nothing.
pub(super) fn prepare(
    path: &str,
    lang: &str,
    text: &str,
    cx: &mut Context<'_>,
) -> Result<Prepared, IndexError> {
    let red = redact::redact(path, text, cx.redactions)?;
    let (parsed, chunks) = symbols::symbols_and_chunks(lang, &red.text);
    let mut out = Prepared {
        path: path.to_string(),
        chunks: WriteBatch::new(),
        symbols: WriteBatch::new(),
        vectors: WriteBatch::new(),
        refs: WriteBatch::new(),
        written: Written {
            imports: parsed.imports.clone(),
            ..Written::default()
        },
    };

    // Only redacted text is embedded, after the chunk's context line (path, enclosing
    // type, signature), which says what the lines are when they do not.
    let mut to_embed: Vec<(String, String)> = Vec::with_capacity(chunks.len());
    for (i, c) in chunks.iter().enumerate() {
        let key = format!("chunk:{path}:{i}");
        if cx.secret_action == SecretAction::Exclude && red.touches(c.start_line, c.end_line) {
            out.written.chunks_excluded += 1;
            out.chunks.delete(&key)?;
            continue;
        }
        let mut meta = Map::new();
        meta.insert("type".into(), json!(CHUNK_TYPE));
        meta.insert("path".into(), json!(path));
        meta.insert("chunk_id".into(), json!(i));
        meta.insert("lang".into(), json!(lang));
        meta.insert("start_line".into(), json!(c.start_line));
        meta.insert("end_line".into(), json!(c.end_line));
        if let Some(s) = &c.symbol {
            meta.insert("symbol".into(), json!(s));
        }
        if !c.context.is_empty() {
            meta.insert("context".into(), json!(c.context));
        }
        out.chunks.put(&key, meta, c.text.as_bytes())?;
        to_embed.push((key, embed_text(path, &c.context, &c.text)));
        out.written.chunks += 1;
    }

    let lines: Vec<&str> = red.text.lines().collect();
    let mut keys = HashSet::new();
    for s in &parsed.symbols {
        let key = symbol_key(path, s);
        if !keys.insert(key.clone()) {
            continue;
        }
        let mut meta = Map::new();
        meta.insert("type".into(), json!(SYMBOL_TYPE));
        meta.insert("path".into(), json!(path));
        meta.insert("lang".into(), json!(lang));
        meta.insert("name".into(), json!(s.name));
        meta.insert("qualified_name".into(), json!(s.qualified_name));
        meta.insert("kind".into(), json!(s.kind.as_str()));
        meta.insert("parent".into(), json!(s.parent));
        meta.insert("signature".into(), json!(s.signature));
        meta.insert("doc".into(), json!(s.doc));
        meta.insert("start_line".into(), json!(s.start_line));
        meta.insert("end_line".into(), json!(s.end_line));
        meta.insert("calls".into(), json!(s.calls));
        meta.insert("complexity".into(), json!(s.complexity));
        meta.insert("body_hash".into(), json!(body_hash(&lines, s)));
        out.symbols.put(&key, meta, Vec::new())?;
        out.written.symbols += 1;
    }

    if cx.graph && symbols::has_grammar(lang) {
        let (meta, body) = graph::record::build(path, lang, &parsed, |i| {
            parsed.symbols.get(i).map(|s| symbol_key(path, s))
        });
        out.refs.put(&graph::refs_key(path), meta, body)?;
    }

    let texts: Vec<&str> = to_embed.iter().map(|(_, t)| t.as_str()).collect();
    let vectors = cx.embedder.embed(&texts)?;
    let embedder = cx.embedder.name();
    for ((key, _), v) in to_embed.iter().zip(vectors) {
        if !is_zero(&v) {
            out.vectors.put_vector(key, embedder, &v)?;
        }
    }
    Ok(out)
}

/// Whether the store already holds exactly the records `file` would write — the
/// same chunk count, each chunk's text and metadata, the same symbol keys with the
/// same metadata — read under the writer lock (`previous` is what the tracker says
/// the file had). Then only the vectors differ, and [`write_vectors`] adds the new
/// embedder's without re-putting the chunks (which would make every other
/// embedder's vectors of them stale).
pub(super) fn same_records(
    writer: &BatchWriter<'_>,
    file: &Prepared,
    previous: &Previous<'_>,
) -> Result<bool, IndexError> {
    if previous.chunks != file.chunks.len() as u64
        || previous.symbol_keys.len() != file.symbols.len()
    {
        return Ok(false);
    }
    // A rare path (same text, another embedder), so the encoded metadata is decoded
    // again here rather than kept beside it.
    let holds = |stored: &serde_json::Map<String, serde_json::Value>, meta: &[u8]| {
        serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(meta)
            .is_ok_and(|meta| meta.iter().all(|(k, v)| stored.get(k) == Some(v)))
    };
    for op in file.chunks.ops() {
        let stored = writer.get(op.key())?;
        let same = match (op, &stored) {
            (BatchOp::Put { meta, body, .. }, Some(r)) => r.body == *body && holds(&r.meta, meta),
            (BatchOp::Delete { .. }, None) => true,
            _ => false,
        };
        if !same {
            return Ok(false);
        }
    }
    let old: HashSet<&str> = previous.symbol_keys.iter().map(String::as_str).collect();
    for op in file.symbols.ops() {
        let BatchOp::Put { key, meta, .. } = op else {
            return Ok(false);
        };
        if !old.contains(key) {
            return Ok(false);
        }
        match writer.get(key)? {
            Some(r) if holds(&r.meta, meta) => {}
            _ => return Ok(false),
        }
    }
    Ok(true)
}

/// Add a prepared file's vectors to its existing chunk records (see
/// [`same_records`]); nothing else is written.
pub(super) fn write_vectors(
    writer: &mut BatchWriter<'_>,
    file: &Prepared,
) -> Result<(), IndexError> {
    writer.extend(&file.vectors)?;
    // A file indexed before the graph existed has no `refs:` record yet.
    writer.extend(&file.refs)?;
    Ok(())
}

/// Write a prepared file's records into `writer`, tombstoning what `previous` had
/// that the file no longer has. Vectors follow their chunks in the same batch: a put
/// makes older vectors of the key stale.
pub(super) fn write(
    writer: &mut BatchWriter<'_>,
    file: &Prepared,
    previous: Previous<'_>,
) -> Result<(), IndexError> {
    writer.extend(&file.chunks)?;
    for i in file.chunks.len() as u64..previous.chunks {
        writer.delete(&format!("chunk:{}:{i}", file.path))?;
    }
    writer.extend(&file.symbols)?;
    let keys: HashSet<&str> = file.symbols.put_keys().collect();
    for old in previous.symbol_keys {
        if !keys.contains(old.as_str()) {
            writer.delete(old)?;
        }
    }
    writer.extend(&file.refs)?;
    writer.extend(&file.vectors)?;
    Ok(())
}
