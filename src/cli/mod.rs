//! The `engram` binary's commands: parse (`args`), find the store
//! (`store_location`), load settings (`settings`), dispatch to the command's module.
//!
//! Each command is a few lines calling the library and printing through [`output`];
//! no storage logic lives here, and this file only routes.

mod args;
mod assisted;
mod backend;
mod code;
mod coding;
mod db;
mod encrypt;
mod graph;
mod hooks;
mod inspect;
mod memories;
#[cfg(feature = "neural")]
mod model;
mod output;
mod patterns;
mod providers;
mod repo_names;
mod serve;
mod settings;
mod store_location;
mod team;
mod tokens;
mod watch;

use std::process::ExitCode;

use anyhow::Result;

pub use args::{
    Cli, Command, ConfigCommand, DbCommand, ErrorCommand, FilterArgs, HooksCommand, KeyCommand,
    MemoryFields, NoteCommand, PatternCommand, SessionCommand, TokenCommand,
};
pub(crate) use settings::{assistant, config, embedder, embedder_choice, store_options};
pub use store_location::{store_dir, store_dir_for};

/// Logs to stderr; `RUST_LOG` overrides `-v`.
pub fn init_logging(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour codes only for a terminal: logs piped to a file stay plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .init();
}

/// Run one command.
pub fn run(cli: Cli) -> Result<ExitCode> {
    settings::load(&cli)?;
    store_location::check_exists(&cli)?;
    dispatch(&cli)
}

/// Run `cli`'s command, the settings loaded (also how a hook runs the command it
/// stands for).
fn dispatch(cli: &Cli) -> Result<ExitCode> {
    let out = output::Output::new(cli.json);
    match &cli.command {
        #[cfg(feature = "neural")]
        Command::Model { command } => model::run(&out, command),
        Command::Key {
            command: KeyCommand::Hash { key },
        } => inspect::key_hash(&out, key),
        Command::Config {
            command: ConfigCommand::Show,
        } => settings::show(&out),
        Command::Serve { repo, tools, http } => {
            serve::serve(cli, repo, tools.as_deref(), http.as_deref())
        }
        Command::Token { command } => match command {
            TokenCommand::New { name, repos } => tokens::new(cli, &out, name, repos),
            TokenCommand::List => tokens::list(&out),
            TokenCommand::Revoke { id } => tokens::revoke(&out, id),
        },
        Command::Enrich {
            prompt,
            budget,
            providers,
        } => serve::enrich(cli, &out, prompt, *budget, *providers),
        Command::Providers => providers::list(&out),
        Command::Db { command } => db::run(&out, command),
        Command::Audit { since } => serve::audit(cli, &out, since.as_deref()),
        Command::Init => inspect::init(cli, &out),
        Command::Verify => inspect::verify(cli, &out),
        Command::Dump {
            kind,
            key,
            offset,
            limit,
        } => inspect::dump(cli, &out, kind.as_deref(), key.as_deref(), *offset, *limit),
        Command::Stats => inspect::stats(cli, &out),
        Command::Rebuild => inspect::rebuild(cli, &out),
        Command::Salvage { into } => inspect::salvage(cli, &out, into),
        Command::Compact => inspect::compact(cli, &out),
        Command::Encrypt { key_file, new_key } => encrypt::encrypt(cli, &out, key_file, *new_key),
        Command::Key {
            command: KeyCommand::Lookup { hash },
        } => inspect::key_lookup(cli, &out, hash),
        Command::Pattern { .. } | Command::Scan { .. } | Command::Redact => {
            patterns::run(cli, &out)
        }
        Command::Hooks { command } => hooks::run(cli, &out, command),
        Command::Index { .. } | Command::Search { .. } | Command::Symbol { .. } => {
            code::run(cli, &out)
        }
        Command::Refs { .. }
        | Command::Callers { .. }
        | Command::Callees { .. }
        | Command::Deps { .. }
        | Command::Overview { .. }
        | Command::Impact { .. } => graph::run(cli, &out),
        // The memory commands: the backend resolved once, one body for both.
        Command::Session { .. }
        | Command::Error { .. }
        | Command::Change { .. }
        | Command::Context { .. }
        | Command::Analyze
        | Command::Related { .. }
        | Command::Decision { .. } => coding::run(&backend::open(cli)?, cli, &out),
        _ => memories::run(&backend::open(cli)?, cli, &out),
    }
}
