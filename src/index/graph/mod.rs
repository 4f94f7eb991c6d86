//! The code graph: who calls what, and what imports what.
//!
//! Each indexed file with a grammar has a `refs:{path}` record ([`record`]) written
//! with its symbols: its call sites (name, qualifier, line, column, enclosing symbol)
//! and what its imports bind. The code projection keeps them in `code_calls` and
//! `code_imports` (`table.rs`). Which definition a call reaches depends on every other
//! file, so it is decided when asked ([`resolve`]), each edge with a
//! [`Confidence`]. There is no flow analysis: a call through an attribute
//! (`obj.get()`) reaches the type its file says `obj` is (declared, constructed, or
//! a Python function's declared return), else definitions by name only. Reads only,
//! apart from the records the index pass writes.

mod inherit;
mod linked;
pub(crate) mod modules;
mod outline;
mod query;
pub mod record;
pub mod resolve;
mod self_calls;
pub(crate) mod table;
mod types;

use serde::Serialize;

pub use outline::{
    Dependent, Deps, Impact, ImportIn, ImportOut, OutlineFile, OutlineSymbol, Overview,
};
pub use query::{Ask, GraphAnswer, Linked, Ref, Target};
pub use record::{refs_key, REFS_TYPE};
pub use resolve::{CallRow, Confidence, Resolver};

use super::IndexError;
use crate::store::Store;

/// One resolved call: from a call site to a definition it may reach.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Edge {
    /// The `sym:` key of the enclosing symbol (none at file level).
    pub caller: Option<String>,
    pub path: String,
    pub line: u64,
    pub column: u64,
    /// `call` or `construct`.
    pub kind: String,
    /// The name called.
    pub name: String,
    /// The `sym:` key of the definition reached.
    pub target: String,
    pub confidence: Confidence,
}

/// Every call edge out of `path`, in line order, each call once per definition it
/// may reach. Calls that reach nothing in the repository (a library, a builtin) have
/// no edge.
pub fn edges_of_file(store: &Store, path: &str) -> Result<Vec<Edge>, IndexError> {
    Ok(store.with_tracker(|db| {
        let mut stmt = db.prepare(&format!(
            "SELECT {} WHERE c.path = ?1 ORDER BY c.line, c.col",
            resolve::CALL_COLUMNS
        ))?;
        let calls = stmt
            .query_map([path], resolve::call_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut r = Resolver::new(db);
        let mut out = Vec::new();
        for c in calls {
            if let Some((defs, confidence)) = r.resolve(&c)? {
                for d in defs.iter() {
                    out.push(Edge {
                        caller: c.caller.clone(),
                        path: c.path.clone(),
                        line: c.line,
                        column: c.column,
                        kind: c.kind.clone(),
                        name: c.name.clone(),
                        target: d.key.clone(),
                        confidence,
                    });
                }
            }
        }
        Ok(out)
    })?)
}

/// [`callees`] on a tracker connection the caller already holds (the stale layer's
/// anchorer runs under the writer lock, inside the store's tracker).
pub fn callees_in(
    db: &rusqlite::Connection,
    target: &Target,
    ask: Ask,
) -> crate::store::Result<GraphAnswer<Linked>> {
    query::callees(db, target, ask)
}

/// Chunks linked by calls to `seeds` (chunk keys, best first), one step either way, at
/// `min` or better, best first, at most `limit`: search's graph signal (see
/// `linked.rs`).
pub fn linked_chunks(
    store: &Store,
    seeds: &[String],
    min: Confidence,
    limit: usize,
) -> Result<Vec<String>, IndexError> {
    Ok(store.with_tracker(|db| linked::linked_chunks(db, seeds, min, limit))?)
}

/// Every reference to the target's definitions (calls, constructions, imports) at
/// `ask.min_confidence` or better, at most `ask.limit`.
pub fn refs(store: &Store, target: &Target, ask: Ask) -> Result<GraphAnswer<Ref>, IndexError> {
    Ok(store.with_tracker(|db| query::refs(db, target, ask))?)
}

/// The symbols calling the target's definitions, up to `ask.depth` (1-3) steps back.
pub fn callers(
    store: &Store,
    target: &Target,
    ask: Ask,
) -> Result<GraphAnswer<Linked>, IndexError> {
    Ok(store.with_tracker(|db| query::callers(db, target, ask))?)
}

/// The definitions the target's definitions call, up to `ask.depth` (1-3) steps on.
pub fn callees(
    store: &Store,
    target: &Target,
    ask: Ask,
) -> Result<GraphAnswer<Linked>, IndexError> {
    Ok(store.with_tracker(|db| query::callees(db, target, ask))?)
}

/// The imports out of an indexed file and into it; none when `path` is not an
/// indexed file with a grammar.
pub fn deps(store: &Store, path: &str) -> Result<Option<Deps>, IndexError> {
    let path = path.trim().trim_start_matches("./");
    Ok(store.with_tracker(|db| outline::deps(db, path))?)
}

/// The outline of a file or folder (`""`: the repository): symbols with their
/// signatures, at most `limit`.
pub fn overview(store: &Store, path: &str, limit: usize) -> Result<Overview, IndexError> {
    Ok(store.with_tracker(|db| outline::overview(db, path, limit))?)
}

/// What depends on a file, folder or definition, transitively, ranked by distance
/// then fan-in.
pub fn impact(store: &Store, target: &str, ask: Ask) -> Result<Impact, IndexError> {
    Ok(store.with_tracker(|db| outline::impact(db, target, ask))?)
}
