//! Frequency weights of the token rows: frequent pieces say little about what a text
//! is about, so their rows are scaled down before the table is quantised.

use std::path::{Path, PathBuf};

use engram::embed::static_table::Vocab;

/// The weight of every piece under `weighting`:
///
/// - `none`: 1;
/// - `sif`, `sif3`: SIF, a / (a + p), with p a Zipf probability from the piece's rank
///   in the vocabulary (BERT's vocabulary is roughly in frequency order; model2vec's
///   default), a = 1e-4 (`sif`) or 1e-3 (`sif3`);
/// - `log`: ln(1 + rank), as model2vec first weighted;
/// - `df`, `df3`, `df5`: SIF with p the piece's frequency counted over
///   `--freq-corpus`, a = 1e-4, 1e-3 or 1e-5 (a piece never seen counts once).
pub fn weights(weighting: &str, vocab: &Vocab, counts: Option<&[u64]>) -> Result<Vec<f32>, String> {
    let n = vocab.len();
    let sif = |p: &[f64], a: f64| p.iter().map(|&p| (a / (a + p)) as f32).collect();
    let zipf = || {
        let inv: Vec<f64> = (0..n).map(|r| 1.0 / (r as f64 + 2.0)).collect();
        let total: f64 = inv.iter().sum();
        inv.iter().map(|x| x / total).collect::<Vec<f64>>()
    };
    let corpus = || -> Result<Vec<f64>, String> {
        let c = counts.ok_or("df weighting needs --freq-corpus")?;
        let total: f64 = c.iter().map(|&x| x as f64 + 1.0).sum();
        Ok(c.iter().map(|&x| (x as f64 + 1.0) / total).collect())
    };
    Ok(match weighting {
        "none" => vec![1.0; n],
        "sif" => sif(&zipf(), 1e-4),
        "sif3" => sif(&zipf(), 1e-3),
        "log" => (0..n).map(|r| (1.0 + r as f32).ln()).collect(),
        "df" => sif(&corpus()?, 1e-4),
        "df3" => sif(&corpus()?, 1e-3),
        "df5" => sif(&corpus()?, 1e-5),
        _ => return Err(format!("unknown weighting {weighting:?}")),
    })
}

/// How often each piece occurs in the source files (`.rs`, `.py`, `.js`, `.ts`) under
/// `roots`, tokenised as the embedder tokenises. Directories named for a package of
/// the search eval (`tools/search-eval/manifest.tsv`: `bytes`, `bytes-1.2.0`, …) are
/// skipped, so no eval code shapes the weights. Each root gives at most
/// [`ROOT_BYTES`], walked in name order (so the counts are reproducible and no one
/// language swamps the others).
pub fn corpus_counts(vocab: &Vocab, roots: &[PathBuf]) -> Result<Vec<u64>, String> {
    let manifest = std::fs::read_to_string("tools/search-eval/manifest.tsv")
        .map_err(|e| format!("tools/search-eval/manifest.tsv (run from the repository): {e}"))?;
    let mut excluded: Vec<String> = manifest
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split('\t').next())
        .map(|n| n.replace('_', "-"))
        .collect();
    // The npm name of `tanstack-query-core`.
    excluded.push("query-core".into());
    let mut counts = vec![0u64; vocab.len()];
    let (mut files, mut bytes) = (0usize, 0usize);
    let mut ids = Vec::new();
    for root in roots {
        let mut root_bytes = 0usize;
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            if root_bytes >= ROOT_BYTES {
                break;
            }
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut entries: Vec<_> = entries.flatten().collect();
            // Reversed, so that popping the stack walks directories in name order.
            entries.sort_by_key(|e| std::cmp::Reverse(e.file_name()));
            for entry in entries {
                let path = entry.path();
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if kind.is_dir() {
                    if !is_excluded(&path, &excluded) {
                        stack.push(path);
                    }
                } else if kind.is_file() && is_source(&path) {
                    let Ok(text) = std::fs::read_to_string(&path) else {
                        continue;
                    };
                    ids.clear();
                    vocab.tokenize(&text, &mut ids);
                    for &id in &ids {
                        counts[id as usize] += 1;
                    }
                    files += 1;
                    bytes += text.len();
                    root_bytes += text.len();
                }
            }
        }
    }
    eprintln!(
        "frequencies: {files} files, {:.1} MB, {} pieces",
        bytes as f64 / 1e6,
        counts.iter().sum::<u64>()
    );
    Ok(counts)
}

/// Most source bytes one `--freq-corpus` root gives.
const ROOT_BYTES: usize = 60_000_000;

fn is_source(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("rs" | "py" | "js" | "ts" | "mjs" | "cjs")
    )
}

/// Whether a directory is (a version of) an eval package, or `site-packages` (which
/// may hold eval packages installed from PyPI).
fn is_excluded(path: &Path, excluded: &[String]) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return true;
    };
    let name = name.replace('_', "-").to_lowercase();
    if name == "site-packages" {
        return true;
    }
    excluded.iter().any(|p| {
        name == *p
            || name
                .strip_prefix(p.as_str())
                .and_then(|rest| rest.strip_prefix('-'))
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
    })
}
