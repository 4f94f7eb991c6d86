//! The code commands: `index`, `search` and `symbol`. A search or symbol lookup in a
//! repository whose own store was never indexed indexes it first.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use engram::index::{self, IndexOptions, IndexReport, SecretAction};
use engram::search::{self, HitKind, SearchOptions};
use engram::store::Store;
use serde_json::json;

use super::output::Output;
use super::{store_dir, store_options, Cli, Command};

pub fn run(cli: &Cli, out: &Output) -> Result<ExitCode> {
    match &cli.command {
        Command::Index {
            path,
            max_file_bytes,
            exclude_secrets,
            threads,
            watch,
        } => {
            let root = match path {
                Some(p) => p.clone(),
                None => std::env::current_dir().context("reading the current directory")?,
            };
            let root = root
                .canonicalize()
                .with_context(|| format!("{} is not readable", root.display()))?;
            // The store of the repository being indexed, unless one is named.
            let dir = super::store_dir_for(cli, &root)?;
            let store = Store::open(&dir, store_options(cli, &dir)?, engram::projections())
                .with_context(|| format!("opening store {}", dir.display()))?;
            let opts = index_options(*max_file_bytes, *exclude_secrets, *threads)?;
            let report = index_with_bar(out, &store, &root, &opts, "indexing")?;
            // Memories written while the embedder was unreachable get their vectors now.
            let memories =
                engram::memory::Memories::from_store(store).with_embedder(opts.embedder.clone());
            let embedded = memories.embed_missing(100_000).unwrap_or_else(|e| {
                tracing::warn!("memories without vectors stay so for now: {e}");
                0
            });
            let store = memories.store();
            let mut v = serde_json::to_value(&report)?;
            v["store"] = json!(dir);
            v["memories_embedded"] = json!(embedded);
            out.value(&v, || {
                let redactions: u64 = report.redactions.values().sum();
                let first = report.keyword_seconds.map_or_else(String::new, |k| {
                    format!(
                        "searchable after {k:.2} s (keywords and built-in vectors); {} vectors in {:.2} s more\n",
                        opts.embedder.name(),
                        report.seconds - k
                    )
                });
                format!(
                    "{first}indexed {} files ({} unchanged, {} re-embedded, {} deleted, {} skipped), {} chunks, {} secrets redacted, in {:.2} s with {}\nstore: {}",
                    report.files_indexed,
                    report.files_unchanged,
                    report.files_reembedded,
                    report.files_deleted,
                    report.files_skipped,
                    report.chunks,
                    redactions,
                    report.seconds,
                    opts.embedder.name(),
                    dir.display()
                )
            })?;
            if *watch {
                super::watch::watch(store, &root, &opts, out)?;
            }
        }
        Command::Search {
            query,
            top_k,
            lang,
            path,
            kind,
            near,
            recent,
            keyword_only,
        } => {
            let store = open_indexed(cli, out)?;
            let kind = kind.as_deref().map(str::parse::<HitKind>).transpose()?;
            // With database_url set the memories are the team database's: the local
            // store's (left from before, or another tool's) are not this repository's.
            let team = super::config().get_opt("database_url").is_some();
            if team && kind == Some(HitKind::Memory) {
                bail!("with database_url set, memories are in the team database: `engram recall QUERY` searches them");
            }
            let mut results = search::search(
                &store,
                query,
                &SearchOptions {
                    top_k: *top_k,
                    kind,
                    lang: lang.clone(),
                    path_glob: path.clone(),
                    near: near.clone(),
                    boost_recent: *recent,
                    keyword_only: *keyword_only,
                    embedder: super::embedder()?,
                    ..SearchOptions::default()
                },
            )?;
            if team {
                results.hits.retain(|h| h.kind != HitKind::Memory);
            }
            if results.hits.is_empty() && !store.with_tracker(index::has_indexed_files)? {
                eprintln!(
                    "engram: no code is indexed in {}; `engram index` indexes a repository",
                    store.dir().display()
                );
            }
            if let Some(why) = &results.degraded {
                tracing::warn!("search degraded: {why}");
            }
            if let Some(space) = &results.vector_space {
                tracing::info!("search used {space}'s vectors: the configured embedder's are incomplete (run `engram index` to finish re-embedding)");
            }
            let mut v = serde_json::to_value(&results)?;
            v["embedder"] = json!(super::embedder_choice());
            out.value(&v, || {
                if results.hits.is_empty() {
                    return "no hits".into();
                }
                results
                    .hits
                    .iter()
                    .map(|h| match (&h.path, h.start_line, h.end_line) {
                        (Some(p), Some(s), Some(e)) => {
                            // A code snippet is several lines: under the hit, indented.
                            let head = match &h.symbol {
                                Some(sym) => format!("{:.4}  {p}:{s}-{e}  {sym}", h.score),
                                None => format!("{:.4}  {p}:{s}-{e}", h.score),
                            };
                            let body: Vec<String> =
                                h.snippet.lines().map(|l| format!("    {l}")).collect();
                            format!("{head}\n{}", body.join("\n"))
                        }
                        _ => format!("{:.4}  {}  {}", h.score, h.key, h.snippet),
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            })?;
        }
        Command::Symbol { name, limit } => {
            let store = open_indexed(cli, out)?;
            let found = index::lookup_symbols(&store, name, *limit)?;
            out.value(&json!({"symbols": found}), || {
                if found.is_empty() {
                    return format!("no symbol matches {name:?}");
                }
                found
                    .iter()
                    .map(|s| {
                        format!(
                            "{}:{}-{}  {} {}  {}",
                            s.path, s.start_line, s.end_line, s.kind, s.qualified_name, s.signature
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            })?;
        }
        _ => unreachable!("dispatched in cli::run"),
    }
    Ok(ExitCode::SUCCESS)
}

/// How `engram index` (and a first search) indexes: the flags given, else settings.
fn index_options(
    max_file_bytes: Option<u64>,
    exclude_secrets: bool,
    threads: usize,
) -> Result<IndexOptions> {
    let cfg = super::config();
    Ok(IndexOptions {
        max_file_bytes: max_file_bytes.unwrap_or_else(|| cfg.bytes("max_file_bytes")),
        secret_action: if exclude_secrets || cfg.get("secret_action") == "exclude" {
            SecretAction::Exclude
        } else {
            SecretAction::Redact
        },
        embedder: super::embedder()?,
        threads,
        ..IndexOptions::default()
    })
}

/// Index `root` into `store` with a bar of files done / found on a terminal's
/// stderr (nothing when piped or with --json).
fn index_with_bar(
    out: &Output,
    store: &Store,
    root: &Path,
    opts: &IndexOptions,
    what: &str,
) -> Result<IndexReport> {
    let pb = out.bar(&format!("{what} {}", root.display()));
    let bar = pb.clone();
    let opts = IndexOptions {
        progress: Some(std::sync::Arc::new(move |done, total| {
            bar.set_length(total);
            bar.set_position(done);
        })),
        ..opts.clone()
    };
    let report = index::index(store, root, &opts);
    pb.finish_and_clear();
    Ok(report?)
}

/// The store a code read (`search`, `symbol`) works on. The repository's own store
/// (none named) that was never indexed is indexed first, when the current directory
/// is in a git repository; a named store is read as it is.
pub(super) fn open_indexed(cli: &Cli, out: &Output) -> Result<Store> {
    let dir = store_dir(cli)?;
    let store = Store::open(&dir, store_options(cli, &dir)?, engram::projections())
        .with_context(|| format!("opening store {}", dir.display()))?;
    if super::store_location::is_named(cli) || store.with_tracker(index::has_indexed_files)? {
        return Ok(store);
    }
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let Some(root) = engram::location::repo_root(&cwd) else {
        eprintln!(
            "engram: nothing is indexed for {}; `engram index` indexes it",
            cwd.display()
        );
        return Ok(store);
    };
    tracing::info!("{} was never indexed: indexing it first", root.display());
    let report = index_with_bar(
        out,
        &store,
        &root,
        &index_options(None, false, 0)?,
        "first search here: indexing",
    )?;
    tracing::info!(
        "indexed {} files, {} chunks in {:.2} s",
        report.files_indexed,
        report.chunks,
        report.seconds
    );
    Ok(store)
}
