//! Embedding throughput of the neural embedder against the Python
//! sentence-transformers pipeline, side by side in one run (plain `main`, no harness).
//!
//! Owns: chunks/s of [`NeuralEmbedder`] and of `SentenceTransformer.encode` (CPU
//! torch, its default threads and batch size 32) over the same code chunks — this
//! repository's own `src/**/*.rs` cut into pieces of 5 to 60 lines — on the same
//! machine, alternating them so that a busy neighbour slows all alike; the median of
//! the rounds is reported. engram runs once per round for each of its matrix-product
//! paths, each in a child process of this binary (the path is chosen once per
//! process): `f32` (`ENGRAM_NEURAL_AVX512=0 ENGRAM_NEURAL_AMX=0`, the reference) and
//! `default` (what this CPU gets), or the `ENGRAM_NEURAL_AVX512` values listed in
//! `ENGRAM_BENCH_PATHS` (default `0,default`; `bf16`, `int8`). `ENGRAM_BENCH_CHUNKS`
//! (default 192) and `ENGRAM_BENCH_ROUNDS` (default 3) size it. The Python side is
//! skipped with a message when python3 lacks sentence-transformers; the whole bench is
//! skipped when the model files are missing. Must never: download anything, or leave
//! its temporary files.

#[path = "../tests/it/support/model_dir.rs"]
mod model_dir;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use engram::embed::neural::NeuralEmbedder;
use engram::embed::Embedder;

const PYTHON: &str = r#"
import json, os, sys, time
os.environ.setdefault("HF_HUB_OFFLINE", "1")
from sentence_transformers import SentenceTransformer
import torch
model_dir, texts_file = sys.argv[1], sys.argv[2]
texts = json.load(open(texts_file))
m = SentenceTransformer(model_dir, device="cpu")
m.encode(texts[:16], batch_size=32)
t = time.perf_counter()
v = m.encode(texts, batch_size=32, normalize_embeddings=False)
s = time.perf_counter() - t
print(json.dumps({"seconds": s, "threads": torch.get_num_threads(), "torch": torch.__version__}))
"#;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read src")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// This repository's sources cut into chunks of 5..60 lines (a fixed pseudo-random
/// sequence), `n` of them spread over all files.
fn chunks(n: usize) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    let mut all = Vec::new();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for f in files {
        let text = std::fs::read_to_string(&f).expect("read source");
        let lines: Vec<&str> = text.lines().collect();
        let mut at = 0;
        while at < lines.len() {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = 5 + (seed % 56) as usize;
            let end = (at + len).min(lines.len());
            let chunk = lines[at..end].join("\n");
            if !chunk.trim().is_empty() {
                all.push(chunk);
            }
            at = end;
        }
    }
    let step = (all.len() / n.max(1)).max(1);
    all.into_iter().step_by(step).take(n).collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn python_seconds(model: &Path, texts_file: &Path) -> Result<(f64, String), String> {
    let out = Command::new("python3")
        .arg("-c")
        .arg(PYTHON)
        .arg(model)
        .arg(texts_file)
        .output()
        .map_err(|e| format!("python3 did not run: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().last().unwrap_or("").to_string();
        return Err(last);
    }
    let line = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(line.trim().lines().last().unwrap_or(""))
        .map_err(|e| format!("unexpected output {line:?}: {e}"))?;
    let s = v["seconds"].as_f64().ok_or("no seconds")?;
    Ok((
        s,
        format!("torch {} with {} threads", v["torch"], v["threads"]),
    ))
}

/// This process's resident set now and at its peak, in MB (Linux; 0 elsewhere).
fn rss_mb() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// The child's side: load, embed one short query (what a CLI search pays), warm up
/// (where the packed weights are made), embed the texts of `texts_file` once, print
/// the seconds, the path taken, the costs before and the peak RSS as one JSON line.
fn child(model: &Path, texts_file: &Path) {
    let texts: Vec<String> =
        serde_json::from_str(&std::fs::read_to_string(texts_file).expect("read texts"))
            .expect("texts JSON");
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let ms = |t: Instant| t.elapsed().as_secs_f64() * 1000.0;
    let t = Instant::now();
    let e = NeuralEmbedder::load("all-minilm-l6-v2", model).expect("load the model");
    let load = ms(t);
    let t = Instant::now();
    e.embed(&["where are vectors written"]).expect("a query");
    let query = ms(t);
    let loaded_rss = rss_mb().0;
    let t = Instant::now();
    e.embed(&refs[..16.min(refs.len())]).expect("warm-up");
    let warm = ms(t);
    let t = Instant::now();
    let v = e.embed(&refs).expect("embed");
    let s = t.elapsed().as_secs_f64();
    assert_eq!(v.len(), refs.len());
    println!(
        "{}",
        serde_json::json!({"seconds": s, "kind": e.matmul_kind(), "load_ms": load,
            "query_ms": query, "warmup_ms": warm, "rss_after_query_mb": loaded_rss,
            "peak_rss_mb": rss_mb().1})
    );
}

/// One engram run in a child process with `ENGRAM_NEURAL_AVX512=path`: (seconds, the
/// linear layers' kind, the child's whole report).
fn engram_seconds(path: &str, model: &Path, texts_file: &Path) -> (f64, String, serde_json::Value) {
    let mut cmd = Command::new(std::env::current_exe().expect("this binary"));
    cmd.env("ENGRAM_BENCH_CHILD", texts_file)
        .env("ENGRAM_MODEL_DIR", model);
    match path {
        "default" => cmd.env_remove("ENGRAM_NEURAL_AVX512"),
        "0" => cmd
            .env("ENGRAM_NEURAL_AVX512", "0")
            .env("ENGRAM_NEURAL_AMX", "0"),
        other => cmd.env("ENGRAM_NEURAL_AVX512", other),
    };
    let out = cmd.output().expect("run the child");
    assert!(
        out.status.success(),
        "the {path} child failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value =
        serde_json::from_str(line.trim().lines().last().unwrap_or("")).expect("child JSON");
    (
        v["seconds"].as_f64().expect("seconds"),
        v["kind"].as_str().unwrap_or("?").to_string(),
        v,
    )
}

fn main() {
    let model = match model_dir::minilm_dir() {
        Ok(d) => d,
        Err(why) => {
            eprintln!("embed_throughput: SKIPPED, no model: {why}");
            return;
        }
    };
    if let Some(texts_file) = std::env::var_os("ENGRAM_BENCH_CHILD") {
        child(&model, Path::new(&texts_file));
        return;
    }
    let n = env_usize("ENGRAM_BENCH_CHUNKS", 192);
    let rounds = env_usize("ENGRAM_BENCH_ROUNDS", 3).max(1);
    let paths: Vec<String> = std::env::var("ENGRAM_BENCH_PATHS")
        .unwrap_or_else(|_| "0,default".into())
        .split(',')
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect();
    let texts = chunks(n);
    let tmp = tempfile::tempdir().expect("tempdir");
    let texts_file = tmp.path().join("texts.json");
    std::fs::write(&texts_file, serde_json::to_string(&texts).expect("json")).expect("write");

    let e = NeuralEmbedder::load("all-minilm-l6-v2", &model).expect("load the model");
    let tokens: usize = texts.iter().map(|t| e.token_count(t)).sum();
    println!(
        "embed_throughput: {} chunks of this repository's Rust source, {} tokens after truncation at {} (mean {:.0}), {} threads available",
        texts.len(),
        tokens,
        e.max_tokens(),
        tokens as f64 / texts.len() as f64,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    );
    drop(e);

    let mut rust: Vec<Vec<f64>> = vec![Vec::new(); paths.len()];
    let mut kinds = vec![String::new(); paths.len()];
    let mut costs = vec![serde_json::Value::Null; paths.len()];
    let mut python = Vec::new();
    let mut python_note = None;
    for round in 1..=rounds {
        print!("  round {round}:");
        for (i, p) in paths.iter().enumerate() {
            let (s, kind, report) = engram_seconds(p, &model, &texts_file);
            rust[i].push(texts.len() as f64 / s);
            print!("  {kind} {:6.1}", texts.len() as f64 / s);
            kinds[i] = kind;
            costs[i] = report;
        }
        if python_note
            .as_ref()
            .is_none_or(|r: &Result<String, String>| r.is_ok())
        {
            match python_seconds(&model, &texts_file) {
                Ok((s, what)) => {
                    python.push(texts.len() as f64 / s);
                    print!("  sentence-transformers {:6.1}", texts.len() as f64 / s);
                    python_note = Some(Ok(what));
                }
                Err(why) => python_note = Some(Err(why)),
            }
        }
        println!("  chunks/s");
    }
    let medians: Vec<f64> = rust.into_iter().map(median).collect();
    let p = match python_note {
        Some(Ok(what)) => {
            let p = median(python);
            println!("sentence-transformers:  {p:8.1} chunks/s (median of {rounds}; {what})");
            Some(p)
        }
        other => {
            let why = other.and_then(Result::err).unwrap_or_default();
            println!(
                "sentence-transformers:  SKIPPED (pip install sentence-transformers for the baseline): {why}"
            );
            None
        }
    };
    let f32_median = paths.iter().position(|p| p == "0").map(|i| medians[i]);
    for ((path, kind), r) in paths.iter().zip(&kinds).zip(&medians) {
        print!("engram, {kind} ({path}): {r:8.1} chunks/s (median of {rounds})");
        if let Some(f) = f32_median.filter(|_| path != "0") {
            print!(", {:.2}x f32", r / f);
        }
        if let Some(p) = p {
            print!(", {:.2}x sentence-transformers", r / p);
        }
        println!();
    }
    // The costs of the last round's children: loading (mapping, not packing), one
    // short query after it (a CLI search), the warm-up of 16 chunks (the packing, on
    // the packed paths), and the resident set.
    for ((path, kind), c) in paths.iter().zip(&kinds).zip(&costs) {
        let f = |k: &str| c[k].as_f64().unwrap_or(f64::NAN);
        println!(
            "  {kind} ({path}): load {:.1} ms, first query {:.1} ms, warm-up of 16 chunks {:.0} ms; RSS {:.0} MB after the query, peak {:.0} MB",
            f("load_ms"),
            f("query_ms"),
            f("warmup_ms"),
            f("rss_after_query_mb"),
            f("peak_rss_mb")
        );
    }
}
