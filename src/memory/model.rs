//! The memory entry and how it maps to a log record.
//!
//! A memory is one Put record under `mem:{uuid8}`: the text is the raw body (so
//! pattern scans see the exact bytes), everything else is the JSON metadata. Fields
//! this version does not know are kept in `extra` and written back unchanged, so an
//! older engram never drops what a newer one stored.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::store::Record;

/// Record type tag in the metadata of memory records.
pub const MEMORY_TYPE: &str = "memory";

/// A memory entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    /// `mem:` followed by eight lowercase hex digits.
    pub id: String,
    pub text: String,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
    /// Unix milliseconds.
    #[serde(default)]
    pub created_ms: u64,
    #[serde(default)]
    pub updated_ms: u64,
    /// Fields of later versions, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Memory {
    /// The record metadata for this memory (the store adds `"key"`).
    pub(crate) fn to_meta(&self) -> Map<String, Value> {
        let mut m = self.extra.clone();
        m.insert("type".into(), Value::String(MEMORY_TYPE.into()));
        m.insert("tags".into(), Value::from(self.tags.clone()));
        if !self.metadata.is_empty() {
            m.insert("metadata".into(), Value::Object(self.metadata.clone()));
        }
        m.insert("created_ms".into(), Value::from(self.created_ms));
        m.insert("updated_ms".into(), Value::from(self.updated_ms));
        m
    }

    /// Read a memory back from its record metadata and body.
    pub(crate) fn from_parts(key: &str, meta: &Map<String, Value>, body: &[u8]) -> Option<Memory> {
        if meta.get("type").and_then(Value::as_str) != Some(MEMORY_TYPE) {
            return None;
        }
        let mut extra = meta.clone();
        for k in [
            "type",
            "tags",
            "metadata",
            "created_ms",
            "updated_ms",
            "key",
        ] {
            extra.remove(k);
        }
        Some(Memory {
            id: key.to_string(),
            text: String::from_utf8_lossy(body).into_owned(),
            tags: meta
                .get("tags")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|t| t.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default(),
            metadata: meta
                .get("metadata")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            created_ms: meta.get("created_ms").and_then(Value::as_u64).unwrap_or(0),
            updated_ms: meta.get("updated_ms").and_then(Value::as_u64).unwrap_or(0),
            extra,
        })
    }

    pub(crate) fn from_record(r: &Record) -> Option<Memory> {
        Memory::from_parts(&r.key, &r.meta, &r.body)
    }
}
