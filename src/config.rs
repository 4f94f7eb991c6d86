//! Configuration: every setting, where its value came from, and its checked value.
//!
//! Precedence, lowest first: built-in default, the config file (TOML; `--config`,
//! else `$ENGRAM_CONFIG`, else `$XDG_CONFIG_HOME/engram/config.toml`, else
//! `~/.config/engram/config.toml`), then the setting's `ENGRAM_*` environment
//! variable. Command-line flags override all three where a command has one. Every
//! value is validated when loaded, so a typo fails at start with the setting's name,
//! not later with a confusing error. This module reads files and the environment
//! only; it never opens a store.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// One setting: its name (as in the file), environment variable, default and meaning.
pub struct Setting {
    pub name: &'static str,
    pub env: &'static str,
    pub default: &'static str,
    pub help: &'static str,
    check: fn(&str) -> Result<(), String>,
}

fn any(_: &str) -> Result<(), String> {
    Ok(())
}

fn boolean(v: &str) -> Result<(), String> {
    parse_bool(v).map(|_| ())
}

fn bytes(v: &str) -> Result<(), String> {
    v.parse::<u64>()
        .map(|_| ())
        .map_err(|_| "expected a number of bytes".to_string())
}

fn one_of(options: &'static [&'static str]) -> impl Fn(&str) -> Result<(), String> {
    move |v| {
        if options.contains(&v) {
            Ok(())
        } else {
            Err(format!("expected one of {}", options.join(", ")))
        }
    }
}

fn durability(v: &str) -> Result<(), String> {
    one_of(&["always", "batch", "never"])(v)
}

fn secret_action(v: &str) -> Result<(), String> {
    one_of(&["redact", "exclude"])(v)
}

fn tools(v: &str) -> Result<(), String> {
    one_of(&["core", "code", "memory", "coding", "all"])(v)
}

fn embedder(v: &str) -> Result<(), String> {
    crate::embed::check_embedder_name(v)
}

fn llm_api(v: &str) -> Result<(), String> {
    one_of(&["openai", "anthropic"])(v)
}

fn llm_features(v: &str) -> Result<(), String> {
    const KNOWN: &[&str] = &["summary", "rerank", "extract", "compress", "vision", "all"];
    for f in v.split(',').map(str::trim).filter(|f| !f.is_empty()) {
        one_of(KNOWN)(f)?;
    }
    Ok(())
}

fn price(v: &str) -> Result<(), String> {
    match v.parse::<f64>() {
        Ok(p) if p.is_finite() && p >= 0.0 => Ok(()),
        _ => Err("expected a price in US dollars per million tokens, e.g. 0.15".into()),
    }
}

fn unit(v: &str) -> Result<(), String> {
    match v.parse::<f64>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(()),
        _ => Err("expected a number from 0 to 1".into()),
    }
}

fn address(v: &str) -> Result<(), String> {
    v.parse::<std::net::SocketAddr>()
        .map(|_| ())
        .map_err(|_| "expected HOST:PORT, e.g. 127.0.0.1:7878".to_string())
}

/// Every setting engram reads.
pub const SETTINGS: &[Setting] = &[
    Setting {
        name: "store",
        env: "ENGRAM_STORE",
        default: "",
        help: "store directory (empty: one per repository under the data directory)",
        check: any,
    },
    Setting {
        name: "home",
        env: "ENGRAM_HOME",
        default: "",
        help: "data directory for per-repository stores (empty: $XDG_DATA_HOME/engram)",
        check: any,
    },
    Setting {
        name: "durability",
        env: "ENGRAM_DURABILITY",
        default: "always",
        help: "when writes are made durable: always, batch, never",
        check: durability,
    },
    Setting {
        name: "embedder",
        env: "ENGRAM_EMBEDDER",
        default: "hash-v2-256",
        help: "embedder for code and memories (built-in: hash-v2-DIMS; with the neural feature: minilm, bge-small)",
        check: embedder,
    },
    Setting {
        name: "model_dir",
        env: "ENGRAM_MODEL_DIR",
        default: "",
        help: "directory of a neural embedder's model files, or of models by name (empty: the data directory's models/)",
        check: any,
    },
    Setting {
        name: "secret_action",
        env: "ENGRAM_SECRET_ACTION",
        default: "redact",
        help: "what indexing does with a found secret: redact, exclude (the chunk)",
        check: secret_action,
    },
    Setting {
        name: "max_file_bytes",
        env: "ENGRAM_MAX_FILE_BYTES",
        default: "1048576",
        help: "files larger than this are not indexed",
        check: bytes,
    },
    Setting {
        name: "cross_repo",
        env: "ENGRAM_CROSS_REPO",
        default: "false",
        help: "allow queries across repositories",
        check: boolean,
    },
    Setting {
        name: "allowed_repos",
        env: "ENGRAM_ALLOWED_REPOS",
        default: "",
        help: "repositories a caller may reach (comma-separated; empty: the current one)",
        check: any,
    },
    Setting {
        name: "chunk_cap_bytes",
        env: "ENGRAM_CHUNK_CAP_BYTES",
        default: "8192",
        help: "most bytes of one block put into a prompt",
        check: bytes,
    },
    Setting {
        name: "total_cap_bytes",
        env: "ENGRAM_TOTAL_CAP_BYTES",
        default: "32768",
        help: "most bytes of context put into a prompt",
        check: bytes,
    },
    Setting {
        name: "server_addr",
        env: "ENGRAM_SERVER_ADDR",
        default: "127.0.0.1:7878",
        help: "address of `engram serve --http`",
        check: address,
    },
    Setting {
        name: "tokens_file",
        env: "ENGRAM_TOKENS_FILE",
        default: "",
        help: "file of hashed bearer tokens for the HTTP server",
        check: any,
    },
    Setting {
        name: "webhook_secret",
        env: "ENGRAM_WEBHOOK_SECRET",
        default: "",
        help: "HMAC secret of POST /api/webhook/push (empty: webhook off)",
        check: any,
    },
    Setting {
        name: "tools",
        env: "ENGRAM_TOOLS",
        default: "all",
        help: "MCP tool profile: core, code, memory, coding, all",
        check: tools,
    },
    Setting {
        name: "llm_api",
        env: "ENGRAM_LLM_API",
        default: "openai",
        help: "wire format of the chat model: openai (also Ollama, vLLM, LM Studio, llama.cpp), anthropic",
        check: llm_api,
    },
    Setting {
        name: "llm_base_url",
        env: "ENGRAM_LLM_BASE_URL",
        default: "",
        help: "chat model endpoint, e.g. http://127.0.0.1:11434/v1 (empty: the provider's public one)",
        check: any,
    },
    Setting {
        name: "llm_model",
        env: "ENGRAM_LLM_MODEL",
        default: "",
        help: "chat model name (empty: no model; nothing is ever sent). The API key is read from ENGRAM_LLM_API_KEY only",
        check: any,
    },
    Setting {
        name: "llm_vision_model",
        env: "ENGRAM_LLM_VISION_MODEL",
        default: "",
        help: "model for error screenshots (empty: llm_model)",
        check: any,
    },
    Setting {
        name: "llm_features",
        env: "ENGRAM_LLM_FEATURES",
        default: "",
        help: "features that call the model unasked (comma-separated: summary, rerank, extract, compress, vision; or all)",
        check: llm_features,
    },
    Setting {
        name: "llm_timeout_secs",
        env: "ENGRAM_LLM_TIMEOUT_SECS",
        default: "120",
        help: "longest one call to the model may take",
        check: bytes,
    },
    Setting {
        name: "llm_max_concurrency",
        env: "ENGRAM_LLM_MAX_CONCURRENCY",
        default: "2",
        help: "most calls to the model in flight at once",
        check: bytes,
    },
    Setting {
        name: "llm_max_retries",
        env: "ENGRAM_LLM_MAX_RETRIES",
        default: "3",
        help: "retries after a 429, a 5xx or a timeout (with backoff; Retry-After honoured)",
        check: bytes,
    },
    Setting {
        name: "llm_stream",
        env: "ENGRAM_LLM_STREAM",
        default: "false",
        help: "ask the model for streamed replies",
        check: boolean,
    },
    Setting {
        name: "llm_price_input",
        env: "ENGRAM_LLM_PRICE_INPUT",
        default: "0",
        help: "US dollars per million input tokens, for the cost count",
        check: price,
    },
    Setting {
        name: "llm_price_output",
        env: "ENGRAM_LLM_PRICE_OUTPUT",
        default: "0",
        help: "US dollars per million output tokens, for the cost count",
        check: price,
    },
    Setting {
        name: "llm_max_request_bytes",
        env: "ENGRAM_LLM_MAX_REQUEST_BYTES",
        default: "32768",
        help: "most bytes of stored text put into one request to the model",
        check: bytes,
    },
    Setting {
        name: "llm_rerank_threshold",
        env: "ENGRAM_LLM_RERANK_THRESHOLD",
        default: "0.7",
        help: "least relevance score (0 to 1) a memory needs to be kept by the model's rerank",
        check: unit,
    },
    Setting {
        name: "llm_rerank_max",
        env: "ENGRAM_LLM_RERANK_MAX",
        default: "10",
        help: "most memories the model's rerank keeps",
        check: bytes,
    },
    Setting {
        name: "llm_rerank_batch",
        env: "ENGRAM_LLM_RERANK_BATCH",
        default: "10",
        help: "memories scored per call to the model",
        check: bytes,
    },
];

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Default,
    File(PathBuf),
    Env(&'static str),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File(p) => write!(f, "file {}", p.display()),
            Source::Env(v) => write!(f, "env {v}"),
        }
    }
}

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not valid TOML: {reason}")]
    Toml { path: String, reason: String },
    #[error("{path}: unknown setting {name:?}; known: {known}")]
    Unknown {
        path: String,
        name: String,
        known: String,
    },
    #[error("setting {name} = {value:?} (from {source_}): {reason}")]
    Invalid {
        name: String,
        value: String,
        source_: String,
        reason: String,
    },
}

/// The effective configuration.
#[derive(Debug, Clone)]
pub struct Config {
    values: BTreeMap<&'static str, (String, Source)>,
    file: Option<PathBuf>,
}

impl Config {
    /// Load from `file` (or the default location) and the process environment.
    pub fn load(file: Option<&Path>) -> Result<Config, ConfigError> {
        Config::load_with(file, |k| std::env::var(k).ok())
    }

    /// Load with an explicit environment (for tests and embedding).
    pub fn load_with(
        file: Option<&Path>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let mut values: BTreeMap<&'static str, (String, Source)> = SETTINGS
            .iter()
            .map(|s| (s.name, (s.default.to_string(), Source::Default)))
            .collect();
        let path = match file {
            Some(p) => Some(p.to_path_buf()),
            None => env("ENGRAM_CONFIG")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(|| default_file(&env)),
        };
        let explicit = file.is_some() || env("ENGRAM_CONFIG").is_some_and(|v| !v.is_empty());
        let mut used_file = None;
        if let Some(path) = path {
            match std::fs::read_to_string(&path) {
                Ok(text) => {
                    read_file(&path, &text, &mut values)?;
                    used_file = Some(path);
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => {}
                Err(source) => {
                    return Err(ConfigError::Io {
                        path: path.display().to_string(),
                        source,
                    })
                }
            }
        }
        for s in SETTINGS {
            if let Some(v) = env(s.env) {
                values.insert(s.name, (v, Source::Env(s.env)));
            }
        }
        for s in SETTINGS {
            let (value, source) = &values[s.name];
            if value.is_empty() && s.default.is_empty() {
                continue;
            }
            (s.check)(value).map_err(|reason| ConfigError::Invalid {
                name: s.name.into(),
                value: value.clone(),
                source_: source.to_string(),
                reason,
            })?;
        }
        Ok(Config {
            values,
            file: used_file,
        })
    }

    /// The built-in defaults alone (no file, no environment).
    pub fn defaults() -> Config {
        Config {
            values: SETTINGS
                .iter()
                .map(|s| (s.name, (s.default.to_string(), Source::Default)))
                .collect(),
            file: None,
        }
    }

    /// The config file that was read, if any.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// A setting's value (`""` when unset and without a default).
    pub fn get(&self, name: &str) -> &str {
        self.values.get(name).map(|(v, _)| v.as_str()).unwrap_or("")
    }

    /// A setting's value, `None` when empty.
    pub fn get_opt(&self, name: &str) -> Option<&str> {
        Some(self.get(name)).filter(|v| !v.is_empty())
    }

    /// A numeric setting (validated at load).
    pub fn bytes(&self, name: &str) -> u64 {
        self.get(name).parse().unwrap_or(0)
    }

    /// A boolean setting (validated at load).
    pub fn flag(&self, name: &str) -> bool {
        parse_bool(self.get(name)).unwrap_or(false)
    }

    /// A comma-separated list setting.
    pub fn list(&self, name: &str) -> Vec<String> {
        self.get(name)
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    }

    /// Every setting with its value, source and meaning, for `engram config show`.
    pub fn entries(&self) -> Vec<ConfigEntry> {
        SETTINGS
            .iter()
            .map(|s| {
                let (value, source) = &self.values[s.name];
                ConfigEntry {
                    name: s.name,
                    value: value.clone(),
                    source: source.to_string(),
                    env: s.env,
                    help: s.help,
                }
            })
            .collect()
    }
}

/// One line of `engram config show`.
#[derive(Debug, Clone, Serialize)]
pub struct ConfigEntry {
    pub name: &'static str,
    pub value: String,
    pub source: String,
    pub env: &'static str,
    pub help: &'static str,
}

fn default_file(env: &impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    env("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(|x| PathBuf::from(x).join("engram/config.toml"))
        .or_else(|| {
            env("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".config/engram/config.toml"))
        })
}

fn read_file(
    path: &Path,
    text: &str,
    values: &mut BTreeMap<&'static str, (String, Source)>,
) -> Result<(), ConfigError> {
    let table: toml::Table = toml::from_str(text).map_err(|e| ConfigError::Toml {
        path: path.display().to_string(),
        reason: e.message().to_string(),
    })?;
    for (name, value) in table {
        if name.contains("api_key") {
            return Err(ConfigError::Invalid {
                name,
                value: "(not shown)".into(),
                source_: format!("file {}", path.display()),
                reason: "an API key is never read from the config file; set ENGRAM_LLM_API_KEY in the environment".into(),
            });
        }
        let Some(s) = SETTINGS.iter().find(|s| s.name == name) else {
            return Err(ConfigError::Unknown {
                path: path.display().to_string(),
                name,
                known: SETTINGS
                    .iter()
                    .map(|s| s.name)
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        };
        let text = match value {
            toml::Value::String(s) => s,
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            toml::Value::Array(items) => items
                .iter()
                .map(|i| {
                    i.as_str()
                        .map(String::from)
                        .unwrap_or_else(|| i.to_string())
                })
                .collect::<Vec<_>>()
                .join(","),
            other => other.to_string(),
        };
        values.insert(s.name, (text, Source::File(path.to_path_buf())));
    }
    Ok(())
}

fn parse_bool(v: &str) -> Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" | "" => Ok(false),
        _ => Err("expected true or false".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_then_environment_override_defaults_and_bad_values_name_the_setting() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        std::fs::write(
            &file,
            "secret_action = \"exclude\"\nchunk_cap_bytes = 4096\nallowed_repos = [\"a\", \"b\"]\n",
        )
        .unwrap();
        let env = |k: &str| (k == "ENGRAM_CHUNK_CAP_BYTES").then(|| "2048".to_string());
        let c = Config::load_with(Some(&file), env).unwrap();
        assert_eq!(c.get("secret_action"), "exclude");
        assert_eq!(c.bytes("chunk_cap_bytes"), 2048);
        assert_eq!(c.bytes("total_cap_bytes"), 32768);
        assert_eq!(c.list("allowed_repos"), ["a", "b"]);
        let e = c.entries();
        let cap = e.iter().find(|e| e.name == "chunk_cap_bytes").unwrap();
        assert_eq!(cap.source, "env ENGRAM_CHUNK_CAP_BYTES");
        let act = e.iter().find(|e| e.name == "secret_action").unwrap();
        assert!(act.source.starts_with("file "), "{}", act.source);

        std::fs::write(&file, "secret_action = \"shred\"\n").unwrap();
        let err = Config::load_with(Some(&file), |_| None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("secret_action") && err.contains("redact, exclude"),
            "{err}"
        );
        std::fs::write(&file, "llm_api_key = \"sk-abc\"\n").unwrap();
        let err = Config::load_with(Some(&file), |_| None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("ENGRAM_LLM_API_KEY") && !err.contains("sk-abc"),
            "{err}"
        );
        std::fs::write(&file, "colour = 1\n").unwrap();
        let err = Config::load_with(Some(&file), |_| None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown setting \"colour\""), "{err}");
        let err = Config::load_with(None, |k| (k == "ENGRAM_TOOLS").then(|| "some".into()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("env ENGRAM_TOOLS"), "{err}");
        // A missing default file is fine; a missing named file is not.
        assert!(Config::load_with(None, |k| (k == "HOME").then(|| "/nonexistent".into())).is_ok());
        assert!(Config::load_with(Some(&dir.path().join("nope.toml")), |_| None).is_err());
    }
}
