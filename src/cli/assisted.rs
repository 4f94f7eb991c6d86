//! The commands a chat model can help with: `session end` (summary, extraction),
//! `session extract`, `recall --rerank llm`, `error suggest`, `context --compress`,
//! and error screenshots. Each prints its result without a model when none is
//! configured or the call fails (with a warning on stderr), and `--dry-run` prints
//! the exact requests instead of sending them.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{bail, Result};
use engram::assist::{is_base64, screenshot_from, unread_image, warn, Assistant, Level};
use engram::memory::{AuditLog, ErrorReport, Memory, MemoryBackend};
use serde_json::{json, Value};

use super::output::Output;

/// The assistant for the store in `dir`; with `--dry-run`, one that prepares only
/// (and an error when no model is configured: there is nothing to show).
fn assistant_for(dir: &Path, dry_run: bool) -> Result<Option<Assistant>> {
    let a = super::assistant(dir, dry_run)?;
    if dry_run && a.is_none() {
        bail!("--dry-run shows what would be sent to the chat model, and none is configured (set llm_model; see `engram config show`)");
    }
    Ok(a)
}

/// Print the requests a dry run prepared: JSON, or each as its HTTP text.
fn print_prepared(out: &Output, a: &Assistant) -> Result<ExitCode> {
    let prepared = a.prepared();
    out.value(&json!({"dry_run": true, "requests": prepared}), || {
        prepared
            .iter()
            .map(|p| format!("# {} (not sent)\n{}", p.purpose, p.request))
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    Ok(ExitCode::SUCCESS)
}

/// `engram session end [ID]`: the deterministic summary, and the model's when asked;
/// on `memories` (the local store or the team backend), a model call audited in
/// `log` (or the team log, when set).
pub fn session_end(
    memories: &dyn MemoryBackend,
    log: &dyn AuditLog,
    dir: &Path,
    out: &Output,
    (id, failed): (Option<&str>, bool),
    (llm_summary, extract, dry_run): (bool, bool, bool),
) -> Result<ExitCode> {
    // Without an id: the one open session (refused, naming them, when none or several
    // are open).
    let given = id;
    let active;
    let id = match given {
        Some(id) => id,
        None => {
            active = memories.active_session(None)?;
            active.to_end()?
        }
    };
    let a = assistant_for(dir, dry_run)?;
    let want_summary = llm_summary || a.as_ref().is_some_and(|a| a.features.summary);
    let want_extract = extract || a.as_ref().is_some_and(|a| a.features.extract);
    if (llm_summary || extract) && a.is_none() {
        eprintln!("engram: warning: no chat model is configured (llm_model); ending with the summary without a model");
    }
    if dry_run {
        let a = a.as_ref().expect("checked by assistant_for");
        if want_summary {
            let _ = a.summarize_session_in(memories, log, id);
        }
        if want_extract {
            let _ = a.extract_knowledge_in(memories, log, id);
        }
        return print_prepared(out, a);
    }
    let mut m = match given {
        Some(id) => memories.end_session(id, !failed, None)?,
        // Which one is decided again as it ends (under the store's writer lock).
        None => memories.end_active_session(None, !failed, None)?,
    };
    let mut warnings = Vec::new();
    let mut extracted = Vec::new();
    if let Some(a) = a.as_ref() {
        if want_summary {
            match a.summarize_session_in(memories, log, &m.id) {
                Ok(updated) => m = updated,
                Err(e) => warnings.extend(warn("session summary", &e)),
            }
        }
        if want_extract {
            match a.extract_knowledge_in(memories, log, &m.id) {
                Ok(x) => extracted = x.stored,
                Err(e) => warnings.extend(warn("knowledge extraction", &e)),
            }
        }
    }
    let llm = m
        .metadata
        .get("llm_summary")
        .and_then(Value::as_str)
        .map(String::from);
    out.value(
        &json!({"session": m, "llm_summary": llm, "extracted": extracted, "warnings": warnings}),
        || {
            let mut s = m.text.clone();
            if let Some(l) = &llm {
                s.push_str("\n\n");
                s.push_str(l);
            }
            for x in &extracted {
                s.push_str(&format!(
                    "\nextracted {} ({}): {}",
                    x.id,
                    x.tags.join(", "),
                    x.text
                ));
            }
            s
        },
    )?;
    Ok(ExitCode::SUCCESS)
}

/// `engram session extract ID` (memories and audit log as for [`session_end`]).
pub fn session_extract(
    memories: &dyn MemoryBackend,
    log: &dyn AuditLog,
    dir: &Path,
    out: &Output,
    id: &str,
    dry_run: bool,
) -> Result<ExitCode> {
    let Some(a) = assistant_for(dir, dry_run)? else {
        bail!("extraction needs a chat model, and none is configured (set llm_model)");
    };
    let r = a.extract_knowledge_in(memories, log, id);
    if dry_run {
        return print_prepared(out, &a);
    }
    match r {
        Ok(x) => out.value(&x, || {
            let mut s: Vec<String> = x
                .stored
                .iter()
                .map(|m| format!("{} ({}): {}", m.id, m.tags.join(", "), m.text))
                .collect();
            s.push(format!(
                "{} stored, {} already known",
                x.stored.len(),
                x.duplicates
            ));
            s.join("\n")
        })?,
        Err(e) => {
            let w = warn("knowledge extraction", &e).unwrap_or_default();
            out.value(
                &json!({"stored": [], "duplicates": 0, "warnings": [w]}),
                || "nothing extracted".into(),
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `recall --rerank llm`: `hits` (rows with their memories, search order) scored by
/// the model; the search order, with a warning, when it gives no scores.
pub fn rerank(
    dir: &Path,
    out: &Output,
    log: &dyn AuditLog,
    query: &str,
    hits: Vec<(Value, Memory)>,
    dry_run: bool,
) -> Result<Option<Vec<(Value, Memory)>>> {
    let Some(a) = assistant_for(dir, dry_run)? else {
        eprintln!("engram: warning: --rerank llm needs a chat model, and none is configured (llm_model); showing the search order");
        return Ok(None);
    };
    let candidates: Vec<Memory> = hits.iter().map(|(_, m)| m.clone()).collect();
    let scored = a.rerank(log, query, &candidates);
    if dry_run {
        print_prepared(out, &a)?;
        return Ok(Some(Vec::new()));
    }
    match scored {
        Ok(scored) => {
            let mut rows = Vec::new();
            for s in scored {
                if let Some((row, m)) = hits.iter().find(|(_, m)| m.id == s.id) {
                    let mut row = row.clone();
                    row["score"] = json!(s.score);
                    row["reason"] = json!(s.reason);
                    row["reranked_by"] = json!(a.model());
                    rows.push((row, m.clone()));
                }
            }
            Ok(Some(rows))
        }
        Err(e) => {
            warn("relevance scoring", &e);
            Ok(None)
        }
    }
}

/// `engram error suggest ID`: the error and similar past ones read from `memories`
/// (the local store or the team backend), a model call audited in `log`.
pub fn error_suggest(
    memories: &dyn MemoryBackend,
    log: &dyn AuditLog,
    dir: &Path,
    out: &Output,
    id: &str,
    dry_run: bool,
) -> Result<ExitCode> {
    let a = assistant_for(dir, dry_run)?;
    if dry_run {
        let a = a.as_ref().expect("checked by assistant_for");
        let _ = a.suggest_solution(memories, log, id);
        return print_prepared(out, a);
    }
    let (s, warning) = engram::assist::suggest(a.as_ref(), memories, log, id)?;
    let mut v = serde_json::to_value(&s)?;
    if let Some(w) = &warning {
        v["warnings"] = json!([w]);
    }
    out.value(&v, || {
        if s.solution.is_empty() {
            return format!(
                "no suggestion for {}: no similar solved error, and no model answered",
                s.error
            );
        }
        let mut t = format!("{}\n", s.solution);
        match s.confidence {
            Some(c) => t.push_str(&format!("confidence: {c:.2} ({})\n", s.source)),
            None => t.push_str(&format!("confidence: not stated ({})\n", s.source)),
        }
        for alt in &s.alternatives {
            t.push_str(&format!("alternative: {alt}\n"));
        }
        t
    })?;
    Ok(ExitCode::SUCCESS)
}

/// `engram context [--compress LEVEL]`: `full(budget)` is the project context of
/// wherever the memories are (the local store or the team backend), a model call is
/// audited in `log`.
pub fn context(
    log: &dyn AuditLog,
    full: &dyn Fn(usize) -> Result<String>,
    dir: &Path,
    out: &Output,
    budget: usize,
    compress: Option<&str>,
    dry_run: bool,
) -> Result<ExitCode> {
    let text = full(budget)?;
    let a = assistant_for(dir, dry_run)?;
    let level = match compress {
        Some(l) => Some(l.parse::<Level>().map_err(anyhow::Error::msg)?),
        None => a
            .as_ref()
            .filter(|a| a.features.compress)
            .map(|_| Level::Detailed),
    };
    let mut warnings = Vec::new();
    let mut compressed = None;
    match (level, a.as_ref()) {
        (Some(level), Some(a)) => {
            let full = full(a.max_request_bytes)?;
            match a.compress_context(log, &full, level, budget) {
                Ok(t) => compressed = Some(t),
                Err(e) => warnings.extend(warn("context compression", &e)),
            }
            if dry_run {
                return print_prepared(out, a);
            }
        }
        (Some(_), None) => {
            let w = "--compress needs a chat model, and none is configured (llm_model); showing the full context";
            eprintln!("engram: warning: {w}");
            warnings.push(w.into());
        }
        _ => {}
    }
    let shown = compressed.as_deref().unwrap_or(&text);
    let (shown, _) = engram::gate::truncate(shown, budget);
    let mut v = json!({"context": shown, "bytes": shown.len(), "compressed": compressed.is_some(), "warnings": warnings});
    // With --json the budget holds for the whole JSON text, as over MCP.
    // `bytes` was counted before the cut, so it only gets shorter.
    if out.is_json() && engram::gate::fit_text(&mut v, "context", budget) {
        v["bytes"] = json!(v["context"].as_str().map_or(0, str::len));
    }
    out.value(&v, || shown.to_string())?;
    Ok(ExitCode::SUCCESS)
}

/// A screenshot given to `error record`: kept as its hash and size only, read by the
/// vision model when that feature is on (the call audited in `log`, or the team log
/// when set).
pub fn screenshot(log: &dyn AuditLog, dir: &Path, e: &mut ErrorReport) -> Result<()> {
    let Some(given) = e.screenshot.take() else {
        return Ok(());
    };
    let shot = match screenshot_from(&given, |p| Ok(std::path::PathBuf::from(p))) {
        Ok(shot) => shot,
        // Not an image we can read: a path is kept (its secrets replaced), image data
        // only as its size and hash.
        Err(why) => {
            eprintln!("engram: warning: screenshot not read: {why}");
            e.screenshot = Some(if is_base64(&given) {
                unread_image(&given, &why)
            } else {
                engram::gate::redact_secrets(&given)?.0
            });
            return Ok(());
        }
    };
    e.screenshot = Some(shot.reference());
    e.extra_metadata
        .insert("screenshot_sha256".into(), json!(shot.sha256));
    e.extra_metadata
        .insert("screenshot_bytes".into(), json!(shot.bytes));
    let Some(a) = super::assistant(dir, false)?.filter(|a| a.features.vision) else {
        return Ok(());
    };
    match a.read_screenshot(log, &shot) {
        Ok(f) => {
            if e.file.is_none() {
                e.file.clone_from(&f.file);
            }
            if e.line.is_none() {
                e.line = f.line;
            }
            if e.stack_trace.is_none() {
                e.stack_trace.clone_from(&f.stack_trace);
            }
            let mut reading = serde_json::to_value(&f)?;
            reading["provenance"] = json!("llm_extracted");
            reading["model"] = json!(a.model());
            e.extra_metadata
                .insert("screenshot_reading".into(), reading);
        }
        Err(x) => {
            warn("screenshot reading", &x);
        }
    }
    Ok(())
}
