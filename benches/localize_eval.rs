//! Localization from commit history: given a real commit's message, rank the files it
//! changed, with the index built at an older snapshot. engram against plain baselines,
//! all in one run. The data rule, the configurations and the metrics are in
//! `docs/localize-eval.md`; the repositories and their tune / held-out halves in
//! `tools/localize-eval/repos.tsv`.
//!
//! ```text
//! tools/localize-eval/fetch.sh
//! cargo bench --bench localize_eval
//! ENGRAM_EVAL_EMBEDDERS=hash-v2-256,minilm cargo bench --bench localize_eval
//! ```
//!
//! `ENGRAM_LOCALIZE_REPOS`: the folder of bare clones, one per name (default
//! `target/localize-eval/repos`); `ENGRAM_LOCALIZE_DATA`: where trees and results go
//! (default `target/localize-eval`); `ENGRAM_EVAL_REPOS`: comma-separated names, only
//! those; `ENGRAM_EVAL_EMBEDDERS`: embedders by name (default `hash-v2-256`); the dense
//! baselines use the last one. Results: printed, and written as JSON to
//! `results.json` there with every query's rank per configuration in
//! `ranks.tsv` beside it (and with `ENGRAM_EVAL_TOP=1` each configuration's first three
//! files per query in `top.tsv`). `ENGRAM_EVAL_GRAPH`: graph-signal settings to add,
//! comma-separated `WEIGHT/SEEDS[/CONFIDENCE]` (e.g. `0.5/3/imported`; `0/0` is the
//! signal off), each as `engram[EMB] graph=…` (files) and `… graph=… first-chunk`
//! (`engram::search::GraphSignal`). A missing repository is reported and the bench
//! exits 2.

mod common;
#[path = "localize_eval/history.rs"]
mod history;
#[path = "localize_eval/metrics.rs"]
mod metrics;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use engram::embed::Embedder;
use engram::index::graph::Confidence;
use engram::index::{self, IndexOptions};
use engram::search::{fuse, search, GraphSignal, HitKind, RankedList, SearchOptions};
use engram::store::{Store, StoreOptions};
use metrics::{files_in_order, first_gold_rank, summarize};
use serde_json::json;

/// Files each configuration ranks.
const FILES: usize = 10;
/// Lines per window of the chunk baselines.
const WINDOW: usize = 40;

struct Repo {
    name: String,
    split: String,
    lang: String,
    head: String,
}

fn repos() -> Vec<Repo> {
    let manifest = std::fs::read_to_string(common::repo_path("tools/localize-eval/repos.tsv"))
        .expect("read tools/localize-eval/repos.tsv");
    let only: Option<Vec<String>> = std::env::var("ENGRAM_EVAL_REPOS")
        .ok()
        .map(|v| v.split(',').map(|s| s.trim().to_string()).collect());
    manifest
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f.len() == 5).then(|| Repo {
                name: f[0].into(),
                split: f[1].into(),
                lang: f[2].into(),
                head: f[4].into(),
            })
        })
        .filter(|r| only.as_ref().is_none_or(|o| o.contains(&r.name)))
        .collect()
}

fn embedders() -> Vec<Arc<dyn Embedder>> {
    let names = std::env::var("ENGRAM_EVAL_EMBEDDERS").unwrap_or_else(|_| "hash-v2-256".into());
    names
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(|n| {
            engram::embed::embedder_by_name(n).unwrap_or_else(|e| {
                eprintln!("localize_eval: {e}");
                std::process::exit(2)
            })
        })
        .collect()
}

/// The plain baselines over the files engram indexed: one FTS5 row per file, one per
/// 40-line window, and the windows' vectors.
struct Baselines {
    db: rusqlite::Connection,
    files: Vec<String>,
    /// Window `i` belongs to file `windows[i]`.
    windows: Vec<usize>,
    vectors: Vec<Vec<f32>>,
}

impl Baselines {
    fn build(store: &Store, tree: &Path, dense: &dyn Embedder) -> Baselines {
        let files: Vec<String> = store
            .with_tracker(|db| {
                let mut stmt = db.prepare("SELECT path FROM code_files ORDER BY path")?;
                let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
                Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
            })
            .expect("list indexed files");
        let db = rusqlite::Connection::open_in_memory().expect("sqlite");
        db.execute_batch(
            "CREATE VIRTUAL TABLE f USING fts5(path, text);
             CREATE VIRTUAL TABLE w USING fts5(text);",
        )
        .expect("fts5");
        let mut windows = Vec::new();
        let mut texts = Vec::new();
        {
            let mut ins_f = db
                .prepare("INSERT INTO f (rowid, path, text) VALUES (?1, ?2, ?3)")
                .unwrap();
            let mut ins_w = db
                .prepare("INSERT INTO w (rowid, text) VALUES (?1, ?2)")
                .unwrap();
            for (i, path) in files.iter().enumerate() {
                let text = std::fs::read_to_string(tree.join(path)).unwrap_or_default();
                ins_f
                    .execute(rusqlite::params![i as i64, path, text])
                    .unwrap();
                let lines: Vec<&str> = text.split_inclusive('\n').collect();
                for part in lines.chunks(WINDOW) {
                    let w = part.concat();
                    ins_w
                        .execute(rusqlite::params![windows.len() as i64, w])
                        .unwrap();
                    windows.push(i);
                    texts.push(w);
                }
            }
        }
        let mut vectors = Vec::with_capacity(texts.len());
        for batch in texts.chunks(64) {
            let refs: Vec<&str> = batch.iter().map(String::as_str).collect();
            vectors.extend(dense.embed(&refs).expect("embed windows"));
        }
        Baselines {
            db,
            files,
            windows,
            vectors,
        }
    }

    fn match_expr(query: &str) -> Option<String> {
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
        (!terms.is_empty()).then(|| terms.join(" OR "))
    }

    fn bm25_files(&self, query: &str) -> Vec<String> {
        let Some(expr) = Self::match_expr(query) else {
            return Vec::new();
        };
        let mut stmt = self
            .db
            .prepare_cached("SELECT rowid FROM f WHERE f MATCH ?1 ORDER BY bm25(f) LIMIT ?2")
            .unwrap();
        stmt.query_map(rusqlite::params![expr, FILES as i64], |r| {
            r.get::<_, i64>(0)
        })
        .unwrap()
        .map(|r| self.files[r.unwrap() as usize].clone())
        .collect()
    }

    /// Window numbers, best first.
    fn bm25_windows(&self, query: &str, n: usize) -> Vec<usize> {
        let Some(expr) = Self::match_expr(query) else {
            return Vec::new();
        };
        let mut stmt = self
            .db
            .prepare_cached("SELECT rowid FROM w WHERE w MATCH ?1 ORDER BY bm25(w) LIMIT ?2")
            .unwrap();
        stmt.query_map(rusqlite::params![expr, n as i64], |r| r.get::<_, i64>(0))
            .unwrap()
            .map(|r| r.unwrap() as usize)
            .collect()
    }

    fn dense_windows(&self, qv: &[f32], n: usize) -> Vec<usize> {
        let mut scored: Vec<(f32, usize)> = self
            .vectors
            .iter()
            .enumerate()
            .map(|(i, v)| (v.iter().zip(qv).map(|(a, b)| a * b).sum::<f32>(), i))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored.into_iter().take(n).map(|(_, i)| i).collect()
    }

    fn to_files(&self, windows: impl IntoIterator<Item = usize>) -> Vec<String> {
        let mut out = files_in_order(
            windows
                .into_iter()
                .map(|w| self.files[self.windows[w]].clone()),
        );
        out.truncate(FILES);
        out
    }
}

/// Names of the configurations, in table order.
fn config_names(embedders: &[Arc<dyn Embedder>], dense: &str) -> Vec<String> {
    let mut out = vec!["bm25-files".to_string(), "bm25-chunks".to_string()];
    out.push(format!("dense[{dense}]"));
    out.push(format!("bm25+dense[{dense}]"));
    for e in embedders {
        out.push(format!("engram[{}]", e.name()));
        out.push(format!("engram[{}] first-chunk", e.name()));
        for w in aggregation_weights() {
            out.push(format!("engram[{}] agg={w}", e.name()));
        }
        for (label, _) in graph_settings() {
            out.push(format!("engram[{}] graph={label}", e.name()));
            out.push(format!("engram[{}] graph={label} first-chunk", e.name()));
        }
    }
    out.push("engram-keyword".into());
    out
}

/// engram's answer to a file-level question: `kind: file`, files ranked by their
/// chunks (`FILE_EVIDENCE` in src/search/resolve.rs).
fn engram_files(
    store: &Store,
    query: &str,
    embedder: &Arc<dyn Embedder>,
    graph: Option<GraphSignal>,
) -> Vec<String> {
    let opts = SearchOptions {
        top_k: FILES,
        kind: Some(HitKind::File),
        embedder: embedder.clone(),
        graph,
        ..Default::default()
    };
    search(store, query, &opts)
        .expect("search")
        .hits
        .into_iter()
        .filter_map(|h| h.path)
        .collect()
}

/// engram's chunk hits for `query` (path and score, best first).
fn engram_hits(
    store: &Store,
    query: &str,
    embedder: &Arc<dyn Embedder>,
    keyword_only: bool,
    graph: Option<GraphSignal>,
) -> Vec<(String, f64)> {
    let opts = SearchOptions {
        top_k: 100,
        keyword_only,
        embedder: embedder.clone(),
        graph,
        ..Default::default()
    };
    search(store, query, &opts)
        .expect("search")
        .hits
        .into_iter()
        .filter_map(|h| Some((h.path?, h.score)))
        .collect()
}

/// Files in the order of their first hit.
fn first_hit_files(hits: &[(String, f64)]) -> Vec<String> {
    let mut out = files_in_order(hits.iter().map(|(p, _)| p.clone()));
    out.truncate(FILES);
    out
}

/// Files by their best hit's score plus `rest` times the scores of their other hits
/// (`ENGRAM_EVAL_AGG`: for choosing how much a file's further hits count).
fn aggregated_files(hits: &[(String, f64)], rest: f64) -> Vec<String> {
    let mut by_file: Vec<(String, f64)> = Vec::new();
    for (p, s) in hits {
        match by_file.iter_mut().find(|(f, _)| f == p) {
            Some((_, total)) => *total += rest * s,
            None => by_file.push((p.clone(), *s)),
        }
    }
    by_file.sort_by(|a, b| b.1.total_cmp(&a.1));
    by_file.into_iter().take(FILES).map(|(p, _)| p).collect()
}

/// The graph-signal settings `ENGRAM_EVAL_GRAPH` asks to measure, with their labels.
fn graph_settings() -> Vec<(String, GraphSignal)> {
    let Ok(v) = std::env::var("ENGRAM_EVAL_GRAPH") else {
        return Vec::new();
    };
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            let f: Vec<&str> = s.split('/').collect();
            let bad = || -> ! {
                eprintln!("localize_eval: ENGRAM_EVAL_GRAPH {s:?}: expected WEIGHT/SEEDS[/resolved|imported|same-name|ambiguous]");
                std::process::exit(2)
            };
            let weight: f64 = f.first().and_then(|w| w.parse().ok()).unwrap_or_else(|| bad());
            let seeds: usize = f.get(1).and_then(|w| w.parse().ok()).unwrap_or_else(|| bad());
            let min_confidence = match f.get(2).copied() {
                None | Some("imported") => Confidence::Imported,
                Some("resolved") => Confidence::Resolved,
                Some("same-name") => Confidence::SameName,
                Some("ambiguous") => Confidence::Ambiguous,
                Some(_) => bad(),
            };
            (
                s.to_string(),
                GraphSignal {
                    weight,
                    seeds,
                    min_confidence,
                },
            )
        })
        .collect()
}

/// The file-aggregation weights `ENGRAM_EVAL_AGG` asks to measure (comma-separated).
fn aggregation_weights() -> Vec<f64> {
    std::env::var("ENGRAM_EVAL_AGG")
        .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_default()
}

fn main() {
    let data = std::env::var_os("ENGRAM_LOCALIZE_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::repo_path("target/localize-eval"));
    let clones = std::env::var_os("ENGRAM_LOCALIZE_REPOS")
        .map(PathBuf::from)
        .unwrap_or_else(|| data.join("repos"));
    let repos = repos();
    let missing: Vec<&str> = repos
        .iter()
        .filter(|r| !clones.join(&r.name).exists())
        .map(|r| r.name.as_str())
        .collect();
    if !missing.is_empty() {
        eprintln!(
            "localize_eval: no clone of {} in {}; run tools/localize-eval/fetch.sh",
            missing.join(", "),
            clones.display()
        );
        std::process::exit(2);
    }
    let embedders = embedders();
    let dense = embedders.last().expect("an embedder").clone();
    let names = config_names(&embedders, dense.name());
    // Per configuration, per query (in repository order): the rank of the first gold file.
    let mut ranks: BTreeMap<String, Vec<Option<usize>>> = BTreeMap::new();
    let mut query_meta: Vec<(String, String, String, String)> = Vec::new(); // repo, split, commit, text
    let mut index_seconds: HashMap<String, f64> = HashMap::new();
    // `ENGRAM_EVAL_TOP=1`: every configuration's first three files per query, for
    // studying the tune half (`top.tsv`).
    let mut top = std::env::var_os("ENGRAM_EVAL_TOP").map(|_| String::new());
    for repo in &repos {
        let git_dir = clones.join(&repo.name);
        let snap = match history::snapshot(&git_dir, &repo.head) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("localize_eval: {}: {e}; skipped", repo.name);
                continue;
            }
        };
        let sources = history::source_files(&git_dir, &snap).expect("ls-tree");
        if sources < history::MIN_SOURCE_FILES {
            eprintln!(
                "localize_eval: {}: {sources} source files at the snapshot; skipped",
                repo.name
            );
            continue;
        }
        let queries = history::queries(&git_dir, &snap, &repo.head).expect("queries");
        let tree = data.join("trees").join(&repo.name);
        history::export(&git_dir, &snap, &tree).expect("export snapshot");
        eprintln!(
            "localize_eval: {} ({}, {}): snapshot {}, {} source files, {} queries",
            repo.name,
            repo.lang,
            repo.split,
            &snap[..12],
            sources,
            queries.len()
        );
        let mut stores = Vec::new();
        for e in &embedders {
            let dir = common::bench_dir("localize-eval");
            let store = Store::open(dir.path(), StoreOptions::default(), engram::projections())
                .expect("open store");
            let t = Instant::now();
            index::index(
                &store,
                &tree,
                &IndexOptions {
                    embedder: e.clone(),
                    ..Default::default()
                },
            )
            .expect("index");
            *index_seconds
                .entry(format!("engram[{}]", e.name()))
                .or_default() += t.elapsed().as_secs_f64();
            stores.push((dir, store));
        }
        let t = Instant::now();
        let base = Baselines::build(&stores[0].1, &tree, dense.as_ref());
        *index_seconds.entry("baselines".into()).or_default() += t.elapsed().as_secs_f64();
        for q in &queries {
            query_meta.push((
                repo.name.clone(),
                repo.split.clone(),
                q.commit.clone(),
                q.text.clone(),
            ));
            let mut put = |name: &str, files: Vec<String>| {
                if let Some(t) = top.as_mut() {
                    t.push_str(&format!(
                        "{}\t{}\t{name}\t{}\t{}\n",
                        repo.name,
                        &q.commit[..12],
                        q.gold.join(","),
                        files.iter().take(3).cloned().collect::<Vec<_>>().join(",")
                    ));
                }
                ranks
                    .entry(name.to_string())
                    .or_default()
                    .push(first_gold_rank(&files, &q.gold));
            };
            put("bm25-files", base.bm25_files(&q.text));
            let bm = base.bm25_windows(&q.text, 200);
            put("bm25-chunks", base.to_files(bm.iter().copied()));
            let qv = dense
                .embed(&[q.text.as_str()])
                .expect("embed query")
                .pop()
                .unwrap_or_default();
            let dn = base.dense_windows(&qv, 200);
            put(
                &format!("dense[{}]", dense.name()),
                base.to_files(dn.iter().copied()),
            );
            let as_list = |w: &[usize]| RankedList {
                keys: w.iter().map(|i| i.to_string()).collect(),
                weight: 1.0,
            };
            // Reciprocal rank with engram's k (engram::search::RRF_K, 60), equal weights.
            let fused = fuse(&[as_list(&bm), as_list(&dn)]);
            put(
                &format!("bm25+dense[{}]", dense.name()),
                base.to_files(fused.iter().filter_map(|(k, _)| k.parse().ok())),
            );
            for (e, (_, store)) in embedders.iter().zip(&stores) {
                put(
                    &format!("engram[{}]", e.name()),
                    engram_files(store, &q.text, e, None),
                );
                for (label, g) in graph_settings() {
                    put(
                        &format!("engram[{}] graph={label}", e.name()),
                        engram_files(store, &q.text, e, Some(g)),
                    );
                    put(
                        &format!("engram[{}] graph={label} first-chunk", e.name()),
                        first_hit_files(&engram_hits(store, &q.text, e, false, Some(g))),
                    );
                }
                let hits = engram_hits(store, &q.text, e, false, None);
                put(
                    &format!("engram[{}] first-chunk", e.name()),
                    first_hit_files(&hits),
                );
                for w in aggregation_weights() {
                    put(
                        &format!("engram[{}] agg={w}", e.name()),
                        aggregated_files(&hits, w),
                    );
                }
            }
            put(
                "engram-keyword",
                first_hit_files(&engram_hits(
                    &stores[0].1,
                    &q.text,
                    &embedders[0],
                    true,
                    None,
                )),
            );
        }
    }
    if let Some(t) = top {
        std::fs::create_dir_all(&data).expect("mkdir");
        std::fs::write(data.join("top.tsv"), t).expect("write top.tsv");
    }
    report(&data, &names, &ranks, &query_meta, &index_seconds);
}

fn report(
    data: &Path,
    names: &[String],
    ranks: &BTreeMap<String, Vec<Option<usize>>>,
    meta: &[(String, String, String, String)],
    index_seconds: &HashMap<String, f64>,
) {
    let fusion = names.iter().find(|n| n.starts_with("bm25+dense")).cloned();
    let mut out = json!({"index_seconds": index_seconds});
    for split in ["held-out", "tune", "all"] {
        let pick: Vec<usize> = (0..meta.len())
            .filter(|&i| split == "all" || meta[i].1 == split)
            .collect();
        if pick.is_empty() {
            continue;
        }
        let sub = |name: &str| -> Vec<Option<usize>> {
            let r = &ranks[name];
            pick.iter().map(|&i| r[i]).collect()
        };
        println!("\n{split}: {} queries", pick.len());
        println!(
            "{:<28} {:>6} {:>6} {:>6} {:>7}   {:>22}   {:>22}",
            "system", "Acc@1", "Acc@5", "Acc@10", "MRR@10", "dAcc@1 vs fusion", "dMRR vs fusion"
        );
        let mut rows = serde_json::Map::new();
        for name in names {
            let r = sub(name);
            let s = summarize(&r);
            let (ci_acc, ci_mrr) = match &fusion {
                Some(f) if f != name => {
                    let base = sub(f);
                    (
                        metrics::bootstrap_ci(&metrics::paired(&r, &base, |x| {
                            metrics::hit_at(x, 1)
                        })),
                        metrics::bootstrap_ci(&metrics::paired(&r, &base, metrics::rr10)),
                    )
                }
                _ => ((0.0, 0.0), (0.0, 0.0)),
            };
            println!(
                "{:<28} {:>6.3} {:>6.3} {:>6.3} {:>7.3}   [{:>+7.3}, {:>+7.3}]   [{:>+7.3}, {:>+7.3}]",
                name, s.acc1, s.acc5, s.acc10, s.mrr10, ci_acc.0, ci_acc.1, ci_mrr.0, ci_mrr.1
            );
            rows.insert(
                name.clone(),
                json!({"n": s.n, "acc1": s.acc1, "acc5": s.acc5, "acc10": s.acc10, "mrr10": s.mrr10,
                       "acc1_vs_fusion_ci": [ci_acc.0, ci_acc.1], "mrr10_vs_fusion_ci": [ci_mrr.0, ci_mrr.1]}),
            );
        }
        // Each graph-signal setting against the same ranking without it.
        let mut graph_rows = serde_json::Map::new();
        for name in names.iter().filter(|n| n.contains(" graph=")) {
            let Some((head, rest)) = name.split_once(" graph=") else {
                continue;
            };
            let base = if rest.ends_with(" first-chunk") {
                format!("{head} first-chunk")
            } else {
                head.to_string()
            };
            let (r, b) = (sub(name), sub(&base));
            let ci_acc = metrics::bootstrap_ci(&metrics::paired(&r, &b, |x| metrics::hit_at(x, 1)));
            let ci_mrr = metrics::bootstrap_ci(&metrics::paired(&r, &b, metrics::rr10));
            let (s, sb) = (summarize(&r), summarize(&b));
            println!(
                "  {name:<44} vs without: Acc@1 {:+.3} [{:+.3}, {:+.3}]  MRR@10 {:+.3} [{:+.3}, {:+.3}]",
                s.acc1 - sb.acc1,
                ci_acc.0,
                ci_acc.1,
                s.mrr10 - sb.mrr10,
                ci_mrr.0,
                ci_mrr.1
            );
            graph_rows.insert(
                name.clone(),
                json!({"acc1_vs_without_ci": [ci_acc.0, ci_acc.1], "mrr10_vs_without_ci": [ci_mrr.0, ci_mrr.1]}),
            );
        }
        rows.insert(
            "graph_vs_without".into(),
            serde_json::Value::Object(graph_rows),
        );
        out[split] = serde_json::Value::Object(rows);
    }
    println!("\nindex seconds: {index_seconds:?}");
    std::fs::create_dir_all(data).expect("mkdir");
    std::fs::write(
        data.join("results.json"),
        serde_json::to_string_pretty(&out).unwrap(),
    )
    .expect("write results");
    let mut tsv = String::from("repo\tsplit\tcommit");
    for n in names {
        tsv.push('\t');
        tsv.push_str(n);
    }
    tsv.push_str("\tquery\n");
    for (i, (repo, split, commit, text)) in meta.iter().enumerate() {
        tsv.push_str(&format!("{repo}\t{split}\t{}", &commit[..12]));
        for n in names {
            let r = ranks[n][i]
                .map(|r| r.to_string())
                .unwrap_or_else(|| "-".into());
            tsv.push('\t');
            tsv.push_str(&r);
        }
        tsv.push('\t');
        tsv.push_str(&text.replace(['\t', '\n'], " "));
        tsv.push('\n');
    }
    std::fs::write(data.join("ranks.tsv"), tsv).expect("write ranks");
}
