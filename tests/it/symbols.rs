//! Symbol extraction per language on real-looking fixtures (`tests/fixtures/symbols`),
//! symbol-aware chunking, hostile input, and symbol lookup through a real store.

use engram::index::symbols::{chunk_file, extract, Symbol, SymbolKind};
use engram::index::{self, language, IndexOptions};
use engram::search::{search, HitKind, SearchOptions};
use engram::store::{Store, StoreOptions};
use proptest::prelude::*;

fn fixture(name: &str) -> (String, Vec<Symbol>, Vec<String>) {
    let path = format!(
        "{}/tests/fixtures/symbols/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let found = extract(language(name), &text).expect("a grammar");
    (text, found.symbols, found.imports)
}

/// The symbol with this qualified name; fails the test naming what was found.
fn sym<'a>(symbols: &'a [Symbol], qualified: &str) -> &'a Symbol {
    symbols
        .iter()
        .find(|s| s.qualified_name == qualified)
        .unwrap_or_else(|| {
            let names: Vec<&str> = symbols.iter().map(|s| s.qualified_name.as_str()).collect();
            panic!("no {qualified}; found {names:?}")
        })
}

fn check(s: &Symbol, kind: SymbolKind, lines: (u64, u64)) {
    assert_eq!(s.kind, kind, "{}", s.qualified_name);
    assert_eq!((s.start_line, s.end_line), lines, "{}", s.qualified_name);
}

#[test]
fn rust() {
    let (_, s, imports) = fixture("sample.rs");
    check(sym(&s, "MAX_VALUE"), SymbolKind::Constant, (7, 7));
    check(sym(&s, "Client"), SymbolKind::Struct, (11, 13));
    assert_eq!(
        sym(&s, "Client").doc.as_deref(),
        Some("A client with a local cache.")
    );
    check(sym(&s, "Store"), SymbolKind::Trait, (16, 19));
    check(sym(&s, "Store::get"), SymbolKind::Method, (18, 18));
    let new = sym(&s, "Client::new");
    check(new, SymbolKind::Method, (23, 25));
    assert_eq!(new.parent.as_deref(), Some("Client"));
    assert_eq!(new.doc.as_deref(), Some("Make an empty client."));
    assert_eq!(new.signature, "pub fn new() -> Self");
    let get = sym(&s, "Client::get");
    assert_eq!(get.doc, None, "a plain // comment is not documentation");
    assert!(
        get.calls.contains(&"is_empty".to_string()),
        "{:?}",
        get.calls
    );
    assert_eq!(get.complexity, 3, "if + ||");
    check(sym(&s, "Mode"), SymbolKind::Enum, (36, 39));
    check(sym(&s, "wire"), SymbolKind::Module, (41, 45));
    check(sym(&s, "wire::encode"), SymbolKind::Function, (42, 44));
    assert_eq!(imports, ["use std::collections::HashMap;", "use std::io;"]);
}

#[test]
fn python() {
    let (_, s, imports) = fixture("sample.py");
    check(sym(&s, "MAX_RETRIES"), SymbolKind::Constant, (5, 5));
    let class = sym(&s, "Session");
    check(class, SymbolKind::Class, (8, 24));
    assert_eq!(
        class.doc.as_deref(),
        Some("A connection pool with retries.")
    );
    check(sym(&s, "Session.__init__"), SymbolKind::Method, (11, 12));
    check(sym(&s, "Session.closed"), SymbolKind::Method, (15, 16));
    let req = sym(&s, "Session.request");
    check(req, SymbolKind::Method, (18, 24));
    assert_eq!(
        req.doc.as_deref(),
        Some("Send one request and decode the JSON reply.")
    );
    assert_eq!(req.parent.as_deref(), Some("Session"));
    for c in ["urljoin", "loads", "send"] {
        assert!(req.calls.contains(&c.to_string()), "{c} in {:?}", req.calls);
    }
    assert_eq!(req.complexity, 4, "for + if + and");
    let connect = sym(&s, "connect");
    check(connect, SymbolKind::Function, (28, 29));
    assert_eq!(
        connect.doc.as_deref(),
        Some("Build a session for the default host.")
    );
    assert_eq!(imports.len(), 2);
}

#[test]
fn go() {
    let (_, s, imports) = fixture("sample.go");
    check(sym(&s, "MaxRetries"), SymbolKind::Constant, (9, 9));
    check(sym(&s, "Client"), SymbolKind::Struct, (12, 15));
    check(sym(&s, "Getter"), SymbolKind::Interface, (18, 20));
    let get = sym(&s, "Client.Get");
    check(get, SymbolKind::Method, (23, 30));
    assert_eq!(get.doc.as_deref(), Some("Get fetches one path."));
    assert_eq!(
        get.signature,
        "func (c *Client) Get(path string) (string, error)"
    );
    assert!(get.calls.contains(&"Errorf".to_string()));
    check(sym(&s, "New"), SymbolKind::Function, (33, 35));
    assert_eq!(imports, ["\"fmt\"", "\"net/http\""]);
}

#[test]
fn javascript_typescript_and_tsx() {
    let (_, s, _) = fixture("sample.js");
    check(sym(&s, "ConfigLoader"), SymbolKind::Class, (4, 14));
    let load = sym(&s, "ConfigLoader.load");
    check(load, SymbolKind::Method, (10, 13));
    assert_eq!(load.doc.as_deref(), Some("Load and parse one file."));
    check(sym(&s, "mergeConfigs"), SymbolKind::Function, (17, 17));
    assert_eq!(
        sym(&s, "mergeConfigs").doc.as_deref(),
        Some("Merge two configs, right wins.")
    );
    assert!(sym(&s, "defaultLoader")
        .calls
        .contains(&"ConfigLoader".to_string()));

    let (_, s, _) = fixture("sample.ts");
    check(sym(&s, "Cacheable"), SymbolKind::Interface, (4, 6));
    assert_eq!(
        sym(&s, "Cacheable").doc.as_deref(),
        Some("Something that can be cached.")
    );
    check(sym(&s, "Millis"), SymbolKind::TypeAlias, (8, 8));
    check(sym(&s, "Level"), SymbolKind::Enum, (10, 10));
    check(sym(&s, "LruCache"), SymbolKind::Class, (13, 28));
    let put = sym(&s, "LruCache.put");
    check(put, SymbolKind::Method, (17, 22));
    assert_eq!(put.complexity, 3, "if + &&");
    check(sym(&s, "makeCache"), SymbolKind::Function, (30, 32));

    let (_, s, _) = fixture("sample.tsx");
    check(sym(&s, "Greeting"), SymbolKind::Function, (4, 6));
    assert_eq!(sym(&s, "Greeting").doc.as_deref(), Some("A greeting card."));
    check(sym(&s, "Farewell"), SymbolKind::Function, (8, 8));
}

#[test]
fn java_and_csharp() {
    let (_, s, _) = fixture("Sample.java");
    check(sym(&s, "InvoiceService"), SymbolKind::Class, (6, 28));
    check(
        sym(&s, "InvoiceService.TAX_RATE"),
        SymbolKind::Constant,
        (8, 8),
    );
    let total = sym(&s, "InvoiceService.total");
    check(total, SymbolKind::Method, (17, 23));
    assert_eq!(total.doc.as_deref(), Some("Total of all lines with tax."));
    assert!(total.calls.contains(&"parseDouble".to_string()));
    check(
        sym(&s, "InvoiceService.Rounding"),
        SymbolKind::Interface,
        (25, 27),
    );

    let (_, s, imports) = fixture("Sample.cs");
    check(sym(&s, "Shop.Orders"), SymbolKind::Module, (4, 28));
    check(
        sym(&s, "Shop.Orders.OrderService"),
        SymbolKind::Class,
        (7, 20),
    );
    let add = sym(&s, "Shop.Orders.OrderService.Add");
    check(add, SymbolKind::Method, (14, 19));
    assert!(add.doc.as_deref().unwrap_or("").contains("Add an item"));
    check(
        sym(&s, "Shop.Orders.IOrderStore"),
        SymbolKind::Interface,
        (22, 25),
    );
    check(sym(&s, "Shop.Orders.Status"), SymbolKind::Enum, (27, 27));
    assert_eq!(imports.len(), 2);
}

#[test]
fn c_and_cpp() {
    let (_, s, imports) = fixture("sample.c");
    check(sym(&s, "BUF_SIZE"), SymbolKind::Constant, (4, 4));
    check(sym(&s, "buffer"), SymbolKind::Struct, (7, 10));
    check(sym(&s, "mode"), SymbolKind::Enum, (12, 12));
    let append = sym(&s, "buffer_append");
    check(append, SymbolKind::Function, (15, 22));
    assert_eq!(
        append.doc.as_deref(),
        Some("Append n bytes, growing as needed.")
    );
    assert_eq!(append.complexity, 3, "if + ||");
    check(sym(&s, "dup_string"), SymbolKind::Function, (24, 26));
    assert_eq!(imports, ["#include <stdio.h>", "#include <stdlib.h>"]);

    let (_, s, _) = fixture("sample.cpp");
    check(sym(&s, "net"), SymbolKind::Module, (4, 24));
    check(sym(&s, "net::Client"), SymbolKind::Class, (7, 14));
    let get = sym(&s, "net::Client::get");
    check(get, SymbolKind::Method, (17, 22));
    assert_eq!(get.doc.as_deref(), Some("Fetch one path."));
    check(sym(&s, "main"), SymbolKind::Function, (26, 29));
}

#[test]
fn ruby_and_php() {
    let (_, s, _) = fixture("sample.rb");
    check(sym(&s, "Reporting"), SymbolKind::Module, (4, 22));
    check(sym(&s, "Reporting.Report"), SymbolKind::Class, (6, 21));
    assert_eq!(
        sym(&s, "Reporting.Report").doc.as_deref(),
        Some("Builds one report.")
    );
    check(
        sym(&s, "Reporting.Report.LIMIT"),
        SymbolKind::Constant,
        (7, 7),
    );
    let render = sym(&s, "Reporting.Report.render");
    check(render, SymbolKind::Method, (14, 16));
    assert_eq!(render.doc.as_deref(), Some("Render as JSON."));
    check(
        sym(&s, "Reporting.Report.empty"),
        SymbolKind::Method,
        (18, 20),
    );

    let (_, s, imports) = fixture("sample.php");
    check(sym(&s, "Mailer"), SymbolKind::Interface, (7, 9));
    check(sym(&s, "SmtpMailer"), SymbolKind::Class, (12, 20));
    let send = sym(&s, "SmtpMailer.send");
    check(send, SymbolKind::Method, (14, 19));
    assert_eq!(send.doc.as_deref(), Some("Deliver one message."));
    assert!(send.calls.contains(&"mail".to_string()));
    check(sym(&s, "make_mailer"), SymbolKind::Function, (22, 24));
    assert_eq!(imports, ["use App\\Models\\User;"]);
}

#[test]
fn broken_and_absurd_input_never_panics() {
    let broken = "fn main( {\n  let x = ;\n}\nstruct Ok { a: u8 }\n";
    let s = extract("rust", broken).unwrap().symbols;
    assert!(s.iter().any(|s| s.name == "Ok"), "{s:?}");
    // Nesting far deeper than any stack would survive if the walk recursed.
    let deep = format!("x = {}1{}\n", "(".repeat(50_000), ")".repeat(50_000));
    assert!(extract("python", &deep).is_some());
    let deep_js = format!(
        "function f() {{ return {}0{}; }}\n",
        "[".repeat(20_000),
        "]".repeat(20_000)
    );
    assert_eq!(extract("javascript", &deep_js).unwrap().symbols.len(), 1);
    assert!(extract("cobol", "IDENTIFICATION DIVISION.").is_none());
    assert_eq!(extract("go", "").unwrap().symbols.len(), 0);
}

#[test]
fn long_functions_are_cut_with_their_signature_and_small_ones_merged() {
    let mut text = String::from("use std::io;\n\nconst A: u8 = 1;\nconst B: u8 = 2;\n\n");
    text.push_str("pub fn very_long_function(input: &str) -> usize {\n");
    for i in 0..300 {
        text.push_str(&format!("    let v{i} = input.len() + {i};\n"));
    }
    text.push_str("    0\n}\n\nfn tail() {}\n");
    let found = extract("rust", &text).unwrap();
    let chunks = chunk_file("rust", &text, &found.symbols);
    let n_lines = text.lines().count() as u64;
    // Every line is in some chunk.
    for line in 1..=n_lines {
        assert!(
            chunks
                .iter()
                .any(|c| c.start_line <= line && line <= c.end_line),
            "line {line}"
        );
    }
    // The import is the header; the two constants merge (same parent, both small).
    assert_eq!((chunks[0].start_line, chunks[0].end_line), (1, 2));
    assert_eq!(chunks[0].context, "header");
    assert_eq!((chunks[1].start_line, chunks[1].end_line), (3, 5));
    let windows: Vec<_> = chunks
        .iter()
        .filter(|c| c.symbol.as_deref() == Some("very_long_function"))
        .collect();
    assert!(windows.len() >= 5, "{}", windows.len());
    for w in &windows {
        // The signature is in every piece's context line, not in its text.
        assert!(
            w.context
                .contains("pub fn very_long_function(input: &str) -> usize"),
            "{}",
            w.context
        );
        assert!(w.end_line + 1 - w.start_line <= 60);
    }
    assert!(windows[0].text.starts_with("pub fn very_long_function"));
    assert!(windows[1].text.starts_with("    let v"));
    let md = "# Title\nintro\n\n## Install\nrun it\n```\n# not a heading\n```\n## Use\nmore\n";
    let md_chunks = chunk_file("markdown", md, &[]);
    assert_eq!(md_chunks.len(), 1, "small sections merge: {md_chunks:?}");
    let big_md: String = (0..3)
        .map(|s| format!("# Section {s}\n{}", "text line\n".repeat(40)))
        .collect();
    let md_chunks = chunk_file("markdown", &big_md, &[]);
    assert_eq!(md_chunks.len(), 3);
    assert_eq!(md_chunks[1].symbol.as_deref(), Some("Section 1"));
    assert_eq!(md_chunks[1].start_line, 42);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn chunks_cover_every_line(
        lines in proptest::collection::vec(
            prop_oneof![
                Just("fn f() {".to_string()), Just("}".to_string()), Just("class A:".to_string()),
                Just("    def m(self):".to_string()), Just("        pass".to_string()),
                Just("# heading".to_string()), Just("".to_string()), "[a-z {}();]{0,20}",
            ],
            0..400,
        ),
        lang in prop_oneof![Just("rust"), Just("python"), Just("markdown"), Just("text")],
    ) {
        let text = lines.join("\n");
        let syms = extract(lang, &text).map(|f| f.symbols).unwrap_or_default();
        let chunks = chunk_file(lang, &text, &syms);
        let n = text.split_inclusive('\n').count() as u64;
        for line in 1..=n {
            prop_assert!(chunks.iter().any(|c| c.start_line <= line && line <= c.end_line), "line {} of {}", line, n);
        }
        for c in &chunks {
            prop_assert!(c.start_line >= 1 && c.start_line <= c.end_line && c.end_line <= n);
        }
    }
}

#[test]
fn symbols_are_stored_looked_up_and_replaced_on_reindex() {
    let repo = tempfile::tempdir().unwrap();
    let src = format!("{}/tests/fixtures/symbols", env!("CARGO_MANIFEST_DIR"));
    for e in std::fs::read_dir(&src).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), repo.path().join(e.file_name())).unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), StoreOptions::default(), engram::projections()).unwrap();
    let r = index::index(&store, repo.path(), &IndexOptions::default()).unwrap();
    assert!(r.symbols >= 60, "{r:?}");
    for (q, want) in [
        ("Session.request", "Session.request"),
        ("request", "Session.request"),
        ("sesreq", "Session.request"),
        ("buffer_app", "buffer_append"),
    ] {
        let found = index::lookup_symbols(&store, q, 5).unwrap();
        assert_eq!(
            found.first().map(|s| s.qualified_name.as_str()),
            Some(want),
            "{q}"
        );
    }
    // Search can return symbols and whole files, not only chunks.
    let kind_search = |kind: HitKind| {
        search(
            &store,
            "LruCache",
            &SearchOptions {
                kind: Some(kind),
                top_k: 3,
                ..Default::default()
            },
        )
        .unwrap()
        .hits
    };
    let hits = kind_search(HitKind::Symbol);
    assert_eq!(hits[0].key, "sym:sample.ts#LruCache:class:13:28");
    assert_eq!(hits[0].symbol.as_deref(), Some("LruCache"));
    assert!(hits.iter().all(|h| h.kind == HitKind::Symbol));
    let hits = kind_search(HitKind::File);
    assert_eq!(hits[0].key, "file:sample.ts");
    let mut paths: Vec<_> = hits.iter().map(|h| h.path.clone()).collect();
    paths.dedup();
    assert_eq!(paths.len(), hits.len(), "a file listed twice");
    let key = &index::lookup_symbols(&store, "Session.request", 1).unwrap()[0].key;
    assert_eq!(key, "sym:sample.py#Session.request:method:18:24");
    assert!(store.get(key).unwrap().is_some());
    // Edit: the method moves; the old key is tombstoned, the new one is there.
    let py = repo.path().join("sample.py");
    let text = std::fs::read_to_string(&py).unwrap();
    std::fs::write(&py, format!("\n\n{text}")).unwrap();
    index::index(&store, repo.path(), &IndexOptions::default()).unwrap();
    assert!(store.get(key).unwrap().is_none());
    assert!(store
        .get("sym:sample.py#Session.request:method:20:26")
        .unwrap()
        .is_some());
    // Delete: all its symbols go.
    std::fs::remove_file(&py).unwrap();
    index::index(&store, repo.path(), &IndexOptions::default()).unwrap();
    assert!(index::lookup_symbols(&store, "Session", 5)
        .unwrap()
        .iter()
        .all(|s| s.path != "sample.py"));
    assert!(engram::store::verify(dir.path()).unwrap().is_sound());
}

#[test]
fn a_query_naming_a_symbol_finds_the_same_case_first_among_many() {
    // 60 `Parse` classes and one `parse` function: a query `parse` must rank the
    // function first, and the exact-name step must hold more than the fetch limit's
    // worth of other-case names without dropping it.
    let repo = tempfile::tempdir().unwrap();
    for i in 0..60 {
        std::fs::write(
            repo.path().join(format!("a{i:02}.py")),
            format!("class Parse:\n    def run(self):\n        return {i}\n"),
        )
        .unwrap();
    }
    std::fs::write(
        repo.path().join("zz_last.py"),
        "def parse(text):\n    return text.split()\n",
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), StoreOptions::default(), engram::projections()).unwrap();
    index::index(&store, repo.path(), &IndexOptions::default()).unwrap();
    for kind in [Some(HitKind::Symbol), None] {
        let hits = search(
            &store,
            "parse",
            &SearchOptions {
                kind,
                top_k: 5,
                ..Default::default()
            },
        )
        .unwrap()
        .hits;
        assert_eq!(
            hits[0].path.as_deref(),
            Some("zz_last.py"),
            "{kind:?}: {hits:?}"
        );
        // The other-case names still count as named: they follow it.
        assert!(
            hits[1..]
                .iter()
                .all(|h| h.path.as_deref().unwrap().starts_with('a')),
            "{hits:?}"
        );
    }
}

/// A file in `lang` with a header, a type whose members span more than one chunk (one
/// of them holding a closure or nested function), and a 150-line function: the shapes
/// symbol chunking must cut well.
fn shaped_source(lang: &str) -> String {
    let mut t = String::new();
    let body = |t: &mut String, indent: &str, stmt: &dyn Fn(usize) -> String, n: usize| {
        for i in 0..n {
            t.push_str(indent);
            t.push_str(&stmt(i));
            t.push('\n');
        }
    };
    match lang {
        "rust" => {
            t.push_str("//! Module docs.\n\nuse std::io;\nuse std::fmt;\n\n");
            t.push_str("pub struct Engine {\n    n: usize,\n}\n\nimpl Engine {\n");
            for m in 0..8 {
                t.push_str(&format!(
                    "    /// Method {m}.\n    pub fn method_{m}(&self, x: usize) -> usize {{\n"
                ));
                if m == 3 {
                    t.push_str("        let f = |y: usize| {\n            y + 1\n        };\n");
                }
                body(&mut t, "        ", &|i| format!("let v{i} = x + {i};"), 6);
                t.push_str("        x\n    }\n\n");
            }
            t.push_str("}\n\npub fn long_function(input: &str) -> usize {\n");
            body(
                &mut t,
                "    ",
                &|i| {
                    if i % 10 == 9 {
                        format!("if input.len() > {i} {{\n        println!(\"{i}\");\n    }}")
                    } else {
                        format!("let v{i} = input.len() + {i};")
                    }
                },
                150,
            );
            t.push_str("    0\n}\n");
        }
        "python" => {
            t.push_str("\"\"\"Module docs.\"\"\"\n\nimport os\nimport sys\n\n\nclass Engine:\n    \"\"\"An engine.\"\"\"\n\n");
            for m in 0..8 {
                t.push_str(&format!(
                    "    # Method {m}.\n    def method_{m}(self, x):\n"
                ));
                if m == 3 {
                    t.push_str("        def inner(y):\n            return y + 1\n");
                }
                body(&mut t, "        ", &|i| format!("v{i} = x + {i}"), 6);
                t.push_str("        return x\n\n");
            }
            t.push_str("\ndef long_function(data):\n");
            body(
                &mut t,
                "    ",
                &|i| {
                    if i % 10 == 9 {
                        format!("if len(data) > {i}:\n        print({i})")
                    } else {
                        format!("v{i} = len(data) + {i}")
                    }
                },
                150,
            );
            t.push_str("    return 0\n");
        }
        "go" => {
            t.push_str("// Package engine does things.\npackage engine\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\n");
            t.push_str("type Engine struct {\n\tn int\n}\n\n");
            for m in 0..8 {
                t.push_str(&format!(
                    "// Method{m} does {m}.\nfunc (e *Engine) Method{m}(x int) int {{\n"
                ));
                if m == 3 {
                    t.push_str("\tf := func(y int) int {\n\t\treturn y + 1\n\t}\n\t_ = f\n");
                }
                body(&mut t, "\t", &|i| format!("v{i} := x + {i}; _ = v{i}"), 6);
                t.push_str("\treturn x\n}\n\n");
            }
            t.push_str("func LongFunction(input string) int {\n");
            body(
                &mut t,
                "\t",
                &|i| {
                    if i % 10 == 9 {
                        format!("if len(input) > {i} {{\n\t\tfmt.Println({i})\n\t}}")
                    } else {
                        format!("v{i} := len(input) + {i}; _ = v{i}")
                    }
                },
                150,
            );
            t.push_str("\treturn 0\n}\n");
        }
        _ => {
            // JavaScript and TypeScript alike.
            t.push_str("// Module docs.\nimport fs from 'fs';\nimport path from 'path';\n\n");
            t.push_str("export class Engine {\n");
            for m in 0..8 {
                t.push_str(&format!("  /** Method {m}. */\n  method_{m}(x) {{\n"));
                if m == 3 {
                    t.push_str("    const f = (y) => {\n      return y + 1;\n    };\n");
                }
                body(&mut t, "    ", &|i| format!("const v{i} = x + {i};"), 6);
                t.push_str("    return x;\n  }\n\n");
            }
            t.push_str("}\n\nexport function longFunction(input) {\n");
            body(
                &mut t,
                "  ",
                &|i| {
                    if i % 10 == 9 {
                        format!("if (input.length > {i}) {{\n    console.log({i});\n  }}")
                    } else {
                        format!("const v{i} = input.length + {i};")
                    }
                },
                150,
            );
            t.push_str("  return 0;\n}\n");
        }
    }
    t
}

/// Every line in exactly one chunk, each chunk's text its own lines.
fn assert_partition(what: &str, text: &str, chunks: &[engram::index::symbols::SymbolChunk]) {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut owner = vec![0usize; lines.len() + 1];
    for c in chunks {
        assert!(
            c.start_line >= 1 && c.start_line <= c.end_line,
            "{what}: {c:?}"
        );
        assert_eq!(
            c.text,
            lines[c.start_line as usize - 1..c.end_line as usize].concat(),
            "{what}: a chunk's text is its source lines"
        );
        for l in c.start_line..=c.end_line {
            owner[l as usize] += 1;
        }
    }
    for (l, n) in owner.iter().enumerate().skip(1) {
        assert_eq!(*n, 1, "{what}: line {l} is in {n} chunks");
    }
}

#[test]
fn chunks_are_symbols_per_language() {
    for (lang, long_name) in [
        ("rust", "long_function"),
        ("python", "long_function"),
        ("go", "LongFunction"),
        ("javascript", "longFunction"),
        ("typescript", "longFunction"),
    ] {
        let text = shaped_source(lang);
        let syms = extract(lang, &text).expect("grammar").symbols;
        let chunks = chunk_file(lang, &text, &syms);
        assert_partition(lang, &text, &chunks);
        let lines: Vec<&str> = text.lines().collect();

        // The header (module docs, imports) is a chunk of its own.
        let first_sym = syms.iter().map(|s| s.start_line).min().unwrap();
        assert_eq!(chunks[0].start_line, 1, "{lang}");
        assert!(
            chunks[0].end_line < first_sym,
            "{lang}: header {:?}",
            chunks[0]
        );
        assert_eq!(chunks[0].context, "header", "{lang}");
        assert!(
            chunks[0].text.contains("import") || chunks[0].text.contains("use "),
            "{lang}"
        );

        // Each method is whole in one chunk with its doc comment, and that chunk holds
        // no line of another type's symbol; the chunk names the method's type.
        for m in 0..8 {
            let name = if lang == "go" {
                format!("Method{m}")
            } else {
                format!("method_{m}")
            };
            let s = syms
                .iter()
                .find(|s| s.name == name)
                .unwrap_or_else(|| panic!("{lang}: no {name}"));
            let c = chunks
                .iter()
                .find(|c| c.start_line <= s.start_line && s.start_line <= c.end_line)
                .unwrap();
            assert!(
                c.end_line >= s.end_line,
                "{lang}: {name} {s:?} cut by {c:?}"
            );
            assert!(
                lines[c.start_line as usize - 1..s.start_line as usize]
                    .iter()
                    .any(|l| l.contains(&format!("Method {m}"))
                        || l.contains(&format!("Method{m} does"))),
                "{lang}: {name}'s doc comment is in its chunk: {c:?}"
            );
            assert!(c.context.contains("Engine"), "{lang}: {:?}", c.context);
            assert!(c.end_line + 1 - c.start_line <= 30, "{lang}: {c:?}");
            for other in &syms {
                let inside = c.start_line <= other.start_line && other.end_line <= c.end_line;
                let nested = s.start_line <= other.start_line && other.end_line <= s.end_line;
                assert!(
                    !inside || nested || other.parent == s.parent,
                    "{lang}: {name}'s chunk holds {other:?}"
                );
            }
        }

        // The long function is cut into pieces of at most 60 lines, each starting at
        // a statement of its body (or its declaration), each naming its signature.
        let long = syms.iter().find(|s| s.name == long_name).unwrap();
        let pieces: Vec<_> = chunks
            .iter()
            .filter(|c| c.symbol.as_deref() == Some(long_name))
            .collect();
        assert!(pieces.len() >= 3, "{lang}: {pieces:?}");
        let indent = |l: &str| l.len() - l.trim_start().len();
        let level = indent(lines[long.start_line as usize]);
        for p in &pieces {
            assert!(p.end_line + 1 - p.start_line <= 60, "{lang}: {p:?}");
            assert!(p.context.contains(long_name), "{lang}: {:?}", p.context);
            let first = lines[p.start_line as usize - 1];
            assert!(
                p.start_line <= long.start_line || indent(first) == level,
                "{lang}: a piece starts inside a nested block: {first:?}"
            );
        }
        assert_eq!(pieces.last().unwrap().end_line, long.end_line, "{lang}");
    }
}

#[test]
fn fixture_chunks_partition_every_file() {
    for name in [
        "sample.rs",
        "sample.py",
        "sample.go",
        "sample.js",
        "sample.ts",
        "sample.tsx",
        "Sample.java",
        "Sample.cs",
        "sample.c",
        "sample.cpp",
        "sample.rb",
        "sample.php",
    ] {
        let (text, syms, _) = fixture(name);
        let chunks = chunk_file(language(name), &text, &syms);
        assert_partition(name, &text, &chunks);
        // Every symbol small enough to be whole lies inside one chunk.
        for s in syms.iter().filter(|s| s.end_line + 1 - s.start_line <= 30) {
            assert!(
                chunks
                    .iter()
                    .any(|c| c.start_line <= s.start_line && s.end_line <= c.end_line),
                "{name}: {} ({}-{}) is cut: {chunks:?}",
                s.qualified_name,
                s.start_line,
                s.end_line
            );
        }
    }
}
