//! False positives of the built-in secret scanner on real code that holds no secrets.
//!
//! The corpus is a pinned set of well-known packages from crates.io, PyPI and npm (Rust,
//! Python, C, JavaScript, TypeScript; see `tools/fp-corpus/manifest.tsv`). Every text file
//! in it (no NUL byte in its first 8 KiB, at most 2 MiB) is scanned with the built-in
//! `secrets` set, and every hit is counted against the rule that made it. On this corpus a
//! hit is a false positive unless it is listed in `tools/fp-corpus/true-positives.tsv`: real
//! credentials someone checked (published on purpose, as test fixtures, but real), counted
//! apart. The target is at most 1 false positive per 100K lines for each rule.
//!
//! ```text
//! tools/fp-corpus/fetch.sh
//! cargo bench --no-default-features --features patterns --bench secrets_fp
//! ENGRAM_FP_SHOW=1 cargo bench ... --bench secrets_fp    # every hit, file:line, masked
//! ENGRAM_FP_SHOW=raw cargo bench ... --bench secrets_fp  # the same, the matched text unmasked
//!                                                         # (for whoever tunes the checks: the
//!                                                         # corpus holds no live credentials)
//! ENGRAM_FP_STRICT=1 cargo bench ... --bench secrets_fp  # exit 1 when a rule is over target
//!                                                         # or a true-positive entry is stale
//! ```
//!
//! `ENGRAM_FP_CORPUS` points at another corpus directory (default `target/fp-corpus`, the
//! fetch script's default). Missing corpus: the bench says how to fetch it and exits 2.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use engram::patterns::{mask, Redactor};

/// Larger files are generated or bundled (minified builds, data); they are not what the
/// scanner meets in a code base's own sources, and the indexer skips them too.
const MAX_FILE: u64 = 2 * 1024 * 1024;

/// How far to look for a NUL byte when telling text from binary (what git does).
const SNIFF: usize = 8 * 1024;

/// The target: at most this many hits per 100K scanned lines, for each rule.
const TARGET_PER_100K: f64 = 1.0;

/// One secret the scanner reported: which rule, and where in the file's bytes.
struct Finding {
    rule: String,
    start: usize,
    end: usize,
}

/// The secret finder under test: the redactor's decisions, as every way into the store
/// takes them (whole spans, the rules' checks and the allowlists applied, path rows
/// included).
struct Finder {
    redactor: &'static Redactor,
}

impl Finder {
    fn builtin() -> Finder {
        Finder {
            redactor: Redactor::builtin().expect("the built-in secret rules compile"),
        }
    }

    /// Every rule id, so that rules without a hit still show in the table.
    fn rules(&self) -> Vec<String> {
        engram::patterns::builtin::secrets()
            .patterns
            .iter()
            .map(|p| p.id.clone())
            .collect()
    }

    /// The secrets in the file at `path` (relative to the corpus's `src/`), as the
    /// redactor decides them: what the index would replace.
    fn find(&self, path: &str, data: &[u8]) -> Vec<Finding> {
        let text = String::from_utf8_lossy(data);
        self.redactor
            .find_at(path, &text)
            .expect("finding never fails on text")
            .into_iter()
            .map(|f| Finding {
                rule: self
                    .redactor
                    .rule(f.rule)
                    .map_or_else(|| "?".to_string(), |r| r.id.to_string()),
                start: f.start,
                end: f.end,
            })
            .collect()
    }
}

/// The language a file is counted under, by extension; everything else that is text
/// (docs, translations, JSON, HTML, ...) is scanned too and counted as "other text".
fn language(path: &Path) -> &'static str {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let ext = name.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    match ext {
        "rs" => "Rust",
        "py" | "pyi" | "pyx" | "pxd" => "Python",
        "c" | "h" => "C",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" => "C++",
        "go" => "Go",
        "java" => "Java",
        "js" | "mjs" | "cjs" | "jsx" => "JavaScript",
        "ts" | "mts" | "cts" | "tsx" => "TypeScript",
        _ => "other text",
    }
}

/// Every regular file under `dir`, in a stable order; symlinks are not followed, so the
/// corpus cannot lead the walk outside itself.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = match std::fs::read_dir(dir) {
        Ok(rd) => rd.filter_map(Result::ok).collect(),
        Err(e) => {
            eprintln!("secrets_fp: cannot read {}: {e}", dir.display());
            return;
        }
    };
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            walk(&entry.path(), out);
        } else if kind.is_file() {
            out.push(entry.path());
        }
    }
}

/// Lines as an editor counts them: a last line without a newline still counts.
fn count_lines(data: &[u8]) -> u64 {
    let newlines = data.iter().filter(|&&b| b == b'\n').count() as u64;
    newlines + u64::from(data.last().is_some_and(|&b| b != b'\n'))
}

/// The (path under src/, rule) pairs of `true-positives.tsv`; a path may end in
/// `:LINE` to name one hit of the file.
fn known_true_positives() -> BTreeSet<(String, String)> {
    let path = common::repo_path("tools/fp-corpus/true-positives.tsv");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut cols = l.split('\t');
            match (cols.next(), cols.next()) {
                (Some(p), Some(r)) => (p.to_string(), r.to_string()),
                _ => panic!("{}: expected path<TAB>rule<TAB>why: {l}", path.display()),
            }
        })
        .collect()
}

/// Hits of one rule, split by whether they were checked and found to be real secrets.
#[derive(Default)]
struct Tally {
    true_pos: u64,
    false_pos: u64,
}

fn per_100k(hits: u64, lines: u64) -> f64 {
    if lines == 0 {
        0.0
    } else {
        hits as f64 * 100_000.0 / lines as f64
    }
}

fn main() {
    let corpus = std::env::var_os("ENGRAM_FP_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::repo_path("target/fp-corpus"));
    let src = corpus.join("src");
    let has_packages = std::fs::read_dir(&src).is_ok_and(|mut rd| rd.next().is_some());
    if !has_packages {
        eprintln!(
            "secrets_fp: no corpus in {}\n  run tools/fp-corpus/fetch.sh first \
             (it downloads the packages in tools/fp-corpus/manifest.tsv; \
             ENGRAM_FP_CORPUS picks another directory for both)",
            src.display()
        );
        std::process::exit(2);
    }
    let show = std::env::var_os("ENGRAM_FP_SHOW").is_some();
    let raw = std::env::var_os("ENGRAM_FP_SHOW").is_some_and(|v| v == "raw");
    let strict = std::env::var_os("ENGRAM_FP_STRICT").is_some();

    let known = known_true_positives();
    let mut known_seen = BTreeSet::new();
    let finder = Finder::builtin();

    let mut files = Vec::new();
    walk(&src, &mut files);

    // Per language: (files, lines, false positives).
    let mut by_lang: BTreeMap<&str, (u64, u64, u64)> = BTreeMap::new();
    let mut by_rule: BTreeMap<String, Tally> = finder
        .rules()
        .into_iter()
        .map(|r| (r, Tally::default()))
        .collect();
    let (mut skipped_big, mut skipped_binary, mut bytes) = (0u64, 0u64, 0u64);
    let started = Instant::now();

    for path in &files {
        let Ok(meta) = std::fs::metadata(path) else {
            continue;
        };
        if meta.len() > MAX_FILE {
            skipped_big += 1;
            continue;
        }
        let Ok(data) = std::fs::read(path) else {
            continue;
        };
        if data[..data.len().min(SNIFF)].contains(&0) {
            skipped_binary += 1;
            continue;
        }
        bytes += data.len() as u64;
        let lang = by_lang.entry(language(path)).or_default();
        lang.0 += 1;
        lang.1 += count_lines(&data);

        // Forward slashes whatever the platform, as in true-positives.tsv.
        let rel = path.strip_prefix(&src).unwrap_or(path);
        let rel = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        for f in finder.find(&rel, &data) {
            let line = 1 + data[..f.start].iter().filter(|&&b| b == b'\n').count();
            // An entry names the whole file, or one line of it (`path:LINE`) where the
            // file's other hits of the rule are false.
            let pair = (rel.clone(), f.rule.clone());
            let at_line = (format!("{rel}:{line}"), f.rule.clone());
            let entry = [pair, at_line].into_iter().find(|p| known.contains(p));
            let real = entry.is_some();
            let tally = by_rule.entry(f.rule.clone()).or_default();
            if let Some(entry) = entry {
                tally.true_pos += 1;
                known_seen.insert(entry);
            } else {
                tally.false_pos += 1;
                lang.2 += 1;
            }
            if show {
                let text = String::from_utf8_lossy(&data[f.start..f.end]);
                let verdict = if real { "true" } else { "false" };
                let shown = if raw {
                    text.escape_debug().to_string()
                } else {
                    mask(&text)
                };
                println!("{rel}:{line}\t{}\t{verdict}\t{shown}", f.rule);
            }
        }
    }
    let elapsed = started.elapsed();

    let total_files: u64 = by_lang.values().map(|v| v.0).sum();
    let total_lines: u64 = by_lang.values().map(|v| v.1).sum();
    let packages = std::fs::read_dir(&src).map(|rd| rd.count()).unwrap_or(0);
    if show {
        println!();
    }
    println!(
        "corpus: {packages} packages, {total_files} text files, {total_lines} lines, {:.1} MiB \
         ({skipped_big} files over 2 MiB and {skipped_binary} binary files skipped)",
        bytes as f64 / (1024.0 * 1024.0)
    );
    println!(
        "\n{:<12} {:>7} {:>10} {:>6} {:>10}",
        "language", "files", "lines", "false", "per 100K"
    );
    for (lang, (n, lines, fp)) in &by_lang {
        let rate = per_100k(*fp, *lines);
        println!("{lang:<12} {n:>7} {lines:>10} {fp:>6} {rate:>10.2}");
    }

    // Rates are over every scanned line, code or not: the scanner read all of them.
    println!(
        "\n{:<24} {:>6} {:>6} {:>10}  (target: at most {TARGET_PER_100K} false per 100K lines)",
        "rule", "true", "false", "per 100K"
    );
    let mut over = Vec::new();
    for (rule, t) in &by_rule {
        let rate = per_100k(t.false_pos, total_lines);
        let flag = if rate > TARGET_PER_100K {
            over.push(rule.clone());
            "  over"
        } else {
            ""
        };
        println!(
            "{rule:<24} {:>6} {:>6} {rate:>10.2}{flag}",
            t.true_pos, t.false_pos
        );
    }
    let true_pos: u64 = by_rule.values().map(|t| t.true_pos).sum();
    let false_pos: u64 = by_rule.values().map(|t| t.false_pos).sum();
    println!(
        "{:<24} {true_pos:>6} {false_pos:>6} {:>10.2}",
        "total",
        per_100k(false_pos, total_lines)
    );
    println!(
        "\nscanned in {:.2} s ({:.0} MiB/s)",
        elapsed.as_secs_f64(),
        bytes as f64 / (1024.0 * 1024.0) / elapsed.as_secs_f64().max(1e-9)
    );

    // An entry nothing matched means the rule stopped finding a real key (or the corpus
    // changed): either way the list needs a look.
    let stale: Vec<_> = known.difference(&known_seen).collect();
    for (path, rule) in &stale {
        eprintln!("secrets_fp: true-positives.tsv entry not hit: {path} ({rule})");
    }

    if strict && (!over.is_empty() || !stale.is_empty()) {
        if !over.is_empty() {
            eprintln!("secrets_fp: over target: {}", over.join(", "));
        }
        std::process::exit(1);
    }
}
