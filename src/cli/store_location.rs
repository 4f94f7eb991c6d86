//! Which store a command works on: `--store` (or `ENGRAM_STORE`), else the
//! configured `store`, else one per repository under the configured `home` or the
//! default data directory (`engram::location`). It only names the directory, and
//! refuses a named one that does not exist to a command that only reads; opening it
//! is the command's business.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::{
    config, Cli, Command, ErrorCommand, KeyCommand, NoteCommand, PatternCommand, SessionCommand,
};

/// Resolve the store directory: `--store`, `ENGRAM_STORE`, else the repository default.
pub fn store_dir(cli: &Cli) -> Result<PathBuf> {
    let cwd = std::env::current_dir().context("reading the current directory")?;
    store_dir_for(cli, &cwd)
}

/// The store of the repository containing `start`: `--store`, else the configured
/// store, else one per repository under the configured or default data directory.
pub fn store_dir_for(cli: &Cli, start: &Path) -> Result<PathBuf> {
    if let Some(dir) = &cli.store {
        return Ok(dir.clone());
    }
    if let Some(dir) = config().get_opt("store") {
        return Ok(PathBuf::from(dir));
    }
    if let Some(home) = config().get_opt("home") {
        return Ok(engram::location::store_dir_in(Path::new(home), start));
    }
    engram::location::default_store_dir(start)
        .context("no store directory: pass --store DIR or set ENGRAM_STORE, ENGRAM_HOME or HOME")
}

/// Whether the store is named (`--store`, `ENGRAM_STORE`, the `store` setting)
/// rather than the repository's own.
pub fn is_named(cli: &Cli) -> bool {
    cli.store.is_some() || config().get_opt("store").is_some()
}

/// A command that only reads (or changes what must already be there) must not
/// create a named store that does not exist: it fails saying so. Write commands
/// create it; the repository's own store is created on first use as before (and a
/// first `search` indexes it).
pub fn check_exists(cli: &Cli) -> Result<()> {
    if !is_named(cli) || !needs_existing(&cli.command) {
        return Ok(());
    }
    // With database_url set, the memory commands read the team database, not this.
    let local = matches!(
        cli.command,
        Command::Search { .. }
            | Command::Symbol { .. }
            | Command::Stats
            | Command::Verify
            | Command::Dump { .. }
            | Command::Scan { .. }
            | Command::Key { .. }
    );
    if !local && config().get_opt("database_url").is_some() {
        return Ok(());
    }
    let dir = store_dir(cli)?;
    if !dir.exists() {
        bail!(
            "no store at {}; create it with `engram index` (code) or `engram remember` (a memory) first, or pass --store DIR of an existing store",
            dir.display()
        );
    }
    Ok(())
}

/// The commands that only read the store, or change what must already be in it.
fn needs_existing(command: &Command) -> bool {
    match command {
        Command::Search { .. }
        | Command::Symbol { .. }
        | Command::Recall { .. }
        | Command::List { .. }
        | Command::Get { .. }
        | Command::History { .. }
        | Command::Update { .. }
        | Command::Forget { .. }
        | Command::Confirm { .. }
        | Command::Stale { .. }
        | Command::Related { .. }
        | Command::Context { .. }
        | Command::Analyze
        | Command::Export { .. }
        | Command::Stats
        | Command::Verify
        | Command::Dump { .. }
        | Command::Rebuild
        | Command::Salvage { .. }
        | Command::Compact
        | Command::Audit { .. }
        | Command::Enrich { .. }
        | Command::Scan { .. }
        | Command::Redact => true,
        Command::Note { command } => matches!(
            command,
            NoteCommand::Get { .. } | NoteCommand::List | NoteCommand::Delete { .. }
        ),
        Command::Error { command } => !matches!(command, ErrorCommand::Record { .. }),
        Command::Session { command } => !matches!(command, SessionCommand::Start { .. }),
        Command::Key { command } => matches!(command, KeyCommand::Lookup { .. }),
        Command::Pattern { command } => !matches!(command, PatternCommand::Load { .. }),
        _ => false,
    }
}
