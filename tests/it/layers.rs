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
//! The same matrix is drawn in `ARCHITECTURE.md`; the crate docs (`src/lib.rs`) draw
//! its tiers. The reader of source is `tests/it/support/crate_paths.rs`.
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
/// - `memory` and `index` are peers: neither knows the other. `search` fuses them;
///   `stale` compares them (which memories' code changed), beneath `search`.
/// - `gate` knows memory (its audit events share the memory writer) but not the index.
/// - `memory_pg` (the PostgreSQL backend) sits above `memory`: it stores what that
///   layer builds, validates and redacts, and never touches a local store.
/// - `open` is the one place that knows every tracker projection of the build.
const ALLOWED: &[(&str, &[&str])] = &[
    ("key", &[]),
    // How many cores the process may use: a leaf any layer may ask.
    ("cores", &[]),
    ("format", &["key"]),
    ("text", &[]),
    ("fts", &["text"]),
    ("embed", &["text", "cores"]),
    ("location", &["key"]),
    ("llm", &["embed"]),
    ("store", &["key", "format", "cores"]),
    ("patterns", &["key", "location", "store"]),
    (
        "memory",
        &["key", "text", "fts", "embed", "store", "patterns", "cores"],
    ),
    (
        "index",
        &["key", "text", "fts", "embed", "store", "patterns", "cores"],
    ),
    ("memory_pg", &["text", "fts", "embed", "memory"]),
    ("stale", &["key", "store", "memory", "index"]),
    (
        "search",
        &[
            "key", "text", "fts", "embed", "store", "memory", "index", "stale",
        ],
    ),
    ("gate", &["key", "text", "store", "patterns", "memory"]),
    (
        "assist",
        &["key", "text", "store", "patterns", "memory", "gate", "llm"],
    ),
    (
        "manager",
        &[
            "key", "text", "fts", "embed", "store", "patterns", "memory", "index", "stale",
            "search", "gate", "llm", "assist",
        ],
    ),
    (
        "mcp",
        &[
            "key", "text", "fts", "embed", "store", "patterns", "memory", "index", "stale",
            "search", "gate", "llm", "assist", "manager",
        ],
    ),
    ("config", &["key", "embed", "location"]),
    ("open", &["store", "memory", "index", "stale"]),
];

/// The crate root (`src/lib.rs`) as an edge's source or target: it declares the
/// modules and may name them all; no module may name an item of the root.
const ROOT: &str = "crate root";
/// The binary: `crate::` there is the binary crate, and the library is `engram::`.
const BINARY: &str = "cli";

use crate::support::crate_paths::edges;

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
        "edges the layering does not allow (tests/it/layers.rs, ALLOWED):\n{}",
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
    let module = ["store".to_string(), "x".to_string()];
    let found = edges("use crate::memory::Memories;\n", &module);
    assert!(found.iter().any(|e| !allowed("store", &e.to)));
}

/// `ARCHITECTURE.md` draws this table: its matrix has the table's rows in the table's
/// order and a ● exactly where the table allows an edge; its code map names every
/// module's file or folder, and its folder table every top-level folder. A change to
/// one without the other fails here, so the document cannot drift.
#[test]
fn architecture_md_draws_the_table() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    // Columns: the modules some module may use, in the table's order.
    let columns: Vec<&str> = ALLOWED
        .iter()
        .map(|(m, _)| *m)
        .filter(|m| ALLOWED.iter().any(|(_, uses)| uses.contains(m)))
        .collect();
    let rows: Vec<Vec<&str>> = doc
        .lines()
        .skip_while(|l| !l.starts_with("uses →"))
        .skip(1)
        .take_while(|l| !l.starts_with("```"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    let names: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    let table: Vec<&str> = ALLOWED.iter().map(|(m, _)| *m).collect();
    assert_eq!(
        names, table,
        "the matrix's rows are not the table's modules"
    );
    let mut wrong = Vec::new();
    for (row, (module, uses)) in rows.iter().zip(ALLOWED) {
        assert_eq!(row.len(), columns.len() + 1, "row {module}: {row:?}");
        for (cell, column) in row[1..].iter().zip(&columns) {
            let want = if column == module {
                "─"
            } else if uses.contains(column) {
                "●"
            } else {
                "·"
            };
            if *cell != want {
                wrong.push(format!(
                    "{module} → {column}: drawn {cell}, the table says {want}"
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "ARCHITECTURE.md's matrix:\n{}",
        wrong.join("\n")
    );

    for m in table.iter().chain(&[BINARY]) {
        assert!(
            doc.contains(&format!("src/{m}.rs")) || doc.contains(&format!("src/{m}/")),
            "ARCHITECTURE.md's code map does not name src/{m}"
        );
    }
    for e in std::fs::read_dir(root).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        // `target/` and `proptest-regressions/` are made by builds and failed runs.
        if !e.path().is_dir()
            || name.starts_with('.')
            || name == "target"
            || name == "proptest-regressions"
        {
            continue;
        }
        assert!(
            doc.contains(&format!("| `{name}/` |")),
            "ARCHITECTURE.md's folder table does not name {name}/"
        );
    }
}

/// The workspace's other crates, beneath the whole library: engram uses them, they use
/// nothing of engram. `crates/engram-secrets` (the secret detector) must never need
/// engram's storage: no `engram` dependency, no storage crate, no `engram::` path.
const WORKSPACE_CRATES: &[&str] = &["engram-secrets"];

/// Dependencies a workspace crate may not have: engram itself and what its storage uses.
const STORAGE_DEPS: &[&str] = &["engram", "rusqlite", "memmap2", "simsimd", "zerocopy"];

#[test]
fn workspace_crates_stand_below_engram() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let mut bad = Vec::new();
    for name in WORKSPACE_CRATES {
        let dir = root.join("crates").join(name);
        assert!(
            doc.contains(&format!("crates/{name}")),
            "ARCHITECTURE.md does not name crates/{name}"
        );
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml"))
            .unwrap_or_else(|e| panic!("crates/{name}/Cargo.toml: {e}"));
        let mut section = "";
        for line in manifest.lines().map(str::trim) {
            if line.starts_with('[') {
                section = line;
                continue;
            }
            let dep = line.split(['=', '.', ' ']).next().unwrap_or("");
            if section == "[dependencies]" && STORAGE_DEPS.contains(&dep) {
                bad.push(format!("crates/{name}/Cargo.toml depends on {dep}"));
            }
        }
        let mut paths = Vec::new();
        rust_files(&dir.join("src"), &mut paths);
        assert!(!paths.is_empty(), "crates/{name}/src has no Rust files");
        for p in &paths {
            let text = std::fs::read_to_string(p).unwrap();
            if !text.starts_with("//!") {
                bad.push(format!("{} has no `//!` module doc", p.display()));
            }
            for (n, l) in text.lines().enumerate() {
                if l.contains("engram::") && !l.trim_start().starts_with("//") {
                    bad.push(format!("{}:{}: names engram", p.display(), n + 1));
                }
            }
        }
    }
    // A member of the workspace, so `cargo test --workspace` (tools/test.sh) runs its tests.
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    for name in WORKSPACE_CRATES {
        assert!(
            manifest.contains(&format!("\"crates/{name}\"")),
            "Cargo.toml's workspace does not list crates/{name}"
        );
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
