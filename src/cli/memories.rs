//! The memory commands: remember, update, notes, get, forget, list, recall, history, stale,
//! confirm, import, export, with one body for both backends (the local store and the
//! team database, resolved once in `backend`). The coding records (sessions, errors,
//! changes, decisions) are in `coding`.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use engram::memory::{note_name, parse_since, Memory, MemoryBackend, MemoryFilter};
use serde_json::json;

use super::assisted;
use super::backend::Backend;
use super::output::{iso_ms, Output};
use super::{Cli, Command, FilterArgs, MemoryFields, NoteCommand};

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
            out.value(&serde_json::json!({"notes": notes}), || {
                notes
                    .iter()
                    .map(|m| format!("{} = {}", note_name(m).unwrap_or("?"), m.text))
                    .collect::<Vec<_>>()
                    .join("\n")
            })?;
        }
        NoteCommand::Delete { name } => {
            let deleted = b.note_delete(name)?;
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

fn memory_filter(f: &FilterArgs) -> Result<MemoryFilter> {
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

fn memory_from(text: &str, f: &MemoryFields) -> Result<Memory> {
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
fn updated_from(mut old: Memory, text: Option<&str>, f: &MemoryFields) -> Result<Memory> {
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

pub fn run(backend: &Backend, cli: &Cli, out: &Output) -> Result<ExitCode> {
    let b = backend.b();
    let memories = &backend.memories;
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
        Command::Note { command } => return notes(b, out, command),
        Command::History { id } => {
            let versions = b.history(id)?;
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
        Command::Stale {
            limit,
            impact,
            depth,
        } => {
            if memories.code().is_none() {
                eprintln!("engram: no local code index in {}: the memories' anchors have nothing to be compared with (engram index first)", backend.dir.display());
            }
            let stale = memories.stale(*limit)?;
            if *impact {
                print_impact(out, &stale, &memories.impact(*depth, *limit)?)?;
            } else {
                print_stale(out, &stale)?;
            }
        }
        Command::Confirm { id } => {
            if memories.code().is_none() {
                bail!("engram confirm re-anchors a memory to the local code index, and there is none in {} (engram index first)", backend.dir.display());
            }
            let m = memories.confirm(id)?;
            let left = memories.marks(std::slice::from_ref(&m))?;
            print_confirmed(out, &m, left.get(&m.id).cloned().unwrap_or_default())?;
        }
        Command::Get { id } => {
            let Some(m) = b.get(id)? else {
                bail!("no memory {id}");
            };
            let marks = memories
                .marks(std::slice::from_ref(&m))?
                .remove(&m.id)
                .unwrap_or_default();
            print_marked(out, &m, &marks)?;
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
        Command::List {
            limit,
            offset,
            filter,
        } => {
            let list = b.list_filtered(&memory_filter(filter)?, *limit, *offset)?;
            let total = b.count()?;
            let shown = marked_rows(&list, memories.marks(&list)?)?;
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
            return recall(
                backend,
                out,
                query,
                *top_k,
                filter,
                rerank.as_deref() == Some("llm"),
                *dry_run,
            )
        }
        Command::Import { file } => {
            let pb = out.spinner(&format!("importing {}", file.display()));
            let report = b.import_file_limited(file, super::config().bytes("max_line_bytes"));
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
                    let n = b.export(&mut w)?;
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
                    let n = b.export(&mut w)?;
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

/// `engram recall`: the memories' search (the same as `engram search` restricted to
/// memories on the local store, the backend's recall on the team one), each hit with
/// the memory's text and tags; with `llm`, scored by the chat model.
fn recall(
    backend: &Backend,
    out: &Output,
    query: &str,
    top_k: usize,
    filter: &FilterArgs,
    llm: bool,
    dry_run: bool,
) -> Result<ExitCode> {
    if dry_run && !llm {
        bail!("--dry-run shows what --rerank llm would send; add --rerank llm");
    }
    // The model chooses among more candidates than it keeps.
    let candidates = if llm {
        top_k.saturating_mul(3).max(20)
    } else {
        top_k
    };
    let results = backend
        .memories
        .recall(query, &memory_filter(filter)?, candidates)?;
    let mut found = Vec::new();
    for h in &results.hits {
        let Some(m) = backend.b().get(&h.key)? else {
            continue;
        };
        // The same shape as `engram search`, plus the memory's text and tags.
        let mut row = serde_json::to_value(h)?;
        row["text"] = json!(m.text);
        row["tags"] = json!(m.tags);
        found.push((row, m));
    }
    if llm {
        match assisted::rerank(
            &backend.dir,
            out,
            &*backend.log,
            query,
            found.clone(),
            dry_run,
        )? {
            Some(_) if dry_run => return Ok(ExitCode::SUCCESS),
            Some(scored) => found = scored,
            None => {}
        }
    }
    found.truncate(top_k);
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
        tracing::info!("recall used {space}'s vectors: the configured embedder's are incomplete");
        answer["vector_space"] = json!(space);
    }
    out.value(&answer, || lines.join("\n"))?;
    Ok(ExitCode::SUCCESS)
}

/// `engram stale`: the stale memories and why.
fn print_stale(out: &Output, list: &[engram::stale::StaleMemory]) -> Result<()> {
    out.value(&json!({"stale": list}), || stale_text(list))
}

/// The stale memories for people, each with why.
fn stale_text(list: &[engram::stale::StaleMemory]) -> String {
    let now = engram::store::now_ms();
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
}

/// `engram stale --impact`: the stale memories, then those possibly affected by a
/// change to what their symbols call, then how many could not be judged.
fn print_impact(
    out: &Output,
    stale: &[engram::stale::StaleMemory],
    impact: &engram::stale::Impact,
) -> Result<()> {
    let answer = json!({
        "stale": stale,
        "affected": impact.affected,
        "unchecked": impact.unchecked,
    });
    out.value(&answer, || {
        let mut parts = Vec::new();
        if !stale.is_empty() {
            parts.push(stale_text(stale));
        }
        for a in &impact.affected {
            let via: Vec<String> = a.via.iter().map(|v| format!("    via {}", v.label())).collect();
            parts.push(format!(
                "{}\n  possibly affected: {} ({}) calls what changed\n{}",
                human(&a.memory).trim_end(),
                a.symbol,
                a.target,
                via.join("\n")
            ));
        }
        if impact.unchecked_total > 0 {
            parts.push(format!(
                "{} memories were anchored before callee anchors were recorded, so a change to what they call cannot be seen; `engram confirm ID` records them: {}{}",
                impact.unchecked_total,
                impact.unchecked.join(", "),
                if impact.unchecked_total > impact.unchecked.len() { ", …" } else { "" }
            ));
        }
        if parts.is_empty() {
            parts.push("nothing stale or possibly affected".into());
        }
        parts.join("\n\n")
    })
}

/// Show one memory with its stale marks (`get`): in JSON as a `stale` field, for
/// people as a tag after the memory.
fn print_marked(out: &Output, m: &Memory, marks: &[engram::stale::Staleness]) -> Result<()> {
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
fn print_confirmed(out: &Output, m: &Memory, stale: Vec<engram::stale::Staleness>) -> Result<()> {
    out.value(&json!({"memory": m, "stale": stale}), || {
        format!(
            "{} re-anchored to the current code (version {}, {} anchors)",
            m.id,
            m.version,
            m.anchors.len()
        )
    })
}

/// Memories as JSON, each with `stale`: its marks in `marks` (by id), empty when it
/// has none there.
fn marked_rows(
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
