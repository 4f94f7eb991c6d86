//! The code-graph commands: `refs`, `callers`, `callees`, `deps`, `overview` and
//! `impact`. Each reads the index (a repository's own store never indexed is indexed
//! first, as for `search`) and prints the library's answer.

use std::process::ExitCode;

use anyhow::{anyhow, Result};
use engram::index::graph::{self, Ask, Confidence, GraphAnswer, Linked, Target};
use engram::index::SymbolInfo;
use serde_json::json;

use super::args::{GraphDepth, GraphTarget};
use super::output::Output;
use super::{Cli, Command};

pub fn run(cli: &Cli, out: &Output) -> Result<ExitCode> {
    let store = super::code::open_indexed(cli, out)?;
    match &cli.command {
        Command::Refs { target } => {
            let (t, ask) = target_and_ask(target, None)?;
            let found = graph::refs(&store, &t, ask)?;
            let v = json!({"definitions": found.definitions, "refs": found.items, "truncated": found.truncated});
            out.value(&v, || {
                if found.definitions.is_empty() {
                    return no_definition(&t);
                }
                let mut lines: Vec<String> = found
                    .items
                    .iter()
                    .map(|r| {
                        let place = match r.column {
                            Some(c) => format!("{}:{}:{c}", r.path, r.line),
                            None => format!("{}:{}", r.path, r.line),
                        };
                        let within = r.symbol.as_deref().unwrap_or("(file level)");
                        format!("{place}  {} {}  in {within}", r.kind, r.confidence.as_str())
                    })
                    .collect();
                if lines.is_empty() {
                    lines.push(format!(
                        "no references to {} found",
                        names(&found.definitions)
                    ));
                }
                with_truncation(lines, found.truncated)
            })?;
        }
        Command::Callers { target, depth } | Command::Callees { target, depth } => {
            let (t, ask) = target_and_ask(target, Some(depth))?;
            let callers = matches!(cli.command, Command::Callers { .. });
            let found = if callers {
                graph::callers(&store, &t, ask)?
            } else {
                graph::callees(&store, &t, ask)?
            };
            let field = if callers { "callers" } else { "callees" };
            let v = json!({"definitions": found.definitions, field: found.items, "truncated": found.truncated});
            out.value(&v, || linked_text(&t, &found, field))?;
        }
        Command::Deps { path } => {
            let found = graph::deps(&store, path)?.ok_or_else(|| {
                anyhow!("{path} is not an indexed source file (a path relative to the repository root, in a language engram parses); `engram overview` lists the indexed files")
            })?;
            out.value(&found, || {
                let mut lines = vec![format!("{} imports:", found.path)];
                for i in &found.imports {
                    let item = match (&i.name, &i.bind) {
                        (Some(n), Some(b)) if n != b => format!(" {n} as {b}"),
                        (Some(n), _) => format!(" {n}"),
                        (None, Some(b)) if !i.module.ends_with(b.as_str()) => format!(" as {b}"),
                        (None, _) => String::new(),
                    };
                    let files = if i.files.is_empty() {
                        "(outside the repository)".to_string()
                    } else {
                        i.files.join(", ")
                    };
                    lines.push(format!("  {:>5}  {}{item}  → {files}", i.line, i.module));
                }
                lines.push(format!("imported by ({}):", found.imported_by.len()));
                for i in &found.imported_by {
                    lines.push(format!("  {}:{}  {}", i.path, i.line, i.module));
                }
                lines.join("\n")
            })?;
        }
        Command::Overview { path, limit } => {
            let found = graph::overview(&store, path.as_deref().unwrap_or(""), *limit)?;
            out.value(&found, || {
                if found.files.is_empty() {
                    return format!("no symbols under {:?}", path.as_deref().unwrap_or("."));
                }
                let mut lines = Vec::new();
                for f in &found.files {
                    lines.push(f.path.clone());
                    for s in &f.symbols {
                        let indent = "  ".repeat(s.depth as usize + 1);
                        // The signature names the kind (`def`, `class`, `fn`) itself.
                        let sig = if s.signature.is_empty() {
                            format!("{} {}", s.kind, s.qualified_name)
                        } else {
                            s.signature.clone()
                        };
                        lines.push(format!("{:>6}{indent}{sig}", s.line));
                    }
                }
                with_truncation(lines, found.truncated)
            })?;
        }
        Command::Impact {
            target,
            depth,
            min_confidence,
            limit,
        } => {
            let ask = Ask {
                min_confidence: confidence(min_confidence)?,
                depth: *depth,
                limit: *limit,
            };
            let found = graph::impact(&store, target, ask)?;
            out.value(&found, || {
                if found.definitions.is_empty() && found.dependents.is_empty() {
                    return format!(
                        "nothing indexed is named {target:?} (a file, folder or definition)"
                    );
                }
                let mut lines = vec![format!(
                    "{} dependents of {target} ({}, {} definitions):",
                    found.dependents.len(),
                    found.target_kind,
                    found.definitions.len()
                )];
                for d in &found.dependents {
                    lines.push(format!(
                        "  {}  fan-in {:>3}  {:<6} {}  {}:{}  {}",
                        d.distance,
                        d.fan_in,
                        d.kind,
                        d.name,
                        d.path,
                        d.line,
                        d.confidence.as_str()
                    ));
                }
                with_truncation(lines, found.truncated)
            })?;
        }
        _ => unreachable!("dispatched in cli::run"),
    }
    Ok(ExitCode::SUCCESS)
}

fn confidence(s: &str) -> Result<Confidence> {
    Confidence::parse(s).ok_or_else(|| {
        anyhow!("--min-confidence {s:?}: expected resolved, imported, same-name or ambiguous")
    })
}

fn target_and_ask(t: &GraphTarget, depth: Option<&GraphDepth>) -> Result<(Target, Ask)> {
    let target = Target::new(t.name.as_deref(), t.at.as_deref())?;
    let ask = Ask {
        min_confidence: confidence(&t.min_confidence)?,
        depth: depth.map_or(1, |d| d.depth),
        limit: t.limit,
    };
    Ok((target, ask))
}

fn no_definition(t: &Target) -> String {
    match t {
        Target::Name(n) => {
            format!("no definition named {n:?}; `engram symbol {n}` finds near names")
        }
        Target::At { path, line } => format!("no definition around {path}:{line}"),
    }
}

fn names(defs: &[SymbolInfo]) -> String {
    defs.iter()
        .map(|d| format!("{} ({}:{})", d.qualified_name, d.path, d.start_line))
        .collect::<Vec<_>>()
        .join(", ")
}

fn linked_text(t: &Target, found: &GraphAnswer<Linked>, field: &str) -> String {
    if found.definitions.is_empty() {
        return no_definition(t);
    }
    let mut lines = vec![format!("{field} of {}:", names(&found.definitions))];
    for l in &found.items {
        lines.push(format!(
            "{}{} {}  {}:{}  {} ({} call{})",
            "  ".repeat(l.depth as usize),
            l.kind,
            l.name,
            l.path,
            l.line,
            l.confidence.as_str(),
            l.calls,
            if l.calls == 1 { "" } else { "s" }
        ));
    }
    if found.items.is_empty() {
        lines.push("  (none)".into());
    }
    with_truncation(lines, found.truncated)
}

fn with_truncation(mut lines: Vec<String>, truncated: bool) -> String {
    if truncated {
        lines.push("… more (raise --limit)".into());
    }
    lines.join("\n")
}
