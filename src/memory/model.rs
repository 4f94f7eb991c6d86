//! The memory entry, how it is validated, and how it maps to a log record.
//!
//! A memory is one Put record under `mem:{uuid8}`: the text is the raw body (so
//! pattern scans see the exact bytes), everything else is the JSON metadata. Fields
//! this version does not know are kept in `extra` and written back unchanged, so an
//! older engram never drops what a newer one stored.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::anchor::{Anchor, AnchorError, CalleeAnchor};
use super::taxonomy::{self, Axis, TaxonomyError};
use crate::key::Key;
use crate::store::Record;

/// Record type tag in the metadata of memory records.
pub const MEMORY_TYPE: &str = "memory";
/// Longest memory text accepted; longer belongs in the code index or a file.
pub const MAX_TEXT_BYTES: usize = 1 << 20;

/// A memory entry, as stored, exported and returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    /// `mem:` followed by eight lowercase hex digits.
    #[serde(default)]
    pub id: String,
    /// What the entry is: `memory` (the default), `note`, `session`, `file_change`,
    /// `error` or `decision`.
    #[serde(default = "default_kind", skip_serializing_if = "is_default_kind")]
    pub kind: String,
    pub text: String,
    /// Task type (taxonomy), without prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub insights: Vec<String>,
    /// Context types (taxonomy), without prefix; `context` (the Galaxybrain seed's
    /// name) is read as well.
    #[serde(default, alias = "context", skip_serializing_if = "Vec::is_empty")]
    pub contexts: Vec<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    /// Keys of symbols (or files, chunks) the memory is about.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub symbols: Vec<String>,
    /// What the referenced code was when this version was written (see
    /// `format-spec/staleness.md`); opaque to this layer, filled by the store's
    /// [`Anchorer`](super::Anchorer) when it has one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anchors: Vec<Anchor>,
    /// What the functions its `sym:` anchors call were when this version was
    /// written (`format-spec/staleness.md`, "Callee anchors"); `None` for a memory
    /// anchored before callee anchors were recorded (or with no symbol anchor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callees: Option<Vec<CalleeAnchor>>,
    /// `user_stated`, `agent_observed`, `llm_extracted` or `inferred`.
    #[serde(default = "default_provenance")]
    pub provenance: String,
    /// 0 to 1; defaults by provenance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// 1 for a new memory, +1 for each update.
    #[serde(default = "one")]
    pub version: u64,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
    /// Unix milliseconds.
    #[serde(default)]
    pub created_ms: u64,
    #[serde(default)]
    pub updated_ms: u64,
    /// Fields of later versions, kept verbatim (only ever filled from the log).
    #[serde(skip)]
    pub extra: Map<String, Value>,
    /// Secrets replaced when this memory was written (never stored: a count for the
    /// caller to report, not what they were).
    #[serde(skip)]
    pub redacted: u64,
}

/// The kinds of entry.
pub const KINDS: &[&str] = &[
    "memory",
    "note",
    "session",
    "file_change",
    "error",
    "decision",
];

/// The kind of a plain memory: the default, and the one kind without a `kind:`
/// label in the tracker.
pub(crate) const PLAIN_KIND: &str = "memory";

fn default_kind() -> String {
    PLAIN_KIND.into()
}

fn is_default_kind(k: &str) -> bool {
    k == PLAIN_KIND
}

fn default_provenance() -> String {
    "user_stated".into()
}

fn one() -> u64 {
    1
}

/// Why a memory cannot be stored as it is; the text says what is accepted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InvalidMemory {
    #[error("a memory's text must not be empty")]
    EmptyText,
    #[error("a memory's text is at most {MAX_TEXT_BYTES} bytes, this one has {bytes}; store large text as a file and reference it")]
    TextTooLong { bytes: usize },
    #[error("{id:?} is not a memory id; expected mem: followed by eight lowercase hex digits, e.g. mem:a1b2c3d4")]
    NotAMemoryId { id: String },
    #[error("kind {kind:?} is not one of {}", KINDS.join(", "))]
    Kind { kind: String },
    /// A task, insight or context value the taxonomy does not have.
    #[error(transparent)]
    Taxonomy(#[from] TaxonomyError),
    #[error("a tag must not be empty")]
    EmptyTag,
    #[error("tag {tag:?} is over 128 bytes")]
    TagTooLong { tag: String },
    #[error("{key:?} is not a symbol, file or chunk key (e.g. sym:src/a.rs#run:function:3:9)")]
    NotASymbolKey { key: String },
    #[error(transparent)]
    Anchor(#[from] AnchorError),
    #[error("provenance {provenance:?} is not one of {}", taxonomy::PROVENANCES.join(", "))]
    Provenance { provenance: String },
    #[error("trust {trust} is outside 0 to 1")]
    Trust { trust: f64 },
    #[error("a session id is 1 to 128 bytes")]
    SessionLength,
}

impl Memory {
    /// A memory with `text` and every other field at its default; id and times are
    /// assigned when it is stored.
    pub fn new(text: impl Into<String>) -> Memory {
        Memory {
            id: String::new(),
            kind: default_kind(),
            text: text.into(),
            task: None,
            insights: Vec::new(),
            contexts: Vec::new(),
            tags: Vec::new(),
            symbols: Vec::new(),
            anchors: Vec::new(),
            callees: None,
            provenance: default_provenance(),
            trust: None,
            session: None,
            version: 1,
            metadata: Map::new(),
            created_ms: 0,
            updated_ms: 0,
            extra: Map::new(),
            redacted: 0,
        }
    }

    /// Check every field and bring taxonomy values, tags and provenance to their
    /// canonical spelling. The error says what is wrong and what is accepted.
    pub fn validate(&mut self) -> Result<(), InvalidMemory> {
        if self.text.trim().is_empty() {
            return Err(InvalidMemory::EmptyText);
        }
        if self.text.len() > MAX_TEXT_BYTES {
            return Err(InvalidMemory::TextTooLong {
                bytes: self.text.len(),
            });
        }
        if !self.id.is_empty() {
            self.id = memory_id(&self.id)?;
        }
        if !KINDS.contains(&self.kind.as_str()) {
            return Err(InvalidMemory::Kind {
                kind: self.kind.clone(),
            });
        }
        if let Some(t) = &self.task {
            self.task = Some(taxonomy::normalise(Axis::Task, t)?);
        }
        self.insights = normalise_all(Axis::Insight, &self.insights)?;
        self.contexts = normalise_all(Axis::Context, &self.contexts)?;
        self.tags = clean_tags(&self.tags)?;
        for s in &self.symbols {
            match Key::parse(s) {
                Ok(Key::Symbol { .. } | Key::File { .. } | Key::Chunk { .. }) => {}
                _ => return Err(InvalidMemory::NotASymbolKey { key: s.clone() }),
            }
        }
        super::anchor::validate_all(&self.anchors)?;
        if let Some(c) = &self.callees {
            super::anchor::validate_callees(c)?;
        }
        self.provenance = taxonomy::provenance(&self.provenance)
            .ok_or_else(|| InvalidMemory::Provenance {
                provenance: self.provenance.clone(),
            })?
            .to_string();
        if let Some(trust) = self.trust {
            if !(0.0..=1.0).contains(&trust) {
                return Err(InvalidMemory::Trust { trust });
            }
        }
        if let Some(s) = &self.session {
            if s.is_empty() || s.len() > 128 {
                return Err(InvalidMemory::SessionLength);
            }
        }
        Ok(())
    }

    /// Trust, defaulted by provenance.
    pub fn effective_trust(&self) -> f64 {
        self.trust
            .unwrap_or_else(|| taxonomy::default_trust(&self.provenance))
    }

    /// The record metadata for this memory (the store adds `"key"`).
    pub fn to_meta(&self) -> Map<String, Value> {
        let mut m = match serde_json::to_value(self) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        };
        m.remove("id");
        m.remove("text");
        for (k, v) in &self.extra {
            m.entry(k.clone()).or_insert_with(|| v.clone());
        }
        m.insert("type".into(), Value::String(MEMORY_TYPE.into()));
        m
    }

    /// Read a memory back from its record metadata and body.
    pub(crate) fn from_parts(key: &str, meta: &Map<String, Value>, body: &[u8]) -> Option<Memory> {
        if meta.get("type").and_then(Value::as_str) != Some(MEMORY_TYPE) {
            return None;
        }
        let known: Map<String, Value> = meta
            .iter()
            .filter(|(k, _)| KNOWN_FIELDS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut v = Value::Object(known);
        v["id"] = Value::String(key.to_string());
        v["text"] = Value::String(String::from_utf8_lossy(body).into_owned());
        let mut m: Memory = serde_json::from_value(v).ok()?;
        m.extra = meta
            .iter()
            .filter(|(k, _)| {
                !KNOWN_FIELDS.contains(&k.as_str()) && !["key", "type"].contains(&k.as_str())
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Some(m)
    }

    pub(crate) fn from_record(r: &Record) -> Option<Memory> {
        Memory::from_parts(&r.key, &r.meta, &r.body)
    }
}

const KNOWN_FIELDS: &[&str] = &[
    "kind",
    "task",
    "insights",
    "contexts",
    "tags",
    "symbols",
    "anchors",
    "callees",
    "provenance",
    "trust",
    "session",
    "version",
    "metadata",
    "created_ms",
    "updated_ms",
];

/// `mem:a1b2c3d4` or `a1b2c3d4` as `mem:a1b2c3d4`; anything else refused.
pub(super) fn memory_id(id: &str) -> Result<String, InvalidMemory> {
    let full = if id.starts_with("mem:") {
        id.to_string()
    } else {
        format!("mem:{id}")
    };
    match Key::parse(&full) {
        Ok(Key::Memory { .. }) => Ok(full),
        _ => Err(InvalidMemory::NotAMemoryId { id: id.into() }),
    }
}

fn normalise_all(axis: Axis, values: &[String]) -> Result<Vec<String>, TaxonomyError> {
    let mut out: Vec<String> = Vec::new();
    for v in values {
        let n = taxonomy::normalise(axis, v)?;
        if !out.contains(&n) {
            out.push(n);
        }
    }
    Ok(out)
}

/// Trimmed, non-empty, at most 128 bytes, without duplicates.
pub(crate) fn clean_tags(tags: &[String]) -> Result<Vec<String>, InvalidMemory> {
    let mut out: Vec<String> = Vec::new();
    for t in tags {
        let t = t.trim();
        if t.is_empty() {
            return Err(InvalidMemory::EmptyTag);
        }
        if t.len() > 128 {
            return Err(InvalidMemory::TagTooLong { tag: t.into() });
        }
        if !out.iter().any(|o| o == t) {
            out.push(t.to_string());
        }
    }
    Ok(out)
}
