//! Indexing one changed file: redact, parse, chunk, embed, and write its records.
//!
//! Secrets are replaced before the text is parsed or chunked, so symbols, chunks and
//! vectors are all made from redacted text; with [`SecretAction::Exclude`] chunks
//! that held a secret are left out as well.

use std::collections::{BTreeMap, HashSet};

use serde_json::{json, Map};

use super::projection::{CHUNK_TYPE, SYMBOL_TYPE};
use super::redact::{self, SecretAction};
use super::symbols::{self, Symbol};
use super::IndexError;
use crate::embed::{is_zero, Embedder};
use crate::patterns::Scanner;
use crate::store::BatchWriter;

/// What a file's records were.
pub(super) struct Previous<'a> {
    pub chunks: u64,
    pub symbol_keys: &'a [String],
}

/// What indexing one file wrote.
#[derive(Default)]
pub(super) struct Written {
    pub chunks: u64,
    pub chunks_excluded: u64,
    pub symbols: u64,
    pub imports: Vec<String>,
}

/// Everything that stays the same across the files of one run.
pub(super) struct Context<'s, 'w> {
    pub scanner: &'s mut Scanner<'w>,
    pub secret_ids: &'s [String],
    pub secret_action: SecretAction,
    pub embedder: &'s dyn Embedder,
    pub redactions: &'s mut BTreeMap<String, u64>,
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

pub(super) fn index_file(
    writer: &mut BatchWriter<'_>,
    path: &str,
    lang: &str,
    text: &str,
    previous: Previous<'_>,
    cx: &mut Context<'_, '_>,
) -> Result<Written, IndexError> {
    let red = redact::redact(text, cx.scanner, cx.secret_ids, cx.redactions)?;
    let parsed = symbols::extract(lang, &red.text).unwrap_or_default();
    let chunks = symbols::chunk_file(lang, &red.text, &parsed.symbols);
    let mut out = Written {
        imports: parsed.imports,
        ..Written::default()
    };

    let mut to_embed: Vec<(String, &str)> = Vec::new();
    for (i, c) in chunks.iter().enumerate() {
        let key = format!("chunk:{path}:{i}");
        if cx.secret_action == SecretAction::Exclude && red.touches(c.start_line, c.end_line) {
            out.chunks_excluded += 1;
            writer.delete(&key)?;
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
        writer.put(&key, meta, c.text.as_bytes())?;
        to_embed.push((key, &c.text));
        out.chunks += 1;
    }
    for i in chunks.len() as u64..previous.chunks {
        writer.delete(&format!("chunk:{path}:{i}"))?;
    }

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
        writer.put(&key, meta, Vec::new())?;
        out.symbols += 1;
    }
    for old in previous.symbol_keys {
        if !keys.contains(old) {
            writer.delete(old)?;
        }
    }

    // Vectors follow their chunks in the same batch: only redacted text is embedded,
    // and a put makes older vectors of the key stale.
    let texts: Vec<&str> = to_embed.iter().map(|(_, t)| *t).collect();
    let vectors = cx.embedder.embed(&texts)?;
    for ((key, _), v) in to_embed.iter().zip(&vectors) {
        if !is_zero(v) {
            writer.put_vector(key, cx.embedder.name(), v)?;
        }
    }
    Ok(out)
}
