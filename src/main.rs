//! The `engram` command-line tool: a thin shell over the library.
//!
//! Results go to stdout (`--json` for machine-readable output on every command); logs
//! and progress go to stderr. Exit status: 0 success, 1 failure (including a store
//! that `verify` finds unsound), 2 bad usage.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    cli::init_logging(args.verbose);
    match cli::run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}
