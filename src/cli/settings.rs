//! The binary's effective settings: the configuration loaded once at start
//! (`engram::config`), and what commands derive from it and from the global flags
//! (store options, the embedder), plus `engram config show`. It never opens a store.

use std::process::ExitCode;
use std::sync::{Arc, OnceLock};

use anyhow::{Context, Result};
use engram::config::Config;
use engram::embed::Embedder;
use engram::store::{Durability, StoreOptions};

use super::output::Output;
use super::Cli;

pub(crate) fn store_options(cli: &Cli) -> StoreOptions {
    let durability = cli.durability.unwrap_or_else(|| {
        config()
            .get("durability")
            .parse()
            .unwrap_or(Durability::Always)
    });
    StoreOptions {
        durability,
        create: true,
        read_only: false,
    }
}

/// The configured embedder.
pub(crate) fn embedder() -> Result<Arc<dyn Embedder>> {
    // `model_dir` from the configuration, else `ENGRAM_MODEL_DIR` (read by
    // `embedder_by_name`).
    match config().get_opt("model_dir").filter(|d| !d.is_empty()) {
        Some(dir) => {
            engram::embed::embedder_for(config().get("embedder"), Some(std::path::Path::new(dir)))
        }
        None => engram::embed::embedder_by_name(config().get("embedder")),
    }
    .map_err(anyhow::Error::msg)
}

static CONFIG: OnceLock<Config> = OnceLock::new();

/// The effective configuration (loaded by [`load`] at the start of every command).
pub(crate) fn config() -> &'static Config {
    CONFIG.get_or_init(Config::defaults)
}

/// Load the configuration for this run (`--config`, `ENGRAM_CONFIG`, the default file).
pub(crate) fn load(cli: &Cli) -> Result<()> {
    let loaded = Config::load(cli.config.as_deref())
        .context("reading the configuration (see `engram config show`)")?;
    let _ = CONFIG.set(loaded);
    Ok(())
}

/// `engram config show`: every setting, its value and where the value came from.
pub(crate) fn show(out: &Output) -> Result<ExitCode> {
    let entries = config().entries();
    let file = config().file().map(|p| p.display().to_string());
    out.value(
        &serde_json::json!({"file": file, "settings": entries}),
        || {
            let mut lines = vec![format!(
                "# config file: {}",
                file.clone().unwrap_or_else(|| "(none found)".into())
            )];
            for e in &entries {
                lines.push(format!(
                    "{:<16} = {:<24} # {} ({})",
                    e.name,
                    format!("{:?}", e.value),
                    e.source,
                    e.env
                ));
            }
            lines.join("\n")
        },
    )?;
    Ok(ExitCode::SUCCESS)
}
