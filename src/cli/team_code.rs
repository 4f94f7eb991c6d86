//! The team backend's commands that read the local code index too: with
//! `database_url` set, memories live in the database while a repository's code
//! index stays in its local store, so staleness (`stale`, `confirm`, the `stale`
//! marks of `get` and `list`) and the `[stale: …]` tags of `context` judge the database's
//! memories against that index. Routing and printing only.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{bail, Result};
use engram::memory::{Memories, MemoryBackend};
use engram::memory_pg::PgMemories;

use serde_json::json;

use super::memories::{human, marked_rows, memory_filter, print_marked};
use super::output::Output;
use super::{Cli, Command};

/// Run `context`, `get`, `list`, `stale` or `confirm` on `team`, with the code index of
/// `code` (`None` when nothing was indexed in this checkout) in the store `dir`.
pub(super) fn run(
    team: &PgMemories,
    code: Option<&Memories>,
    dir: &Path,
    cli: &Cli,
    out: &Output,
) -> Result<ExitCode> {
    match &cli.command {
        Command::Context {
            budget,
            compress,
            dry_run,
        } => {
            // The database's entries, tagged stale against the local code index.
            let full = |b: usize| -> Result<String> {
                Ok(match code {
                    Some(c) => engram::stale::project_context_in(c.store(), team, b)?,
                    None => engram::memory::project_context_of(team, b, &|_| None)?,
                })
            };
            super::assisted::context(
                team,
                &full,
                dir,
                out,
                *budget,
                compress.as_deref(),
                *dry_run,
            )
        }
        Command::Get { id } => {
            let Some(m) = team.get(id)? else {
                bail!("no memory {id}");
            };
            // With its marks against the local code index, as the local `get` shows.
            let marks = match code {
                Some(c) => engram::stale::marks_against(c.store(), std::slice::from_ref(&m))?
                    .remove(&m.id)
                    .unwrap_or_default(),
                None => Vec::new(),
            };
            print_marked(out, &m, &marks)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::List {
            limit,
            offset,
            filter,
        } => {
            let list = team.list_filtered(&memory_filter(filter)?, *limit, *offset)?;
            let total = team.count()?;
            // Each with its marks against the local code index, as the local `list`.
            let marks = match code {
                Some(c) => engram::stale::marks_against(c.store(), &list)?,
                None => Default::default(),
            };
            let shown = marked_rows(&list, marks)?;
            out.value(&json!({"memories": shown, "total": total}), || {
                list.iter().map(human).collect::<Vec<_>>().join("\n")
            })?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Stale { limit } => {
            let list = match code {
                Some(c) => engram::stale::list_in(c.store(), team, *limit)?,
                None => {
                    eprintln!("engram: no local code index in {}: the memories' anchors have nothing to be compared with (engram index first)", dir.display());
                    Vec::new()
                }
            };
            super::memories::print_stale(out, &list)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Confirm { id } => {
            let Some(c) = code else {
                bail!("engram confirm re-anchors a memory to the local code index, and there is none in {} (engram index first)", dir.display());
            };
            let m = engram::stale::confirm_in(c.store(), team, id)?;
            let left = engram::stale::marks_against(c.store(), std::slice::from_ref(&m))?;
            super::memories::print_confirmed(
                out,
                &m,
                left.get(&m.id).cloned().unwrap_or_default(),
            )?;
            Ok(ExitCode::SUCCESS)
        }
        _ => unreachable!("dispatched in team::run"),
    }
}
