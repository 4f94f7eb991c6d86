//! The coding-record commands: sessions, errors and their solutions, file changes,
//! decisions, the session context, recurring patterns and related records, with one
//! body for both backends (resolved once in `backend`). Everything goes through the
//! `MemoryBackend` trait; this file only maps arguments and prints.

use std::process::ExitCode;

use anyhow::{bail, Result};
use engram::memory::{Decision, ErrorReport, FileChange};
use serde_json::json;

use super::assisted;
use super::backend::Backend;
use super::memories::{human, report_redactions};
use super::output::Output;
use super::{Cli, Command, ErrorCommand, SessionCommand};

/// Runs one coding-record command (the caller has dispatched only those here).
pub(super) fn run(backend: &Backend, cli: &Cli, out: &Output) -> Result<ExitCode> {
    let (b, log, dir) = (backend.b(), &*backend.log, backend.dir.as_path());
    match &cli.command {
        Command::Session {
            command: SessionCommand::Start { description, tags },
        } => {
            let m = b.start_session(description, tags)?;
            out.value(&m, || m.id.clone())?;
        }
        Command::Session {
            command:
                SessionCommand::End {
                    id,
                    failed,
                    llm_summary,
                    extract,
                    dry_run,
                },
        } => {
            return assisted::session_end(
                b,
                log,
                dir,
                out,
                (id.as_deref(), *failed),
                (*llm_summary, *extract, *dry_run),
            );
        }
        Command::Session {
            command: SessionCommand::Extract { id, dry_run },
        } => return assisted::session_extract(b, log, dir, out, id, *dry_run),
        Command::Error {
            command: ErrorCommand::Suggest { id, dry_run },
        } => return assisted::error_suggest(b, log, dir, out, id, *dry_run),
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
        Command::Context {
            budget,
            compress,
            dry_run,
        } => {
            // Each entry stale against the local code index tagged `[stale: …]`.
            return assisted::context(
                log,
                &|budget| Ok(backend.memories.context(budget)?),
                dir,
                out,
                *budget,
                compress.as_deref(),
                *dry_run,
            );
        }
        Command::Analyze => print_analysis(out, &engram::memory::analyze_patterns_of(b)?)?,
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
            let mut report = error_report(record);
            // Read by the vision model when that feature is on, audited in the backend.
            assisted::screenshot(log, dir, &mut report)?;
            let m = b.record_error(&report, &[], None)?;
            report_redactions(m.redacted);
            out.value(&m, || {
                format!("{} (seen {} times)", m.id, m.metadata["frequency"])
            })?;
        }
        Command::Error {
            command: ErrorCommand::Search { query, top_k },
        } => {
            let hits = b.search_errors(query, *top_k)?;
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
        _ => unreachable!("dispatched in cli::dispatch"),
    }
    Ok(ExitCode::SUCCESS)
}

/// `engram analyze`: recurring errors, files changed together, hot files.
fn print_analysis(out: &Output, r: &engram::memory::PatternReport) -> Result<()> {
    out.value(r, || {
        let mut s = String::new();
        for (t, n) in &r.recurring_errors {
            s.push_str(&format!("error {t}: {n} times\n"));
        }
        for (a, b, n) in r.co_changes.iter().take(10) {
            s.push_str(&format!("changed together {n}x: {a} + {b}\n"));
        }
        for (f, n) in r.hot_files.iter().take(10) {
            s.push_str(&format!("hot file {f}: {n} changes\n"));
        }
        s
    })
}

/// The error `engram error record` reports, from its arguments; the caller matches
/// `ErrorCommand::Record`, so the default is never reached.
fn error_report(record: &ErrorCommand) -> ErrorReport {
    let ErrorCommand::Record {
        error_type,
        message,
        stack_trace,
        file,
        line,
        solution,
        resolved,
        screenshot,
        session,
        resolved_by,
    } = record
    else {
        return ErrorReport::default();
    };
    ErrorReport {
        error_type: error_type.clone(),
        message: message.clone(),
        stack_trace: stack_trace.clone(),
        file: file.clone(),
        line: *line,
        solution: solution.clone(),
        resolved: *resolved,
        screenshot: screenshot.clone(),
        session: session.clone(),
        resolved_by: resolved_by.clone(),
        ..ErrorReport::default()
    }
}
