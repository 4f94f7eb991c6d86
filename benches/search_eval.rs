//! Code search on third-party code nobody tuned for: an honest eval of engram's search
//! against baselines measured in the same run.
//!
//! The corpus is 13 packages pinned in `tools/search-eval/manifest.tsv` (Rust crates,
//! Python sdists, JavaScript and TypeScript npm packages), each indexed as its own
//! repository with the docs of its documented functions stripped. The queries (doc,
//! identifier and hand-written paraphrase) and what counts as a hit are described in
//! `search_eval/corpus.rs`.
//!
//! Configurations (see [`configurations`]):
//!
//! - `engram[EMB]`: engram's default search (keyword, symbol and vector lists fused by
//!   reciprocal rank), with embedder EMB;
//! - `engram-keyword`: the same with `keyword_only` (symbol and keyword lists fused);
//! - `engram-bm25`: engram's keyword list alone (`index::keyword_ranked`: FTS5 BM25 over
//!   code-aware tokens, path weighted);
//! - `bm25`: a baseline independent of engram's ranking: a plain SQLite FTS5 table
//!   (default `unicode61` tokenizer) holding the text of the same chunks engram made,
//!   queried with the query's words OR'ed, ranked by `bm25()`;
//! - `dense[EMB]`: the store's nearest vectors to the query's embedding, alone;
//! - `bm25+dense[EMB]`: `bm25` and `dense[EMB]` fused by reciprocal rank with equal
//!   weights (the usual BM25 + embeddings hybrid).
//!
//! `ENGRAM_EVAL_WEIGHTS` adds engram's hybrid under other fusion weights
//! (`symbol/keyword/vector` triples separated by `;`), named `engram[EMB] w=S/K/V`;
//! `ENGRAM_EVAL_GRAPH` under other graph-signal settings (`weight/seeds` pairs
//! separated by `,`), named `engram[EMB] graph=W/S`.
//!
//! Embedders come from `ENGRAM_EVAL_EMBEDDERS` (comma-separated names that
//! `engram::embed::embedder_by_name` knows; default `hash-v2-256`). Every embedder gets
//! its own index per package, timed; the keyword configurations do not depend on the
//! embedder and run once, on the first one's index.
//!
//! Reported per configuration × language × query type: MRR@10, recall@1, recall@10, on
//! all queries and on each half (tune / held-out); index time per configuration; and
//! BM25 against the hybrid per query type. The table is printed and written as JSON to
//! `$ENGRAM_EVAL_DATA/results.json`, the rank of every query under every configuration
//! to `ranks.tsv` next to it.
//!
//! ```text
//! tools/search-eval/fetch.sh
//! cargo bench --bench search_eval
//! ENGRAM_EVAL_EMBEDDERS=hash-v2-256,minilm cargo bench --bench search_eval
//! ```
//!
//! `ENGRAM_EVAL_DATA` (default `target/search-eval`), `ENGRAM_EVAL_MAX_TARGETS` (targets
//! per package, default 150), `ENGRAM_EVAL_PACKAGES` (comma-separated names: only
//! those), `ENGRAM_EVAL_LIST=1` (write the targets to `targets.tsv` and stop; no search),
//! `ENGRAM_EVAL_LISTS=1` (also write `lists.jsonl`: per query, the symbol, keyword and
//! vector lists engram's hybrid fuses, each entry with its score and whether it is a hit,
//! so that fusion rules can be replayed offline without re-indexing:
//! `tools/search-eval/replay_fusion.py`).
//! Missing corpus: the bench says how to fetch it and exits 2.

mod common;
#[path = "search_eval/corpus.rs"]
mod corpus;
// The paired bootstrap, shared with the localization eval.
#[path = "localize_eval/metrics.rs"]
#[allow(dead_code)]
mod metrics;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use corpus::{Package, Prepared, Query};
use engram::embed::Embedder;
use engram::index::{self, IndexOptions};
use engram::search::{fuse, search, FusionWeights, GraphSignal, RankedList, SearchOptions};
use engram::store::{Store, StoreOptions};
use metrics::bootstrap_ci;
use serde_json::json;

/// Results considered per query.
const TOP_K: usize = 10;

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

/// The embedders to measure. A neural embedder (`embed::neural`) is measured by naming
/// it here once `embedder_by_name` knows it: `ENGRAM_EVAL_EMBEDDERS=hash-v2-256,minilm`.
fn embedders() -> Vec<Arc<dyn Embedder>> {
    let names = std::env::var("ENGRAM_EVAL_EMBEDDERS").unwrap_or_else(|_| "hash-v2-256".into());
    names
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(|n| {
            engram::embed::embedder_by_name(n).unwrap_or_else(|e| {
                eprintln!("search_eval: {e}");
                std::process::exit(2)
            })
        })
        .collect()
}

/// How a configuration ranks.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// `engram::search::search`, hybrid.
    Hybrid,
    /// `engram::search::search` with `keyword_only`.
    KeywordOnly,
    /// `engram::index::keyword_ranked` alone.
    EngramBm25,
    /// A plain FTS5 table over the same chunks.
    PlainBm25,
    /// `Store::vector_search` alone.
    Dense,
    /// The plain BM25 list and the dense list fused by reciprocal rank, equal
    /// weights: the usual "BM25 + embeddings" hybrid, as a baseline for engram's.
    Bm25Dense,
}

/// One configuration: a name in the table, how it ranks, and with which embedder's
/// index (index `i` of [`embedders`]).
struct Config {
    name: String,
    mode: Mode,
    embedder: usize,
    /// Fusion weights of a hybrid configuration (engram's defaults when `None`).
    weights: Option<FusionWeights>,
    /// The graph signal of a hybrid configuration (engram's default when `None`).
    graph: Option<GraphSignal>,
}

/// Extra weightings of engram's hybrid to measure, from `ENGRAM_EVAL_WEIGHTS`:
/// `symbol/keyword/vector` triples separated by `;` (e.g. `1.2/1/0.8;1/1/1.5`).
fn extra_weights() -> Vec<FusionWeights> {
    let Ok(spec) = std::env::var("ENGRAM_EVAL_WEIGHTS") else {
        return Vec::new();
    };
    spec.split(';')
        .filter(|s| !s.trim().is_empty())
        .map(|triple| {
            let w: Vec<f64> = triple
                .split('/')
                .map(|x| x.trim().parse().expect("ENGRAM_EVAL_WEIGHTS: a number"))
                .collect();
            assert_eq!(w.len(), 3, "ENGRAM_EVAL_WEIGHTS: symbol/keyword/vector");
            FusionWeights {
                symbol: w[0],
                keyword: w[1],
                vector: w[2],
            }
        })
        .collect()
}

/// Graph-signal settings of engram's hybrid to measure, from `ENGRAM_EVAL_GRAPH`:
/// `weight/seeds` pairs separated by `,` (e.g. `0/0,1.5/5`; `0/0` is the signal off).
fn graph_settings() -> Vec<(String, GraphSignal)> {
    let Ok(spec) = std::env::var("ENGRAM_EVAL_GRAPH") else {
        return Vec::new();
    };
    spec.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|pair| {
            let w: Vec<&str> = pair.split('/').collect();
            assert_eq!(w.len(), 2, "ENGRAM_EVAL_GRAPH: weight/seeds");
            let g = GraphSignal {
                weight: w[0].parse().expect("ENGRAM_EVAL_GRAPH: a weight"),
                seeds: w[1].parse().expect("ENGRAM_EVAL_GRAPH: a seed count"),
                ..GraphSignal::default()
            };
            (pair.to_string(), g)
        })
        .collect()
}

/// Every configuration measured. The keyword ones run on the first embedder's index.
fn configurations(embedders: &[Arc<dyn Embedder>]) -> Vec<Config> {
    let mut out = Vec::new();
    for (i, e) in embedders.iter().enumerate() {
        out.push(Config {
            name: format!("engram[{}]", e.name()),
            mode: Mode::Hybrid,
            embedder: i,
            weights: None,
            graph: None,
        });
        for (label, g) in graph_settings() {
            out.push(Config {
                name: format!("engram[{}] graph={label}", e.name()),
                mode: Mode::Hybrid,
                embedder: i,
                weights: None,
                graph: Some(g),
            });
        }
        for w in extra_weights() {
            out.push(Config {
                name: format!(
                    "engram[{}] w={}/{}/{}",
                    e.name(),
                    w.symbol,
                    w.keyword,
                    w.vector
                ),
                mode: Mode::Hybrid,
                embedder: i,
                weights: Some(w),
                graph: None,
            });
        }
    }
    for (name, mode) in [
        ("engram-keyword", Mode::KeywordOnly),
        ("engram-bm25", Mode::EngramBm25),
        ("bm25", Mode::PlainBm25),
    ] {
        out.push(Config {
            name: name.into(),
            mode,
            embedder: 0,
            weights: None,
            graph: None,
        });
    }
    for (i, e) in embedders.iter().enumerate() {
        out.push(Config {
            name: format!("dense[{}]", e.name()),
            mode: Mode::Dense,
            embedder: i,
            weights: None,
            graph: None,
        });
    }
    for (i, e) in embedders.iter().enumerate() {
        out.push(Config {
            name: format!("bm25+dense[{}]", e.name()),
            mode: Mode::Bm25Dense,
            embedder: i,
            weights: None,
            graph: None,
        });
    }
    out
}

/// A result: path and 1-based inclusive lines.
type Found = (String, u64, u64);

/// Where each chunk is, by key hash.
fn chunk_place(store: &Store, key: &str) -> Option<Found> {
    let info = index::chunk_info(store, engram::key::hash64(key)).ok()??;
    Some((info.path, info.start_line, info.end_line))
}

/// The plain BM25 baseline: an in-memory FTS5 table of the chunks' text.
struct PlainBm25 {
    db: rusqlite::Connection,
    places: Vec<Found>,
}

impl PlainBm25 {
    /// Build it from every chunk in `store`.
    fn build(store: &Store) -> PlainBm25 {
        let keys: Vec<String> = store
            .with_tracker(|db| {
                let mut stmt = db.prepare(
                    "SELECT r.key FROM code_chunks c JOIN records r ON r.key_hash = c.key_hash
                     ORDER BY c.path, c.start_line",
                )?;
                let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
                Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
            })
            .expect("list chunks");
        let db = rusqlite::Connection::open_in_memory().expect("sqlite");
        db.execute_batch("CREATE VIRTUAL TABLE t USING fts5(text)")
            .expect("fts5");
        let mut places = Vec::with_capacity(keys.len());
        {
            let mut ins = db
                .prepare("INSERT INTO t (rowid, text) VALUES (?1, ?2)")
                .unwrap();
            for key in keys {
                let Some(place) = chunk_place(store, &key) else {
                    continue;
                };
                let body = store.get(&key).expect("read chunk").expect("chunk").body;
                ins.execute(rusqlite::params![
                    places.len() as i64,
                    String::from_utf8_lossy(&body)
                ])
                .unwrap();
                places.push(place);
            }
        }
        PlainBm25 { db, places }
    }

    fn search(&self, query: &str) -> Vec<Found> {
        let mut terms: Vec<String> = Vec::new();
        for w in query
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            let t = format!("\"{}\"", w.to_lowercase());
            if !terms.contains(&t) {
                terms.push(t);
            }
        }
        if terms.is_empty() {
            return Vec::new();
        }
        let mut stmt = self
            .db
            .prepare_cached("SELECT rowid FROM t WHERE t MATCH ?1 ORDER BY bm25(t) LIMIT ?2")
            .unwrap();
        let rows = stmt
            .query_map(rusqlite::params![terms.join(" OR "), TOP_K as i64], |r| {
                r.get::<_, i64>(0)
            })
            .unwrap();
        rows.map(|r| self.places[r.unwrap() as usize].clone())
            .collect()
    }
}

/// The top results of `query` under `mode`.
fn run(
    mode: Mode,
    (weights, graph): (Option<FusionWeights>, Option<GraphSignal>),
    store: &Store,
    embedder: &Arc<dyn Embedder>,
    plain: &PlainBm25,
    query: &str,
) -> Vec<Found> {
    match mode {
        Mode::Hybrid | Mode::KeywordOnly => {
            let opts = SearchOptions {
                top_k: TOP_K,
                keyword_only: mode == Mode::KeywordOnly,
                embedder: embedder.clone(),
                weights,
                graph,
                ..Default::default()
            };
            search(store, query, &opts)
                .expect("search")
                .hits
                .into_iter()
                .filter_map(|h| Some((h.path?, h.start_line?, h.end_line?)))
                .collect()
        }
        Mode::EngramBm25 => index::keyword_ranked(store, query, None, TOP_K, TOP_K)
            .expect("keyword_ranked")
            .into_iter()
            .filter_map(|(k, _)| chunk_place(store, &k))
            .collect(),
        Mode::PlainBm25 => plain.search(query),
        Mode::Dense => {
            let Ok(mut v) = embedder.embed(&[query]) else {
                return Vec::new();
            };
            let qv = v.pop().unwrap_or_default();
            if qv.is_empty() || engram::embed::is_zero(&qv) {
                return Vec::new();
            }
            store
                .vector_search(embedder.name(), &qv, TOP_K * 4)
                .expect("vector search")
                .into_iter()
                .filter(|m| m.key.starts_with("chunk:"))
                .filter_map(|m| chunk_place(store, &m.key))
                .take(TOP_K)
                .collect()
        }
        Mode::Bm25Dense => {
            let ranked = |found: Vec<Found>| RankedList {
                keys: found
                    .into_iter()
                    .map(|(p, s, e)| format!("{s}\u{0}{e}\u{0}{p}"))
                    .collect(),
                weight: 1.0,
            };
            let lists = [
                ranked(plain.search(query)),
                ranked(run(
                    Mode::Dense,
                    (None, None),
                    store,
                    embedder,
                    plain,
                    query,
                )),
            ];
            fuse(&lists)
                .into_iter()
                .take(TOP_K)
                .filter_map(|(k, _)| {
                    let mut parts = k.splitn(3, '\u{0}');
                    let s = parts.next()?.parse().ok()?;
                    let e = parts.next()?.parse().ok()?;
                    Some((parts.next()?.to_string(), s, e))
                })
                .collect()
        }
    }
}

/// 1-based rank of the first hit in the top [`TOP_K`], if any.
fn rank(q: &Query, found: &[Found]) -> Option<usize> {
    found
        .iter()
        .take(TOP_K)
        .position(|(p, s, e)| q.is_hit(p, *s, *e))
        .map(|i| i + 1)
}

/// Write a package's prepared files under `dir` (emptied first).
fn stage(dir: &Path, p: &Prepared) {
    if dir.exists() {
        std::fs::remove_dir_all(dir).expect("clear stage");
    }
    for f in &p.files {
        let to = dir.join(&f.rel);
        std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
        std::fs::write(&to, &f.text).expect("write staged file");
    }
}

/// MRR@10, recall@1 and recall@10 of some ranks.
#[derive(Default, Clone, Copy)]
struct Score {
    n: usize,
    rr: f64,
    at1: usize,
    at10: usize,
}

impl Score {
    fn add(&mut self, r: Option<usize>) {
        self.n += 1;
        if let Some(r) = r {
            self.rr += 1.0 / r as f64;
            self.at1 += usize::from(r == 1);
            self.at10 += 1;
        }
    }
    fn mrr(&self) -> f64 {
        self.rr / self.n.max(1) as f64
    }
    fn r1(&self) -> f64 {
        self.at1 as f64 / self.n.max(1) as f64
    }
    fn r10(&self) -> f64 {
        self.at10 as f64 / self.n.max(1) as f64
    }
    fn json(&self) -> serde_json::Value {
        json!({"n": self.n, "mrr10": round(self.mrr()), "recall1": round(self.r1()), "recall10": round(self.r10())})
    }
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn main() {
    let data = data_dir();
    let manifest = std::fs::read_to_string(common::repo_path("tools/search-eval/manifest.tsv"))
        .expect("read tools/search-eval/manifest.tsv");
    let mut packages = corpus::read_manifest(&manifest).expect("manifest");
    if let Ok(only) = std::env::var("ENGRAM_EVAL_PACKAGES") {
        let only: Vec<&str> = only.split(',').map(str::trim).collect();
        packages.retain(|p| only.contains(&p.name.as_str()));
    }
    let paraphrases = corpus::read_paraphrases(
        &std::fs::read_to_string(common::repo_path("tools/search-eval/paraphrases.tsv"))
            .expect("read tools/search-eval/paraphrases.tsv"),
    )
    .expect("paraphrases");

    // The corpus and the queries.
    let mut prepared: Vec<(Package, Prepared, Vec<Query>)> = Vec::new();
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
        let mut queries = corpus::generated_queries(&p, max_targets());
        let langs = BTreeMap::from([(pkg.name.clone(), pkg.lang.clone())]);
        let paras = corpus::paraphrase_queries(&paraphrases, &langs);
        for q in &paras {
            // A paraphrase must name a documented function's exact lines.
            assert!(
                p.targets.iter().any(|t| t.file == q.file
                    && t.start_line == q.start_line
                    && t.end_line == q.end_line),
                "paraphrase {:?} names {}:{}-{}, which is no target of {}",
                q.text,
                q.file,
                q.start_line,
                q.end_line,
                pkg.name
            );
        }
        queries.extend(paras);
        eprintln!(
            "{:<28} {:<10} files {:>4}  documented functions {:>4} (not strippable {:>3})  queries {:>4}",
            pkg.dir_name(),
            pkg.lang,
            p.files.len(),
            p.targets.len(),
            p.dropped,
            queries.len()
        );
        prepared.push((pkg, p, queries));
    }
    if std::env::var_os("ENGRAM_EVAL_LIST").is_some() {
        let mut out = String::new();
        for (_, p, _) in &prepared {
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
        std::fs::write(data.join("targets.tsv"), out).expect("write targets.tsv");
        eprintln!("targets written to {}", data.join("targets.tsv").display());
        return;
    }

    let embedders = embedders();
    let configs = configurations(&embedders);
    // ranks[config][query]: queries in package order.
    let mut ranks: Vec<Vec<Option<usize>>> = vec![Vec::new(); configs.len()];
    let mut query_seconds = vec![0f64; configs.len()];
    let mut cost = IndexCost {
        engram_seconds: vec![0.0; embedders.len()],
        engram_chunks: vec![0; embedders.len()],
        ..Default::default()
    };
    let mut all_queries: Vec<Query> = Vec::new();
    let mut lists_out = std::env::var_os("ENGRAM_EVAL_LISTS").map(|_| String::new());
    for (pkg, p, queries) in &prepared {
        let src = data.join("stage").join(pkg.dir_name());
        stage(&src, p);
        let mut stores = Vec::new();
        for (ei, e) in embedders.iter().enumerate() {
            let dir = common::bench_dir("search-eval");
            let store = Store::open(dir.path(), StoreOptions::default(), engram::projections())
                .expect("open store");
            let t = Instant::now();
            let report = index::index(
                &store,
                &src,
                &IndexOptions {
                    embedder: e.clone(),
                    ..Default::default()
                },
            )
            .expect("index");
            cost.engram_seconds[ei] += t.elapsed().as_secs_f64();
            cost.engram_chunks[ei] += report.chunks;
            stores.push((dir, store));
        }
        let t = Instant::now();
        let plain = PlainBm25::build(&stores[0].1);
        cost.bm25_seconds += t.elapsed().as_secs_f64();
        cost.bm25_chunks += plain.places.len() as u64;
        for (ci, c) in configs.iter().enumerate() {
            let store = &stores[c.embedder].1;
            let t = Instant::now();
            for q in queries {
                let found = run(
                    c.mode,
                    (c.weights, c.graph),
                    store,
                    &embedders[c.embedder],
                    &plain,
                    &q.text,
                );
                ranks[ci].push(rank(q, &found));
            }
            query_seconds[ci] += t.elapsed().as_secs_f64();
        }
        if let Some(out) = &mut lists_out {
            for q in queries {
                out.push_str(&lists_line(&stores, &embedders, q));
                out.push('\n');
            }
        }
        eprintln!(
            "{:<28} searched: {}",
            pkg.dir_name(),
            configs
                .iter()
                .enumerate()
                .map(|(ci, c)| {
                    let mut s = Score::default();
                    for r in &ranks[ci][ranks[ci].len() - queries.len()..] {
                        s.add(*r);
                    }
                    format!("{} {:.3}", c.name, s.mrr())
                })
                .collect::<Vec<_>>()
                .join(", ")
        );
        all_queries.extend(queries.iter().cloned());
    }
    if let Some(out) = &lists_out {
        std::fs::write(data.join("lists.jsonl"), out).expect("write lists.jsonl");
    }
    report(
        &data,
        &configs,
        &all_queries,
        &ranks,
        &query_seconds,
        &embedders,
        &cost,
    );
}

/// Which scores a table row aggregates: a language (or all) and a query type (or all).
fn groups(q: &Query) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for lang in [q.lang.as_str(), "all"] {
        for t in [q.qtype.as_str(), "all"] {
            out.push((lang.to_string(), t.to_string()));
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn report(
    data: &Path,
    configs: &[Config],
    queries: &[Query],
    ranks: &[Vec<Option<usize>>],
    query_seconds: &[f64],
    embedders: &[Arc<dyn Embedder>],
    cost: &IndexCost,
) {
    // scores[config][(half, lang, type)]; half is "all", "tune" or "held-out".
    let mut scores: Vec<BTreeMap<(String, String, String), Score>> =
        vec![BTreeMap::new(); configs.len()];
    for (ci, _) in configs.iter().enumerate() {
        for (qi, q) in queries.iter().enumerate() {
            let half = if q.held_out { "held-out" } else { "tune" };
            for (lang, t) in groups(q) {
                for h in ["all", half] {
                    scores[ci]
                        .entry((h.to_string(), lang.clone(), t.clone()))
                        .or_default()
                        .add(ranks[ci][qi]);
                }
            }
        }
    }
    let langs = ["rust", "python", "javascript", "typescript", "all"];
    let types = ["doc", "identifier", "paraphrase", "all"];

    // Query counts.
    println!("\nQueries (language × type; tune / held-out halves in results.json):");
    print!("{:<12}", "");
    for t in types {
        print!("{t:>12}");
    }
    println!();
    for l in langs {
        print!("{l:<12}");
        for t in types {
            let n = scores[0]
                .get(&("all".into(), l.into(), t.into()))
                .map_or(0, |s| s.n);
            print!("{n:>12}");
        }
        println!();
    }

    // The table: one block per configuration.
    println!("\nMRR@10 / recall@1 / recall@10, all queries:");
    print!("{:<24}{:<12}", "config", "language");
    for t in types {
        print!("{t:>20}");
    }
    println!();
    for (ci, c) in configs.iter().enumerate() {
        for l in langs {
            if !scores[ci].contains_key(&("all".into(), l.into(), "all".into())) {
                continue;
            }
            print!("{:<24}{l:<12}", c.name);
            for t in types {
                let s = scores[ci]
                    .get(&("all".into(), l.into(), t.into()))
                    .copied()
                    .unwrap_or_default();
                print!(
                    "{:>20}",
                    format!("{:.3} {:.2} {:.2}", s.mrr(), s.r1(), s.r10())
                );
            }
            println!();
        }
    }

    // Summary by query type, all languages, with the held-out half alone.
    println!("\nMRR@10 by query type (all languages): all queries | held-out half");
    print!("{:<24}", "config");
    for t in types {
        print!("{t:>18}");
    }
    println!("{:>12}{:>12}", "index s", "query ms");
    for (ci, c) in configs.iter().enumerate() {
        print!("{:<24}", c.name);
        for t in types {
            let a = scores[ci][&("all".into(), "all".into(), t.into())];
            let h = scores[ci]
                .get(&("held-out".into(), "all".into(), t.into()))
                .copied()
                .unwrap_or_default();
            print!("{:>18}", format!("{:.3} | {:.3}", a.mrr(), h.mrr()));
        }
        println!(
            "{:>12.1}{:>12.2}",
            index_seconds_of(c, cost),
            query_seconds[ci] * 1000.0 / queries.len().max(1) as f64
        );
    }

    // The issue's hint: do the fused lists pull good keyword hits down? Per query type,
    // pairs of configurations on the same queries: the hybrid against plain BM25 and
    // against engram's own keyword list; adding the symbol list (keyword-only against
    // the keyword list alone); adding the vector list (hybrid against keyword-only).
    let find = |name: &str| configs.iter().position(|c| c.name == name);
    let hybrids: Vec<&str> = configs
        .iter()
        .filter(|c| c.mode == Mode::Hybrid)
        .map(|c| c.name.as_str())
        .collect();
    let mut pairs: Vec<(&str, &str)> = Vec::new();
    for h in &hybrids {
        pairs.push((h, "bm25"));
        pairs.push((h, "engram-bm25"));
    }
    pairs.push(("engram-keyword", "engram-bm25"));
    for h in &hybrids {
        pairs.push((h, "engram-keyword"));
    }
    // engram's hybrid against the usual BM25 + embeddings hybrid with the same vectors
    // (`configurations` lists the hybrids first, one per embedder, in order).
    let baselines: Vec<(String, String)> = configs
        .iter()
        .filter(|c| c.mode == Mode::Bm25Dense)
        .map(|c| (configs[c.embedder].name.clone(), c.name.clone()))
        .collect();
    for (h, b) in &baselines {
        pairs.push((h.as_str(), b.as_str()));
    }
    let mut versus = Vec::new();
    println!(
        "\nPaired comparisons, A against B on the same queries (95% CI of the MRR difference by \
         paired bootstrap; lost: B had it in the top 10, A not):"
    );
    println!(
        "{:<44}{:<12}{:>7}{:>7}{:>8}{:>18}{:>9}{:>9}{:>7}{:>6}",
        "A vs B", "type", "MRR A", "MRR B", "A-B", "95% CI", "A better", "A worse", "same", "lost"
    );
    for (an, bn) in pairs {
        let (Some(ai), Some(bi)) = (find(an), find(bn)) else {
            continue;
        };
        for t in types {
            let (mut better, mut worse, mut same, mut lost) = (0, 0, 0, 0);
            let (mut sa, mut sb) = (Score::default(), Score::default());
            let mut diffs = Vec::new();
            for (qi, q) in queries.iter().enumerate() {
                if t != "all" && q.qtype.as_str() != t {
                    continue;
                }
                let (ra, rb) = (ranks[ai][qi], ranks[bi][qi]);
                sa.add(ra);
                sb.add(rb);
                let rr = |r: Option<usize>| r.map_or(0.0, |r| 1.0 / r as f64);
                diffs.push(rr(ra) - rr(rb));
                let key = |r: Option<usize>| r.unwrap_or(usize::MAX);
                match key(ra).cmp(&key(rb)) {
                    std::cmp::Ordering::Less => better += 1,
                    std::cmp::Ordering::Greater => {
                        worse += 1;
                        if rb.is_some() && ra.is_none() {
                            lost += 1;
                        }
                    }
                    std::cmp::Ordering::Equal => same += 1,
                }
            }
            let (lo, hi) = bootstrap_ci(&diffs);
            println!(
                "{:<44}{t:<12}{:>7.3}{:>7.3}{:>+8.3}{:>18}{better:>9}{worse:>9}{same:>7}{lost:>6}",
                format!("{an} vs {bn}"),
                sa.mrr(),
                sb.mrr(),
                sa.mrr() - sb.mrr(),
                format!("[{lo:+.3}, {hi:+.3}]"),
            );
            versus.push(json!({
                "a": an, "b": bn, "type": t,
                "mrr_a": round(sa.mrr()), "mrr_b": round(sb.mrr()),
                "ci95_low": round(lo), "ci95_high": round(hi),
                "a_better": better, "a_worse": worse, "same": same,
                "lost_from_top10": lost,
            }));
        }
    }

    // JSON and per-query ranks.
    let mut results = Vec::new();
    for (ci, c) in configs.iter().enumerate() {
        for ((half, lang, t), s) in &scores[ci] {
            let mut v = s.json();
            v["config"] = json!(c.name);
            v["half"] = json!(half);
            v["language"] = json!(lang);
            v["type"] = json!(t);
            results.push(v);
        }
    }
    let cfgs: Vec<_> = configs
        .iter()
        .enumerate()
        .map(|(ci, c)| {
            json!({
                "name": c.name,
                "index_seconds": round(index_seconds_of(c, cost)),
                "query_ms_mean": round(query_seconds[ci] * 1000.0 / queries.len().max(1) as f64),
            })
        })
        .collect();
    let out = json!({
        "top_k": TOP_K,
        "max_targets_per_package": max_targets(),
        "queries": queries.len(),
        "configs": cfgs,
        "indexes": embedders.iter().enumerate().map(|(i, e)| json!({
            "index": format!("engram[{}]", e.name()),
            "seconds": round(cost.engram_seconds[i]),
            "chunks": cost.engram_chunks[i],
        })).chain(std::iter::once(json!({
            "index": "bm25 (FTS5 table over engram's chunks)",
            "seconds": round(cost.bm25_seconds),
            "chunks": cost.bm25_chunks,
        }))).collect::<Vec<_>>(),
        "results": results,
        "paired": versus,
    });
    std::fs::write(
        data.join("results.json"),
        serde_json::to_string_pretty(&out).expect("json"),
    )
    .expect("write results.json");
    let mut tsv = String::from("type\tlanguage\tpackage\tfile\tlines\thalf\tquery");
    for c in configs {
        tsv.push('\t');
        tsv.push_str(&c.name);
    }
    tsv.push('\n');
    for (qi, q) in queries.iter().enumerate() {
        tsv.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}-{}\t{}\t{}",
            q.qtype.as_str(),
            q.lang,
            q.package,
            q.file,
            q.start_line,
            q.end_line,
            if q.held_out { "held-out" } else { "tune" },
            q.text
        ));
        for r in ranks {
            tsv.push('\t');
            if let Some(r) = r[qi] {
                tsv.push_str(&r.to_string());
            }
        }
        tsv.push('\n');
    }
    std::fs::write(data.join("ranks.tsv"), tsv).expect("write ranks.tsv");
    println!(
        "\nwritten: {} and ranks.tsv",
        data.join("results.json").display()
    );
}

/// What building a configuration's index cost: engram's index (with its embedder) for
/// the engram and dense configurations (the keyword ones search the first embedder's),
/// and for the plain BM25 baseline its FTS5 table alone (the chunks are engram's).
fn index_seconds_of(c: &Config, idx: &IndexCost) -> f64 {
    match c.mode {
        Mode::PlainBm25 => idx.bm25_seconds,
        _ => idx.engram_seconds[c.embedder],
    }
}

/// Index time and size, summed over the packages.
#[derive(Default)]
struct IndexCost {
    /// Per embedder, as [`embedders`] lists them.
    engram_seconds: Vec<f64>,
    engram_chunks: Vec<u64>,
    bm25_seconds: f64,
    bm25_chunks: u64,
}

/// One JSON line for `ENGRAM_EVAL_LISTS`: the lists engram's hybrid fuses for `q` (as
/// `search` fetches them for the top 10), each as `[key hash, score, hit]` best first,
/// so fusion rules can be replayed offline. The symbol and keyword lists are of the
/// first embedder's index; `vec` is the first embedder's vector list and `vecs` every
/// embedder's, by name.
fn lists_line(
    stores: &[(tempfile::TempDir, Store)],
    embedders: &[Arc<dyn Embedder>],
    q: &Query,
) -> String {
    let store = &stores[0].1;
    let fetch = (TOP_K * 4).max(40);
    let entry_in = |store: &Store, key: &str, score: f64| {
        let hit = chunk_place(store, key).is_some_and(|(p, s, e)| q.is_hit(&p, s, e));
        json!([engram::key::hash64(key), score.min(1e300), hit])
    };
    let entry = |key: &str, score: f64| entry_in(store, key, score);
    let mut sym = Vec::new();
    let mut seen = Vec::new();
    for (key, score) in index::symbol_ranked(store, &q.text, 1, fetch).expect("symbols") {
        let Some(info) = index::symbol_info(store, engram::key::hash64(&key)).expect("symbol")
        else {
            continue;
        };
        if let Some(chunk) = index::chunk_at(store, &info.path, info.start_line).expect("chunk") {
            if !seen.contains(&chunk) {
                sym.push(entry(&chunk, score));
                seen.push(chunk);
            }
        }
    }
    let kw: Vec<_> = index::keyword_ranked(store, &q.text, None, TOP_K, fetch)
        .expect("keywords")
        .iter()
        .map(|(k, s)| entry(k, *s))
        .collect();
    let kw_all = index::keyword_ranked(store, &q.text, None, 0, fetch)
        .expect("keywords")
        .len();
    let mut vecs = serde_json::Map::new();
    for ((_, store), embedder) in stores.iter().zip(embedders) {
        let mut vec = Vec::new();
        if let Ok(mut v) = embedder.embed(&[q.text.as_str()]) {
            let qv = v.pop().unwrap_or_default();
            if !qv.is_empty() && !engram::embed::is_zero(&qv) {
                for m in store
                    .vector_search(embedder.name(), &qv, fetch * 2)
                    .expect("vectors")
                {
                    if m.score >= 0.1 && m.key.starts_with("chunk:") {
                        vec.push(entry_in(store, &m.key, f64::from(m.score)));
                    }
                }
            }
        }
        vecs.insert(embedder.name().to_string(), json!(vec));
    }
    let vec = vecs[embedders[0].name()].clone();
    json!({
        "type": q.qtype.as_str(), "lang": q.lang, "half": if q.held_out { "held-out" } else { "tune" },
        "query": q.text, "sym": sym, "kw": kw, "kw_all": kw_all, "vec": vec, "vecs": vecs,
    })
    .to_string()
}
