//! The code graph's plain types: how sure an edge is ([`Confidence`]), a call and an
//! import as the tables hold them, and how each language joins qualified names.
//! No queries here beyond reading a row.

use serde::Serialize;

/// How sure a resolution is, weakest first (so `>=` reads "at least").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Confidence {
    #[serde(rename = "ambiguous")]
    Ambiguous,
    #[serde(rename = "same-name")]
    SameName,
    #[serde(rename = "imported")]
    Imported,
    #[serde(rename = "resolved")]
    Resolved,
}

impl Confidence {
    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::Ambiguous => "ambiguous",
            Confidence::SameName => "same-name",
            Confidence::Imported => "imported",
            Confidence::Resolved => "resolved",
        }
    }

    /// Parse `resolved`, `imported`, `same-name` (or `same_name`) or `ambiguous`.
    pub fn parse(s: &str) -> Option<Confidence> {
        Some(
            match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
                "resolved" => Confidence::Resolved,
                "imported" => Confidence::Imported,
                "same-name" | "samename" => Confidence::SameName,
                "ambiguous" => Confidence::Ambiguous,
                _ => return None,
            },
        )
    }
}

/// One call as the tables hold it.
#[derive(Debug, Clone)]
pub struct CallRow {
    pub path: String,
    pub lang: String,
    pub name: String,
    pub qual: String,
    pub line: u64,
    pub column: u64,
    pub kind: String,
    /// The enclosing symbol's `sym:` key.
    pub caller: Option<String>,
    /// The type the file declares or constructs the receiver as, when it says.
    pub recv: Option<String>,
}

pub(crate) const CALL_COLUMNS: &str =
    "c.path, f.lang, c.name, c.qual, c.line, c.col, c.kind, c.caller, c.recv
     FROM code_calls c JOIN code_ref_files f ON f.seq = c.file";

pub(crate) fn call_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<CallRow> {
    Ok(CallRow {
        path: r.get(0)?,
        lang: r.get(1)?,
        name: r.get(2)?,
        qual: r.get(3)?,
        line: r.get::<_, i64>(4)? as u64,
        column: r.get::<_, i64>(5)? as u64,
        kind: r.get(6)?,
        caller: r.get(7)?,
        recv: r.get(8)?,
    })
}

/// One imported name as the tables hold it.
#[derive(Debug, Clone)]
pub struct ImportRow {
    pub path: String,
    pub module: String,
    pub name: Option<String>,
    pub bind: Option<String>,
    pub line: u64,
}

/// `::` in Rust, C and C++, `.` elsewhere: how qualified names are joined.
pub(crate) fn separator(lang: &str) -> &'static str {
    match lang {
        "rust" | "c" | "cpp" => "::",
        _ => ".",
    }
}

/// Languages whose bare call never reaches a method (it needs a receiver).
pub(crate) fn bare_calls_skip_methods(lang: &str) -> bool {
    matches!(
        lang,
        "python" | "rust" | "go" | "javascript" | "typescript" | "tsx" | "c"
    )
}

/// Languages that can call each other's definitions by name.
pub(crate) fn family(lang: &str) -> &str {
    match lang {
        "typescript" | "tsx" | "javascript" => "ecma",
        "c" | "cpp" => "c",
        l => l,
    }
}

pub(crate) fn is_type(kind: &str) -> bool {
    matches!(
        kind,
        "class" | "struct" | "enum" | "trait" | "interface" | "module"
    )
}

/// The qualified name without its last segment.
pub(crate) fn parent_of<'a>(qualified: &'a str, sep: &str) -> Option<&'a str> {
    qualified.rsplit_once(sep).map(|(p, _)| p)
}

/// Split a qualifier into segments (`a.b`, `a::b`, `$a->b`, `A\B`).
pub(crate) fn segments(qual: &str) -> Vec<&str> {
    qual.split(['.', ':', '\\'])
        .flat_map(|s| s.split("->"))
        .filter(|s| !s.is_empty())
        .collect()
}
