//! `engram model`: the local embedding models this build knows (feature `neural`):
//! list them with where their files are, and fetch one (feature `model-fetch`).
//!
//! Owns choosing the models directory the way the embedder looks for it: `--dir`,
//! else the `model_dir` setting, else `ENGRAM_MODEL_DIR`, else the data directory's
//! `models/`. It never loads a model and never writes outside that directory.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use serde_json::json;

use engram::embed::neural::models::{self, KNOWN_MODELS};

use super::args::ModelCommand;
use super::config;
use super::output::Output;

/// The directory of models by name: `--dir`, `model_dir`, `ENGRAM_MODEL_DIR`, or the
/// default data directory's `models/`.
fn models_root(dir: Option<&PathBuf>) -> Option<PathBuf> {
    dir.cloned()
        .or_else(|| {
            config()
                .get_opt("model_dir")
                .filter(|d| !d.is_empty())
                .map(PathBuf::from)
        })
        .or_else(|| {
            std::env::var_os("ENGRAM_MODEL_DIR")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .or_else(models::default_models_dir)
}

pub fn run(out: &Output, command: &ModelCommand) -> Result<ExitCode> {
    match command {
        ModelCommand::List { dir } => list(out, dir.as_ref()),
        #[cfg(feature = "model-fetch")]
        ModelCommand::Fetch {
            name,
            dir,
            base_url,
        } => fetch(out, name, dir.as_ref(), base_url),
    }
}

fn list(out: &Output, dir: Option<&PathBuf>) -> Result<ExitCode> {
    let root = models_root(dir);
    let rows: Vec<serde_json::Value> = KNOWN_MODELS
        .iter()
        .map(|m| {
            let found = models::resolve_dir(m, root.as_deref()).ok();
            json!({
                "name": m.name,
                "aliases": m.aliases,
                "repo": m.repo,
                "dimensions": m.dimensions,
                "fetchable": !m.files.is_empty() && m.files.iter().all(|f| f.sha256.is_some()),
                "dir": found,
            })
        })
        .collect();
    out.value(&json!({ "models_dir": root, "models": rows }), || {
        let mut s = format!(
            "models directory: {}\n",
            root.as_ref()
                .map_or("(none: set model_dir or HOME)".into(), |r| r
                    .display()
                    .to_string())
        );
        for (m, row) in KNOWN_MODELS.iter().zip(&rows) {
            let state = match row["dir"].as_str() {
                Some(d) => format!("present in {d}"),
                None if row["fetchable"] == true => {
                    format!("missing: engram model fetch {}", m.name)
                }
                None => "missing: put its files in the models directory by hand".to_string(),
            };
            s.push_str(&format!(
                "{:<22} {:>4} dims  {}  ({state})\n",
                m.name, m.dimensions, m.repo
            ));
        }
        s.trim_end().to_string()
    })?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(feature = "model-fetch")]
fn fetch(out: &Output, name: &str, dir: Option<&PathBuf>, base_url: &str) -> Result<ExitCode> {
    use anyhow::Context;
    use engram::embed::neural::fetch::{fetch_model, Fetched};
    let root = models_root(dir)
        .context("no models directory: pass --dir, set model_dir or ENGRAM_MODEL_DIR, or HOME")?;
    let quiet = out.is_json();
    let (model_dir, done) = fetch_model(name, &root, base_url, |f| {
        if !quiet {
            match f {
                Fetched::Downloaded { path, bytes } => {
                    eprintln!("fetched {path} ({bytes} bytes, checked)")
                }
                Fetched::Present { path } => eprintln!("{path}: already present"),
            }
        }
    })
    .with_context(|| format!("fetching model {name}"))?;
    let downloaded: u64 = done
        .iter()
        .map(|f| match f {
            Fetched::Downloaded { bytes, .. } => *bytes,
            Fetched::Present { .. } => 0,
        })
        .sum();
    let files = done.len();
    out.value(
        &json!({ "model": name, "dir": model_dir, "files": files, "bytes_downloaded": downloaded }),
        || {
            format!(
                "{name}: {files} files in {} ({downloaded} bytes downloaded); use it with embedder = \"{name}\"",
                model_dir.display()
            )
        },
    )?;
    Ok(ExitCode::SUCCESS)
}
