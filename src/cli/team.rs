//! The memory commands on the team backend: when `database_url` is set, memories,
//! notes and coding records live in that PostgreSQL database (`engram::memory_pg`),
//! under the repository the local store would have been for (its directory name).
//! Routing and printing only, through the `MemoryBackend` trait. The model-assisted
//! commands ask the chat model about the database's entries, write what it answers
//! there and audit the call there. The code index stays in the local store: written
//! memories are anchored to it, and `stale`, `confirm`, the `stale` marks of `get` and
//! `list` and the `[stale: …]` tags of `context` judge the database's memories against
//! it (`team_code.rs`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::process::ExitCode;

use std::sync::Arc;

use anyhow::{bail, Context, Result};
use engram::memory::{note_name, Decision, FileChange, Memories, MemoryBackend, MemoryFilter};
use engram::memory_pg::{PgDatabase, PgMemories};
use engram::stale::LocalCodeAnchors;
use serde_json::json;

use super::memories::{human, memory_filter, memory_from, report_redactions, updated_from};
use super::output::{iso_ms, Output};
use super::{store_dir, Cli, Command, ErrorCommand, NoteCommand, SessionCommand};

/// The repository name the team backend files this checkout's memories under: the
/// name of the store directory it would use locally (`<name>-<hash>` of its remote).
fn repo_name(cli: &Cli) -> Result<String> {
    let dir = store_dir(cli)?;
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty())
        .with_context(|| format!("no repository name in {}", dir.display()))
}

pub(super) fn run(cli: &Cli, out: &Output, url: &str) -> Result<ExitCode> {
    let (team, code) = open_with_code(cli, url)?;
    let dir = store_dir(cli)?;
    match &cli.command {
        Command::Error {
            command: ErrorCommand::Suggest { id, dry_run },
        } => super::assisted::error_suggest(&team, &team, &dir, out, id, *dry_run),
        Command::Session {
            command:
                SessionCommand::End {
                    id,
                    failed,
                    llm_summary,
                    extract,
                    dry_run,
                },
        } => super::assisted::session_end(
            &team,
            &team,
            &dir,
            out,
            (id.as_deref(), *failed),
            (*llm_summary, *extract, *dry_run),
        ),
        Command::Session {
            command: SessionCommand::Extract { id, dry_run },
        } => super::assisted::session_extract(&team, &team, &dir, out, id, *dry_run),
        Command::Context { .. }
        | Command::Get { .. }
        | Command::List { .. }
        | Command::Stale { .. }
        | Command::Confirm { .. } => super::team_code::run(&team, code.as_deref(), &dir, cli, out),
        Command::Analyze => {
            super::coding::print_analysis(out, &engram::memory::analyze_patterns_of(&team)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Recall {
            query,
            top_k,
            filter,
            rerank,
            dry_run,
        } if rerank.as_deref() == Some("llm") => {
            // The model chooses among more candidates than it keeps.
            let candidates = top_k.saturating_mul(3).max(20);
            let hits = team.recall(query, &memory_filter(filter)?, candidates)?;
            let mut found: Vec<_> = hits
                .into_iter()
                .map(|h| (recall_row(&h.memory, h.score), h.memory))
                .collect();
            match super::assisted::rerank(&dir, out, &team, query, found.clone(), *dry_run)? {
                Some(_) if *dry_run => return Ok(ExitCode::SUCCESS),
                Some(scored) => found = scored,
                None => {}
            }
            found.truncate(*top_k);
            let rows: Vec<_> = found.iter().map(|(row, _)| row.clone()).collect();
            out.value(&json!({"hits": rows}), || {
                found
                    .iter()
                    .map(|(row, m)| {
                        format!("{:.4}  {}", row["score"].as_f64().unwrap_or(0.0), human(m))
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            })?;
            Ok(ExitCode::SUCCESS)
        }
        _ => run_on(&team, &dir, cli, out),
    }
}

/// A recall hit as `engram recall --json` prints it on the team backend.
fn recall_row(m: &engram::memory::Memory, score: f64) -> serde_json::Value {
    json!({"key": m.id, "kind": "memory", "score": score, "text": m.text, "tags": m.tags})
}

/// The team database at `url` (the database_url setting), trusting the root
/// certificates of the database_sslrootcert setting too when the URL names no
/// `sslrootcert` of its own, with the database_statement_timeout_ms setting's
/// statement timeout.
pub(super) fn connect(url: &str) -> Result<std::sync::Arc<PgDatabase>> {
    let config = super::config();
    let root = config
        .get_opt("database_sslrootcert")
        .map(std::path::Path::new);
    let timeout = match config.get_opt("database_statement_timeout_ms") {
        Some(ms) => std::time::Duration::from_millis(ms.trim().parse().with_context(|| {
            format!("database_statement_timeout_ms {ms:?}: expected milliseconds above 0")
        })?),
        None => engram::memory_pg::STATEMENT_TIMEOUT,
    };
    Ok(PgDatabase::connect_with(url, timeout, root)?)
}

/// The database_ef_search setting: the least `hnsw.ef_search` of recall's vector
/// search.
pub(super) fn ef_search() -> Result<u32> {
    match super::config().get_opt("database_ef_search") {
        Some(v) => v.trim().parse().with_context(|| {
            format!("database_ef_search {v:?}: expected a whole number from 1 to 1000")
        }),
        None => Ok(engram::memory_pg::EF_SEARCH),
    }
}

/// This checkout's repository in the team database at `url`, anchoring what it
/// writes to the local code index when there is one.
pub(super) fn open(cli: &Cli, url: &str) -> Result<PgMemories> {
    Ok(open_with_code(cli, url)?.0)
}

/// [`open`], and the local store holding this checkout's code index (`None` when
/// nothing was indexed here: no store to open, nothing to anchor to).
fn open_with_code(cli: &Cli, url: &str) -> Result<(PgMemories, Option<Arc<Memories>>)> {
    let db = connect(url)?;
    let repo = repo_name(cli)?;
    let mut team = db
        .memories(&repo, super::embedder()?)?
        .with_ef_search(ef_search()?)?;
    // Only an existing store: opening creates one, and a team checkout need not have
    // any (its memories are in the database).
    let code = if store_dir(cli)?.join(engram::store::BLOB_FILE).exists() {
        // A local store that cannot be opened (read-only, locked by a crash) must not
        // stop the database's commands; they go on without the code index, saying so.
        match super::memories::open(cli) {
            Ok(m) => Some(Arc::new(m)),
            Err(e) => {
                eprintln!("engram: warning: the local store's code index is not available ({e:#}): memories are written without code anchors and nothing is marked stale");
                None
            }
        }
    } else {
        None
    };
    if let Some(c) = &code {
        team = team.with_anchors(Arc::new(LocalCodeAnchors::new(c.clone())));
    }
    Ok((team, code))
}

fn run_on(team: &PgMemories, dir: &std::path::Path, cli: &Cli, out: &Output) -> Result<ExitCode> {
    // Through the trait alone, as the local commands; `team` is the audit log too.
    let b: &dyn MemoryBackend = team;
    match &cli.command {
        Command::Remember { text, fields } => {
            let m = b.write(memory_from(text, fields)?)?;
            report_redactions(m.redacted);
            out.value(&m, || m.id.clone())?;
        }
        Command::Update { id, text, fields } => {
            let Some(old) = b.get(id)? else {
                bail!("no memory {id}; `engram list` shows them");
            };
            let m = b.update(id, updated_from(old, text.as_deref(), fields)?)?;
            report_redactions(m.redacted);
            out.value(&m, || format!("{} is now version {}", m.id, m.version))?;
        }
        Command::History { id } => {
            let versions = b.history(id)?;
            if versions.is_empty() {
                bail!("no memory {id}");
            }
            out.value(&json!({"versions": versions}), || {
                versions
                    .iter()
                    .map(|m| {
                        format!(
                            "version {} at {}\n{}",
                            m.version,
                            iso_ms(m.updated_ms),
                            m.text
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n\n")
            })?;
        }
        Command::Forget { id } => {
            let forgotten = b.forget(id)?;
            out.value(&json!({"id": id, "forgotten": forgotten}), || {
                if forgotten {
                    format!("forgot {id}")
                } else {
                    format!("no memory {id}")
                }
            })?;
            if !forgotten {
                return Ok(ExitCode::from(1));
            }
        }
        Command::Recall {
            query,
            top_k,
            filter,
            dry_run,
            ..
        } => {
            if *dry_run {
                bail!("--dry-run shows what --rerank llm would send; add --rerank llm");
            }
            let hits = b.recall(query, &memory_filter(filter)?, *top_k)?;
            let rows: Vec<_> = hits
                .iter()
                .map(|h| recall_row(&h.memory, h.score))
                .collect();
            out.value(&json!({"hits": rows}), || {
                hits.iter()
                    .map(|h| format!("{:.4}  {}", h.score, human(&h.memory)))
                    .collect::<Vec<_>>()
                    .join("\n")
            })?;
        }
        Command::Import { file } => {
            let report = b.import_file_limited(file, super::config().bytes("max_line_bytes"))?;
            report_redactions(report.redacted);
            out.value(&report, || {
                format!(
                    "imported {} memories ({} replaced) from {}",
                    report.imported,
                    report.replaced,
                    file.display()
                )
            })?;
        }
        Command::Export { file } => match file {
            Some(path) => {
                let f =
                    File::create(path).with_context(|| format!("creating {}", path.display()))?;
                let mut w = BufWriter::new(f);
                let n = b.export(&mut w)?;
                w.flush()?;
                if out.is_json() {
                    out.value(&json!({"exported": n, "file": path}), String::new)?;
                } else {
                    eprintln!("exported {n} memories to {}", path.display());
                }
            }
            None => {
                let stdout = std::io::stdout();
                let mut w = BufWriter::new(stdout.lock());
                b.export(&mut w)?;
                w.flush()?;
            }
        },
        Command::Note { command } => return notes(b, out, command),
        Command::Session {
            command: SessionCommand::Start { description, tags },
        } => {
            let m = b.start_session(description, tags)?;
            out.value(&m, || m.id.clone())?;
        }
        Command::Change {
            path,
            action,
            reason,
            diff_summary,
            related,
            lines,
            session,
        } => {
            let (start_line, end_line) = match lines {
                None => (None, None),
                Some(r) => {
                    let parsed = r
                        .split_once('-')
                        .and_then(|(a, b)| Some((a.trim().parse().ok()?, b.trim().parse().ok()?)));
                    let Some((a, b)) = parsed else {
                        bail!("--lines {r:?}: expected START-END, e.g. 10-42");
                    };
                    (Some(a), Some(b))
                }
            };
            let m = b.track_file_change(
                &FileChange {
                    path: path.clone(),
                    action: action.clone(),
                    reason: reason.clone(),
                    diff_summary: diff_summary.clone(),
                    related_files: related.clone(),
                    start_line,
                    end_line,
                    session: session.clone(),
                },
                None,
            )?;
            out.value(&m, || m.id.clone())?;
        }
        Command::Related { id, hops } => {
            let rel = b.related(id, *hops)?;
            out.value(&json!({"related": rel}), || {
                rel.iter()
                    .map(|r| {
                        format!(
                            "{} {} ({} from {})",
                            "  ".repeat(r.hops as usize - 1),
                            r.key,
                            r.via,
                            r.from
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            })?;
        }
        Command::Error {
            command: record @ ErrorCommand::Record { .. },
        } => {
            let mut report = super::coding::error_report(record);
            // Read by the vision model when that feature is on, audited in the database.
            super::assisted::screenshot(team, dir, &mut report)?;
            let m = b.record_error(&report, &[], None)?;
            report_redactions(m.redacted);
            out.value(&m, || {
                format!("{} (seen {} times)", m.id, m.metadata["frequency"])
            })?;
        }
        Command::Error {
            command: ErrorCommand::Search { query, top_k },
        } => {
            let filter = MemoryFilter {
                kind: Some("error".into()),
                ..MemoryFilter::default()
            };
            let mut hits = b.recall(query, &filter, *top_k)?;
            hits.sort_by_key(|h| !h.memory.metadata.contains_key("solution"));
            let rows: Vec<_> = hits
                .iter()
                .map(|h| json!({"key": h.memory.id, "kind": "error", "score": h.score, "text": h.memory.text, "metadata": h.memory.metadata}))
                .collect();
            out.value(&json!({"hits": rows}), || {
                hits.iter()
                    .map(|h| human(&h.memory))
                    .collect::<Vec<_>>()
                    .join("\n")
            })?;
        }
        Command::Decision {
            decision,
            rationale,
            alternatives,
            impact,
            files,
            tags,
            confidence,
            session,
        } => {
            let m = b.record_decision(
                &Decision {
                    decision: decision.clone(),
                    rationale: rationale.clone(),
                    alternatives: alternatives.clone(),
                    impact: impact.clone(),
                    tags: tags.clone(),
                    related_files: files.clone(),
                    confidence: *confidence,
                    reviewed: false,
                    session: session.clone(),
                },
                None,
            )?;
            out.value(&m, || m.id.clone())?;
        }
        _ => unreachable!("dispatched in cli::run"),
    }
    Ok(ExitCode::SUCCESS)
}

fn notes(b: &dyn MemoryBackend, out: &Output, command: &NoteCommand) -> Result<ExitCode> {
    match command {
        NoteCommand::Set {
            name,
            value,
            provenance,
        } => {
            let m = b.note_set(name, value, provenance.as_deref())?;
            report_redactions(m.redacted);
            out.value(&m, || {
                format!("{name} = {} (version {})", m.text, m.version)
            })?;
        }
        NoteCommand::Get { name } => {
            let Some(m) = b.note_get(name)? else {
                bail!("no note {name:?}; `engram note list` shows them");
            };
            out.value(&m, || m.text.clone())?;
        }
        NoteCommand::List => {
            let notes = b.note_list()?;
            out.value(&json!({"notes": notes}), || {
                notes
                    .iter()
                    .map(|m| format!("{} = {}", note_name(m).unwrap_or("?"), m.text))
                    .collect::<Vec<_>>()
                    .join("\n")
            })?;
        }
        NoteCommand::Delete { name } => {
            let deleted = b.note_delete(name)?;
            out.value(&json!({"name": name, "deleted": deleted}), || {
                if deleted {
                    format!("deleted {name}")
                } else {
                    format!("no note {name:?}")
                }
            })?;
            if !deleted {
                return Ok(ExitCode::from(1));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
