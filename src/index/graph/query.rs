//! The graph's questions about one definition: where is it referenced (`refs`), who
//! calls it (`callers`), what does it call (`callees`), transitively up to three
//! steps. A definition is named by its name, qualified name or `sym:` key, or by a
//! place (`PATH:LINE`: the innermost definition around that line). Reads only.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;

use rusqlite::Connection;
use serde::Serialize;

use super::resolve::{call_row, CallRow, Confidence, Found, Resolver, CALL_COLUMNS};
use crate::index::symbol_search::{row as symbol_row, SymbolInfo, COLUMNS};
use crate::index::IndexError;
use crate::key::Key;
use crate::store::Result;

/// What a graph question is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A name (`request`), qualified name (`Session.request`) or `sym:` key.
    Name(String),
    /// The innermost definition around a line of a file.
    At { path: String, line: u64 },
}

impl Target {
    /// From a name or a `PATH:LINE` place: exactly one of them.
    pub fn new(name: Option<&str>, at: Option<&str>) -> std::result::Result<Target, IndexError> {
        match (name.map(str::trim), at.map(str::trim)) {
            (Some(n), None) if !n.is_empty() => Ok(Target::Name(n.to_string())),
            (None, Some(at)) => {
                let bad = || {
                    IndexError::Invalid(format!(
                        "--at {at:?}: expected PATH:LINE (a repository-relative path and a line number from 1), e.g. src/app.py:42"
                    ))
                };
                let (path, line) = at.rsplit_once(':').ok_or_else(bad)?;
                let line: u64 = line.trim().parse().map_err(|_| bad())?;
                let path = path.trim().trim_start_matches("./");
                if path.is_empty() || line == 0 {
                    return Err(bad());
                }
                Ok(Target::At {
                    path: path.to_string(),
                    line,
                })
            }
            (Some(_), Some(_)) => Err(IndexError::Invalid(
                "give a NAME or --at PATH:LINE, not both".into(),
            )),
            _ => Err(IndexError::Invalid(
                "give a symbol NAME (e.g. `request`, `Session.request`) or --at PATH:LINE".into(),
            )),
        }
    }
}

/// The definitions a target means: exact name, qualified name or key matches (the
/// same case first; another case only when the same case finds none).
pub fn definitions(db: &Connection, target: &Target) -> Result<Vec<SymbolInfo>> {
    match target {
        Target::Name(n) if n.starts_with("sym:") => {
            let mut stmt = db.prepare_cached(&format!("SELECT {COLUMNS} WHERE r.key = ?1"))?;
            let rows = stmt.query_map([n], symbol_row)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        }
        Target::Name(n) => {
            let mut stmt = db.prepare_cached(&format!(
                "SELECT {COLUMNS} WHERE s.name = ?1 COLLATE NOCASE OR s.qualified_name = ?1 COLLATE NOCASE
                 ORDER BY s.path, s.start_line"
            ))?;
            let all = stmt
                .query_map([n], symbol_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let exact: Vec<SymbolInfo> = all
                .iter()
                .filter(|s| s.name == *n || s.qualified_name == *n)
                .cloned()
                .collect();
            Ok(if exact.is_empty() { all } else { exact })
        }
        Target::At { path, line } => {
            let mut stmt = db.prepare_cached(&format!(
                "SELECT {COLUMNS} WHERE s.path = ?1 AND s.start_line <= ?2 AND s.end_line >= ?2
                 ORDER BY (s.end_line - s.start_line), s.start_line DESC LIMIT 1"
            ))?;
            let rows = stmt.query_map(rusqlite::params![path, *line as i64], symbol_row)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        }
    }
}

/// One reference to a definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Ref {
    pub path: String,
    pub line: u64,
    /// 1-based byte column of the name (none for an import, which names a line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u64>,
    /// `call`, `construct` or `import`.
    pub kind: String,
    pub confidence: Confidence,
    /// The qualified name of the enclosing symbol (none at file level).
    pub symbol: Option<String>,
    /// The `sym:` key of the definition referenced.
    pub target: String,
}

/// A symbol linked to the asked definitions by calls.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Linked {
    /// Its `sym:` key, or `file:{path}` for calls at a file's top level.
    pub key: String,
    pub name: String,
    pub kind: String,
    pub path: String,
    pub line: u64,
    pub signature: String,
    /// Steps from the asked definitions (1 = direct).
    pub depth: u32,
    /// The weakest confidence on the way.
    pub confidence: Confidence,
    /// Call sites on the last step.
    pub calls: u32,
    /// The key it was reached from (an asked definition at depth 1).
    pub via: String,
}

/// The answer of [`refs`](super::refs), [`callers`](super::callers) and
/// [`callees`](super::callees).
#[derive(Debug, Clone, Serialize)]
pub struct GraphAnswer<T> {
    /// The definitions the target meant.
    pub definitions: Vec<SymbolInfo>,
    pub items: Vec<T>,
    /// Whether `limit` cut the list.
    pub truncated: bool,
}

/// Limits of one question.
#[derive(Debug, Clone, Copy)]
pub struct Ask {
    pub min_confidence: Confidence,
    /// 1 to 3 (callers, callees, impact).
    pub depth: u32,
    pub limit: usize,
}

impl Default for Ask {
    fn default() -> Self {
        Ask {
            min_confidence: Confidence::SameName,
            depth: 1,
            limit: 100,
        }
    }
}

/// The call sites of one name, each with the definition it resolved to, shared by the
/// queries of one walk.
type NamedCalls = Rc<Vec<Resolved>>;

/// A call and what it reaches.
pub(crate) type Resolved = (CallRow, Option<Found>);

/// Calls and what they reach, read and resolved once per question.
pub(crate) struct Graph<'c> {
    pub r: Resolver<'c>,
    by_name: HashMap<String, NamedCalls>,
}

impl<'c> Graph<'c> {
    pub fn new(db: &'c Connection) -> Graph<'c> {
        Graph {
            r: Resolver::new(db),
            by_name: HashMap::new(),
        }
    }

    /// Every call of `name` in the repository, resolved.
    pub fn calls_named(&mut self, name: &str) -> Result<NamedCalls> {
        if let Some(v) = self.by_name.get(name) {
            return Ok(v.clone());
        }
        let mut stmt = self.r.db().prepare_cached(&format!(
            "SELECT {CALL_COLUMNS} WHERE c.name = ?1 ORDER BY c.path, c.line, c.col"
        ))?;
        let calls = stmt
            .query_map([name], call_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut out = Vec::with_capacity(calls.len());
        for c in calls {
            let found = self.r.resolve(&c)?;
            out.push((c, found));
        }
        let out = Rc::new(out);
        self.by_name.insert(name.to_string(), out.clone());
        Ok(out)
    }

    /// `name` and the local names imports give it (`from m import f as g`: `g`):
    /// what calls of it may be written as.
    pub fn spellings(&mut self, name: &str) -> Result<Vec<String>> {
        let mut stmt = self.r.db().prepare_cached(
            "SELECT DISTINCT bind FROM code_imports WHERE name = ?1 AND bind IS NOT NULL AND bind <> ?1 ORDER BY bind",
        )?;
        let rows = stmt.query_map([name], |r| r.get::<_, String>(0))?;
        let mut out = vec![name.to_string()];
        out.extend(rows.collect::<rusqlite::Result<Vec<_>>>()?);
        Ok(out)
    }

    /// How many distinct symbols (or files, for top-level calls) call `def` at
    /// `min` or better.
    pub fn caller_count(&mut self, def: &SymbolInfo, min: Confidence) -> Result<u32> {
        let mut callers = HashSet::new();
        for spelled in self.spellings(&def.name)? {
            for (c, found) in self.calls_named(&spelled)?.iter() {
                if let Some((targets, conf)) = found {
                    if *conf >= min && targets.iter().any(|t| t.key == def.key) {
                        callers.insert(
                            c.caller
                                .clone()
                                .unwrap_or_else(|| format!("file:{}", c.path)),
                        );
                    }
                }
            }
        }
        Ok(callers.len() as u32)
    }

    /// The calls made inside the symbol keyed `key`, resolved.
    pub fn calls_in(&mut self, key: &str) -> Result<Vec<Resolved>> {
        let mut stmt = self.r.db().prepare_cached(&format!(
            "SELECT {CALL_COLUMNS} WHERE c.caller = ?1 ORDER BY c.line, c.col"
        ))?;
        let calls = stmt
            .query_map([key], call_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut out = Vec::with_capacity(calls.len());
        for c in calls {
            let found = self.r.resolve(&c)?;
            out.push((c, found));
        }
        Ok(out)
    }

    /// The symbol (or file, for a top-level call) a call sits in.
    pub fn caller_of(&mut self, c: &CallRow) -> Result<SymbolInfo> {
        if let Some(k) = &c.caller {
            if let Some(s) = self.r.defs_in(&c.path)?.iter().find(|d| &d.key == k) {
                return Ok(s.clone());
            }
        }
        Ok(SymbolInfo {
            key: format!("file:{}", c.path),
            name: c.path.clone(),
            qualified_name: c.path.clone(),
            kind: "file".into(),
            path: c.path.clone(),
            lang: c.lang.clone(),
            start_line: 1,
            end_line: 1,
            signature: String::new(),
        })
    }
}

/// The qualified name a `sym:` key names.
pub(crate) fn symbol_name(key: &str) -> Option<String> {
    match Key::parse(key) {
        Ok(Key::Symbol { name, .. }) => Some(name),
        _ => None,
    }
}

/// Every reference to the target's definitions: calls and constructions that
/// resolve to one at `min_confidence` or better, and imports of it.
pub fn refs(db: &Connection, target: &Target, ask: Ask) -> Result<GraphAnswer<Ref>> {
    let defs = definitions(db, target)?;
    let keys: HashSet<&str> = defs.iter().map(|d| d.key.as_str()).collect();
    let mut g = Graph::new(db);
    let mut out = Vec::new();
    let names: Vec<String> = unique(defs.iter().map(|d| d.name.clone()));
    for name in &names {
        // Read in place: a common name's calls each hold every definition they may
        // reach, and copying them cost more than resolving them.
        for spelled in g.spellings(name)? {
            for (c, found) in g.calls_named(&spelled)?.iter() {
                let Some((reached, confidence)) = found else {
                    continue;
                };
                if *confidence < ask.min_confidence {
                    continue;
                }
                for d in reached.iter().filter(|d| keys.contains(d.key.as_str())) {
                    out.push(Ref {
                        path: c.path.clone(),
                        line: c.line,
                        column: Some(c.column),
                        kind: c.kind.clone(),
                        confidence: *confidence,
                        symbol: c.caller.as_deref().and_then(symbol_name),
                        target: d.key.clone(),
                    });
                }
            }
        }
        if ask.min_confidence <= Confidence::Imported {
            out.extend(import_refs(&mut g, name, &keys)?);
        }
    }
    out.sort_by(|a, b| {
        (&a.path, a.line, a.column, &a.target).cmp(&(&b.path, b.line, b.column, &b.target))
    });
    out.dedup();
    let truncated = out.len() > ask.limit;
    out.truncate(ask.limit);
    Ok(GraphAnswer {
        definitions: defs,
        items: out,
        truncated,
    })
}

/// Imports of `name` that lead to one of `keys`.
fn import_refs(g: &mut Graph<'_>, name: &str, keys: &HashSet<&str>) -> Result<Vec<Ref>> {
    let rows: Vec<(String, String, String, i64)> = {
        let mut stmt = g.r.db().prepare_cached(
            "SELECT i.path, f.lang, i.module, i.line FROM code_imports i
             JOIN code_ref_files f ON f.seq = i.file WHERE i.name = ?1 ORDER BY i.path, i.line",
        )?;
        let rows = stmt.query_map([name], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()?
    };
    let mut out = Vec::new();
    for (path, lang, module, line) in rows {
        for d in g.r.import_targets(&lang, &path, &module, name, 0)? {
            if keys.contains(d.key.as_str()) {
                out.push(Ref {
                    path: path.clone(),
                    line: line as u64,
                    column: None,
                    kind: "import".into(),
                    confidence: Confidence::Imported,
                    symbol: None,
                    target: d.key.clone(),
                });
            }
        }
    }
    Ok(out)
}

/// Who calls the target's definitions, up to `ask.depth` steps back.
pub fn callers(db: &Connection, target: &Target, ask: Ask) -> Result<GraphAnswer<Linked>> {
    let defs = definitions(db, target)?;
    let mut g = Graph::new(db);
    let found = walk_callers(&mut g, &defs, ask, &HashSet::new())?;
    Ok(finish(defs, found, ask.limit))
}

/// What the target's definitions call, up to `ask.depth` steps on.
pub fn callees(db: &Connection, target: &Target, ask: Ask) -> Result<GraphAnswer<Linked>> {
    let defs = definitions(db, target)?;
    let mut g = Graph::new(db);
    let mut seen: HashSet<String> = defs.iter().map(|d| d.key.clone()).collect();
    let mut frontier: Vec<(SymbolInfo, Confidence)> = defs
        .iter()
        .map(|d| (d.clone(), Confidence::Resolved))
        .collect();
    let mut found: Vec<Linked> = Vec::new();
    for depth in 1..=ask.depth.clamp(1, 3) {
        let mut step: BTreeMap<String, Linked> = BTreeMap::new();
        let mut next_defs: HashMap<String, SymbolInfo> = HashMap::new();
        for (from, so_far) in &frontier {
            for (_, reached) in g.calls_in(&from.key)? {
                let Some((targets, confidence)) = reached else {
                    continue;
                };
                if confidence < ask.min_confidence {
                    continue;
                }
                for t in targets.iter() {
                    if seen.contains(&t.key) {
                        continue;
                    }
                    let conf = confidence.min(*so_far);
                    let e = step
                        .entry(t.key.clone())
                        .or_insert_with(|| linked(t, depth, conf, &from.key));
                    e.calls += 1;
                    e.confidence = e.confidence.max(conf);
                    next_defs.insert(t.key.clone(), t.clone());
                }
            }
        }
        seen.extend(step.keys().cloned());
        frontier = step
            .values()
            .filter_map(|l| next_defs.get(&l.key).map(|d| (d.clone(), l.confidence)))
            .collect();
        found.extend(step.into_values());
    }
    Ok(finish(defs, found, ask.limit))
}

/// Callers of `defs`, breadth first, skipping `skip` (keys already counted).
pub(crate) fn walk_callers(
    g: &mut Graph<'_>,
    defs: &[SymbolInfo],
    ask: Ask,
    skip: &HashSet<String>,
) -> Result<Vec<Linked>> {
    let mut seen: HashSet<String> = defs.iter().map(|d| d.key.clone()).collect();
    seen.extend(skip.iter().cloned());
    let mut frontier: Vec<(SymbolInfo, Confidence)> = defs
        .iter()
        .map(|d| (d.clone(), Confidence::Resolved))
        .collect();
    let mut found = Vec::new();
    for depth in 1..=ask.depth.clamp(1, 3) {
        let mut step: BTreeMap<String, Linked> = BTreeMap::new();
        let mut next_defs: HashMap<String, SymbolInfo> = HashMap::new();
        for (to, so_far) in &frontier {
            let mut calls = Vec::new();
            for spelled in g.spellings(&to.name)? {
                calls.extend(g.calls_named(&spelled)?.iter().cloned());
            }
            for (c, reached) in &calls {
                let Some((targets, confidence)) = reached else {
                    continue;
                };
                if *confidence < ask.min_confidence || !targets.iter().any(|t| t.key == to.key) {
                    continue;
                }
                let caller = g.caller_of(c)?;
                if seen.contains(&caller.key) {
                    continue;
                }
                let conf = (*confidence).min(*so_far);
                let e = step
                    .entry(caller.key.clone())
                    .or_insert_with(|| linked(&caller, depth, conf, &to.key));
                e.calls += 1;
                e.confidence = e.confidence.max(conf);
                next_defs.insert(caller.key.clone(), caller);
            }
        }
        seen.extend(step.keys().cloned());
        frontier = step
            .values()
            .filter(|l| l.kind != "file")
            .filter_map(|l| next_defs.get(&l.key).map(|d| (d.clone(), l.confidence)))
            .collect();
        found.extend(step.into_values());
    }
    Ok(found)
}

fn linked(s: &SymbolInfo, depth: u32, confidence: Confidence, via: &str) -> Linked {
    Linked {
        key: s.key.clone(),
        name: s.qualified_name.clone(),
        kind: s.kind.clone(),
        path: s.path.clone(),
        line: s.start_line,
        signature: s.signature.clone(),
        depth,
        confidence,
        calls: 0,
        via: via.to_string(),
    }
}

fn finish(defs: Vec<SymbolInfo>, mut found: Vec<Linked>, limit: usize) -> GraphAnswer<Linked> {
    found.sort_by(|a, b| {
        (a.depth, std::cmp::Reverse(a.confidence), &a.path, a.line).cmp(&(
            b.depth,
            std::cmp::Reverse(b.confidence),
            &b.path,
            b.line,
        ))
    });
    let truncated = found.len() > limit;
    found.truncate(limit);
    GraphAnswer {
        definitions: defs,
        items: found,
        truncated,
    }
}

fn unique(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut seen = HashSet::new();
    items.filter(|s| seen.insert(s.clone())).collect()
}
