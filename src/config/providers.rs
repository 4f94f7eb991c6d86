//! `[[mcp_providers]]`: the external MCP servers the config file lists, read and
//! checked when the file is loaded.
//!
//! Each table names one server engram may ask for context: how to reach it (a
//! command for stdio, or a URL for streamable HTTP with the environment variable
//! that holds its bearer token), which tool to call and the name of that tool's
//! query argument. Everything is validated here so a mistake fails at start with
//! the provider's name and what to change. This module reads the parsed TOML only;
//! it never starts a process, opens a connection or reads a token's value.

use serde::Serialize;

/// How engram reaches one external MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderTransport {
    /// A program started with these arguments (`argv`, the program first), spoken to
    /// over its stdin and stdout, with only the environment variables named in `env`
    /// passed on from engram's (beside a few basic ones, see the README).
    Command { argv: Vec<String>, env: Vec<String> },
    /// Streamable HTTP at `url` (plain `http://`); the bearer token, if any, is read from the
    /// environment variable `token_env` when connecting (never from the file).
    Url {
        url: String,
        token_env: Option<String>,
    },
}

/// One `[[mcp_providers]]` table, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpProviderConfig {
    /// The provider's name: in attributions (`[source: NAME: path:line]`), notes and
    /// `engram providers`.
    pub name: String,
    pub transport: ProviderTransport,
    /// The tool to call with the query.
    pub tool: String,
    /// The name of the tool's query argument (default `query`).
    pub query_arg: String,
    /// The longest engram waits for this provider in one request, in milliseconds
    /// (default 5000); a slower one is skipped with a note.
    pub timeout_ms: u64,
}

/// The keys a `[[mcp_providers]]` table may have.
const KEYS: &[&str] = &[
    "name",
    "command",
    "url",
    "token_env",
    "env",
    "tool",
    "query_arg",
    "timeout_ms",
];

/// The default deadline of one provider.
pub const DEFAULT_TIMEOUT_MS: u64 = 5000;
/// The longest deadline a provider may be given (ten minutes).
const MAX_TIMEOUT_MS: u64 = 600_000;

/// Why the `mcp_providers` key cannot be used; the text names the provider (by
/// name, else by position) and says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProvidersError {
    #[error("mcp_providers must be a list of tables: write each provider as [[mcp_providers]]")]
    NotAList,
    /// `label` is `[[mcp_providers]] "NAME"` or `[[mcp_providers]] number N`.
    #[error("{label}: {problem}")]
    Provider {
        label: String,
        problem: ProviderError,
    },
    #[error("{label}: the name is used twice; give each provider its own name")]
    DuplicateName { label: String },
}

/// What is wrong with one `[[mcp_providers]]` table. A value that may be a secret
/// (a token, an `env` entry) is never held, so never shown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    #[error("expected a table with name, command or url, and tool")]
    NotATable,
    #[error("{key:?}: a token is never read from the config file; put it in an environment variable and name that variable with token_env")]
    TokenInFile { key: String },
    #[error("unknown key {key:?}; known: {}", KEYS.join(", "))]
    UnknownKey { key: String },
    #[error("name is missing; give the provider a name")]
    NoName,
    #[error("name {name:?} may hold only letters, digits, '-', '_' and '.' (it appears in attributions)")]
    BadName { name: String },
    #[error("both command and url are set; use command for a program spoken to over stdio, or url for streamable HTTP")]
    CommandAndUrl,
    #[error("neither command nor url is set; give command = [\"program\", \"arg\", …] or url = \"http://host:port/mcp\"")]
    NoTransport,
    #[error("token_env is for a url provider; pass a command provider the variables it needs with env = [\"NAME\", …]")]
    TokenEnvOnCommand,
    #[error("env is for a command provider (the variables passed to the program it starts)")]
    EnvOnUrl,
    // The providers' HTTP client is built without TLS (it would bring a second TLS
    // stack into the build).
    #[error("url {url:?}: https is not supported yet; reach the server over http on a trusted network, or through a local TLS tunnel (stunnel, ssh -L) at an http:// address")]
    Https { url: String },
    #[error("url {url:?} must start with http://")]
    NotHttp { url: String },
    #[error("token_env {value:?} must be the name of an environment variable (letters, digits, '_'), not the token itself")]
    BadTokenEnv { value: String },
    #[error("tool is missing; name the tool engram should call")]
    NoTool,
    /// `value` is the TOML value as written.
    #[error(
        "timeout_ms = {value} must be a whole number of milliseconds from 1 to {MAX_TIMEOUT_MS}"
    )]
    BadTimeout { value: String },
    #[error("{key} is empty")]
    Empty { key: String },
    #[error("{key} = {value} must be a string (in double quotes)")]
    NotAString { key: String, value: String },
    #[error("env must be a list of environment variable names: env = [\"DOCS_API_KEY\"]")]
    EnvNotAList,
    /// Entry `number` (from 1) of `env`; not echoed: it may be a value (a key)
    /// written where a name belongs.
    #[error("env: entry {number} is not an environment variable's name (give names; the values are read from engram's environment)")]
    EnvEntry { number: usize },
    #[error("command must be a list of strings, the program first: command = [\"python3\", \"server.py\"]")]
    BadCommand,
}

/// Read the value of the `mcp_providers` key: an array of tables.
pub fn parse(value: &toml::Value) -> Result<Vec<McpProviderConfig>, ProvidersError> {
    let toml::Value::Array(items) = value else {
        return Err(ProvidersError::NotAList);
    };
    let mut out: Vec<McpProviderConfig> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let label = item
            .get("name")
            .and_then(toml::Value::as_str)
            .map(|n| format!("[[mcp_providers]] {n:?}"))
            .unwrap_or_else(|| format!("[[mcp_providers]] number {}", i + 1));
        let p = match one(item) {
            Ok(p) => p,
            Err(problem) => return Err(ProvidersError::Provider { label, problem }),
        };
        if out.iter().any(|o| o.name == p.name) {
            return Err(ProvidersError::DuplicateName { label });
        }
        out.push(p);
    }
    Ok(out)
}

fn one(item: &toml::Value) -> Result<McpProviderConfig, ProviderError> {
    let toml::Value::Table(t) = item else {
        return Err(ProviderError::NotATable);
    };
    for k in t.keys() {
        if k == "token" || k.contains("api_key") || k == "bearer" {
            return Err(ProviderError::TokenInFile { key: k.clone() });
        }
        if !KEYS.contains(&k.as_str()) {
            return Err(ProviderError::UnknownKey { key: k.clone() });
        }
    }
    let name = string(t, "name")?.ok_or(ProviderError::NoName)?;
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(ProviderError::BadName { name });
    }
    let transport = match (t.get("command"), string(t, "url")?) {
        (Some(_), Some(_)) => return Err(ProviderError::CommandAndUrl),
        (None, None) => return Err(ProviderError::NoTransport),
        (Some(c), None) => {
            if t.contains_key("token_env") {
                return Err(ProviderError::TokenEnvOnCommand);
            }
            ProviderTransport::Command {
                argv: command(c)?,
                env: env_names(t.get("env"))?,
            }
        }
        (None, Some(url)) => {
            if t.contains_key("env") {
                return Err(ProviderError::EnvOnUrl);
            }
            if url.starts_with("https://") {
                return Err(ProviderError::Https { url });
            }
            if !url.starts_with("http://") {
                return Err(ProviderError::NotHttp { url });
            }
            let token_env = string(t, "token_env")?;
            if let Some(v) = &token_env {
                if !is_var_name(v) {
                    return Err(ProviderError::BadTokenEnv { value: v.clone() });
                }
            }
            ProviderTransport::Url { url, token_env }
        }
    };
    let tool = string(t, "tool")?.ok_or(ProviderError::NoTool)?;
    let query_arg = string(t, "query_arg")?.unwrap_or_else(|| "query".into());
    let timeout_ms = match t.get("timeout_ms") {
        None => DEFAULT_TIMEOUT_MS,
        Some(toml::Value::Integer(n)) if (1..=MAX_TIMEOUT_MS as i64).contains(n) => *n as u64,
        Some(other) => {
            return Err(ProviderError::BadTimeout {
                value: other.to_string(),
            })
        }
    };
    Ok(McpProviderConfig {
        name,
        transport,
        tool,
        query_arg,
        timeout_ms,
    })
}

/// A non-empty string value of `key`, `None` when absent.
fn string(t: &toml::Table, key: &str) -> Result<Option<String>, ProviderError> {
    match t.get(key) {
        None => Ok(None),
        Some(toml::Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.clone())),
        Some(toml::Value::String(_)) => Err(ProviderError::Empty { key: key.into() }),
        Some(other) => Err(ProviderError::NotAString {
            key: key.into(),
            value: other.to_string(),
        }),
    }
}

/// Whether `v` can name an environment variable.
fn is_var_name(v: &str) -> bool {
    !v.is_empty()
        && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !v.starts_with(|c: char| c.is_ascii_digit())
}

/// The names of `env = ["NAME", …]` (none when absent).
fn env_names(v: Option<&toml::Value>) -> Result<Vec<String>, ProviderError> {
    let Some(v) = v else {
        return Ok(Vec::new());
    };
    let toml::Value::Array(items) = v else {
        return Err(ProviderError::EnvNotAList);
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item.as_str() {
            Some(n) if is_var_name(n) => Ok(n.to_string()),
            Some(_) => Err(ProviderError::EnvEntry { number: i + 1 }),
            None => Err(ProviderError::EnvNotAList),
        })
        .collect()
}

fn command(v: &toml::Value) -> Result<Vec<String>, ProviderError> {
    let toml::Value::Array(items) = v else {
        return Err(ProviderError::BadCommand);
    };
    let words: Vec<String> = items
        .iter()
        .map(|i| i.as_str().map(String::from))
        .collect::<Option<_>>()
        .ok_or(ProviderError::BadCommand)?;
    if words.first().is_none_or(|p| p.trim().is_empty()) {
        return Err(ProviderError::BadCommand);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<Vec<McpProviderConfig>, ProvidersError> {
        let t: toml::Table = toml::from_str(text).expect("test TOML");
        parse(t.get("mcp_providers").expect("an mcp_providers key"))
    }

    #[test]
    fn stdio_and_http_providers_are_read_with_their_defaults() {
        let ps = load(
            r#"
            [[mcp_providers]]
            name = "docs"
            command = ["python3", "docs_server.py", "--quiet"]
            env = ["DOCS_API_KEY"]
            tool = "search_docs"

            [[mcp_providers]]
            name = "team-engram"
            url = "http://127.0.0.1:7878/mcp"
            token_env = "TEAM_ENGRAM_TOKEN"
            tool = "code_search"
            query_arg = "q"
            timeout_ms = 1500
            "#,
        )
        .unwrap();
        assert_eq!(ps.len(), 2);
        assert_eq!(ps[0].name, "docs");
        assert_eq!(
            ps[0].transport,
            ProviderTransport::Command {
                argv: vec!["python3".into(), "docs_server.py".into(), "--quiet".into()],
                env: vec!["DOCS_API_KEY".into()]
            }
        );
        assert_eq!(ps[0].query_arg, "query");
        assert_eq!(ps[0].timeout_ms, DEFAULT_TIMEOUT_MS);
        assert_eq!(
            ps[1].transport,
            ProviderTransport::Url {
                url: "http://127.0.0.1:7878/mcp".into(),
                token_env: Some("TEAM_ENGRAM_TOKEN".into())
            }
        );
        assert_eq!((ps[1].query_arg.as_str(), ps[1].timeout_ms), ("q", 1500));
    }

    #[test]
    fn mistakes_name_the_provider_and_say_what_to_do() {
        let cases = [
            (
                "[[mcp_providers]]\nname = \"a\"\ntool = \"t\"\n",
                "neither command nor url",
            ),
            (
                "[[mcp_providers]]\nname = \"a\"\ncommand = [\"x\"]\nurl = \"http://h/mcp\"\ntool = \"t\"\n",
                "both command and url",
            ),
            (
                "[[mcp_providers]]\ncommand = [\"x\"]\ntool = \"t\"\n",
                "number 1: name is missing",
            ),
            (
                "[[mcp_providers]]\nname = \"a\"\ncommand = \"python3 s.py\"\ntool = \"t\"\n",
                "list of strings",
            ),
            (
                "[[mcp_providers]]\nname = \"a\"\ncommand = []\ntool = \"t\"\n",
                "list of strings",
            ),
            (
                "[[mcp_providers]]\nname = \"a\"\ncommand = [\"x\"]\n",
                "tool is missing",
            ),
            (
                "[[mcp_providers]]\nname = \"a\"\nurl = \"ftp://h\"\ntool = \"t\"\n",
                "must start with http://",
            ),
            (
                "[[mcp_providers]]\nname = \"a\"\nurl = \"https://h/mcp\"\ntool = \"t\"\n",
                "https is not supported yet",
            ),
            (
                "[[mcp_providers]]\nname = \"a\"\nurl = \"http://h/mcp\"\ntoken_env = \"abc-123 secret\"\ntool = \"t\"\n",
                "name of an environment variable",
            ),
            (
                "[[mcp_providers]]\nname = \"a\"\ncommand = [\"x\"]\ntoken_env = \"T\"\ntool = \"t\"\n",
                "token_env is for a url provider",
            ),
            (
                "[[mcp_providers]]\nname = \"a\"\nurl = \"http://h/mcp\"\ntoken = \"s3cret\"\ntool = \"t\"\n",
                "never read from the config file",
            ),
            (
                "[[mcp_providers]]\nname = \"a\"\ncommand = [\"x\"]\ntool = \"t\"\ncolour = 1\n",
                "unknown key \"colour\"",
            ),
            (
                "[[mcp_providers]]\nname = \"a\"\ncommand = [\"x\"]\ntool = \"t\"\ntimeout_ms = 0\n",
                "from 1 to",
            ),
            (
                "[[mcp_providers]]\nname = \"a b\"\ncommand = [\"x\"]\ntool = \"t\"\n",
                "only letters",
            ),
            (
                "[[mcp_providers]]\nname = \"a\"\ncommand = [\"x\"]\ntool = \"t\"\n[[mcp_providers]]\nname = \"a\"\ncommand = [\"y\"]\ntool = \"t\"\n",
                "used twice",
            ),
            ("mcp_providers = \"docs\"\n", "[[mcp_providers]]"),
            (
                "[[mcp_providers]]\nname = \"a\"\ncommand = [\"x\"]\nenv = [\"KEY=s3cret\"]\ntool = \"t\"\n",
                "not an environment variable's name",
            ),
            (
                "[[mcp_providers]]\nname = \"a\"\nurl = \"http://h/mcp\"\nenv = [\"K\"]\ntool = \"t\"\n",
                "env is for a command provider",
            ),
        ];
        for (text, want) in cases {
            let err = load(text).unwrap_err().to_string();
            assert!(err.contains(want), "{text:?}: {err}");
            assert!(!err.contains("s3cret"), "{err}");
        }
        let err = load("[[mcp_providers]]\nname = \"a\"\nurl = \"http://h/mcp\"\ntoken = \"s3cret\"\ntool = \"t\"\n").unwrap_err();
        assert_eq!(
            err,
            ProvidersError::Provider {
                label: "[[mcp_providers]] \"a\"".into(),
                problem: ProviderError::TokenInFile {
                    key: "token".into()
                }
            }
        );
    }
}
