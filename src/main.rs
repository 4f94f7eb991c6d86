//! The `engram` command-line tool: a thin shell over the library.
//!
//! Results go to stdout (`--json` for machine-readable output on every command); logs
//! and progress go to stderr. Exit status: 0 success (also when stdout's reader closed
//! it early), 1 failure (including a store that `verify` finds unsound), 2 bad usage.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    cli::init_logging(args.verbose);
    match cli::run(args) {
        Ok(code) => code,
        // A reader that stopped early (`engram list | head -1`) got all it wanted.
        Err(e) if closed_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// Whether `e` comes from writing to a pipe whose reader has gone.
fn closed_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || c.downcast_ref::<serde_json::Error>()
                .and_then(|j| j.io_error_kind())
                == Some(std::io::ErrorKind::BrokenPipe)
    })
}
