//! Resolving a call site to the definitions it may reach, with a confidence:
//! the file or an enclosing scope defines the name (`resolved`); the file imports a
//! module that defines it, or shares a package with one (`imported`); one definition
//! of that name in the repository (`same-name`); several (`ambiguous`).
//!
//! Syntax only, no flow: `obj.get()` reaches the `get` of the type the file declares
//! or constructs `obj` as (`obj: Client`, `obj = Client()`, `obj = f()` with `f`
//! declared `-> Client`), else every method named `get` (by name); `self.get()` and
//! `super().get()` are `self_calls`'. Reads the code tables; writes nothing. One [`Resolver`] caches what it reads
//! for the length of one query.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use rusqlite::Connection;

use super::modules;
use super::self_calls::is_super;
use super::types::{bare_calls_skip_methods, segments};
pub(crate) use super::types::{call_row, family, parent_of, separator, CALL_COLUMNS};
pub use super::types::{CallRow, Confidence, ImportRow};
use crate::index::symbol_search::{row as symbol_row, SymbolInfo, COLUMNS};
use crate::store::Result;

/// How many re-exports an imported name is followed through (a barrel of barrels
/// of barrels is the deepest seen in practice, plus slack).
const REEXPORT_HOPS: u32 = 5;

const SELF_NAMES: &[&str] = &["self", "this", "cls", "Self", "$this", "static", "@"];

/// Caches of one query's reads.
pub struct Resolver<'c> {
    db: &'c Connection,
    defs_by_path: HashMap<String, Rc<Vec<SymbolInfo>>>,
    defs_by_name: HashMap<String, Rc<Vec<SymbolInfo>>>,
    imports_by_path: HashMap<String, Rc<Vec<ImportRow>>>,
    /// The by-name fallbacks' answers, by name and rule: a common name (`get`,
    /// `len`) is called at thousands of places, and each such call reaches the same
    /// candidates, which were copied once per call before.
    named_found: HashMap<(String, String), Option<Found>>,
    modules: modules::Files,
}

/// Definitions found, all at one confidence (shared: one by-name answer may serve
/// thousands of calls).
pub type Found = (Rc<[SymbolInfo]>, Confidence);

impl<'c> Resolver<'c> {
    pub fn new(db: &'c Connection) -> Resolver<'c> {
        Resolver {
            db,
            defs_by_path: HashMap::new(),
            defs_by_name: HashMap::new(),
            imports_by_path: HashMap::new(),
            named_found: HashMap::new(),
            modules: modules::Files::new(),
        }
    }

    pub fn db(&self) -> &'c Connection {
        self.db
    }

    /// The definitions in `path`, in line order.
    pub fn defs_in(&mut self, path: &str) -> Result<Rc<Vec<SymbolInfo>>> {
        if let Some(d) = self.defs_by_path.get(path) {
            return Ok(d.clone());
        }
        let mut stmt = self.db.prepare_cached(&format!(
            "SELECT {COLUMNS} WHERE s.path = ?1 ORDER BY s.start_line, s.end_line DESC"
        ))?;
        let rows = stmt.query_map([path], symbol_row)?;
        let d = Rc::new(rows.collect::<rusqlite::Result<Vec<_>>>()?);
        self.defs_by_path.insert(path.to_string(), d.clone());
        Ok(d)
    }

    /// Every definition named `name` (exactly), in path order.
    pub fn defs_named(&mut self, name: &str) -> Result<Rc<Vec<SymbolInfo>>> {
        if let Some(d) = self.defs_by_name.get(name) {
            return Ok(d.clone());
        }
        let mut stmt = self.db.prepare_cached(&format!(
            "SELECT {COLUMNS} WHERE s.name = ?1 COLLATE NOCASE ORDER BY s.path, s.start_line"
        ))?;
        let rows = stmt.query_map([name], symbol_row)?;
        // `name` COLLATE NOCASE is the index (a plain `=` cannot use it and scanned
        // every symbol, once per name a query resolves); the exact case is wanted.
        let d: Vec<SymbolInfo> = rows
            .collect::<rusqlite::Result<Vec<_>>>()?
            .into_iter()
            .filter(|s| s.name == name)
            .collect();
        let d = Rc::new(d);
        self.defs_by_name.insert(name.to_string(), d.clone());
        Ok(d)
    }

    /// The imported names of `path`, in line order.
    pub fn imports_of(&mut self, path: &str) -> Result<Rc<Vec<ImportRow>>> {
        if let Some(d) = self.imports_by_path.get(path) {
            return Ok(d.clone());
        }
        let mut stmt = self.db.prepare_cached(
            "SELECT path, module, name, bind, line FROM code_imports WHERE path = ?1 ORDER BY line, rowid",
        )?;
        let rows = stmt.query_map([path], |r| {
            Ok(ImportRow {
                path: r.get(0)?,
                module: r.get(1)?,
                name: r.get(2)?,
                bind: r.get(3)?,
                line: r.get::<_, i64>(4)? as u64,
            })
        })?;
        let d = Rc::new(rows.collect::<rusqlite::Result<Vec<_>>>()?);
        self.imports_by_path.insert(path.to_string(), d.clone());
        Ok(d)
    }

    /// The repository files a module names, as seen from `importer` (in `lang`).
    pub fn module_files(
        &mut self,
        lang: &str,
        importer: &str,
        module: &str,
    ) -> Result<Vec<String>> {
        self.modules.resolve(self.db, lang, importer, module)
    }

    /// The definitions the call `c` may reach and how sure that is; empty when it
    /// reaches nothing in the repository (a library call, a builtin).
    pub fn resolve(&mut self, c: &CallRow) -> Result<Option<Found>> {
        let sep = separator(&c.lang);
        let in_file = self.defs_in(&c.path)?;
        let caller = c
            .caller
            .as_ref()
            .and_then(|k| in_file.iter().find(|d| &d.key == k).cloned());
        let segs = segments(&c.qual);
        if c.qual.is_empty() {
            return self.resolve_bare(c, caller.as_ref(), &in_file);
        }
        if SELF_NAMES.contains(&c.qual.as_str()) {
            return self.resolve_self(c, caller.as_ref(), &in_file);
        }
        if is_super(&c.lang, &c.qual) {
            return self.resolve_super(c, caller.as_ref(), &in_file);
        }
        let q0 = segs.first().copied().unwrap_or_default();
        // Rust paths from the crate, the module or its parent.
        if c.lang == "rust" && matches!(q0, "crate" | "self" | "super") {
            let found = self.import_targets(&c.lang, &c.path, &c.qual, &c.name, 0)?;
            if !found.is_empty() {
                return Ok(Some((found.into(), Confidence::Imported)));
            }
        }
        // Through a name an import binds (`np.array`, `Foo::new`, `mod.f`).
        let imports = self.imports_of(&c.path)?;
        let rest: Vec<&str> = segs.iter().skip(1).copied().collect();
        let mut external = false;
        for imp in imports.iter().filter(|i| i.bind.as_deref() == Some(q0)) {
            let found = self.through_import(&c.lang, imp, &rest, &c.name)?;
            if !found.is_empty() {
                return Ok(Some((found.into(), Confidence::Imported)));
            }
            external |= self.module_files(&c.lang, &c.path, &imp.module)?.is_empty();
        }
        if external {
            return Ok(None);
        }
        // A receiver the file declares or constructs as a type (`o = Foo()`, `o: Foo`),
        // or binds to what a function returns (`o = f()`).
        if let Some(ty) = c.recv.as_deref() {
            let at = (c.path.as_str(), c.lang.as_str(), c.line);
            let found = match ty.strip_suffix("()") {
                Some(callee) => self.member_of_returned(c, callee)?,
                None => self.member_of_type(at, ty, &c.name, 0)?,
            };
            if let Some(found) = found {
                return Ok(Some(found));
            }
        }
        // A type this file defines (`Foo.create()`, `Foo::new()`).
        let full = format!("{}{sep}{}", segs.join(sep), c.name);
        if let Some(found) = defined_here(&in_file, &full, false) {
            return Ok(Some(found));
        }
        // By name only: members of a type of that name, or any method so named.
        let fam = family(&c.lang);
        let last = segs.last().copied().unwrap_or_default();
        let typed = last.starts_with(|ch: char| ch.is_uppercase());
        let rule = format!("member {fam} {}", if typed { last } else { "" });
        self.by_name(&c.name, rule, |named| {
            named
                .iter()
                .filter(|d| family(&d.lang) == fam)
                .filter(|d| {
                    let parent = parent_of(&d.qualified_name, separator(&d.lang));
                    if typed {
                        parent.is_some_and(|p| p.rsplit(separator(&d.lang)).next() == Some(last))
                    } else {
                        d.kind == "method"
                    }
                })
                .cloned()
                .collect()
        })
    }

    /// What a by-name fallback rule `rule` picks from the definitions named `name`,
    /// counted (`by_count`), worked out once per name and rule.
    pub(super) fn by_name(
        &mut self,
        name: &str,
        rule: String,
        pick: impl FnOnce(&[SymbolInfo]) -> Vec<SymbolInfo>,
    ) -> Result<Option<Found>> {
        let key = (name.to_string(), rule);
        if let Some(found) = self.named_found.get(&key) {
            return Ok(found.clone());
        }
        let named = self.defs_named(name)?;
        let found = by_count(pick(&named));
        self.named_found.insert(key, found.clone());
        Ok(found)
    }

    /// A call without a receiver (`helper()`, `Thing()`).
    fn resolve_bare(
        &mut self,
        c: &CallRow,
        caller: Option<&SymbolInfo>,
        in_file: &[SymbolInfo],
    ) -> Result<Option<Found>> {
        let sep = separator(&c.lang);
        let skip_methods = bare_calls_skip_methods(&c.lang);
        // Enclosing scopes, innermost first, then the file's top level.
        let mut scope = caller.map(|s| s.qualified_name.as_str());
        loop {
            let want = match scope {
                Some(s) => format!("{s}{sep}{}", c.name),
                None => c.name.clone(),
            };
            if let Some(found) = defined_here(in_file, &want, skip_methods) {
                return Ok(Some(found));
            }
            match scope {
                Some(s) => scope = parent_of(s, sep),
                None => break,
            }
        }
        // A name an import binds.
        let imports = self.imports_of(&c.path)?;
        let mut external = false;
        for imp in imports
            .iter()
            .filter(|i| i.bind.as_deref() == Some(c.name.as_str()))
        {
            let found = match imp.name.as_deref() {
                Some("default") => self.defs_in_module(&c.lang, &c.path, &imp.module, &c.name)?,
                Some(n) => self.import_targets(&c.lang, &c.path, &imp.module, n, 0)?,
                None => Vec::new(),
            };
            if !found.is_empty() {
                return Ok(Some((found.into(), Confidence::Imported)));
            }
            external |= self.module_files(&c.lang, &c.path, &imp.module)?.is_empty();
        }
        if external {
            return Ok(None);
        }
        // Glob imports, and the package a Go or Java file shares with its neighbours.
        let mut found = Vec::new();
        for imp in imports.iter().filter(|i| i.name.as_deref() == Some("*")) {
            found.extend(self.defs_in_module(&c.lang, &c.path, &imp.module, &c.name)?);
        }
        if found.is_empty() && same_package(&c.lang) {
            let dir = c.path.rsplit_once('/').map_or("", |(d, _)| d);
            let named = self.defs_named(&c.name)?;
            found.extend(
                named
                    .iter()
                    .filter(|d| d.lang == c.lang && d.path != c.path)
                    .filter(|d| d.path.rsplit_once('/').map_or("", |(d, _)| d) == dir)
                    .filter(|d| d.qualified_name == d.name || c.lang == "java")
                    .cloned(),
            );
        }
        if !found.is_empty() {
            dedup(&mut found);
            return Ok(Some((found.into(), Confidence::Imported)));
        }
        // The repository, by name.
        let fam = family(&c.lang);
        self.by_name(&c.name, format!("bare {fam} {skip_methods}"), |named| {
            named
                .iter()
                .filter(|d| family(&d.lang) == fam && !(skip_methods && d.kind == "method"))
                .cloned()
                .collect()
        })
    }

    /// What `rest` and `name` reach through import `imp` (which binds the
    /// qualifier's first segment).
    fn through_import(
        &mut self,
        lang: &str,
        imp: &ImportRow,
        rest: &[&str],
        name: &str,
    ) -> Result<Vec<SymbolInfo>> {
        let sep = separator(lang);
        let msep = modules::module_separator(lang);
        match imp.name.as_deref() {
            // The module itself is bound (`import a.b as m`, `import a.b`).
            None => {
                let base = match imp.bind.as_deref() {
                    // `import a.b` binds `a`: the qualifier names the rest.
                    Some(b)
                        if lang == "python"
                            && imp.module != b
                            && imp.module.starts_with(&format!("{b}.")) =>
                    {
                        b.to_string()
                    }
                    _ => imp.module.clone(),
                };
                let mut module = base.clone();
                for r in rest {
                    module = format!("{module}{msep}{r}");
                }
                let found = self.defs_in_module(lang, &imp.path, &module, name)?;
                if !found.is_empty() || rest.is_empty() {
                    return Ok(found);
                }
                // `mod.Class.method`: a member of a type in the module.
                let qualified = format!("{}{sep}{name}", rest.join(sep));
                self.defs_in_module(lang, &imp.path, &base, &qualified)
            }
            Some("*") => Ok(Vec::new()),
            Some(item) => {
                // The item may be a module (`from pkg import mod`) …
                let mut module = if imp.module.ends_with('.') {
                    format!("{}{item}", imp.module)
                } else {
                    format!("{}{msep}{item}", imp.module)
                };
                for r in rest {
                    module = format!("{module}{msep}{r}");
                }
                let found = self.defs_in_module(lang, &imp.path, &module, name)?;
                if !found.is_empty() {
                    return Ok(found);
                }
                // … or a type (`from m import Foo; Foo.create()`): find where it is
                // defined (through re-exports), then its member there.
                let mut out = Vec::new();
                for ty in self.import_targets(lang, &imp.path, &imp.module, item, 0)? {
                    let tsep = separator(&ty.lang);
                    let mut want = ty.qualified_name.clone();
                    for r in rest {
                        want = format!("{want}{tsep}{r}");
                    }
                    want = format!("{want}{tsep}{name}");
                    out.extend(
                        self.defs_in(&ty.path)?
                            .iter()
                            .filter(|d| d.qualified_name == want)
                            .cloned(),
                    );
                }
                dedup(&mut out);
                Ok(out)
            }
        }
    }

    /// Definitions in the files `module` names whose qualified name is `qualified`: a
    /// top-level name, or a type's member (`Class.method`).
    fn defs_in_module(
        &mut self,
        lang: &str,
        importer: &str,
        module: &str,
        qualified: &str,
    ) -> Result<Vec<SymbolInfo>> {
        let mut out = Vec::new();
        for f in self.module_files(lang, importer, module)? {
            let defs = self.defs_in(&f)?;
            let before = out.len();
            out.extend(
                defs.iter()
                    .filter(|d| d.qualified_name == qualified)
                    .cloned(),
            );
            // A Lua module is the table its file returns: `M.f` is the module's `f`.
            if lang == "lua" && out.len() == before && !qualified.contains('.') {
                out.extend(
                    defs.iter()
                        .filter(|d| d.name == qualified && d.kind == "method")
                        .filter(|d| {
                            parent_of(&d.qualified_name, ".").is_some_and(|p| !p.contains('.'))
                        })
                        .cloned(),
                );
            }
        }
        Ok(out)
    }

    /// Where `name`, imported from `module` by `importer`, is defined: at the top
    /// level of the module's files, or further through their own imports (a
    /// re-export: `pub use`, `from .x import name` in an `__init__.py`, `export { f
    /// as g } from './f'`, a barrel's `export * from './atom'`), at most
    /// `REEXPORT_HOPS` hops, each file asked about each name once (so an import
    /// cycle between barrels ends).
    pub fn import_targets(
        &mut self,
        lang: &str,
        importer: &str,
        module: &str,
        name: &str,
        depth: u32,
    ) -> Result<Vec<SymbolInfo>> {
        let mut seen = HashSet::new();
        self.targets_through(lang, importer, module, name, depth, &mut seen)
    }

    fn targets_through(
        &mut self,
        lang: &str,
        importer: &str,
        module: &str,
        name: &str,
        depth: u32,
        seen: &mut HashSet<(String, String)>,
    ) -> Result<Vec<SymbolInfo>> {
        let files: Vec<String> = self
            .module_files(lang, importer, module)?
            .into_iter()
            .filter(|f| seen.insert((f.clone(), name.to_string())))
            .collect();
        let mut out = Vec::new();
        for f in &files {
            // A method named at the top level sits in an object literal or a
            // function expression (`{ get(t) {…} }`): nothing a module exports.
            out.extend(
                self.defs_in(f)?
                    .iter()
                    .filter(|d| d.qualified_name == name && d.kind != "method")
                    .cloned(),
            );
        }
        if !out.is_empty() || depth >= REEXPORT_HOPS {
            return Ok(out);
        }
        for f in &files {
            for imp in self.imports_of(f)?.iter() {
                let hop = match imp.name.as_deref() {
                    Some("*") => Some(name),
                    Some(n) if imp.bind.as_deref() == Some(name) => Some(n),
                    _ => None,
                };
                if let Some(n) = hop {
                    out.extend(self.targets_through(lang, f, &imp.module, n, depth + 1, seen)?);
                }
            }
        }
        dedup(&mut out);
        Ok(out)
    }
}

/// Languages whose files see their package's (their folder's) top-level names
/// without an import.
fn same_package(lang: &str) -> bool {
    matches!(lang, "go" | "java" | "kotlin" | "scala" | "swift")
}

fn dedup(v: &mut Vec<SymbolInfo>) {
    let mut seen = HashSet::new();
    v.retain(|d| seen.insert(d.key.clone()));
}

/// The definitions of this file named `qualified` (methods left out when
/// `skip_methods`), `resolved`; `None` when there are none.
pub(super) fn defined_here(
    in_file: &[SymbolInfo],
    qualified: &str,
    skip_methods: bool,
) -> Option<Found> {
    let here: Vec<SymbolInfo> = in_file
        .iter()
        .filter(|d| d.qualified_name == qualified && !(skip_methods && d.kind == "method"))
        .cloned()
        .collect();
    (!here.is_empty()).then(|| (here.into(), Confidence::Resolved))
}

/// One candidate is `same-name`, several `ambiguous`, none nothing.
fn by_count(mut candidates: Vec<SymbolInfo>) -> Option<Found> {
    dedup(&mut candidates);
    match candidates.len() {
        0 => None,
        1 => Some((candidates.into(), Confidence::SameName)),
        _ => Some((candidates.into(), Confidence::Ambiguous)),
    }
}
