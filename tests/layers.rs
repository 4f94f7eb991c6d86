//! The layers of the crate, enforced: arrows point down.
//!
//! Every file under `src/` belongs to a top-level module (`src/X.rs` or `src/X/…`);
//! `src/lib.rs` is the crate root and `src/main.rs` with `src/cli/` is the binary.
//! Each `crate::Y` path, each `use crate::{Y, …}` group and each `super::` path that
//! climbs to the crate root is an edge from the file's module to `Y`. An edge that
//! [`ALLOWED`] does not list fails the test, naming the file and line. Intra-doc links
//! (`[`crate::Y`]`) count: a link is a reference. Plain comments and string literals
//! do not. The binary (`cli`) uses the library as `engram::` and may use all of it.
//!
//! The same matrix, drawn, is in `ARCHITECTURE.md` and the crate docs (`src/lib.rs`).
//! A new module must be added here with what it may use; a change to this table is a
//! change to the architecture and belongs in the same commit as the picture.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Who may use whom: each top-level module of the library with every module it may
/// name. Lower layers first; nothing may name a module below it in this list except
/// through the lists.
///
/// - `format` is the store's business: layers above read records through the
///   store's API (`store::RecordView`, `store::RecordKind`), never the format's.
/// - `text`, `fts` and `embed` are pure and beneath every user of words.
/// - `location` says where engram's files live (paths only; creates nothing).
/// - `memory` and `index` are peers: neither knows the other. `search` fuses them.
/// - `gate` knows memory (its audit events share the memory writer) but not the index.
/// - `open` is the one place that knows every tracker projection of the build.
const ALLOWED: &[(&str, &[&str])] = &[
    ("key", &[]),
    ("format", &["key"]),
    ("text", &[]),
    ("fts", &["text"]),
    ("embed", &["text"]),
    ("location", &["key"]),
    ("store", &["key", "format"]),
    ("patterns", &["key", "location", "store"]),
    (
        "memory",
        &["key", "text", "fts", "embed", "store", "patterns"],
    ),
    (
        "index",
        &["key", "text", "fts", "embed", "store", "patterns"],
    ),
    (
        "search",
        &["key", "text", "fts", "embed", "store", "memory", "index"],
    ),
    ("gate", &["key", "text", "store", "patterns", "memory"]),
    (
        "manager",
        &[
            "key", "text", "fts", "embed", "store", "patterns", "memory", "index", "search", "gate",
        ],
    ),
    (
        "mcp",
        &[
            "key", "text", "fts", "embed", "store", "patterns", "memory", "index", "search",
            "gate", "manager",
        ],
    ),
    ("config", &["key", "embed", "location"]),
    ("open", &["store", "memory", "index"]),
];

/// The crate root (`src/lib.rs`) as an edge's source or target: it declares the
/// modules and may name them all; no module may name an item of the root.
const ROOT: &str = "crate root";
/// The binary: `crate::` there is the binary crate, and the library is `engram::`.
const BINARY: &str = "cli";

/// One `crate::` reference.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Edge {
    line: usize,
    to: String,
    /// The path as written, for the failure message.
    path: String,
}

// ---------------------------------------------------------------------------------
// Reading source: comments and literals out, doc comments apart.

/// `src` with plain comments and the contents of string and character literals
/// blanked (line breaks kept, so line numbers stay), and, line-aligned, the text of
/// its doc comments (`///`, `//!`) alone.
fn strip(src: &str) -> (String, String) {
    /// Both outputs, one character each per character read.
    struct Out {
        code: String,
        docs: String,
    }
    impl Out {
        fn keep(&mut self, c: char) {
            self.code.push(c);
            self.docs.push(if c == '\n' { '\n' } else { ' ' });
        }
        fn blank(&mut self, c: char) {
            let b = if c == '\n' { '\n' } else { ' ' };
            self.code.push(b);
            self.docs.push(b);
        }
        fn doc(&mut self, c: char) {
            self.code.push(' ');
            self.docs.push(c);
        }
    }
    let s: Vec<char> = src.chars().collect();
    let mut out = Out {
        code: String::with_capacity(src.len()),
        docs: String::with_capacity(src.len()),
    };
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            let doc = matches!(s.get(i + 2), Some('/') | Some('!')) && s.get(i + 3) != Some(&'/');
            while i < s.len() && s[i] != '\n' {
                if doc {
                    out.doc(s[i]);
                } else {
                    out.blank(s[i]);
                }
                i += 1;
            }
            continue;
        }
        if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < s.len() {
                if s[i] == '/' && s.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.blank(' ');
                    out.blank(' ');
                    i += 2;
                } else if s[i] == '*' && s.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.blank(' ');
                    out.blank(' ');
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.blank(s[i]);
                    i += 1;
                }
            }
            continue;
        }
        // Raw strings: r"…", r#"…"#, br#"…"# (the `r` not ending an identifier).
        if c == 'r' {
            let before = if i > 0 && s[i - 1] == 'b' {
                i.checked_sub(2)
            } else {
                i.checked_sub(1)
            };
            let starts = before.is_none_or(|b| !ident(s[b]));
            let mut j = i + 1;
            while j < s.len() && s[j] == '#' {
                j += 1;
            }
            if starts && s.get(j) == Some(&'"') {
                let hashes = j - i - 1;
                out.keep('r');
                for _ in 0..=hashes {
                    out.blank(' ');
                }
                i = j + 1;
                while i < s.len() {
                    if s[i] == '"' && (0..hashes).all(|k| s.get(i + 1 + k) == Some(&'#')) {
                        for _ in 0..=hashes {
                            out.blank(' ');
                        }
                        i += hashes + 1;
                        break;
                    }
                    out.blank(s[i]);
                    i += 1;
                }
                continue;
            }
        }
        if c == '"' {
            out.blank(' ');
            i += 1;
            while i < s.len() && s[i] != '"' {
                if s[i] == '\\' && i + 1 < s.len() {
                    out.blank(' ');
                    i += 1;
                }
                out.blank(s[i]);
                i += 1;
            }
            out.blank(' ');
            i += 1;
            continue;
        }
        if c == '\'' {
            // A character literal ('x', '\n', '\''), or else a lifetime or label.
            let end = if next == Some('\\') {
                (i + 3..s.len()).find(|&j| s[j] == '\'')
            } else if s.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            if let Some(end) = end {
                for &k in &s[i..=end] {
                    out.blank(k);
                }
                i = end + 1;
                continue;
            }
        }
        out.keep(c);
        i += 1;
    }
    (out.code, out.docs)
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    PathSep,
    Open,
    Close,
    Comma,
    Other,
}

/// Identifiers, `::`, braces and commas of blanked code, with their line numbers.
fn tokens(code: &str) -> Vec<(usize, Tok)> {
    let s: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < s.len() {
        let c = s[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < s.len() && (s[i].is_alphanumeric() || s[i] == '_') {
                i += 1;
            }
            out.push((line, Tok::Ident(s[start..i].iter().collect())));
        } else if c == ':' && s.get(i + 1) == Some(&':') {
            out.push((line, Tok::PathSep));
            i += 2;
        } else {
            out.push((
                line,
                match c {
                    '{' => Tok::Open,
                    '}' => Tok::Close,
                    ',' => Tok::Comma,
                    _ => Tok::Other,
                },
            ));
            i += 1;
        }
    }
    out
}

/// The first segments named at `toks[at..]`: one identifier, or each top-level
/// member of a `{…}` group (`self` aside). With the index after what was read.
fn first_segments(toks: &[(usize, Tok)], at: usize) -> (Vec<String>, usize) {
    match toks.get(at) {
        Some((_, Tok::Ident(x))) => (vec![x.clone()], at + 1),
        Some((_, Tok::Open)) => {
            let (mut names, mut depth, mut expect, mut i) = (Vec::new(), 0usize, true, at);
            while i < toks.len() {
                match &toks[i].1 {
                    Tok::Open => {
                        depth += 1;
                        expect = depth == 1;
                    }
                    Tok::Close => {
                        depth -= 1;
                        if depth == 0 {
                            return (names, i + 1);
                        }
                    }
                    Tok::Comma => expect = depth == 1,
                    Tok::Ident(x) if expect => {
                        if x != "self" {
                            names.push(x.clone());
                        }
                        expect = false;
                    }
                    _ => expect = false,
                }
                i += 1;
            }
            (names, i)
        }
        _ => (Vec::new(), at),
    }
}

/// Every edge out of one file whose module path (from the crate root) is `module`.
fn edges(src: &str, module: &[String]) -> Vec<Edge> {
    let (code, docs) = strip(src);
    let mut out = Vec::new();
    // Doc comments: intra-doc links, `crate::Y` only.
    for (n, line) in docs.lines().enumerate() {
        for (at, _) in line.match_indices("crate::") {
            let before = line[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
                continue;
            }
            let rest = &line[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.push(Edge {
                    line: n + 1,
                    to: name.clone(),
                    path: format!("crate::{name}"),
                });
            }
        }
    }
    // Code: paths, with inline modules tracked so `super::` resolves.
    let toks = tokens(&code);
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        let (line, tok) = &toks[i];
        let after_sep = i > 0 && toks[i - 1].1 == Tok::PathSep;
        match tok {
            Tok::Open => depth += 1,
            Tok::Close => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            Tok::Ident(m) if m == "mod" => {
                if let (Some((_, Tok::Ident(name))), Some((_, Tok::Open))) =
                    (toks.get(i + 1), toks.get(i + 2))
                {
                    inline.push((name.clone(), depth + 1));
                }
            }
            Tok::Ident(c)
                if c == "crate"
                    && !after_sep
                    && toks.get(i + 1).map(|t| &t.1) == Some(&Tok::PathSep) =>
            {
                let (names, _) = first_segments(&toks, i + 2);
                for name in names {
                    out.push(Edge {
                        line: *line,
                        to: name.clone(),
                        path: format!("crate::{name}"),
                    });
                }
            }
            Tok::Ident(c) if c == "super" && !after_sep => {
                let mut ups = 0;
                let mut j = i;
                while let (Some((_, Tok::Ident(w))), Some((_, Tok::PathSep))) =
                    (toks.get(j), toks.get(j + 1))
                {
                    if w != "super" {
                        break;
                    }
                    ups += 1;
                    j += 2;
                }
                let here = module.len() + inline.len();
                if ups >= here {
                    let (names, _) = first_segments(&toks, j);
                    for name in names {
                        out.push(Edge {
                            line: *line,
                            to: name.clone(),
                            path: format!("{}{name}", "super::".repeat(ups)),
                        });
                    }
                }
                i = j.max(i + 1);
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out.sort_by_key(|e| e.line);
    out
}

// ---------------------------------------------------------------------------------
// The crate's files and the check.

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level module a file belongs to.
fn top_module(rel: &Path) -> String {
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    match first.as_ref() {
        "lib.rs" => ROOT.to_string(),
        "main.rs" => BINARY.to_string(),
        f => f.strip_suffix(".rs").unwrap_or(f).to_string(),
    }
}

/// Files whose module is not where their path says: `#[path = "x.rs"] mod name;`.
fn path_overrides(files: &[(PathBuf, String)]) -> BTreeMap<PathBuf, PathBuf> {
    let mut out = BTreeMap::new();
    for (rel, src) in files {
        let lines: Vec<&str> = src.lines().collect();
        for (n, l) in lines.iter().enumerate() {
            let Some(target) = l
                .trim()
                .strip_prefix("#[path = \"")
                .and_then(|r| r.strip_suffix("\"]"))
            else {
                continue;
            };
            let Some(name) = lines[n + 1..]
                .iter()
                .find_map(|m| {
                    m.trim()
                        .strip_prefix("mod ")
                        .or_else(|| m.trim().strip_prefix("pub mod "))
                })
                .and_then(|m| m.strip_suffix(';'))
            else {
                continue;
            };
            let dir = rel.parent().unwrap_or(Path::new(""));
            // As if the file were `<declaring module>/<name>.rs`.
            let declaring = rel.with_extension("");
            out.insert(dir.join(target), declaring.join(format!("{name}.rs")));
        }
    }
    out
}

/// A file's module path from the crate root (`src/store/tracker.rs` → store, tracker).
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts
        .last()
        .is_some_and(|l| l == "mod" || l == "lib" || l == "main")
    {
        parts.pop();
    }
    parts
}

fn allowed(from: &str, to: &str) -> bool {
    from == to
        || from == ROOT
        || ALLOWED
            .iter()
            .find(|(m, _)| *m == from)
            .is_some_and(|(_, may)| may.contains(&to))
}

/// Every edge of the crate that [`ALLOWED`] does not list, as `file:line: message`.
fn violations() -> Vec<String> {
    let src = src_dir();
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    let files: Vec<(PathBuf, String)> = paths
        .iter()
        .map(|p| {
            (
                p.strip_prefix(&src).unwrap().to_path_buf(),
                std::fs::read_to_string(p).unwrap(),
            )
        })
        .collect();
    let overrides = path_overrides(&files);
    let modules: BTreeSet<String> = files.iter().map(|(rel, _)| top_module(rel)).collect();
    let mut out = Vec::new();
    for (rel, text) in &files {
        let from = top_module(rel);
        if from == BINARY {
            continue;
        }
        let module = module_path(overrides.get(rel).unwrap_or(rel));
        for e in edges(text, &module) {
            let to = if modules.contains(&e.to) && e.to != BINARY {
                e.to.clone()
            } else {
                ROOT.to_string()
            };
            if !allowed(&from, &to) {
                let may = ALLOWED
                    .iter()
                    .find(|(m, _)| *m == from)
                    .map(|(_, may)| may.join(", "));
                out.push(format!(
                    "src/{}:{}: {from} -> {to} (`{}`); {from} may use only: {}",
                    rel.display(),
                    e.line,
                    e.path,
                    may.unwrap_or_else(|| "(not in the table)".into())
                ));
            }
        }
    }
    out
}

#[test]
fn every_edge_points_down() {
    let bad = violations();
    assert!(
        bad.is_empty(),
        "edges the layering does not allow (tests/layers.rs, ALLOWED):\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_table_names_exactly_the_crates_modules() {
    let src = src_dir();
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    let found: BTreeSet<String> = paths
        .iter()
        .map(|p| top_module(p.strip_prefix(&src).unwrap()))
        .filter(|m| m != ROOT && m != BINARY)
        .collect();
    let listed: BTreeSet<String> = ALLOWED.iter().map(|(m, _)| m.to_string()).collect();
    assert_eq!(
        found, listed,
        "every module of src/ needs a row in ALLOWED, and every row a module"
    );
    for (m, may) in ALLOWED {
        for t in *may {
            assert!(
                listed.contains(*t),
                "{m} may use {t}, which is not a module"
            );
        }
    }
}

#[test]
fn the_table_has_no_cycle() {
    // Depth-first from each module: reaching it again would be a cycle.
    fn reach(from: &str, seen: &mut BTreeSet<String>) {
        for (_, may) in ALLOWED.iter().filter(|(m, _)| *m == from) {
            for t in *may {
                if seen.insert(t.to_string()) {
                    reach(t, seen);
                }
            }
        }
    }
    for (m, _) in ALLOWED {
        let mut seen = BTreeSet::new();
        reach(m, &mut seen);
        assert!(!seen.contains(*m), "{m} can reach itself through ALLOWED");
    }
}

#[test]
fn every_file_opens_with_its_module_doc() {
    let src = src_dir();
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    let missing: Vec<String> = paths
        .iter()
        .filter(|p| !std::fs::read_to_string(p).unwrap().starts_with("//!"))
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "files without a `//!` module doc: {missing:?}"
    );
}

// ---------------------------------------------------------------------------------
// The reader itself: it must find what is there and nothing else.

fn targets(src: &str, module: &[&str]) -> Vec<(usize, String)> {
    let module: Vec<String> = module.iter().map(|m| m.to_string()).collect();
    edges(src, &module)
        .into_iter()
        .map(|e| (e.line, e.to))
        .collect()
}

#[test]
fn paths_groups_and_doc_links_are_edges() {
    let src = "//! Uses [`crate::alpha::A`].\n\
               use crate::{beta::B, gamma::{self, C}, self as me};\n\
               use crate::delta;\n\
               fn f() { crate::epsilon::go(); }\n";
    assert_eq!(
        targets(src, &["m"]),
        [
            (1, "alpha".into()),
            (2, "beta".into()),
            (2, "gamma".into()),
            (3, "delta".into()),
            (4, "epsilon".into())
        ]
    );
}

#[test]
fn comments_and_literals_are_not_edges() {
    let src = "// `crate::token::Custom`: a path in a plain comment\n\
               /* crate::block /* nested crate::x */ crate::y */\n\
               const S: &str = \"crate::string\";\n\
               const R: &str = r#\"crate::raw \" still\"#;\n\
               const C: char = '\"'; const D: char = '\\'';\n\
               fn g<'a>(x: &'a str) -> &'a str { x }\n\
               use crate::after;\n";
    assert_eq!(targets(src, &["m"]), [(7, "after".into())]);
}

#[test]
fn super_paths_count_only_when_they_leave_the_module() {
    let src = "use super::inside;\n\
               mod tests {\n\
                   use super::super::is_zero;\n\
                   use super::super::super::outside;\n\
               }\n\
               use super::super::{left, right};\n";
    assert_eq!(
        targets(src, &["embed", "hashed"]),
        [
            (4, "outside".into()),
            (6, "left".into()),
            (6, "right".into())
        ]
    );
}

#[test]
fn an_upward_edge_is_refused() {
    assert!(allowed("store", "format"));
    assert!(allowed("mcp", "manager"));
    assert!(!allowed("store", "memory"));
    assert!(!allowed("memory", "index"));
    assert!(!allowed("memory", ROOT));
    assert!(!allowed("gate", "index"));
    assert!(!allowed("format", "store"));
    assert!(!allowed("nonexistent", "key"));
    let found = targets("use crate::memory::Memories;\n", &["store", "x"]);
    assert!(found.iter().any(|(_, t)| !allowed("store", t)));
}
