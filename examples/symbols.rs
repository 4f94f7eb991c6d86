//! Print the symbols tree-sitter finds in a source file, and the chunks the index
//! cuts it into (each with its lines, its symbol and the context line search sees).
//!
//! `cargo run --example symbols -- src/store/mod.rs`

use engram::index::{language, symbols};

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: symbols FILE");
        std::process::exit(2);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let lang = language(&path);
    let Some(found) = symbols::extract(lang, &text) else {
        eprintln!("{path}: no grammar for {lang}");
        std::process::exit(1);
    };
    for s in &found.symbols {
        println!(
            "{:>5}-{:<5} {:<9} {}  [{}] calls={:?} cx={}{}",
            s.start_line,
            s.end_line,
            s.kind.as_str(),
            s.qualified_name,
            s.signature,
            s.calls,
            s.complexity,
            s.doc
                .as_deref()
                .map(|d| format!("\n              doc: {}", d.lines().next().unwrap_or("")))
                .unwrap_or_default()
        );
    }
    for i in &found.imports {
        println!("import {i}");
    }
    for c in symbols::chunk_file(lang, &text, &found.symbols) {
        println!(
            "chunk {:>5}-{:<5} {:<30} | {}",
            c.start_line,
            c.end_line,
            c.symbol.as_deref().unwrap_or("-"),
            c.context
        );
    }
}
