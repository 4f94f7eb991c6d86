//! No secret reaches the disk, whatever way it comes in.
//!
//! Every kind of secret of `support/secrets.rs` is placed in every context below
//! (code literals, a comment, YAML, JSON, TOML, an env-style line, a plain block, a
//! JSON string with escaped newlines, a URL, a markdown fence) and fed through every
//! way in — `engram index`, `remember`, `import`, `note set`, `error record`, and
//! the MCP tools `memory_write` and `memory_write_structured` over stdio — each
//! instance freshly generated, into one store. Then every byte under the store (and
//! the sandboxed home the binary runs with) is searched, case-insensitively, for any
//! run of 8 characters (10 for hex) of any secret's sensitive part. A failure prints
//! a kind × way-in table and each leak's context and file, secrets masked.
//!
//! Seed: random per run, printed on failure; set `ENGRAM_SECRETS_SEED` to replay.
//! Run: `cargo test --profile ci --all-features --test it secrets_corpus::`.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use contexts::CONTEXTS;
use leaks::{files_under, Leaks};
use secrets::{generate, mask, Rng, Secret, KINDS};
use serde_json::{json, Value};

use crate::support::contexts;
use crate::support::leaks;
use crate::support::secrets;

const WAYS: &[&str] = &[
    "index",
    "remember",
    "import",
    "note_set",
    "error_record",
    "mcp_memory_write",
    "mcp_memory_write_structured",
];

/// One secret placed in one context and sent through one way in.
struct Instance {
    kind: usize,
    context: usize,
    way: usize,
    secret: Secret,
    /// A word unique to the instance, stored next to the secret: finding it on disk
    /// proves the text was written (redacted or not).
    canary: String,
    text: String,
}

struct Sandbox {
    _tmp: tempfile::TempDir,
    store: PathBuf,
    home: PathBuf,
    repo: PathBuf,
    empty_repo: PathBuf,
    work: PathBuf,
}

impl Sandbox {
    fn new() -> Sandbox {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path();
        let s = Sandbox {
            store: p.join("store"),
            home: p.join("home"),
            repo: p.join("repo"),
            empty_repo: p.join("empty-repo"),
            work: p.join("work"),
            _tmp: tmp,
        };
        for d in [&s.home, &s.repo, &s.empty_repo, &s.work] {
            std::fs::create_dir_all(d).unwrap();
        }
        s
    }

    fn engram(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_engram"));
        c.arg("--store")
            .arg(&self.store)
            .env_remove("ENGRAM_STORE")
            .env_remove("ENGRAM_HOME")
            .env_remove("ENGRAM_CONFIG")
            .env_remove("RUST_LOG")
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("XDG_DATA_HOME", self.home.join(".local/share"))
            .env("XDG_CACHE_HOME", self.home.join(".cache"))
            .current_dir(&self.work);
        c
    }

    fn run(&self, args: &[&str]) -> Result<(), String> {
        let out = self.engram().args(args).output().expect("run engram");
        if out.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }
}

fn seed() -> u64 {
    match std::env::var("ENGRAM_SECRETS_SEED") {
        Ok(s) => s.parse().expect("ENGRAM_SECRETS_SEED is a u64"),
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64,
    }
}

fn instances(seed: u64) -> Vec<Instance> {
    let mut r = Rng::new(seed);
    let mut all = Vec::new();
    for way in 0..WAYS.len() {
        for (kind, k) in KINDS.iter().enumerate() {
            for (context, ctx) in CONTEXTS.iter().enumerate() {
                let secret = generate(k, &mut r);
                let canary = format!("canary{way}x{kind}x{context}q");
                let text = (ctx.render)(&secret, &canary);
                all.push(Instance {
                    kind,
                    context,
                    way,
                    secret,
                    canary,
                    text,
                });
            }
        }
    }
    all
}

/// Errors from a way in (the write was refused, so nothing of it reached the disk).
type Refusals = Vec<String>;

fn feed_index(sb: &Sandbox, items: &[&Instance]) -> Refusals {
    for i in items {
        let rel = format!(
            "{}/{}.{}",
            CONTEXTS[i.context].name, KINDS[i.kind].name, CONTEXTS[i.context].ext
        );
        let p = sb.repo.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, &i.text).unwrap();
    }
    let repo = sb.repo.to_str().unwrap();
    sb.run(&["index", repo])
        .err()
        .map(|e| vec![format!("index: {e}")])
        .unwrap_or_default()
}

/// The instances of one way grouped by context: one CLI call per context holding
/// every kind, so the whole corpus runs in a few dozen processes.
fn by_context<'a>(items: &[&'a Instance]) -> Vec<(usize, Vec<&'a Instance>)> {
    let mut m: BTreeMap<usize, Vec<&Instance>> = BTreeMap::new();
    for i in items {
        m.entry(i.context).or_default().push(i);
    }
    m.into_iter().collect()
}

fn joined(items: &[&Instance]) -> String {
    items
        .iter()
        .map(|i| i.text.as_str())
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn feed_remember(sb: &Sandbox, items: &[&Instance]) -> Refusals {
    let mut refused = Vec::new();
    for (ctx, group) in by_context(items) {
        let text = joined(&group);
        if let Err(e) = sb.run(&["remember", "--tag", "corpus", "--", &text]) {
            refused.push(format!("remember {}: {e}", CONTEXTS[ctx].name));
        }
    }
    refused
}

fn feed_import(sb: &Sandbox, items: &[&Instance]) -> Refusals {
    let file = sb.work.join("import.jsonl");
    let mut lines = String::new();
    for i in items {
        lines.push_str(&json!({"text": i.text, "tags": ["corpus"]}).to_string());
        lines.push('\n');
    }
    std::fs::write(&file, lines).unwrap();
    let r = sb.run(&["import", file.to_str().unwrap()]);
    std::fs::remove_file(&file).unwrap();
    r.err()
        .map(|e| vec![format!("import: {e}")])
        .unwrap_or_default()
}

fn feed_notes(sb: &Sandbox, items: &[&Instance]) -> Refusals {
    let mut refused = Vec::new();
    for (ctx, group) in by_context(items) {
        let name = format!("deploy-{}", CONTEXTS[ctx].name);
        if let Err(e) = sb.run(&["note", "set", "--", &name, &joined(&group)]) {
            refused.push(format!("note set {}: {e}", CONTEXTS[ctx].name));
        }
    }
    refused
}

fn feed_errors(sb: &Sandbox, items: &[&Instance]) -> Refusals {
    let mut refused = Vec::new();
    for (ctx, group) in by_context(items) {
        let trace = format!(
            "Traceback (most recent call last):\n  File \"app/config.py\", line 42, in load\n    cfg = parse(raw)\n  File \"app/parse.py\", line 7, in parse\n    raise ConfigError(raw)\nConfigError: could not parse:\n{}\n",
            joined(&group)
        );
        let message = format!("could not parse the {} config", CONTEXTS[ctx].name);
        let args = [
            "error",
            "record",
            "--type",
            "ConfigError",
            "--message",
            &message,
            "--file",
            "app/config.py",
            "--line",
            "42",
        ];
        let trace_arg = format!("--stack-trace={trace}");
        let mut all: Vec<&str> = args.to_vec();
        all.push(&trace_arg);
        if let Err(e) = sb.run(&all) {
            refused.push(format!("error record {}: {e}", CONTEXTS[ctx].name));
        }
    }
    refused
}

/// `engram serve` over stdio, JSON-RPC by hand: one tools/call per instance.
fn feed_mcp(sb: &Sandbox, items: &[&Instance]) -> Refusals {
    let log = std::fs::File::create(sb.work.join("serve.log")).unwrap();
    let mut child = sb
        .engram()
        .args(["serve", "--tools", "all", "--repo"])
        .arg(&sb.empty_repo)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .expect("spawn engram serve");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut next_id = 0u64;
    let mut call = |stdin: &mut std::process::ChildStdin, method: &str, params: Value| {
        next_id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": next_id, "method": method, "params": params});
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
        loop {
            let mut line = String::new();
            let n = stdout.read_line(&mut line).unwrap();
            assert!(n > 0, "engram serve closed stdout (see serve.log)");
            let v: Value = serde_json::from_str(&line).expect("a JSON-RPC line");
            if v["id"] == json!(next_id) {
                return v;
            }
        }
    };
    let init = call(
        &mut stdin,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "secrets-corpus", "version": "0"}}),
    );
    assert!(init.get("result").is_some(), "initialize: {init}");
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .unwrap();
    let mut refused = Vec::new();
    for i in items {
        let (tool, args) = if WAYS[i.way] == "mcp_memory_write" {
            ("memory_write", json!({"text": i.text, "tags": ["corpus"]}))
        } else {
            (
                "memory_write_structured",
                json!({"text": i.text, "task": "implement_feature", "insights": ["context"],
                       "contexts": ["devops"], "tags": ["corpus"]}),
            )
        };
        let r = call(
            &mut stdin,
            "tools/call",
            json!({"name": tool, "arguments": args}),
        );
        if r.get("error").is_some() || r["result"]["isError"] == json!(true) {
            let what = r.get("error").unwrap_or(&r["result"]["content"]);
            refused.push(format!(
                "{tool} {} {}: {}",
                KINDS[i.kind].name,
                CONTEXTS[i.context].name,
                what.to_string().chars().take(200).collect::<String>()
            ));
        }
    }
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "engram serve exited with {status}");
    refused
}

fn find_leaks(all: &[Instance], files: &[(String, Vec<u8>)]) -> Leaks {
    let sensitive: Vec<&[String]> = all.iter().map(|i| i.secret.sensitive.as_slice()).collect();
    leaks::find_leaks(&sensitive, files)
}

fn report(seed: u64, all: &[Instance], leaks: &Leaks, refused: &[String], missing: &str) -> String {
    let mut out = format!(
        "secrets reached the disk (seed {seed}; replay with ENGRAM_SECRETS_SEED={seed}).\n\n"
    );
    // Kind × way: contexts leaked out of all.
    let width = KINDS.iter().map(|k| k.name.len()).max().unwrap();
    out.push_str(&format!(
        "contexts leaked (of {}) per kind and way in:\n{:width$}",
        CONTEXTS.len(),
        ""
    ));
    for (w, name) in WAYS.iter().enumerate() {
        out.push_str(&format!(" {:>3}:{name}", w + 1));
    }
    out.push('\n');
    let mut cells: HashMap<(usize, usize), usize> = HashMap::new();
    for &n in leaks.keys() {
        *cells.entry((all[n].kind, all[n].way)).or_default() += 1;
    }
    for (k, kind) in KINDS.iter().enumerate() {
        out.push_str(&format!("{:width$}", kind.name));
        for (w, name) in WAYS.iter().enumerate() {
            let cell = match cells.get(&(k, w)) {
                Some(c) => c.to_string(),
                None => ".".into(),
            };
            out.push_str(&format!(" {cell:>w$}", w = name.len() + 4));
        }
        out.push('\n');
    }
    out.push_str("\nleaks (kind, context, way in, secret masked, windows found, files):\n");
    // Enough to act on; ENGRAM_SECRETS_REPORT=full lists every one.
    let cap = if std::env::var("ENGRAM_SECRETS_REPORT").as_deref() == Ok("full") {
        usize::MAX
    } else {
        200
    };
    if leaks.len() > cap {
        out.push_str(&format!(
            "  (first {cap} of {}; ENGRAM_SECRETS_REPORT=full for all)\n",
            leaks.len()
        ));
    }
    for (&n, (files, count)) in leaks.iter().take(cap) {
        let i = &all[n];
        let files: Vec<_> = files.iter().cloned().collect();
        out.push_str(&format!(
            "  {} | {} | {} | {} | {count} | {}\n",
            KINDS[i.kind].name,
            CONTEXTS[i.context].name,
            WAYS[i.way],
            mask(&i.secret.sensitive[0]),
            files.join(", ")
        ));
    }
    if !refused.is_empty() {
        out.push_str("\nwrites refused (not leaks):\n");
        for r in refused {
            out.push_str(&format!("  {}\n", r.trim()));
        }
    }
    out.push_str(missing);
    out
}

#[test]
fn no_secret_reaches_the_disk_through_any_way_in() {
    let seed = seed();
    let all = instances(seed);
    let sb = Sandbox::new();
    let mut refused = Vec::new();
    for (w, way) in WAYS.iter().enumerate() {
        let items: Vec<&Instance> = all.iter().filter(|i| i.way == w).collect();
        refused.extend(match *way {
            "index" => feed_index(&sb, &items),
            "remember" => feed_remember(&sb, &items),
            "import" => feed_import(&sb, &items),
            "note_set" => feed_notes(&sb, &items),
            "error_record" => feed_errors(&sb, &items),
            "mcp_memory_write" => continue,
            "mcp_memory_write_structured" => {
                let mcp: Vec<&Instance> = all
                    .iter()
                    .filter(|i| WAYS[i.way].starts_with("mcp_"))
                    .collect();
                feed_mcp(&sb, &mcp)
            }
            other => unreachable!("{other}"),
        });
    }

    let mut files = Vec::new();
    files_under(&sb.store, sb.store.parent().unwrap(), &mut files);
    files_under(&sb.home, sb.home.parent().unwrap(), &mut files);
    assert!(!files.is_empty(), "nothing under the store");

    // Every way stored something: canaries on disk (a refused or skipped write is
    // no leak, but a way that stores nothing at all tests nothing).
    let mut present = vec![0usize; WAYS.len()];
    let mut missing_list: Vec<String> = Vec::new();
    // One pass for all canaries: index them by text.
    let canaries: HashMap<&str, usize> = all
        .iter()
        .enumerate()
        .map(|(n, i)| (i.canary.as_str(), n))
        .collect();
    let mut seen = vec![false; all.len()];
    for (_, bytes) in &files {
        let mut i = 0;
        while let Some(p) = find(&bytes[i..], b"canary") {
            let start = i + p;
            let end = bytes[start..]
                .iter()
                .position(|b| *b == b'q')
                .map(|e| start + e + 1)
                .unwrap_or(bytes.len());
            if end - start <= 24 {
                if let Ok(s) = std::str::from_utf8(&bytes[start..end]) {
                    if let Some(&n) = canaries.get(s) {
                        seen[n] = true;
                    }
                }
            }
            i = start + 6;
        }
    }
    for (n, i) in all.iter().enumerate() {
        if seen[n] {
            present[i.way] += 1;
        } else {
            missing_list.push(format!(
                "  {} | {} | {}\n",
                KINDS[i.kind].name, CONTEXTS[i.context].name, WAYS[i.way]
            ));
        }
    }
    let per_way = KINDS.len() * CONTEXTS.len();
    let mut missing = String::new();
    if !missing_list.is_empty() {
        missing.push_str(&format!(
            "\nnot stored at all (canary absent; not leaks): {}\n",
            missing_list.len()
        ));
        for (w, name) in WAYS.iter().enumerate() {
            missing.push_str(&format!("  {name}: {}/{per_way} stored\n", present[w]));
        }
    }

    let leaks = find_leaks(&all, &files);
    let text = report(seed, &all, &leaks, &refused, &missing);
    if std::env::var_os("ENGRAM_SECRETS_REPORT").is_some() {
        eprintln!("{text}");
    }
    assert!(leaks.is_empty(), "{text}");
    for (w, name) in WAYS.iter().enumerate() {
        assert!(
            present[w] > 0,
            "way in {name} stored nothing at all: the test would prove nothing\n{text}"
        );
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[test]
fn the_leak_finder_sees_a_planted_fragment_in_any_case_and_nothing_else() {
    let all = instances(3);
    let frag = &all[10].secret.sensitive[0];
    let mut planted = b"header bytes \x00\x01".to_vec();
    planted.extend_from_slice(frag[1..9].to_ascii_uppercase().as_bytes());
    planted.extend_from_slice(b" trailer");
    let files = vec![
        ("a".to_string(), planted),
        ("b".to_string(), b"nothing secret in here at all".to_vec()),
    ];
    let leaks = find_leaks(&all, &files);
    assert!(leaks.contains_key(&10), "missed the planted fragment");
    assert!(leaks.values().all(|(f, _)| f.iter().all(|n| n == "a")));
}
