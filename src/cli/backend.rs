//! Where the memory commands' memories are, resolved once per run (ripgrep's
//! `HiArgs`): the repository's local store, or with `database_url` set its rows in
//! the team database beside the local store's code index. The commands (`memories`,
//! `coding`) then run one body over [`Backend`] whichever it is; what differs
//! between the two (stale marks, recall's ranking) is decided in the manager's
//! [`BackendProviders`].

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use engram::manager::BackendProviders;
use engram::memory::{AuditLog, Memories, MemoryBackend};
use engram::memory_pg::PgMemories;
use engram::stale::LocalCodeAnchors;

use super::{store_dir, store_options, Cli};

/// The memories a command reads and writes, and what goes with them.
pub(super) struct Backend {
    /// The memories, and how they are judged against code and recalled.
    pub memories: BackendProviders,
    /// Where model calls are audited: the backend's own log.
    pub log: Arc<dyn AuditLog>,
    /// The local store's directory (the assistant's files; the code index).
    pub dir: PathBuf,
}

impl Backend {
    /// The backend itself, for the commands that need nothing else.
    pub fn b(&self) -> &dyn MemoryBackend {
        &**self.memories.backend()
    }
}

/// The backend of this run: the team database with database_url set, else the
/// repository's local store.
pub(super) fn open(cli: &Cli) -> Result<Backend> {
    let dir = store_dir(cli)?;
    Ok(match super::config().get_opt("database_url") {
        Some(url) => {
            let (team, code) = open_team(cli, url)?;
            let team = Arc::new(team);
            Backend {
                memories: BackendProviders::new(team.clone(), code),
                log: team,
                dir,
            }
        }
        None => {
            let local = Arc::new(open_local(cli)?);
            Backend {
                memories: BackendProviders::local(local.clone()),
                log: local,
                dir,
            }
        }
    })
}

/// The repository's local store (created when missing).
pub(super) fn open_local(cli: &Cli) -> Result<Memories> {
    let dir = store_dir(cli)?;
    let m = Memories::open_with(&dir, store_options(cli, &dir)?)
        .with_context(|| format!("opening store {}", dir.display()))?
        .with_embedder(super::embedder()?);
    let r = m.store().open_report();
    if r.truncated_bytes > 0 {
        tracing::warn!(
            "dropped {} uncommitted bytes left by a crash",
            r.truncated_bytes
        );
    }
    Ok(m)
}

/// This checkout's repository in the team database at `url`, anchoring what it
/// writes to the local code index when there is one, and the local store holding
/// that index (`None` when nothing was indexed here: no store to open, nothing to
/// anchor to).
pub(super) fn open_team(cli: &Cli, url: &str) -> Result<(PgMemories, Option<Arc<Memories>>)> {
    let mut team = super::team::memories(cli, url)?;
    // Only an existing store: opening creates one, and a team checkout need not have
    // any (its memories are in the database).
    let code = if store_dir(cli)?.join(engram::store::BLOB_FILE).exists() {
        // A local store that cannot be opened (read-only, locked by a crash) must not
        // stop the database's commands; they go on without the code index, saying so.
        match open_local(cli) {
            Ok(m) => Some(Arc::new(m)),
            Err(e) => {
                eprintln!("engram: warning: the local store's code index is not available ({e:#}): memories are written without code anchors and nothing is marked stale");
                None
            }
        }
    } else {
        None
    };
    if let Some(c) = &code {
        team = team.with_anchors(Arc::new(LocalCodeAnchors::new(c.clone())));
    }
    Ok((team, code))
}
