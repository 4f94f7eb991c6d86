//! The binary's effective settings: the configuration loaded once at start
//! (`engram::config`), and what commands derive from it and from the global flags
//! (store options, the embedder), plus `engram config show`. It never opens a store.

use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};

use anyhow::{Context, Result};
use engram::assist::{Assistant, Features, RerankOptions};
use engram::config::Config;
use engram::embed::Embedder;
use engram::gate::{Caps, Gate};
use engram::llm::{HttpProvider, LlmSettings, RemoteEmbedder, RemoteOptions};
use engram::store::{Durability, SealError, StoreOptions, VectorKey};

use super::output::Output;
use super::Cli;

/// How to open the store in `dir`: durability, and the key for sealed vectors
/// (`ENGRAM_KEY`, else the `key_file` setting / `ENGRAM_KEY_FILE`).
pub(crate) fn store_options(cli: &Cli, dir: &Path) -> Result<StoreOptions> {
    let durability = cli.durability.unwrap_or_else(|| {
        config()
            .get("durability")
            .parse()
            .unwrap_or(Durability::Always)
    });
    Ok(StoreOptions {
        durability,
        create: true,
        read_only: false,
        vector_key: vector_key(dir)?,
    })
}

/// The configured key for sealed vectors, if any; a key file must live outside the
/// store directory (format-spec/encryption.md).
pub(crate) fn vector_key(dir: &Path) -> Result<Option<VectorKey>> {
    if let Ok(hex) = std::env::var("ENGRAM_KEY") {
        return Ok(Some(
            VectorKey::from_hex(&hex).context("reading the key in ENGRAM_KEY")?,
        ));
    }
    match config().get_opt("key_file") {
        Some(path) => load_key_file(Path::new(path), dir).map(Some),
        None => Ok(None),
    }
}

/// Read a key file, refusing one inside the store directory `dir`.
pub(crate) fn load_key_file(path: &Path, dir: &Path) -> Result<VectorKey> {
    let key = VectorKey::from_file(path)?;
    let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    if canonical(path).starts_with(canonical(dir)) {
        return Err(SealError::KeyInsideStore {
            key: path.to_path_buf(),
            store: dir.to_path_buf(),
        }
        .into());
    }
    Ok(key)
}

/// Which embedder this run uses, and why: what `engram stats` and `search --json` show.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct EmbedderChoice {
    pub name: String,
    /// `configured` (the `embedder` setting names it, or `auto` found an HTTP one),
    /// `default-model` (none configured and the default model's files are present) or
    /// `built-in-fallback` (none configured, or `auto`, and no model files).
    pub reason: &'static str,
    pub detail: String,
}

/// The embedder this run uses: the `embedder` setting when set; when it is empty, the
/// default model (all-minilm-l6-v2) if its files are in the models directory, else the
/// built-in hash-v2-256. `auto` picks an HTTP embedder from the environment
/// (`VOYAGE_API_KEY`, `OPENAI_API_KEY`, `OLLAMA_HOST`), else does as the empty setting.
pub(crate) fn embedder_choice() -> &'static EmbedderChoice {
    static CHOSEN: OnceLock<EmbedderChoice> = OnceLock::new();
    CHOSEN.get_or_init(|| {
        let cfg = config();
        let name = cfg.get("embedder");
        let source = cfg
            .entries()
            .into_iter()
            .find(|e| e.name == "embedder")
            .map_or_else(String::new, |e| e.source);
        let remote = (name == "auto")
            .then(|| engram::llm::embeddings::detect_remote(|v| std::env::var(v).ok()))
            .flatten();
        let choice = if let Some(remote) = remote {
            EmbedderChoice {
                name: remote.canonical(),
                reason: "configured",
                detail: format!("embedder = \"auto\" ({source}) found its key or host in the environment"),
            }
        } else if !name.is_empty() && name != "auto" {
            EmbedderChoice {
                name: name.to_string(),
                reason: "configured",
                detail: format!("embedder = {name:?} ({source})"),
            }
        } else {
            let d = engram::embed::default_choice(cfg.get_opt("model_dir").map(Path::new));
            let mut detail = d.detail;
            if name == "auto" {
                detail = format!(
                    "embedder = \"auto\" and none of VOYAGE_API_KEY, OPENAI_API_KEY, OLLAMA_HOST is set; {detail}"
                );
            }
            EmbedderChoice {
                name: d.name,
                reason: if d.model_present {
                    "default-model"
                } else {
                    "built-in-fallback"
                },
                detail,
            }
        };
        tracing::info!(
            "embedder {} ({}: {})",
            choice.name,
            choice.reason,
            choice.detail
        );
        choice
    })
}

/// The embedder of [`embedder_choice`]. A local model is loaded only when a text must
/// be embedded.
pub(crate) fn embedder() -> Result<Arc<dyn Embedder>> {
    let cfg = config();
    let env = |var: &str| std::env::var(var).ok();
    let name = &embedder_choice().name;
    if let Some(remote) = engram::embed::parse_remote(name) {
        let mut base_url = cfg.get_opt("embed_base_url").map(str::to_string);
        if remote.api == engram::embed::RemoteApi::Ollama && base_url.is_none() {
            // Ollama's own variable, often given without a scheme.
            base_url = env("OLLAMA_HOST")
                .filter(|h| !h.trim().is_empty())
                .map(|h| {
                    if h.contains("://") {
                        h
                    } else {
                        format!("http://{h}")
                    }
                });
        }
        let number = |setting: &str| -> Result<u64> {
            cfg.get(setting)
                .parse()
                .with_context(|| format!("setting {setting}"))
        };
        let options = RemoteOptions {
            base_url,
            api_key: engram::llm::embeddings::api_key_from_env(remote.api, env),
            batch: number("embed_batch")? as usize,
            timeout: std::time::Duration::from_secs(number("embed_timeout_secs")?),
            ..RemoteOptions::default()
        };
        let embedder =
            RemoteEmbedder::new(&remote, options).with_context(|| format!("embedder {name}"))?;
        return Ok(Arc::new(embedder));
    }
    // `model_dir` from the configuration or `ENGRAM_MODEL_DIR` (its variable), else
    // the default models directory.
    match cfg.get_opt("model_dir").filter(|d| !d.is_empty()) {
        Some(dir) => engram::embed::embedder_for(name, Some(std::path::Path::new(dir))),
        None => engram::embed::embedder_by_name(name),
    }
    .map_err(anyhow::Error::msg)
}

/// The chat model of the configuration for the store in `dir`, behind a gate for it;
/// `None` when no model is configured (`llm_model`), and then nothing is ever sent.
pub(crate) fn assistant(dir: &std::path::Path, dry_run: bool) -> Result<Option<Assistant>> {
    let cfg = config();
    let Some(settings) = LlmSettings::from_values(
        |name| cfg.get(name).to_string(),
        |var| std::env::var(var).ok(),
    )?
    else {
        return Ok(None);
    };
    let provider = HttpProvider::new(settings)?;
    let vision = provider.for_vision();
    let repo = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "store".into());
    let gate = Gate::new(
        &repo,
        None,
        Vec::new(),
        Caps {
            chunk_bytes: cfg.bytes("chunk_cap_bytes") as usize,
            total_bytes: cfg.bytes("total_cap_bytes") as usize,
        },
    );
    let mut a = Assistant::new(
        Arc::new(provider),
        Arc::new(vision),
        Features::from_names(&cfg.list("llm_features")),
        gate,
    )
    .dry_run(dry_run);
    a.max_request_bytes = cfg.bytes("llm_max_request_bytes") as usize;
    a.rerank = RerankOptions {
        threshold: cfg.get("llm_rerank_threshold").parse().unwrap_or(0.7),
        max_memories: cfg.bytes("llm_rerank_max").max(1) as usize,
        batch_size: cfg.bytes("llm_rerank_batch").clamp(1, 100) as usize,
        ..RerankOptions::default()
    };
    Ok(Some(a))
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
    let providers = config().mcp_providers();
    out.value(
        &serde_json::json!({"file": file, "settings": entries, "mcp_providers": providers}),
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
            for p in providers {
                lines.push(format!(
                    "[[mcp_providers]] {:?}: tool {} ({} = query), deadline {} ms  # `engram providers` checks it",
                    p.name, p.tool, p.query_arg, p.timeout_ms
                ));
            }
            lines.join("\n")
        },
    )?;
    Ok(ExitCode::SUCCESS)
}
