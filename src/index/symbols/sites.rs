//! Call sites: where a file calls or constructs a name, what the name is reached
//! through (`self`, `os.path`, `Foo`), and the innermost symbol the call sits in.
//!
//! Syntax only: a call through `obj.get()` records `get` reached through `obj`, never
//! what `obj` is. Resolving a site to a definition happens at query time
//! (`index::graph`), since it depends on what other files define.

use serde::{Deserialize, Serialize};
use tree_sitter::Node;

/// One place a file calls or constructs a name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallSite {
    /// The name called (last path segment: `get` in `self.client.get()`).
    pub name: String,
    /// What the name is reached through, whitespace collapsed (`self.client`,
    /// `Foo`, `os.path`); empty for a bare call.
    pub qual: String,
    /// 1-based line and column (in bytes) of the name.
    pub line: u64,
    pub column: u64,
    /// `call`, or `construct` for `new Foo()` and its kin (a Rust struct literal).
    pub kind: String,
    /// Index in [`super::FileSymbols::symbols`] of the innermost enclosing symbol;
    /// none at file level.
    pub symbol: Option<usize>,
    /// The type the receiver (`qual`) is declared or constructed as in this file,
    /// when it says (`o = Foo()`, `o: Foo`): see `bindings`.
    pub recv: Option<String>,
}

/// Longest qualifier kept.
const QUAL_CHARS: usize = 100;

/// The call site of call node `node`, whose callee is `callee`.
pub(super) fn call_site(
    node: Node,
    callee: Node,
    src: &[u8],
    symbol: Option<usize>,
) -> Option<CallSite> {
    let t = String::from_utf8_lossy(&src[callee.byte_range()]);
    if node.kind() == "command" {
        return command(callee, &t, symbol);
    }
    let name = super::extract::last_identifier(&t)?;
    let idx = t.rfind(name.as_str())?;
    let before = &t[..idx];
    let start = callee.start_position();
    let (line, column) = match before.rfind('\n') {
        Some(nl) => (start.row + before.matches('\n').count(), idx - (nl + 1)),
        None => (start.row, start.column + idx),
    };
    let mut qual = trim_separators(before);
    // Java, PHP and Ruby name the method alone; the receiver is its own field.
    if qual.is_empty() {
        if let Some(r) = ["object", "scope", "receiver"]
            .iter()
            .find_map(|f| node.child_by_field_name(f))
        {
            qual = trim_separators(&String::from_utf8_lossy(&src[r.byte_range()]));
        }
    }
    let kind = match node.kind() {
        "new_expression"
        | "object_creation_expression"
        | "instance_expression"
        | "struct_expression" => "construct",
        _ => "call",
    };
    Some(CallSite {
        name,
        qual,
        line: line as u64 + 1,
        column: column as u64 + 1,
        kind: kind.to_string(),
        symbol,
        recv: None,
    })
}

/// A shell command run by name (`build /tmp`, `my-helper`): the whole word is the
/// name (it may hold `-`, `:` or `.`); a path (`./x.sh`), an expansion (`$CMD`)
/// or a quoted word names no function.
fn command(callee: Node, t: &str, symbol: Option<usize>) -> Option<CallSite> {
    let name = t.trim();
    let ok = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':' | '.'));
    if !ok {
        return None;
    }
    let start = callee.start_position();
    Some(CallSite {
        name: name.to_string(),
        qual: String::new(),
        line: start.row as u64 + 1,
        column: start.column as u64 + 1,
        kind: "call".into(),
        symbol,
        recv: None,
    })
}

/// `self.client.` → `self.client`, `Foo::` → `Foo`, whitespace collapsed.
fn trim_separators(t: &str) -> String {
    let joined: String = t.split_whitespace().collect();
    let q = joined.trim_end_matches(['.', ':', '?', '-', '>', '\\']);
    q.chars().take(QUAL_CHARS).collect()
}
