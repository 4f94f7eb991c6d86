//! `engram db migrate` and `engram db status`: the schema of the PostgreSQL database
//! the `database_url` setting names. The library applies and checks migrations; this
//! only routes and prints (never the password).

use std::process::ExitCode;

use anyhow::{Context, Result};
use engram::memory_pg::PgDatabase;
use serde_json::json;

use super::output::Output;
use super::DbCommand;

fn database() -> Result<std::sync::Arc<PgDatabase>> {
    let url = super::config().get_opt("database_url").context(
        "no database: set database_url in the config file or ENGRAM_DATABASE_URL (postgres://USER:PASSWORD@HOST:PORT/DATABASE)",
    )?;
    super::team::connect(url)
}

pub(crate) fn run(out: &Output, command: &DbCommand) -> Result<ExitCode> {
    let db = database()?;
    match command {
        DbCommand::Migrate => {
            let applied = db.migrate()?;
            let status = db.status()?;
            out.value(&json!({"applied": applied, "status": status}), || {
                if applied.is_empty() {
                    format!(
                        "{}: schema version {}, up to date",
                        status.server, status.current
                    )
                } else {
                    let names: Vec<&str> = applied.iter().map(|m| m.name).collect();
                    format!(
                        "{}: applied {}; schema version {}",
                        status.server,
                        names.join(", "),
                        status.current
                    )
                }
            })?;
        }
        DbCommand::Status => {
            let status = db.status()?;
            out.value(&status, || {
                let state = if status.current > status.expected {
                    "newer than this engram: upgrade engram".to_string()
                } else if status.pending.is_empty() {
                    "up to date".to_string()
                } else {
                    format!(
                        "pending {}: run `engram db migrate`",
                        status.pending.join(", ")
                    )
                };
                let tls = match db.session_tls() {
                    Ok(Some(tls)) => format!("encrypted ({tls})"),
                    Ok(None) => "not encrypted".to_string(),
                    Err(e) => format!("unknown ({e})"),
                };
                format!(
                    "{}: schema version {} (this engram: {}), {state}; connection {tls}, sslmode={}",
                    status.server,
                    status.current,
                    status.expected,
                    db.ssl_mode()
                )
            })?;
            if status.current != status.expected {
                return Ok(ExitCode::from(1));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
