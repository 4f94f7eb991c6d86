//! The pattern commands: `pattern load`, `pattern list`, `pattern delete`, `scan`,
//! `redact`. With database_url set, loaded sets' definitions live in the team
//! database (under the repository the store is for); compiling and scanning stay
//! local, except that memory scans (`scan --memories`, the default, and `scan --key
//! mem:…`) read the memories from the database, and `scan secrets` and `redact` go
//! over the repository's rows in the database as well as the local store's log.

use std::process::ExitCode;

use anyhow::{Context, Result};
use engram::manager::{scan_memories, scan_memory};
use engram::memory::taxonomy::{self, Axis};
use engram::memory::{Memories, MemoryFilter};
use engram::patterns::{PatternSet, Patterns, ScanTarget};
use serde_json::json;

use super::output::Output;
use super::{store_dir, store_options, Cli, Command, PatternCommand};

pub fn run(cli: &Cli, out: &Output) -> Result<ExitCode> {
    let dir = store_dir(cli)?;
    let memories = Memories::open_with(&dir, store_options(cli, &dir)?)
        .with_context(|| format!("opening store {}", dir.display()))?
        .with_embedder(super::embedder()?);
    let team = match super::config().get_opt("database_url") {
        Some(url) => Some(super::backend::open_team(cli, url)?.0),
        None => None,
    };
    let patterns = match &team {
        Some(t) => Patterns::with_definitions(memories.store(), t),
        None => Patterns::new(memories.store()),
    };
    match &cli.command {
        Command::Pattern {
            command: PatternCommand::Load { file, replace },
        } => {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("reading {}", file.display()))?;
            let set = PatternSet::parse_detect(&text)
                .with_context(|| format!("reading {}", file.display()))?;
            let set = patterns.load_replacing(set, *replace)?;
            out.value(
                &json!({"name": set.key(), "patterns": set.patterns.len()}),
                || format!("loaded {} ({} patterns)", set.key(), set.patterns.len()),
            )?;
        }
        Command::Pattern {
            command: PatternCommand::List,
        } => {
            let sets = patterns.list()?;
            let rows: Vec<_> = sets
                .iter()
                .map(|(s, builtin)| {
                    json!({"name": s.key(), "description": s.description, "tags": s.tags,
                           "patterns": s.patterns.iter().map(|p| &p.id).collect::<Vec<_>>(), "builtin": builtin, "secret": s.secret})
                })
                .collect();
            out.value(&json!({"pattern_sets": rows}), || {
                sets.iter()
                    .map(|(s, b)| {
                        format!(
                            "{:<24} {:>3} patterns  {}{}",
                            s.key(),
                            s.patterns.len(),
                            s.description,
                            if *b { " (built-in)" } else { "" }
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            })?;
        }
        Command::Pattern {
            command: PatternCommand::Delete { name },
        } => {
            let deleted = patterns.delete(name)?;
            let key = format!("pat:{}", name.strip_prefix("pat:").unwrap_or(name));
            out.value(&json!({"name": key, "deleted": deleted}), || {
                if deleted {
                    format!("deleted {key}")
                } else {
                    format!("no loaded set {key}")
                }
            })?;
            if !deleted {
                return Ok(ExitCode::from(1));
            }
        }
        Command::Redact => {
            let r = engram::patterns::redact_stored_secrets(memories.store())?;
            // On the team backend the repository's rows in PostgreSQL too.
            let team_report = team
                .as_ref()
                .map(|t| t.redact_stored_secrets())
                .transpose()?;
            let mut v = json!(r);
            if let Some(t) = &team_report {
                v["team"] = json!(t);
            }
            out.value(&v, || {
                let mut text = format!(
                    "{} records rewritten without their secrets; log {} -> {} bytes (generation {})",
                    r.records_rewritten,
                    r.compaction.bytes_before,
                    r.compaction.bytes_after,
                    r.compaction.generation
                );
                if let Some(t) = &team_report {
                    text.push_str(&format!(
                        "\nteam database: {} row(s) of {} memories rewritten without their {} secret(s) \
                         (the old row versions stay in PostgreSQL's files until VACUUM reclaims them)",
                        t.rows_rewritten, t.memories_rewritten, t.secrets
                    ));
                }
                text
            })?;
        }
        Command::Scan {
            pattern_set,
            key: None,
            memories: false,
            code: false,
            task: None,
            context: None,
        } if pattern_set.trim_start_matches("pat:") == "secrets" => {
            let found = engram::patterns::find_stored_secrets(memories.store())?;
            // On the team backend the repository's rows in PostgreSQL too.
            let team_found = team.as_ref().map(|t| t.find_stored_secrets()).transpose()?;
            let team_rows = team_found.as_deref().unwrap_or_default();
            let total: u64 = found.iter().map(|f| f.secrets).sum::<u64>()
                + team_rows.iter().map(|f| f.secrets).sum::<u64>();
            let mut v = json!({"records": found, "secrets": total});
            if team_found.is_some() {
                v["team_rows"] = json!(team_rows);
            }
            out.value(&v, || {
                if found.is_empty() && team_rows.is_empty() {
                    return if team_found.is_some() {
                        "no secret in any record of the store or row of the team database".into()
                    } else {
                        "no secret in any record of the store".into()
                    };
                }
                let mut lines: Vec<String> = found
                    .iter()
                    .map(|f| {
                        format!(
                            "{:>10}  {:<6} {:<40} {} secret(s){}",
                            f.offset,
                            f.kind,
                            f.key,
                            f.secrets,
                            if f.live { "" } else { "  (not live)" }
                        )
                    })
                    .collect();
                lines.extend(team_rows.iter().map(|f| {
                    let rules: Vec<String> =
                        f.rules.iter().map(|(r, n)| format!("{r} x{n}")).collect();
                    format!(
                        "{:<24} {:<12} {} version {}: {} secret(s) ({})",
                        f.table,
                        f.kind,
                        f.id,
                        f.version,
                        f.secrets,
                        rules.join(", ")
                    )
                }));
                lines.push(format!(
                    "{total} secret(s) in {} record(s); `engram redact` removes them",
                    found.len() + team_rows.len()
                ));
                lines.join("\n")
            })?;
            if total > 0 {
                return Ok(ExitCode::from(1));
            }
        }
        Command::Scan {
            pattern_set,
            key,
            memories: _,
            code,
            task,
            context,
        } => {
            let task = task
                .as_deref()
                .map(|t| taxonomy::normalise(Axis::Task, t))
                .transpose()?;
            let context = context
                .as_deref()
                .map(|c| taxonomy::normalise(Axis::Context, c))
                .transpose()?;
            let matches = match (&team, key) {
                // The team backend's memories are on the server, not in the local store.
                (Some(t), Some(k)) if k.starts_with("mem:") => {
                    scan_memory(&patterns, t, pattern_set, k)?
                }
                (Some(t), None) if !*code => {
                    let filter = MemoryFilter {
                        task,
                        contexts: context.into_iter().collect(),
                        ..MemoryFilter::default()
                    };
                    scan_memories(&patterns, t, pattern_set, &filter)?
                }
                _ => {
                    let target = if let Some(k) = key {
                        ScanTarget::Key(k.clone())
                    } else if *code {
                        ScanTarget::Code
                    } else {
                        ScanTarget::Memories { task, context }
                    };
                    patterns.scan(pattern_set, &target)?
                }
            };
            out.value(&json!({"matches": matches}), || {
                if matches.is_empty() {
                    return "no matches".into();
                }
                matches
                    .iter()
                    .map(|m| {
                        let place = match (&m.path, m.line) {
                            (Some(p), Some(l)) => format!("{p}:{l}"),
                            (None, Some(l)) => format!("{}:{l}", m.key),
                            _ => m.key.clone(),
                        };
                        format!("{place}  {}/{}  {}", m.pattern_set, m.pattern, m.text)
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            })?;
        }
        _ => unreachable!("dispatched in cli::run"),
    }
    Ok(ExitCode::SUCCESS)
}
