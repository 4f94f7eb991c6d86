//! The graph's questions about files: what a file imports and who imports it
//! (`deps`), the outline of a file or folder (`overview`), and what depends on a
//! file or definition, transitively (`impact`). Reads only.

use std::collections::{BTreeMap, HashMap, HashSet};

use rusqlite::{params, Connection};
use serde::Serialize;

use super::modules::module_separator;
use super::query::{definitions, walk_callers, Ask, Graph, Target};
use super::resolve::{parent_of, separator, Confidence};
use crate::index::symbol_search::{like_escape, row as symbol_row, SymbolInfo, COLUMNS};
use crate::store::Result;

/// One import line of a file, and the repository files it reaches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImportOut {
    pub line: u64,
    pub module: String,
    pub name: Option<String>,
    pub bind: Option<String>,
    /// Empty when the module is outside the repository (a library).
    pub files: Vec<String>,
}

/// A file importing the asked one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImportIn {
    pub path: String,
    pub line: u64,
    pub module: String,
    pub name: Option<String>,
}

/// The answer of [`deps`](super::deps).
#[derive(Debug, Clone, Serialize)]
pub struct Deps {
    pub path: String,
    pub imports: Vec<ImportOut>,
    pub imported_by: Vec<ImportIn>,
}

fn lang_of(db: &Connection, path: &str) -> Result<Option<String>> {
    use rusqlite::OptionalExtension;
    Ok(db
        .prepare_cached("SELECT lang FROM code_ref_files WHERE path = ?1")?
        .query_row([path], |r| r.get(0))
        .optional()?)
}

/// The imports out of `path` (with the files each reaches) and into it.
pub fn deps(db: &Connection, path: &str) -> Result<Option<Deps>> {
    let Some(lang) = lang_of(db, path)? else {
        return Ok(None);
    };
    let mut g = Graph::new(db);
    let mut imports = Vec::new();
    for i in g.r.imports_of(path)?.iter() {
        let files = import_files(&mut g, &lang, path, &i.module, i.name.as_deref())?;
        imports.push(ImportOut {
            line: i.line,
            module: i.module.clone(),
            name: i.name.clone(),
            bind: i.bind.clone(),
            files,
        });
    }
    let imported_by = importers(&mut g, path)?;
    Ok(Some(Deps {
        path: path.to_string(),
        imports,
        imported_by,
    }))
}

/// The files an import reaches: its module's, or the item's when the item is a
/// module itself (`from pkg import mod`).
fn import_files(
    g: &mut Graph<'_>,
    lang: &str,
    importer: &str,
    module: &str,
    name: Option<&str>,
) -> Result<Vec<String>> {
    if let Some(n) = name.filter(|n| *n != "*" && *n != "default") {
        let sep = module_separator(lang);
        let sub = if module.ends_with('.') {
            format!("{module}{n}")
        } else {
            format!("{module}{sep}{n}")
        };
        let files = g.r.module_files(lang, importer, &sub)?;
        if !files.is_empty() {
            return Ok(files);
        }
    }
    g.r.module_files(lang, importer, module)
}

/// Files whose imports reach `path`. Only imports whose text could name it are
/// resolved: those naming its stem (or its folder's, for `mod.rs`, `__init__.py`,
/// `index.*`).
fn importers(g: &mut Graph<'_>, path: &str) -> Result<Vec<ImportIn>> {
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file.split('.').next().unwrap_or(file);
    let stem = if matches!(stem, "mod" | "__init__" | "index" | "lib" | "main") {
        let dir = path.rsplit('/').nth(1).unwrap_or("");
        dir.to_string()
    } else {
        stem.to_string()
    };
    let rows: Vec<(String, String, String, Option<String>, i64)> = {
        let mut stmt = g.r.db().prepare_cached(
            "SELECT i.path, f.lang, i.module, i.name, i.line FROM code_imports i
             JOIN code_ref_files f ON f.seq = i.file
             WHERE (instr(i.module, ?1) > 0 OR i.name = ?1 OR ?1 = '') AND i.path <> ?2
             ORDER BY i.path, i.line",
        )?;
        let rows = stmt.query_map(params![stem, path], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?;
        rows.collect::<rusqlite::Result<Vec<_>>>()?
    };
    let mut out: Vec<ImportIn> = Vec::new();
    for (importer, lang, module, name, line) in rows {
        let files = import_files(g, &lang, &importer, &module, name.as_deref())?;
        if files.iter().any(|f| f == path) {
            let i = ImportIn {
                path: importer,
                line: line as u64,
                module,
                name,
            };
            if !out.iter().any(|o| o.path == i.path && o.line == i.line) {
                out.push(i);
            }
        }
    }
    Ok(out)
}

/// One symbol in an outline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutlineSymbol {
    pub name: String,
    pub qualified_name: String,
    pub kind: String,
    pub line: u64,
    pub end_line: u64,
    pub signature: String,
    /// How many of its enclosing symbols the file defines (0 at the top).
    pub depth: u32,
}

/// One file of an outline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutlineFile {
    pub path: String,
    pub lang: String,
    pub symbols: Vec<OutlineSymbol>,
}

/// The answer of [`overview`](super::overview).
#[derive(Debug, Clone, Serialize)]
pub struct Overview {
    pub files: Vec<OutlineFile>,
    /// Symbols in all, before `limit`.
    pub total: u64,
    pub truncated: bool,
}

/// The symbols of a file, or of every file under a folder (the whole repository for
/// `""`), in path and line order, at most `limit`.
pub fn overview(db: &Connection, path: &str, limit: usize) -> Result<Overview> {
    let path = path.trim().trim_start_matches("./").trim_end_matches('/');
    let prefix = format!("{}/", like_escape(path));
    let mut stmt = db.prepare_cached(&format!(
        "SELECT {COLUMNS} WHERE ?1 = '' OR s.path = ?1 OR s.path LIKE ?2 || '%' ESCAPE '\\'
         ORDER BY s.path, s.start_line, s.end_line DESC"
    ))?;
    let all = stmt
        .query_map(params![path, prefix], symbol_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let total = all.len() as u64;
    let mut files: Vec<OutlineFile> = Vec::new();
    let mut names: HashSet<String> = HashSet::new();
    for s in all.into_iter().take(limit) {
        if files.last().is_none_or(|f| f.path != s.path) {
            names.clear();
            files.push(OutlineFile {
                path: s.path.clone(),
                lang: s.lang.clone(),
                symbols: Vec::new(),
            });
        }
        let sep = separator(&s.lang);
        let mut depth = 0;
        let mut p = parent_of(&s.qualified_name, sep);
        while let Some(q) = p {
            if names.contains(q) {
                depth += 1;
            }
            p = parent_of(q, sep);
        }
        names.insert(s.qualified_name.clone());
        if let Some(f) = files.last_mut() {
            f.symbols.push(OutlineSymbol {
                name: s.name,
                qualified_name: s.qualified_name,
                kind: s.kind,
                line: s.start_line,
                end_line: s.end_line,
                signature: s.signature,
                depth,
            });
        }
    }
    Ok(Overview {
        files,
        total,
        truncated: total > limit as u64,
    })
}

/// One dependent in an impact answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Dependent {
    /// `symbol` or `file`.
    pub kind: String,
    /// A symbol's `sym:` key, a file's `file:` key.
    pub key: String,
    /// A symbol's qualified name, or a file's path.
    pub name: String,
    pub path: String,
    pub line: u64,
    /// Steps from what was asked (1 = depends on it directly).
    pub distance: u32,
    /// How many depend on this one in turn (its callers, or the files importing it).
    pub fan_in: u32,
    pub confidence: Confidence,
}

/// The answer of [`impact`](super::impact).
#[derive(Debug, Clone, Serialize)]
pub struct Impact {
    /// `path` or `name`: how the target was read.
    pub target_kind: String,
    /// The definitions the target meant (a file's: all of them).
    pub definitions: Vec<SymbolInfo>,
    pub dependents: Vec<Dependent>,
    pub truncated: bool,
}

/// What depends on `target` (an indexed file or folder path, else a definition's
/// name), up to `ask.depth` steps: the symbols calling it and, for a path, the files
/// importing it; ranked by distance, then fan-in.
pub fn impact(db: &Connection, target: &str, ask: Ask) -> Result<Impact> {
    let t = target.trim().trim_start_matches("./").trim_end_matches('/');
    let files = files_under(db, t)?;
    let mut g = Graph::new(db);
    let (target_kind, defs) = if files.is_empty() {
        ("name", definitions(db, &Target::Name(t.to_string()))?)
    } else {
        let mut defs = Vec::new();
        for f in &files {
            defs.extend(g.r.defs_in(f)?.iter().cloned());
        }
        ("path", defs)
    };
    // Callers inside the asked files are not dependents of them.
    let own: HashSet<String> = files.iter().map(|f| format!("file:{f}")).collect();
    let inside: HashSet<String> = defs.iter().map(|d| d.key.clone()).chain(own).collect();
    let found = walk_callers(&mut g, &defs, ask, &inside)?;
    let mut dependents: Vec<Dependent> = Vec::new();
    for l in &found {
        if files.contains(&l.path) {
            continue;
        }
        let fan_in = match g
            .r
            .defs_in(&l.path)?
            .iter()
            .find(|d| d.key == l.key)
            .cloned()
        {
            Some(d) => g.caller_count(&d, ask.min_confidence)?,
            None => 0,
        };
        dependents.push(Dependent {
            kind: if l.kind == "file" { "file" } else { "symbol" }.into(),
            key: l.key.clone(),
            name: l.name.clone(),
            path: l.path.clone(),
            line: l.line,
            distance: l.depth,
            fan_in,
            confidence: l.confidence,
        });
    }
    if target_kind == "path" {
        dependents.extend(importing_files(&mut g, &files, ask.depth.clamp(1, 3))?);
    }
    dependents.sort_by(|a, b| {
        (a.distance, std::cmp::Reverse(a.fan_in), &a.path, a.line).cmp(&(
            b.distance,
            std::cmp::Reverse(b.fan_in),
            &b.path,
            b.line,
        ))
    });
    // A file reached by a top-level call and by an import: once, nearest first.
    let mut keys = HashSet::new();
    dependents.retain(|d| keys.insert(d.key.clone()));
    let truncated = dependents.len() > ask.limit;
    dependents.truncate(ask.limit);
    Ok(Impact {
        target_kind: target_kind.into(),
        definitions: defs,
        dependents,
        truncated,
    })
}

/// Indexed files equal to `t` or under the folder `t`.
fn files_under(db: &Connection, t: &str) -> Result<Vec<String>> {
    if t.is_empty() || t.starts_with("sym:") {
        return Ok(Vec::new());
    }
    let mut stmt = db.prepare_cached(
        "SELECT path FROM code_ref_files WHERE path = ?1 OR path LIKE ?2 || '%' ESCAPE '\\' ORDER BY path",
    )?;
    let rows = stmt.query_map(params![t, format!("{}/", like_escape(t))], |r| {
        r.get::<_, String>(0)
    })?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

/// Files importing `files`, transitively, by distance.
fn importing_files(g: &mut Graph<'_>, files: &[String], depth: u32) -> Result<Vec<Dependent>> {
    let mut seen: HashSet<String> = files.iter().cloned().collect();
    let mut frontier: Vec<String> = files.to_vec();
    let mut by_file: BTreeMap<String, (u32, u64)> = BTreeMap::new();
    let mut fan: HashMap<String, u32> = HashMap::new();
    for distance in 1..=depth + 1 {
        let mut next = Vec::new();
        for f in &frontier {
            for i in importers(g, f)? {
                *fan.entry(f.clone()).or_default() += 1;
                if seen.insert(i.path.clone()) {
                    if distance <= depth {
                        by_file.insert(i.path.clone(), (distance, i.line));
                    }
                    next.push(i.path);
                }
            }
        }
        frontier = next;
    }
    Ok(by_file
        .into_iter()
        .map(|(path, (distance, line))| Dependent {
            kind: "file".into(),
            key: format!("file:{path}"),
            name: path.clone(),
            fan_in: fan.get(&path).copied().unwrap_or(0),
            path,
            line,
            distance,
            confidence: Confidence::Imported,
        })
        .collect())
}
