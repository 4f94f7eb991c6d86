//! Code search on third-party code nobody tuned for (see `search_eval/corpus.rs`).
//!
//! ```text
//! tools/search-eval/fetch.sh
//! cargo bench --bench search_eval
//! ```

mod common;
#[path = "search_eval/corpus.rs"]
mod corpus;

use std::collections::BTreeMap;
use std::path::PathBuf;

use corpus::{Package, Prepared, Query, QueryType};

fn data_dir() -> PathBuf {
    std::env::var_os("ENGRAM_EVAL_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::repo_path("target/search-eval"))
}

/// Most targets a package gives queries for (`ENGRAM_EVAL_MAX_TARGETS`, default 150).
fn max_targets() -> usize {
    std::env::var("ENGRAM_EVAL_MAX_TARGETS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(150)
}

fn main() {
    let data = data_dir();
    let manifest = std::fs::read_to_string(common::repo_path("tools/search-eval/manifest.tsv"))
        .expect("read tools/search-eval/manifest.tsv");
    let packages = corpus::read_manifest(&manifest).expect("manifest");
    let mut prepared: Vec<(Package, Prepared)> = Vec::new();
    for pkg in packages {
        let root = data.join("src").join(pkg.dir_name());
        if !root.join(".complete").exists() {
            eprintln!(
                "search_eval: {} is missing; run tools/search-eval/fetch.sh first",
                root.display()
            );
            std::process::exit(2);
        }
        let files = corpus::package_files(&root, &pkg).expect("read package");
        let p = corpus::prepare(&pkg, files);
        prepared.push((pkg, p));
    }
    let mut queries: Vec<Query> = Vec::new();
    for (pkg, p) in &prepared {
        let q = corpus::generated_queries(&p.targets, max_targets());
        eprintln!(
            "{:<22} {:<10} files {:>4}  targets {:>4} (dropped {:>3})  queries {:>4}",
            pkg.dir_name(),
            pkg.lang,
            p.files.len(),
            p.targets.len(),
            p.dropped,
            q.len()
        );
        queries.extend(q);
    }
    if std::env::var_os("ENGRAM_EVAL_LIST").is_some() {
        let mut out = String::new();
        for (_, p) in &prepared {
            for t in corpus::sample(&p.targets, max_targets()) {
                out.push_str(&format!(
                    "{}\t{}\t{}-{}\t{}\t{}\n",
                    t.package,
                    t.file,
                    t.start_line,
                    t.end_line,
                    t.qualified_name,
                    corpus::first_sentence(&t.doc).unwrap_or_default()
                ));
            }
        }
        std::fs::write(data.join("targets.tsv"), out).unwrap();
        return;
    }
    let mut counts: BTreeMap<(String, QueryType), usize> = BTreeMap::new();
    for q in &queries {
        *counts.entry((q.lang.clone(), q.qtype)).or_default() += 1;
    }
    eprintln!("{counts:?}");
}
