//! The localization eval's queries, made from a repository's history by the data rule
//! of `docs/localize-eval.md` (each numbered step there is marked here). Only `git`
//! is run; nothing is written but the snapshot's tree.

use std::path::Path;
use std::process::Command;

/// One query: a commit's cleaned message and the source files it changed.
#[derive(Debug, Clone)]
pub struct Query {
    pub commit: String,
    pub text: String,
    pub gold: Vec<String>,
}

/// First-parent commits from `head` back to the snapshot (rule 1).
pub const SNAPSHOT_DEPTH: usize = 300;
/// Queries kept per repository (rule 8).
pub const CAP: usize = 120;
/// Fewest source files a snapshot must have (rule 9).
pub const MIN_SOURCE_FILES: usize = 30;

fn git(repo: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(repo)
        .args(args)
        .output()
        .map_err(|e| format!("git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Rule 1: the snapshot commit of `head`.
pub fn snapshot(repo: &Path, head: &str) -> Result<String, String> {
    let list = git(repo, &["rev-list", "--first-parent", head])?;
    list.lines()
        .nth(SNAPSHOT_DEPTH)
        .map(str::to_string)
        .ok_or_else(|| format!("fewer than {SNAPSHOT_DEPTH} first-parent commits"))
}

/// Rule 3: whether `path` is a source file.
pub fn is_source(path: &str) -> bool {
    const EXT: [&str; 11] = [
        "rs", "py", "js", "mjs", "cjs", "jsx", "ts", "tsx", "mts", "cts", "go",
    ];
    const DIRS: [&str; 16] = [
        "test",
        "tests",
        "__tests__",
        "testdata",
        "testing",
        "spec",
        "specs",
        "fixtures",
        "fixture",
        "examples",
        "example",
        "benches",
        "bench",
        "benchmarks",
        "docs",
        "doc",
    ];
    let mut parts: Vec<&str> = path.split('/').collect();
    let Some(name) = parts.pop() else {
        return false;
    };
    let Some((stem, ext)) = name.rsplit_once('.') else {
        return false;
    };
    if !EXT.contains(&ext) || parts.iter().any(|d| DIRS.contains(d)) {
        return false;
    }
    let test_name = name.ends_with("_test.go")
        || (ext == "py" && (stem.starts_with("test_") || stem.ends_with("_test")))
        || name == "conftest.py"
        || stem.ends_with(".test")
        || stem.ends_with(".spec");
    !test_name
}

/// Rule 5: the query text of a commit message.
pub fn clean_message(subject: &str, body: &str) -> String {
    let mut subject = subject.trim();
    // Bracketed tags at the start: `[skip ci]`, `[docs]`.
    while let Some(rest) = subject.strip_prefix('[') {
        match rest.split_once(']') {
            Some((_, after)) => subject = after.trim_start(),
            None => break,
        }
    }
    let paragraph: Vec<&str> = body
        .trim()
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| !is_trailer(l))
        .collect();
    let mut text = subject.to_string();
    if !paragraph.is_empty() {
        text.push('\n');
        text.push_str(&paragraph.join("\n"));
    }
    let words: Vec<String> = text
        .split_whitespace()
        .filter_map(strip_reference)
        .collect();
    words.join(" ")
}

/// A trailer line (`Signed-off-by: …`).
fn is_trailer(line: &str) -> bool {
    let Some((key, _)) = line.trim().split_once(": ") else {
        return false;
    };
    key.contains('-') && key.chars().all(|c| c.is_ascii_alphabetic() || c == '-')
}

/// A word with URLs and issue references taken out; `None` when nothing is left.
fn strip_reference(word: &str) -> Option<String> {
    if word.contains("http://") || word.contains("https://") {
        return None;
    }
    // `#123`, `(#123)`, `GH-123`, `owner/repo#123`, with punctuation around.
    let core = word.trim_matches(|c: char| "()[]{},.;:!?\"'".contains(c));
    let is_ref = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    if let Some((_, n)) = core.rsplit_once('#') {
        if is_ref(n) {
            return None;
        }
    }
    let lower = core.to_ascii_lowercase();
    if lower.strip_prefix("gh-").is_some_and(is_ref) {
        return None;
    }
    if core.is_empty() && !word.is_empty() && word.chars().all(|c| "()[]".contains(c)) {
        return None;
    }
    Some(word.to_string())
}

/// Rule 6: whether a commit is dropped for its text.
pub fn dropped(subject: &str, text: &str, gold: &[String]) -> bool {
    let s = subject.trim().to_lowercase();
    const PREFIXES: [&str; 6] = [
        "merge",
        "revert",
        "release",
        "bump",
        "version",
        "prepare release",
    ];
    if PREFIXES.iter().any(|p| s.starts_with(p))
        || s.chars().next().is_some_and(|c| c.is_ascii_digit())
        || (s.starts_with('v') && s[1..].chars().next().is_some_and(|c| c.is_ascii_digit()))
    {
        return true;
    }
    let words = text
        .split_whitespace()
        .filter(|w| w.chars().any(char::is_alphabetic))
        .count();
    if words < 3 {
        return true;
    }
    let lower = text.to_lowercase();
    gold.iter().any(|p| {
        let p = p.to_lowercase();
        let name = p.rsplit('/').next().unwrap_or(&p);
        lower.contains(&p) || lower.contains(name)
    })
}

/// Rules 2-8: the queries of a repository at `head` whose snapshot is `snap`.
pub fn queries(repo: &Path, snap: &str, head: &str) -> Result<Vec<Query>, String> {
    let at_snapshot: std::collections::HashSet<String> =
        git(repo, &["ls-tree", "-r", "--name-only", snap])?
            .lines()
            .map(str::to_string)
            .collect();
    // One record per commit: hash, subject, body, then the name-status lines.
    let range = format!("{snap}..{head}");
    let log = git(
        repo,
        &[
            "log",
            "--no-merges",
            "--reverse",
            "--no-renames",
            "--format=%x1e%H%x1f%s%x1f%b%x1f",
            "--name-status",
            &range,
        ],
    )?;
    let mut out = Vec::new();
    for rec in log.split('\x1e').filter(|r| !r.trim().is_empty()) {
        let mut f = rec.splitn(4, '\x1f');
        let (Some(hash), Some(subject), Some(body), Some(files)) =
            (f.next(), f.next(), f.next(), f.next())
        else {
            continue;
        };
        let mut gold = Vec::new();
        let mut eligible = true;
        for line in files.lines().filter(|l| !l.trim().is_empty()) {
            let Some((status, path)) = line.split_once('\t') else {
                continue;
            };
            if !is_source(path) {
                continue;
            }
            if status != "M" || !at_snapshot.contains(path) {
                eligible = false;
            }
            gold.push(path.to_string());
        }
        if !eligible || gold.is_empty() || gold.len() > 4 {
            continue;
        }
        let text = clean_message(subject, body);
        if dropped(subject, &text, &gold) {
            continue;
        }
        out.push(Query {
            commit: hash.to_string(),
            text,
            gold,
        });
        if out.len() == CAP {
            break;
        }
    }
    Ok(out)
}

/// How many source files the snapshot has (rule 9).
pub fn source_files(repo: &Path, snap: &str) -> Result<usize, String> {
    Ok(git(repo, &["ls-tree", "-r", "--name-only", snap])?
        .lines()
        .filter(|p| is_source(p))
        .count())
}

/// Write the snapshot's tree into `dir` (emptied first). Blobs the clone lacks (a
/// partial or size-limited copy) are left out: a file that is not there cannot be
/// ranked, and no query's gold is among them unless its commit read it, which
/// [`queries`] does not check, so such a query simply cannot be answered.
pub fn export(repo: &Path, snap: &str, dir: &Path) -> Result<(), String> {
    use std::io::{BufRead, BufReader, Read, Write};
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| format!("clear {}: {e}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    let listing = git(repo, &["ls-tree", "-r", snap])?;
    // `mode type hash\tpath`; only regular files.
    let files: Vec<(String, String)> = listing
        .lines()
        .filter_map(|l| {
            let (head, path) = l.split_once('\t')?;
            let mut f = head.split(' ');
            let (mode, kind, hash) = (f.next()?, f.next()?, f.next()?);
            (kind == "blob" && mode.starts_with("100"))
                .then(|| (hash.to_string(), path.to_string()))
        })
        .collect();
    let mut cat = Command::new("git")
        .arg("--git-dir")
        .arg(repo)
        .args(["cat-file", "--batch"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("git cat-file: {e}"))?;
    let mut input = cat.stdin.take().ok_or("git cat-file: no stdin")?;
    let hashes: Vec<String> = files.iter().map(|(h, _)| h.clone()).collect();
    let feeder = std::thread::spawn(move || {
        for h in hashes {
            if writeln!(input, "{h}").is_err() {
                break;
            }
        }
    });
    let mut out = BufReader::new(cat.stdout.take().ok_or("git cat-file: no stdout")?);
    for (_, path) in &files {
        let mut header = String::new();
        out.read_line(&mut header)
            .map_err(|e| format!("git cat-file: {e}"))?;
        // `hash blob size`, or `hash missing`.
        let size: Option<usize> = header
            .split_whitespace()
            .nth(2)
            .and_then(|n| n.parse().ok());
        let Some(size) = size else { continue };
        let mut body = vec![0u8; size + 1]; // the blob and its trailing newline
        out.read_exact(&mut body)
            .map_err(|e| format!("git cat-file: {e}"))?;
        body.pop();
        let to = dir.join(path);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("mkdir: {e}"))?;
        }
        std::fs::write(&to, &body).map_err(|e| format!("write {}: {e}", to.display()))?;
    }
    feeder.join().map_err(|_| "git cat-file feeder panicked")?;
    cat.wait().map_err(|e| format!("git cat-file: {e}"))?;
    Ok(())
}
