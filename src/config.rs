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

mod database_url;
mod providers;
mod table;
pub use database_url::{check_database_url, DatabaseUrlError};
pub use providers::{
    McpProviderConfig, ProviderError, ProviderTransport, ProvidersError, DEFAULT_TIMEOUT_MS,
};
pub use table::{Setting, SettingError, SETTINGS};

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
    #[error("{path}: {reason}")]
    Provider {
        path: String,
        reason: ProvidersError,
    },
    /// A value its setting's check refused (`value` as it may be shown).
    #[error("setting {name} = {value:?} (from {source_}): {reason}")]
    Invalid {
        name: String,
        value: String,
        source_: String,
        reason: SettingError,
    },
    /// A key naming an API key in the file: its value is never read, nor shown.
    #[error("setting {name} = \"(not shown)\" (from file {path}): an API key is never read from the config file; set ENGRAM_LLM_API_KEY in the environment")]
    ApiKeyInFile { name: String, path: String },
}

/// The effective configuration.
#[derive(Debug, Clone)]
pub struct Config {
    values: BTreeMap<&'static str, (String, Source)>,
    file: Option<PathBuf>,
    mcp_providers: Vec<McpProviderConfig>,
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
        let mut mcp_providers = Vec::new();
        if let Some(path) = path {
            match std::fs::read_to_string(&path) {
                Ok(text) => {
                    mcp_providers = read_file(&path, &text, &mut values)?;
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
                value: shown(s.name, value),
                source_: source.to_string(),
                reason,
            })?;
        }
        Ok(Config {
            values,
            file: used_file,
            mcp_providers,
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
            mcp_providers: Vec::new(),
        }
    }

    /// The external MCP servers of the config file's `[[mcp_providers]]` tables, in
    /// the file's order (checked at load).
    pub fn mcp_providers(&self) -> &[McpProviderConfig] {
        &self.mcp_providers
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
                    value: shown(s.name, value),
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
) -> Result<Vec<McpProviderConfig>, ConfigError> {
    let table: toml::Table = toml::from_str(text).map_err(|e| ConfigError::Toml {
        path: path.display().to_string(),
        reason: e.message().to_string(),
    })?;
    let mut mcp_providers = Vec::new();
    for (name, value) in table {
        if name == "mcp_providers" {
            mcp_providers = providers::parse(&value).map_err(|reason| ConfigError::Provider {
                path: path.display().to_string(),
                reason,
            })?;
            continue;
        }
        if name.contains("api_key") {
            return Err(ConfigError::ApiKeyInFile {
                name,
                path: path.display().to_string(),
            });
        }
        let Some(s) = SETTINGS.iter().find(|s| s.name == name) else {
            return Err(ConfigError::Unknown {
                path: path.display().to_string(),
                name,
                known: SETTINGS
                    .iter()
                    .map(|s| s.name)
                    .chain(["[[mcp_providers]]"])
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
    Ok(mcp_providers)
}

/// Settings whose value holds a password in URL form (`scheme://user:PASSWORD@host`).
const URL_WITH_PASSWORD: &[&str] = &["database_url"];

/// A value as it may be shown (`engram config show`, errors): a URL's password
/// replaced by `***`.
fn shown(name: &str, value: &str) -> String {
    if URL_WITH_PASSWORD.contains(&name) {
        hide_password(value)
    } else {
        value.to_string()
    }
}

/// `scheme://user:secret@host/…` as `scheme://user:***@host/…`; anything else as it
/// is, except a `password=` pair of a key/value connection string.
pub fn hide_password(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://") {
        let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(authority_end);
        if let Some((userinfo, host)) = authority.rsplit_once('@') {
            if let Some((user, _)) = userinfo.split_once(':') {
                return format!("{scheme}://{user}:***@{host}{tail}");
            }
        }
        return url.to_string();
    }
    url.split_whitespace()
        .map(|kv| match kv.split_once('=') {
            Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
            _ => kv.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn parse_bool(v: &str) -> Result<bool, SettingError> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" | "" => Ok(false),
        _ => Err(SettingError::NotBool),
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
        let err = Config::load_with(Some(&file), |_| None).unwrap_err();
        assert!(
            matches!(
                &err,
                ConfigError::Invalid { name, reason: SettingError::NotOneOf { options }, .. }
                    if name == "secret_action" && options.contains(&"exclude")
            ),
            "{err:?}"
        );
        let err = err.to_string();
        assert!(
            err.contains("secret_action") && err.contains("redact, exclude"),
            "{err}"
        );
        std::fs::write(&file, "llm_api_key = \"sk-abc\"\n").unwrap();
        let err = Config::load_with(Some(&file), |_| None).unwrap_err();
        assert!(matches!(err, ConfigError::ApiKeyInFile { .. }), "{err:?}");
        let err = err.to_string();
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

    #[test]
    fn database_url_is_checked_and_its_password_never_shown() {
        let url = "postgres://engram:s3cr3t-pw@db.example:5432/engram";
        let c = Config::load_with(None, |k| {
            (k == "ENGRAM_DATABASE_URL").then(|| url.to_string())
        })
        .unwrap();
        assert_eq!(c.get("database_url"), url);
        let shown = c
            .entries()
            .into_iter()
            .find(|e| e.name == "database_url")
            .unwrap();
        assert_eq!(shown.value, "postgres://engram:***@db.example:5432/engram");
        assert_eq!(shown.source, "env ENGRAM_DATABASE_URL");
        for bad in [
            "mysql://engram:s3cr3t-pw@h/db",
            "postgres://engram:s3cr3t-pw@:5432/db",
            "postgres://engram:s3cr3t-pw@h:99999/db",
            "postgres://engram:s3cr3t-pw@h:5432",
        ] {
            let err = Config::load_with(None, |k| {
                (k == "ENGRAM_DATABASE_URL").then(|| bad.to_string())
            })
            .unwrap_err()
            .to_string();
            assert!(
                err.contains("database_url") && !err.contains("s3cr3t"),
                "{err}"
            );
        }
        assert!(check_database_url("postgresql://localhost/engram").is_ok());
        assert!(check_database_url(
            "postgres://u:p@db:5432/engram?sslmode=verify-full&sslrootcert=/etc/ca.pem"
        )
        .is_ok());
        let e = check_database_url("postgres://u:p@db/engram?sslmode=allow").unwrap_err();
        assert!(
            matches!(&e, DatabaseUrlError::SslMode { mode } if mode == "allow"),
            "{e:?}"
        );
        assert!(e.to_string().contains("verify-full"), "{e}");
        assert_eq!(
            hide_password("host=h password=pw dbname=d"),
            "host=h password=*** dbname=d"
        );
    }

    #[test]
    fn database_ef_search_is_a_whole_number_from_1_to_1000() {
        let load = |v: &'static str| {
            Config::load_with(None, move |k| {
                (k == "ENGRAM_DATABASE_EF_SEARCH").then(|| v.to_string())
            })
        };
        assert_eq!(Config::defaults().get("database_ef_search"), "150");
        assert_eq!(load("1").unwrap().get("database_ef_search"), "1");
        assert_eq!(load("1000").unwrap().get("database_ef_search"), "1000");
        for bad in ["0", "1001", "-5", "many", ""] {
            let err = load(bad).unwrap_err().to_string();
            assert!(
                err.contains("database_ef_search") && err.contains("1 to 1000"),
                "{bad:?}: {err}"
            );
        }
    }

    #[test]
    fn mcp_provider_tables_sit_beside_the_settings_and_fail_with_the_file_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        std::fs::write(
            &file,
            "tools = \"code\"\n[[mcp_providers]]\nname = \"docs\"\ncommand = [\"docs-server\"]\ntool = \"search\"\n",
        )
        .unwrap();
        let c = Config::load_with(Some(&file), |_| None).unwrap();
        assert_eq!(c.get("tools"), "code");
        assert_eq!(c.mcp_providers().len(), 1);
        assert_eq!(c.mcp_providers()[0].name, "docs");
        assert!(Config::defaults().mcp_providers().is_empty());

        std::fs::write(
            &file,
            "[[mcp_providers]]\nname = \"docs\"\ntool = \"search\"\n",
        )
        .unwrap();
        let err = Config::load_with(Some(&file), |_| None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("config.toml") && err.contains("\"docs\"") && err.contains("command"),
            "{err}"
        );
    }
}
