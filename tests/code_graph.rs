//! The code graph: call edges and imports recorded per file at index time, resolved
//! with a confidence when asked; replaced when a file changes, gone when it is
//! deleted, identical after a rebuild. Fixture repositories under
//! `tests/fixtures/graph/` (Python: methods through `self`, an aliased import, a
//! module alias, a shadowed name, an ambiguous method; Rust: an aliased `use`,
//! `Self`-style paths, `self.` calls).

use std::path::{Path, PathBuf};

use engram::index::graph::{edges_of_file, Confidence};
use engram::index::{self, IndexOptions};
use engram::store::{Store, StoreOptions};

fn open(dir: &Path) -> Store {
    Store::open(dir, StoreOptions::default(), engram::projections()).unwrap()
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/graph")
        .join(name)
}

/// A copy of a fixture repository, to edit.
fn copy_fixture(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture(name), dir.path());
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

fn index_once(store: &Store, root: &Path) {
    let opts = IndexOptions {
        threads: 1,
        ..IndexOptions::default()
    };
    index::index(store, root, &opts).unwrap();
}

type E = (u64, u64, Option<String>, String, Confidence);

/// (line, column, caller key, target key, confidence) of every edge out of `path`.
fn edges(store: &Store, path: &str) -> Vec<E> {
    edges_of_file(store, path)
        .unwrap()
        .into_iter()
        .map(|e| (e.line, e.column, e.caller, e.target, e.confidence))
        .collect()
}

fn e(line: u64, col: u64, caller: &str, target: &str, c: Confidence) -> E {
    (line, col, Some(caller.to_string()), target.to_string(), c)
}

/// Every row of the graph's tables, ordered, as text.
fn graph_rows(store: &Store) -> Vec<String> {
    store
        .with_tracker(|db| {
            let mut out = Vec::new();
            for sql in [
                "SELECT path || ' ' || lang FROM code_ref_files ORDER BY path",
                "SELECT path || ' ' || name || ' ' || qual || ' ' || line || ':' || col || ' ' || kind || ' ' || coalesce(caller, '-') FROM code_calls ORDER BY path, line, col, name",
                "SELECT path || ' ' || module || ' ' || coalesce(name, '-') || ' ' || coalesce(bind, '-') || ' ' || line FROM code_imports ORDER BY path, line, module, name",
            ] {
                let mut stmt = db.prepare(sql)?;
                let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
                out.extend(rows.collect::<rusqlite::Result<Vec<_>>>()?);
            }
            Ok(out)
        })
        .unwrap()
}

use Confidence::*;

const RUN: &str = "sym:pkg/app.py#Service.run:method:6:8";
const STEP: &str = "sym:pkg/app.py#Service.step:method:10:11";
const MAIN: &str = "sym:pkg/app.py#main:function:21:26";
const HELPER: &str = "sym:pkg/util.py#helper:function:1:2";

#[test]
fn python_edges_resolve_self_aliases_and_shadowed_names() {
    let store_dir = tempfile::tempdir().unwrap();
    let store = open(store_dir.path());
    index_once(&store, &fixture("py"));
    assert_eq!(
        edges(&store, "pkg/app.py"),
        [
            // `self.step()`: the enclosing class's own method.
            e(7, 14, RUN, STEP, Resolved),
            // `h(1)`, `from pkg.util import helper as h`.
            e(8, 16, RUN, HELPER, Imported),
            // `u.helper(2)`, `import pkg.util as u`.
            e(11, 18, STEP, HELPER, Imported),
            e(22, 9, MAIN, "sym:pkg/app.py#Service:class:5:14", Resolved),
            // `s.run()`: no type inference; one method named `run`.
            e(23, 7, MAIN, RUN, SameName),
            // The file's own `shadowed`, not util's.
            e(
                24,
                5,
                MAIN,
                "sym:pkg/app.py#shadowed:function:17:18",
                Resolved
            ),
            // `s.close()`: two methods named `close`.
            e(
                25,
                7,
                MAIN,
                "sym:pkg/app.py#Service.close:method:13:14",
                Ambiguous
            ),
            e(
                25,
                7,
                MAIN,
                "sym:pkg/util.py#Conn.close:method:10:11",
                Ambiguous
            ),
        ]
    );
    // `print` reaches nothing in the repository; util calls nothing.
    assert!(edges(&store, "pkg/util.py").is_empty());
    let rows = graph_rows(&store);
    assert!(
        rows.contains(&"pkg/__init__.py .util helper assist 1".to_string()),
        "{rows:#?}"
    );
    assert!(
        rows.contains(&format!("pkg/app.py print  26:5 call {MAIN}")),
        "{rows:#?}"
    );
}

#[test]
fn rust_edges_resolve_use_aliases_and_self_calls() {
    let store_dir = tempfile::tempdir().unwrap();
    let store = open(store_dir.path());
    index_once(&store, &fixture("rs"));
    let open_fn = "sym:src/lib.rs#open:function:4:9";
    assert_eq!(
        edges(&store, "src/lib.rs"),
        [
            // `Db::new()`, `use crate::store::Store as Db`.
            e(
                5,
                18,
                open_fn,
                "sym:src/store.rs#Store::new:method:4:6",
                Imported
            ),
            // `db.flush()`: by name.
            e(
                6,
                8,
                open_fn,
                "sym:src/store.rs#Store::flush:method:12:14",
                SameName
            ),
            e(
                7,
                5,
                open_fn,
                "sym:src/lib.rs#helper:function:11:11",
                Resolved
            ),
        ]
    );
    assert_eq!(
        edges(&store, "src/store.rs"),
        [
            e(
                5,
                16,
                "sym:src/store.rs#Store::new:method:4:6",
                "sym:src/store.rs#Store::make:method:8:10",
                Resolved
            ),
            e(
                13,
                14,
                "sym:src/store.rs#Store::flush:method:12:14",
                "sym:src/store.rs#Store::write:method:16:16",
                Resolved
            ),
        ]
    );
}

#[test]
fn edges_are_replaced_on_change_removed_on_delete_and_identical_after_rebuild() {
    let repo = copy_fixture("py");
    let rs = copy_fixture("rs");
    copy_dir(rs.path(), repo.path());
    let store_dir = tempfile::tempdir().unwrap();
    let store = open(store_dir.path());
    index_once(&store, repo.path());
    let before = graph_rows(&store);
    assert_eq!(edges(&store, "pkg/app.py").len(), 8);

    // Rebuilt from the log alone: the same rows, the same edges.
    let app_edges = edges(&store, "pkg/app.py");
    store.rebuild().unwrap();
    assert_eq!(graph_rows(&store), before);
    assert_eq!(edges(&store, "pkg/app.py"), app_edges);

    // An edited file's calls replace its old ones.
    let app = repo.path().join("pkg/app.py");
    let text = std::fs::read_to_string(&app).unwrap();
    std::fs::write(
        &app,
        text.replace("    shadowed()\n", "    h(3)\n")
            .replace("    s.close()\n", ""),
    )
    .unwrap();
    index_once(&store, repo.path());
    let main = "sym:pkg/app.py#main:function:21:25";
    assert_eq!(
        edges(&store, "pkg/app.py"),
        [
            e(7, 14, RUN, STEP, Resolved),
            e(8, 16, RUN, HELPER, Imported),
            e(11, 18, STEP, HELPER, Imported),
            e(22, 9, main, "sym:pkg/app.py#Service:class:5:14", Resolved),
            e(23, 7, main, RUN, SameName),
            e(24, 5, main, HELPER, Imported),
        ]
    );
    let calls_of = |store: &Store, path: &str| -> i64 {
        store
            .with_tracker(|db| {
                Ok(db.query_row(
                    "SELECT count(*) FROM code_calls WHERE path = ?1",
                    [path],
                    |r| r.get(0),
                )?)
            })
            .unwrap()
    };
    assert_eq!(
        calls_of(&store, "pkg/app.py"),
        7,
        "no call of the old text is left"
    );

    // A deleted file's rows are gone, and calls into it reach nothing.
    std::fs::remove_file(repo.path().join("src/store.rs")).unwrap();
    index_once(&store, repo.path());
    assert_eq!(calls_of(&store, "src/store.rs"), 0);
    assert!(edges(&store, "src/store.rs").is_empty());
    assert_eq!(
        edges(&store, "src/lib.rs"),
        [e(
            7,
            5,
            "sym:src/lib.rs#open:function:4:9",
            "sym:src/lib.rs#helper:function:11:11",
            Resolved
        )]
    );
    assert!(!graph_rows(&store)
        .iter()
        .any(|r| r.starts_with("src/store.rs")));
    let after = graph_rows(&store);
    store.rebuild().unwrap();
    assert_eq!(graph_rows(&store), after);
}
