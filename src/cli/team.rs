//! What only the team backend has: the connection to the PostgreSQL database the
//! `database_url` setting names (its TLS roots and statement timeout), the
//! repository this checkout files its memories under there, and recall's
//! `ef_search`. The memory commands themselves are the same for both backends
//! (`memories`, `coding`, over `backend::Backend`); `db` migrates the schema.

use anyhow::{Context, Result};
use engram::memory_pg::{PgDatabase, PgMemories};

use super::{store_dir, Cli};

/// The repository name the team backend files this checkout's memories under: the
/// name of the store directory it would use locally (`<name>-<hash>` of its remote).
fn repo_name(cli: &Cli) -> Result<String> {
    let dir = store_dir(cli)?;
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty())
        .with_context(|| format!("no repository name in {}", dir.display()))
}

/// The team database at `url` (the database_url setting), trusting the root
/// certificates of the database_sslrootcert setting too when the URL names no
/// `sslrootcert` of its own, with the database_statement_timeout_ms setting's
/// statement timeout.
pub(super) fn connect(url: &str) -> Result<std::sync::Arc<PgDatabase>> {
    let config = super::config();
    let root = config
        .get_opt("database_sslrootcert")
        .map(std::path::Path::new);
    let timeout = match config.get_opt("database_statement_timeout_ms") {
        Some(ms) => std::time::Duration::from_millis(ms.trim().parse().with_context(|| {
            format!("database_statement_timeout_ms {ms:?}: expected milliseconds above 0")
        })?),
        None => engram::memory_pg::STATEMENT_TIMEOUT,
    };
    Ok(PgDatabase::connect_with(url, timeout, root)?)
}

/// The database_ef_search setting: the least `hnsw.ef_search` of recall's vector
/// search.
pub(super) fn ef_search() -> Result<u32> {
    match super::config().get_opt("database_ef_search") {
        Some(v) => v.trim().parse().with_context(|| {
            format!("database_ef_search {v:?}: expected a whole number from 1 to 1000")
        }),
        None => Ok(engram::memory_pg::EF_SEARCH),
    }
}

/// This checkout's repository in the team database at `url` (not yet anchored to
/// any code index: `backend::open_team` adds that).
pub(super) fn memories(cli: &Cli, url: &str) -> Result<PgMemories> {
    let db = connect(url)?;
    let repo = repo_name(cli)?;
    Ok(db
        .memories(&repo, super::embedder()?)?
        .with_ef_search(ef_search()?)?)
}
