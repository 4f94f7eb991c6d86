//! The memory commands: remember, update, notes, get, forget, list, recall, history, stale,
//! confirm, import, export. The coding records (sessions, errors, changes, decisions) are
//! in `coding`.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use engram::memory::{note_name, parse_since, Memories, Memory, MemoryFilter};
use serde_json::json;

use super::assisted;
use super::coding;
use super::output::{iso_ms, Output};
use super::{store_dir, store_options, Cli, Command, FilterArgs, MemoryFields, NoteCommand};

pub(super) fn open(cli: &Cli) -> Result<Memories> {
    let dir = store_dir(cli)?;
    let m = Memories::open_with(&dir, store_options(cli, &dir)?)
        .with_context(|| format!("opening store {}", dir.display()))?
        .with_embedder(super::embedder()?);
    let r = m.store().open_report();
    if r.truncated_bytes > 0 {
        tracing::warn!(
            "dropped {} uncommitted bytes left by a crash",
            r.truncated_bytes
        );
    }
    Ok(m)
}

fn notes(memories: &Memories, out: &Output, command: &NoteCommand) -> Result<ExitCode> {
    match command {
        NoteCommand::Set {
            name,
            value,
            provenance,
        } => {
            let m = memories.note_set(name, value, provenance.as_deref())?;
            report_redactions(m.redacted);
            out.value(&m, || {
                format!("{name} = {} (version {})", m.text, m.version)
            })?;
        }
        NoteCommand::Get { name } => {
            let Some(m) = memories.note_get(name)? else {
                bail!("no note {name:?}; `engram note list` shows them");
            };
            out.value(&m, || m.text.clone())?;
        }
        NoteCommand::List => {
            let notes = memories.note_list()?;
            out.value(&serde_json::json!({"notes": notes}), || {
                notes
                    .iter()
                    .map(|m| format!("{} = {}", note_name(m).unwrap_or("?"), m.text))
                    .collect::<Vec<_>>()
                    .join("\n")
            })?;
        }
        NoteCommand::Delete { name } => {
            let deleted = memories.note_delete(name)?;
            out.value(
                &serde_json::json!({"name": name, "deleted": deleted}),
                || {
                    if deleted {
                        format!("deleted {name}")
                    } else {
                        format!("no note {name:?}")
                    }
                },
            )?;
            if !deleted {
                return Ok(ExitCode::from(1));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn memory_filter(f: &FilterArgs) -> Result<MemoryFilter> {
    let since_ms = match &f.since {
        Some(s) => Some(parse_since(s, engram::store::now_ms())?),
        None => None,
    };
    Ok(MemoryFilter {
        kind: f.kind.clone(),
        task: f.task.clone(),
        insights: f.insights.clone(),
        contexts: f.contexts.clone(),
        tags: f.tags.clone(),
        session: f.session.clone(),
        since_ms,
    }
    .normalised()?)
}

pub(super) fn memory_from(text: &str, f: &MemoryFields) -> Result<Memory> {
    let mut m = Memory::new(text);
    m.tags = f.tags.clone();
    m.task = f.task.clone();
    m.insights = f.insights.clone();
    m.contexts = f.contexts.clone();
    m.symbols = f.symbols.clone();
    if let Some(p) = &f.provenance {
        m.provenance = p.clone();
    }
    m.trust = f.trust;
    m.session = f.session.clone();
    if let Some(s) = &f.metadata {
        match serde_json::from_str(s) {
            Ok(serde_json::Value::Object(o)) => m.metadata = o,
            _ => bail!("--metadata must be a JSON object, e.g. '{{\"source\":\"review\"}}'"),
        }
    }
    Ok(m)
}

/// `old` changed as `engram update` was told: the text and each field given replace
/// the old ones, the rest are kept (the MCP tool memory_update's rule), and the
/// metadata given is added to the old.
pub(super) fn updated_from(
    mut old: Memory,
    text: Option<&str>,
    f: &MemoryFields,
) -> Result<Memory> {
    let given = memory_from(text.unwrap_or(&old.text), f)?;
    old.text = given.text;
    for (new, field) in [
        (given.tags, &mut old.tags),
        (given.insights, &mut old.insights),
        (given.contexts, &mut old.contexts),
        (given.symbols, &mut old.symbols),
    ] {
        if !new.is_empty() {
            *field = new;
        }
    }
    old.task = given.task.or(old.task);
    if f.provenance.is_some() {
        old.provenance = given.provenance;
    }
    old.trust = given.trust.or(old.trust);
    old.session = given.session.or(old.session);
    old.metadata.extend(given.metadata);
    Ok(old)
}

pub(super) fn human(m: &Memory) -> String {
    let tags = if m.tags.is_empty() {
        String::new()
    } else {
        format!("  [{}]", m.tags.join(", "))
    };
    format!("{}{}\n{}\n", m.id, tags, m.text)
}

pub fn run(cli: &Cli, out: &Output) -> Result<ExitCode> {
    // With database_url set, memories live in the team's PostgreSQL database.
    if let Some(url) = super::config().get_opt("database_url") {
        return super::team::run(cli, out, url);
    }
    let memories = open(cli)?;
    match &cli.command {
        Command::Remember { text, fields } => {
            let m = memories.write(memory_from(text, fields)?)?;
            report_redactions(m.redacted);
            out.value(&m, || m.id.clone())?;
        }
        Command::Update { id, text, fields } => {
            let Some(old) = memories.get(id)? else {
                bail!("no memory {id}; `engram list` shows them");
            };
            let m = memories.update(id, updated_from(old, text.as_deref(), fields)?)?;
            report_redactions(m.redacted);
            out.value(&m, || format!("{} is now version {}", m.id, m.version))?;
        }
        Command::Note { command } => return notes(&memories, out, command),
        Command::Session { .. }
        | Command::Error { .. }
        | Command::Change { .. }
        | Command::Context { .. }
        | Command::Analyze
        | Command::Related { .. }
        | Command::Decision { .. } => return coding::run(&memories, cli, out),
        Command::History { id } => {
            let versions = memories.history(id)?;
            if versions.is_empty() {
                bail!("no memory {id}");
            }
            out.value(&serde_json::json!({"versions": versions}), || {
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
        Command::Stale { limit } => {
            print_stale(out, &engram::stale::list(&memories, *limit)?)?;
        }
        Command::Confirm { id } => {
            let m = engram::stale::confirm(&memories, id)?;
            let left = engram::stale::of_memories(memories.store(), std::slice::from_ref(&m.id))?;
            print_confirmed(out, &m, left.get(&m.id).cloned().unwrap_or_default())?;
        }
        Command::Get { id } => {
            let Some(m) = memories.get(id)? else {
                bail!("no memory {id}");
            };
            let marks = engram::stale::of_memories(memories.store(), std::slice::from_ref(&m.id))?
                .remove(&m.id)
                .unwrap_or_default();
            print_marked(out, &m, &marks)?;
        }
        Command::Forget { id } => {
            let forgotten = memories.forget(id)?;
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
        Command::List {
            limit,
            offset,
            filter,
        } => {
            let filter = memory_filter(filter)?;
            let list = memories.list_filtered(&filter, *limit, *offset)?;
            let total = memories.count()?;
            let shown = with_stale(&memories, &list)?;
            out.value(&json!({"memories": shown, "total": total}), || {
                list.iter().map(human).collect::<Vec<_>>().join("\n")
            })?;
        }
        Command::Recall {
            query,
            top_k,
            filter,
            rerank,
            dry_run,
        } => {
            let llm = rerank.as_deref() == Some("llm");
            if *dry_run && !llm {
                bail!("--dry-run shows what --rerank llm would send; add --rerank llm");
            }
            // The model chooses among more candidates than it keeps.
            let candidates = if llm {
                top_k.saturating_mul(3).max(20)
            } else {
                *top_k
            };
            // The same search as `engram search`, restricted to memories: keyword and
            // vector ranks fused, recency breaking ties.
            let filter = memory_filter(filter)?;
            let results = engram::search::search(
                memories.store(),
                query,
                &engram::search::SearchOptions {
                    top_k: candidates,
                    kind: Some(engram::search::HitKind::Memory),
                    memory_filter: filter,
                    embedder: memories.embedder().clone(),
                    ..Default::default()
                },
            )?;
            let mut found = Vec::new();
            for h in &results.hits {
                let Some(m) = memories.get(&h.key)? else {
                    continue;
                };
                // The same shape as `engram search`, plus the memory's text and tags.
                let mut row = serde_json::to_value(h)?;
                row["text"] = json!(m.text);
                row["tags"] = json!(m.tags);
                found.push((row, m));
            }
            if llm {
                let dir = store_dir(cli)?;
                match assisted::rerank(&dir, out, &memories, query, found.clone(), *dry_run)? {
                    Some(_) if *dry_run => return Ok(ExitCode::SUCCESS),
                    Some(scored) => found = scored,
                    None => {}
                }
            }
            found.truncate(*top_k);
            let lines: Vec<String> = found
                .iter()
                .map(|(row, m)| {
                    let reason = row["reason"]
                        .as_str()
                        .map(|r| format!("  ({r})"))
                        .unwrap_or_default();
                    format!(
                        "{:.4}{reason}  {}",
                        row["score"].as_f64().unwrap_or(0.0),
                        human(m)
                    )
                })
                .collect();
            let rows: Vec<serde_json::Value> = found.into_iter().map(|(r, _)| r).collect();
            let mut answer = json!({"hits": rows});
            if let Some(why) = &results.degraded {
                tracing::warn!("recall degraded: {why}");
                answer["degraded"] = json!(why);
            }
            if let Some(space) = &results.vector_space {
                tracing::info!(
                    "recall used {space}'s vectors: the configured embedder's are incomplete"
                );
                answer["vector_space"] = json!(space);
            }
            out.value(&answer, || lines.join("\n"))?;
        }
        Command::Import { file } => {
            let pb = out.spinner(&format!("importing {}", file.display()));
            let report =
                memories.import_file_limited(file, super::config().bytes("max_line_bytes"));
            pb.finish_and_clear();
            let report = report?;
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
        Command::Export { file } => {
            let n = match file {
                Some(path) => {
                    let f = File::create(path)
                        .with_context(|| format!("creating {}", path.display()))?;
                    let mut w = BufWriter::new(f);
                    let n = memories.export(&mut w)?;
                    w.flush()?;
                    if out.is_json() {
                        out.value(&json!({"exported": n, "file": path}), String::new)?;
                    } else {
                        eprintln!("exported {n} memories to {}", path.display());
                    }
                    n
                }
                None => {
                    let stdout = std::io::stdout();
                    let mut w = BufWriter::new(stdout.lock());
                    let n = memories.export(&mut w)?;
                    w.flush()?;
                    n
                }
            };
            tracing::info!("exported {n} memories");
        }
        _ => unreachable!("dispatched in cli::run"),
    }
    Ok(ExitCode::SUCCESS)
}

/// `engram stale`: the stale memories and why (the local store's or the team
/// backend's).
pub(super) fn print_stale(out: &Output, list: &[engram::stale::StaleMemory]) -> Result<()> {
    let now = engram::store::now_ms();
    out.value(&json!({"stale": list}), || {
        list.iter()
            .map(|s| {
                let why: Vec<String> = s
                    .stale
                    .iter()
                    .map(|x| format!("  {} ({})", x.label(now), x.summary))
                    .collect();
                format!("{}\n{}", human(&s.memory).trim_end(), why.join("\n"))
            })
            .collect::<Vec<_>>()
            .join("\n\n")
    })
}

/// Show one memory with its stale marks (`get`, on either backend): in JSON as a
/// `stale` field, for people as a tag after the memory.
pub(super) fn print_marked(
    out: &Output,
    m: &Memory,
    marks: &[engram::stale::Staleness],
) -> Result<()> {
    let mut shown = serde_json::to_value(m)?;
    shown["stale"] = json!(marks);
    out.value(&shown, || {
        match engram::stale::tag(marks, engram::store::now_ms()) {
            Some(t) => format!("{}{t}\n", human(m)),
            None => human(m),
        }
    })?;
    Ok(())
}

/// `engram confirm`: the re-anchored memory and the marks left (none unless the code
/// changed meanwhile).
pub(super) fn print_confirmed(
    out: &Output,
    m: &Memory,
    stale: Vec<engram::stale::Staleness>,
) -> Result<()> {
    out.value(&json!({"memory": m, "stale": stale}), || {
        format!(
            "{} re-anchored to the current code (version {}, {} anchors)",
            m.id,
            m.version,
            m.anchors.len()
        )
    })
}

/// Memories as JSON, each with `stale`: its marks, empty when fresh.
fn with_stale(memories: &Memories, list: &[Memory]) -> Result<Vec<serde_json::Value>> {
    let ids: Vec<String> = list.iter().map(|m| m.id.clone()).collect();
    marked_rows(list, engram::stale::of_memories(memories.store(), &ids)?)
}

/// Memories as JSON, each with `stale`: its marks in `marks` (by id), empty when it
/// has none there. `list` prints these on either backend.
pub(super) fn marked_rows(
    list: &[Memory],
    mut marks: std::collections::HashMap<String, Vec<engram::stale::Staleness>>,
) -> Result<Vec<serde_json::Value>> {
    let mut out = Vec::with_capacity(list.len());
    for m in list {
        let mut v = serde_json::to_value(m)?;
        v["stale"] = json!(marks.remove(&m.id).unwrap_or_default());
        out.push(v);
    }
    Ok(out)
}

/// Say on stderr how many secrets were replaced before writing (never which).
pub(super) fn report_redactions(n: u64) {
    if n > 0 {
        eprintln!("engram: {n} secret(s) replaced by [REDACTED:<rule>] before writing");
    }
}
