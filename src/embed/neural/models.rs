//! The sentence-transformers engram knows by name, and where their files are looked for.
//!
//! Owns the table of known models (canonical name, aliases, source repository, and
//! the files with their sizes and sha256 for `engram model fetch`) and the rules that
//! turn a name plus an optional configured directory into a model directory. It only
//! reads the environment and checks that files exist; it never loads a model and never
//! touches the network.

use std::path::{Path, PathBuf};

/// One file of a model: its path in the Hugging Face layout, size and sha256.
#[derive(Debug, Clone, Copy)]
pub struct ModelFile {
    pub path: &'static str,
    pub bytes: u64,
    /// Lowercase hex; `None` when not pinned (then fetch refuses the file, and loading
    /// does not check it).
    pub sha256: Option<&'static str>,
}

/// A model engram can load by name.
#[derive(Debug, Clone, Copy)]
pub struct KnownModel {
    /// Canonical name: the embedder's name, and so the name of its vector space.
    pub name: &'static str,
    /// Other names accepted in `embedder = "…"`.
    pub aliases: &'static [&'static str],
    /// The Hugging Face repository the files come from.
    pub repo: &'static str,
    /// The revision (branch or commit) of that repository to fetch.
    pub revision: &'static str,
    pub dimensions: usize,
    pub files: &'static [ModelFile],
}

/// Files every model directory must have.
pub const REQUIRED_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// The models this build knows.
pub const KNOWN_MODELS: &[KnownModel] = &[
    KnownModel {
        name: "all-minilm-l6-v2",
        aliases: &[
            "minilm",
            "all-MiniLM-L6-v2",
            "sentence-transformers/all-MiniLM-L6-v2",
        ],
        repo: "sentence-transformers/all-MiniLM-L6-v2",
        // The checksums pin the content; a changed upstream file fails the fetch.
        revision: "main",
        dimensions: 384,
        files: &[
            ModelFile {
                path: "config.json",
                bytes: 612,
                sha256: Some("953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"),
            },
            ModelFile {
                path: "tokenizer.json",
                bytes: 466_247,
                sha256: Some("be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
            },
            ModelFile {
                path: "model.safetensors",
                bytes: 90_868_376,
                sha256: Some("53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"),
            },
            ModelFile {
                path: "modules.json",
                bytes: 349,
                sha256: Some("84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf"),
            },
            ModelFile {
                path: "sentence_bert_config.json",
                bytes: 53,
                sha256: Some("fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7"),
            },
            ModelFile {
                path: "1_Pooling/config.json",
                bytes: 190,
                sha256: Some("4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23"),
            },
        ],
    },
    KnownModel {
        name: "bge-small-en-v1.5",
        aliases: &["bge-small", "BAAI/bge-small-en-v1.5"],
        repo: "BAAI/bge-small-en-v1.5",
        revision: "main",
        dimensions: 384,
        // The sizes and checksums the model hub publishes for these files (revision
        // 5c38ec7c), as recorded by several independent projects that pin them.
        files: &[
            ModelFile {
                path: "config.json",
                bytes: 743,
                sha256: Some("094f8e891b932f2000c92cfc663bac4c62069f5d8af5b5278c4306aef3084750"),
            },
            ModelFile {
                path: "tokenizer.json",
                bytes: 711_396,
                sha256: Some("d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66"),
            },
            ModelFile {
                path: "model.safetensors",
                bytes: 133_466_304,
                sha256: Some("3c9f31665447c8911517620762200d2245a2518d6e7208acc78cd9db317e21ad"),
            },
            ModelFile {
                path: "modules.json",
                bytes: 349,
                sha256: Some("84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf"),
            },
            ModelFile {
                path: "sentence_bert_config.json",
                bytes: 52,
                sha256: Some("84e39fda68ccbff05bfa723ae9c0e70e23e2ec373b76e0f8c6e71af72a693cbf"),
            },
            ModelFile {
                path: "1_Pooling/config.json",
                bytes: 190,
                sha256: Some("d1caf60c96f5fba2157c0c26b76d80818fad6cf0b8eb5e73ec372ff9818eba5c"),
            },
        ],
    },
];

/// The known model called `name` (canonical name or alias, case-insensitive).
pub fn find(name: &str) -> Option<&'static KnownModel> {
    KNOWN_MODELS.iter().find(|m| {
        m.name.eq_ignore_ascii_case(name) || m.aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
    })
}

/// Every accepted name, for error messages.
pub fn names() -> String {
    KNOWN_MODELS
        .iter()
        .map(|m| {
            if m.aliases.is_empty() {
                m.name.to_string()
            } else {
                format!("{} (or {})", m.name, m.aliases[0])
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Where `engram model fetch` puts models, and where a model is looked for when no
/// directory is configured: `$ENGRAM_HOME/models`, else `$XDG_DATA_HOME/engram/models`,
/// else `~/.local/share/engram/models`.
pub fn default_models_dir() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("ENGRAM_HOME")
        .map(|h| h.join("models"))
        .or_else(|| var("XDG_DATA_HOME").map(|x| x.join("engram/models")))
        .or_else(|| var("HOME").map(|h| h.join(".local/share/engram/models")))
}

/// True when `dir` holds a model: [`REQUIRED_FILES`] are all there.
pub fn is_model_dir(dir: &Path) -> bool {
    REQUIRED_FILES.iter().all(|f| dir.join(f).is_file())
}

/// The directory to load `model` from. `configured` (from `model_dir` /
/// `ENGRAM_MODEL_DIR`) may be the model's own directory or a directory of models
/// named by canonical name; without it, [`default_models_dir`]`/NAME`. Returns every
/// place looked at when none holds the model.
pub fn resolve_dir(model: &KnownModel, configured: Option<&Path>) -> Result<PathBuf, Vec<PathBuf>> {
    let mut candidates = Vec::new();
    match configured {
        Some(dir) => {
            candidates.push(dir.to_path_buf());
            candidates.push(dir.join(model.name));
        }
        None => {
            if let Some(d) = default_models_dir() {
                candidates.push(d.join(model.name));
            }
        }
    }
    match candidates.iter().find(|d| is_model_dir(d)) {
        Some(d) => Ok(d.clone()),
        None => Err(candidates),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_aliases_find_the_same_model() {
        assert_eq!(find("minilm").map(|m| m.name), Some("all-minilm-l6-v2"));
        assert_eq!(
            find("ALL-MINILM-L6-V2").map(|m| m.name),
            Some("all-minilm-l6-v2")
        );
        assert_eq!(find("bge-small").map(|m| m.name), Some("bge-small-en-v1.5"));
        assert!(find("gpt-5").is_none());
        assert!(names().contains("all-minilm-l6-v2 (or minilm)"));
    }

    #[test]
    fn a_configured_directory_may_be_the_model_or_hold_it_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let m = find("minilm").unwrap();
        let looked = resolve_dir(m, Some(dir.path())).unwrap_err();
        assert_eq!(looked, [dir.path().to_path_buf(), dir.path().join(m.name)]);
        let inner = dir.path().join(m.name);
        std::fs::create_dir_all(&inner).unwrap();
        for f in REQUIRED_FILES {
            std::fs::write(inner.join(f), "x").unwrap();
        }
        assert_eq!(resolve_dir(m, Some(dir.path())).unwrap(), inner);
        assert_eq!(resolve_dir(m, Some(&inner)).unwrap(), inner);
    }
}
