//! The `refs:{path}` record: a file's call sites and what its imports bind, derived
//! from its redacted text with its symbols, written in the same batch as them.
//!
//! The record holds syntax only (names, qualifiers, lines); which definition a call
//! reaches depends on every other file and is decided when asked
//! ([`super::resolve`]). Layout: `format-spec/tracker.md`, "Code graph".

use serde::{Deserialize, Serialize};
use serde_json::{json, Map};

use crate::index::symbols::{CallSite, FileSymbols, Import};

/// Record type tag of a file's references.
pub const REFS_TYPE: &str = "code_refs";

/// What a `refs:` record's extraction knows, in its metadata (`graph`): 2 adds
/// receivers' types (`recv`), 3 calls inside Rust macros' arguments and Rust
/// struct literals (`construct`), 4 Python receivers typed by `cast(T, x)`, 5 Python
/// receivers bound to what a call returns (`f()` markers). A file whose record is
/// older is indexed again.
pub const GRAPH_VERSION: u32 = 5;

/// The key of a file's references record.
pub fn refs_key(path: &str) -> String {
    format!("refs:{path}")
}

/// One call in a `refs:` record's body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredCall {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub qual: String,
    pub line: u64,
    pub column: u64,
    pub kind: String,
    /// The `sym:` key of the innermost enclosing symbol; absent at file level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    /// The type the file declares or constructs the receiver as (`o = Foo()`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recv: Option<String>,
}

/// A `refs:` record's body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefsBody {
    #[serde(default)]
    pub calls: Vec<StoredCall>,
    #[serde(default)]
    pub imports: Vec<Import>,
}

/// The metadata and body of `path`'s references record; `symbol_key` names the
/// parsed symbol at an index (as its `sym:` record is keyed).
pub(crate) fn build(
    path: &str,
    lang: &str,
    parsed: &FileSymbols,
    symbol_key: impl Fn(usize) -> Option<String>,
) -> (Map<String, serde_json::Value>, Vec<u8>) {
    let calls = parsed
        .refs
        .iter()
        .map(|c: &CallSite| StoredCall {
            name: c.name.clone(),
            qual: c.qual.clone(),
            line: c.line,
            column: c.column,
            kind: c.kind.clone(),
            symbol: c.symbol.and_then(&symbol_key),
            recv: c.recv.clone(),
        })
        .collect::<Vec<_>>();
    let body = RefsBody {
        calls,
        imports: parsed.import_items.clone(),
    };
    let mut meta = Map::new();
    meta.insert("type".into(), json!(REFS_TYPE));
    meta.insert("path".into(), json!(path));
    meta.insert("lang".into(), json!(lang));
    meta.insert("graph".into(), json!(GRAPH_VERSION));
    meta.insert("calls".into(), json!(body.calls.len()));
    meta.insert("imports".into(), json!(body.imports.len()));
    // Serialising plain structs of strings and numbers cannot fail.
    let bytes = serde_json::to_vec(&body).unwrap_or_default();
    (meta, bytes)
}

/// A body as stored; a body that does not parse reads as empty (it is derived data:
/// the next index of the file writes it again).
pub(crate) fn parse(body: &[u8]) -> RefsBody {
    serde_json::from_slice(body).unwrap_or_else(|e| {
        tracing::warn!("a code_refs record does not parse ({e}); read as empty");
        RefsBody::default()
    })
}
