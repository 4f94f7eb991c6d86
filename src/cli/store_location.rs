//! Which store a command works on: `--store` (or `ENGRAM_STORE`), else the
//! configured `store`, else one per repository under the configured `home` or the
//! default data directory (`engram::location`). It only names the directory; opening
//! it is the command's business.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::{config, Cli};

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
