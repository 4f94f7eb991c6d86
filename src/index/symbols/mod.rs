//! Symbols of source files (functions, methods, classes, structs …) parsed with
//! tree-sitter, and chunks that follow their boundaries.
//!
//! Pure functions of a file's text: no store, no I/O. Any input is accepted — broken
//! code parses with error nodes and yields what is recognisable — and nothing here
//! recurses on the tree, so absurdly nested input cannot overflow the stack.

mod bindings;
mod bindings_more;
mod chunks;
mod extract;
mod imports;
mod imports_more;
mod lang;
mod lang_more;
mod macro_calls;
mod markdown;
mod sites;
mod written_type;

use std::cell::RefCell;
use std::collections::HashMap;

use serde::Serialize;

pub use chunks::{chunk_file, SymbolChunk};
pub use imports::Import;
pub use sites::CallSite;
pub(crate) use written_type::declared;

/// What a symbol is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SymbolKind {
    Function,
    Method,
    Class,
    Struct,
    Enum,
    Trait,
    Interface,
    Module,
    Constant,
    TypeAlias,
    /// A Markdown heading and the lines under it.
    Section,
}

impl SymbolKind {
    /// The name used in keys and JSON (`function`, `type_alias` …).
    pub fn as_str(self) -> &'static str {
        match self {
            SymbolKind::Function => "function",
            SymbolKind::Method => "method",
            SymbolKind::Class => "class",
            SymbolKind::Struct => "struct",
            SymbolKind::Enum => "enum",
            SymbolKind::Trait => "trait",
            SymbolKind::Interface => "interface",
            SymbolKind::Module => "module",
            SymbolKind::Constant => "constant",
            SymbolKind::TypeAlias => "type_alias",
            SymbolKind::Section => "section",
        }
    }

    /// Kinds whose functions are methods.
    fn holds_methods(self) -> bool {
        matches!(
            self,
            SymbolKind::Class
                | SymbolKind::Struct
                | SymbolKind::Enum
                | SymbolKind::Trait
                | SymbolKind::Interface
        )
    }
}

/// One definition in a file. Lines are 1-based and inclusive.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Symbol {
    /// The name as written (`request`).
    pub name: String,
    /// With its parents (`Session.request`, `Client::get`).
    pub qualified_name: String,
    pub kind: SymbolKind,
    /// The enclosing symbol's qualified name.
    pub parent: Option<String>,
    /// The declaration up to its body, whitespace collapsed (at most 200 characters).
    pub signature: String,
    /// The doc comment or docstring, without comment markers.
    pub doc: Option<String>,
    pub start_line: u64,
    pub end_line: u64,
    /// Names it calls (last path segment), sorted, without repeats.
    pub calls: Vec<String>,
    /// 1 + the branch points in its body (if, loops, cases, catches, `&&`, `||` …).
    pub complexity: u32,
}

/// What a file defines and imports.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FileSymbols {
    pub symbols: Vec<Symbol>,
    /// Import statements, one line each (`use std::io;`, `from a import b`).
    pub imports: Vec<String>,
    /// What the import statements bind, one entry per name.
    pub import_items: Vec<Import>,
    /// Every call and construction, in document order.
    pub refs: Vec<CallSite>,
}

/// True when `lang`'s files have symbols here: a tree-sitter grammar, or Markdown's
/// headings. Such a file gets a `refs:` record (Markdown's holds no calls).
pub fn has_grammar(lang: &str) -> bool {
    lang == "markdown" || lang::rules(lang).is_some()
}

/// What `text` defines and imports, and its chunks along those symbols: parsing then
/// chunking, the one way every caller does both. A language without a grammar here
/// has no symbols and is chunked by headings or line windows.
pub fn symbols_and_chunks(lang: &str, text: &str) -> (FileSymbols, Vec<SymbolChunk>) {
    let parsed = extract(lang, text).unwrap_or_default();
    let chunks = chunk_file(lang, text, &parsed.symbols);
    (parsed, chunks)
}

thread_local! {
    /// One parser per language per thread: creating one and loading its grammar costs
    /// more than parsing a small file.
    static PARSERS: RefCell<HashMap<&'static str, tree_sitter::Parser>> = RefCell::new(HashMap::new());
}

/// The symbols of `text` in language `lang` (as [`crate::index::language`] names it);
/// `None` when the language has no grammar here.
pub fn extract(lang: &str, text: &str) -> Option<FileSymbols> {
    if lang == "markdown" {
        return Some(FileSymbols {
            symbols: markdown::headings(text),
            ..FileSymbols::default()
        });
    }
    let rules = lang::rules(lang)?;
    let tree = PARSERS.with(|parsers| {
        let mut parsers = parsers.borrow_mut();
        let parser = match parsers.entry(rules.name) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => {
                let mut p = tree_sitter::Parser::new();
                // A grammar that does not load (ABI mismatch) means no symbols, not a
                // failed index run.
                if let Err(e) = p.set_language(&(rules.language)()) {
                    tracing::warn!("tree-sitter grammar for {lang} does not load: {e}");
                    return None;
                }
                v.insert(p)
            }
        };
        parser.parse(text, None)
    })?;
    Some(extract::walk(&tree, text.as_bytes(), rules))
}
