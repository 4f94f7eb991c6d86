//! One external MCP server as an [`ExternalProvider`]: rmcp's client over stdio (a
//! program engram starts) or streamable HTTP (a URL, with a bearer token read from
//! an environment variable).
//!
//! A provider connects when first asked and keeps the connection for later
//! requests; one that fails or misses its deadline is dropped (a started program is
//! killed) and made again next time. The connections run on a small async runtime
//! the providers share, so callers stay synchronous like the rest of the manager.
//! It sends a server nothing but the query; it never writes what a server returns
//! anywhere, and never logs or returns the token.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{ClientInitializeError, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};

use super::external::{ExternalHit, ExternalProvider, ProviderHealth};
use super::{mcp_result, ManagerError};
use crate::gate::external_note;

/// How engram reaches an external MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// A program and its arguments (`argv`, the program first), spoken to over its
    /// stdin and stdout. It gets [`BASIC_ENV`] and the variables named in `env` from
    /// engram's environment, nothing else (not engram's keys and tokens).
    Command { argv: Vec<String>, env: Vec<String> },
    /// Streamable HTTP at `url`, with the bearer token in the environment variable
    /// `token_env` (read when connecting).
    Http {
        url: String,
        token_env: Option<String>,
    },
}

/// One external MCP server: how to reach it and what to call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpProviderSpec {
    /// The name attributions and notes show.
    pub name: String,
    pub transport: McpTransport,
    /// The tool called with the query.
    pub tool: String,
    /// The name of the tool's query argument.
    pub query_arg: String,
    /// The longest one request waits for it (connecting included).
    pub deadline: Duration,
}

impl McpTransport {
    /// `stdio: PROGRAM ARGS…` or the URL (never a token).
    pub fn describe(&self) -> String {
        match self {
            McpTransport::Command { argv, .. } => format!("stdio: {}", argv.join(" ")),
            McpTransport::Http { url, .. } => url.clone(),
        }
    }
}

/// The environment variables every started program gets from engram's environment
/// (as the official SDKs' stdio clients pass by default): enough to find programs
/// and a home directory, nothing secret.
pub const BASIC_ENV: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR",
];

/// A live connection: the client and, for stdio, the program it talks to (killed
/// when the connection is dropped).
struct Connection {
    client: RunningService<RoleClient, ()>,
    _child: Option<tokio::process::Child>,
}

/// The async runtime the providers' connections run on, shut down without waiting
/// when the last provider goes (so dropping one inside another runtime is safe).
struct Runtime(Option<tokio::runtime::Runtime>);

impl Drop for Runtime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

/// An external MCP server asked for context (see the module docs).
pub struct McpProvider {
    spec: McpProviderSpec,
    /// Declared before the runtime: connections go first.
    conn: tokio::sync::Mutex<Option<Arc<Connection>>>,
    runtime: Arc<Runtime>,
}

impl McpProvider {
    /// Providers for `specs`, sharing one runtime; nothing is started or connected
    /// until a provider is asked.
    pub fn all(specs: Vec<McpProviderSpec>) -> Result<Vec<Arc<McpProvider>>, ManagerError> {
        if specs.is_empty() {
            return Ok(Vec::new());
        }
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("engram-providers")
            .enable_all()
            .build()
            .map_err(|e| ManagerError::Invalid(format!("starting the providers' runtime: {e}")))?;
        let runtime = Arc::new(Runtime(Some(rt)));
        Ok(specs
            .into_iter()
            .map(|spec| {
                Arc::new(McpProvider {
                    spec,
                    conn: tokio::sync::Mutex::new(None),
                    runtime: runtime.clone(),
                })
            })
            .collect())
    }

    /// Its configuration.
    pub fn spec(&self) -> &McpProviderSpec {
        &self.spec
    }

    /// Run `f` on the providers' runtime within the deadline. Blocks the caller; from
    /// inside another async runtime (where blocking on this one is not allowed) it
    /// blocks a thread of its own instead.
    fn run<T: Send>(
        &self,
        f: impl std::future::Future<Output = Result<T, AskError>> + Send,
    ) -> Result<T, AskError> {
        let Some(rt) = self.runtime.0.as_ref() else {
            return Err(AskError::RuntimeGone);
        };
        let deadline = self.spec.deadline;
        let work = async {
            match tokio::time::timeout(deadline, f).await {
                Ok(r) => r,
                Err(_) => {
                    // The server may be wedged mid-request: start afresh next time.
                    self.conn.lock().await.take();
                    Err(AskError::Deadline {
                        ms: deadline.as_millis(),
                    })
                }
            }
        };
        if tokio::runtime::Handle::try_current().is_err() {
            return rt.block_on(work);
        }
        std::thread::scope(|s| {
            s.spawn(|| rt.block_on(work))
                .join()
                .unwrap_or(Err(AskError::Panicked))
        })
    }

    /// The open connection, made if there is none.
    async fn connection(&self) -> Result<Arc<Connection>, AskError> {
        let mut slot = self.conn.lock().await;
        if let Some(c) = slot.as_ref() {
            if !c.client.is_closed() {
                return Ok(c.clone());
            }
        }
        let c = Arc::new(self.connect().await?);
        *slot = Some(c.clone());
        Ok(c)
    }

    /// Forget `c` if it is still the open connection (it failed).
    async fn forget(&self, c: &Arc<Connection>) {
        let mut slot = self.conn.lock().await;
        if slot.as_ref().is_some_and(|s| Arc::ptr_eq(s, c)) {
            slot.take();
        }
    }

    async fn connect(&self) -> Result<Connection, AskError> {
        match &self.spec.transport {
            McpTransport::Command { argv, env } => {
                let (program, args) = argv.split_first().ok_or(AskError::EmptyCommand)?;
                let mut cmd = tokio::process::Command::new(program);
                cmd.env_clear();
                for name in BASIC_ENV
                    .iter()
                    .copied()
                    .chain(env.iter().map(String::as_str))
                {
                    if let Some(v) = std::env::var_os(name) {
                        cmd.env(name, v);
                    }
                }
                cmd.args(args)
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    // Its log is not ours to show (nor to mix into an MCP stream).
                    .stderr(std::process::Stdio::null())
                    .kill_on_drop(true);
                let mut child = cmd.spawn().map_err(|source| AskError::Start {
                    program: program.clone(),
                    source,
                })?;
                let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
                    return Err(AskError::NoPipes);
                };
                let client =
                    ().serve((stdout, stdin)).await.map_err(|reason| {
                        AskError::CommandHandshake {
                            program: program.clone(),
                            reason: Box::new(reason),
                        }
                    })?;
                Ok(Connection {
                    client,
                    _child: Some(child),
                })
            }
            McpTransport::Http { url, token_env } => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(var) = token_env {
                    let token =
                        std::env::var(var).map_err(|_| AskError::NoToken { var: var.clone() })?;
                    config = config.auth_header(token);
                }
                let transport = StreamableHttpClientTransport::from_config(config);
                let client =
                    ().serve(transport)
                        .await
                        .map_err(|reason| AskError::UrlHandshake {
                            url: url.clone(),
                            reason: Box::new(reason),
                        })?;
                Ok(Connection {
                    client,
                    _child: None,
                })
            }
        }
    }

    async fn call(&self, query: &str) -> Result<CallToolResult, AskError> {
        let c = self.connection().await?;
        let mut args = serde_json::Map::new();
        args.insert(self.spec.query_arg.clone(), query.into());
        let params = CallToolRequestParams::new(self.spec.tool.clone()).with_arguments(args);
        match c.client.call_tool(params).await {
            Ok(r) => Ok(r),
            Err(reason) => {
                self.forget(&c).await;
                Err(AskError::Call {
                    tool: self.spec.tool.clone(),
                    reason,
                })
            }
        }
    }
}

/// Why asking one external server failed; the note a search or `engram providers`
/// shows (after the provider's name). The token is never part of it.
#[derive(Debug, thiserror::Error)]
enum AskError {
    #[error("the providers' runtime is gone")]
    RuntimeGone,
    #[error("no answer within its deadline of {ms} ms")]
    Deadline { ms: u128 },
    #[error("the provider's thread panicked")]
    Panicked,
    #[error("the command is empty; give the program to start")]
    EmptyCommand,
    #[error("could not start {program:?}: {source}")]
    Start {
        program: String,
        source: std::io::Error,
    },
    #[error("the program's stdin and stdout could not be opened")]
    NoPipes,
    // Boxed (both handshakes): rmcp's error is large, and a handshake failure rare.
    #[error("MCP handshake with {program:?} failed: {reason}")]
    CommandHandshake {
        program: String,
        reason: Box<ClientInitializeError>,
    },
    #[error("the environment variable {var} (token_env) is not set")]
    NoToken { var: String },
    #[error("MCP handshake with {url} failed: {reason}")]
    UrlHandshake {
        url: String,
        reason: Box<ClientInitializeError>,
    },
    #[error("calling {tool}: {reason}")]
    Call { tool: String, reason: ServiceError },
    #[error("listing its tools: {0}")]
    ListTools(ServiceError),
}

impl ExternalProvider for McpProvider {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn deadline(&self) -> Duration {
        self.spec.deadline
    }

    fn search(&self, query: &str, top_k: usize) -> Result<Vec<ExternalHit>, String> {
        // The provider interface carries the reason as text (the note a search shows).
        let result = self.run(self.call(query)).map_err(|e| e.to_string())?;
        let texts: Vec<String> = result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect();
        if result.is_error == Some(true) {
            return Err(format!(
                "{} returned an error: {}",
                self.spec.tool,
                external_note(&texts.join(" "))
            ));
        }
        let mut found = mcp_result::hits(&texts, result.structured_content.as_ref());
        found.truncate(top_k);
        Ok(found)
    }

    fn health(&self) -> ProviderHealth {
        let start = Instant::now();
        let listed = self.run(async {
            let c = self.connection().await?;
            match c.client.list_all_tools().await {
                Ok(tools) => Ok(tools),
                Err(reason) => {
                    self.forget(&c).await;
                    Err(AskError::ListTools(reason))
                }
            }
        });
        let latency_ms = start.elapsed().as_millis() as u64;
        let mut h = ProviderHealth {
            name: self.spec.name.clone(),
            transport: external_note(&self.spec.transport.describe()),
            tool: self.spec.tool.clone(),
            reachable: false,
            tool_present: None,
            latency_ms,
            error: None,
        };
        match listed {
            Ok(tools) => {
                h.reachable = true;
                let present = tools.iter().any(|t| t.name == self.spec.tool);
                h.tool_present = Some(present);
                if !present {
                    h.error = Some(format!(
                        "it offers no tool {:?}; it has: {}",
                        self.spec.tool,
                        external_note(
                            &tools
                                .iter()
                                .map(|t| t.name.as_ref())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    ));
                }
            }
            Err(e) => h.error = Some(external_note(&e.to_string())),
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider(transport: McpTransport) -> Arc<McpProvider> {
        let spec = McpProviderSpec {
            name: "docs".into(),
            transport,
            tool: "search".into(),
            query_arg: "query".into(),
            deadline: Duration::from_secs(5),
        };
        McpProvider::all(vec![spec]).unwrap().remove(0)
    }

    #[test]
    fn a_provider_that_cannot_be_reached_says_why() {
        let p = provider(McpTransport::Command {
            argv: Vec::new(),
            env: Vec::new(),
        });
        assert!(matches!(
            p.run(p.connect()).err(),
            Some(AskError::EmptyCommand)
        ));
        let p = provider(McpTransport::Command {
            argv: vec!["/nonexistent/engram-test-provider".into()],
            env: Vec::new(),
        });
        let e = p.search("q", 3).unwrap_err();
        assert!(
            e.starts_with("could not start \"/nonexistent/engram-test-provider\""),
            "{e}"
        );
        let var = "ENGRAM_TEST_PROVIDER_TOKEN_NEVER_SET";
        let p = provider(McpTransport::Http {
            url: "http://127.0.0.1:9/mcp".into(),
            token_env: Some(var.into()),
        });
        match p.run(p.connect()).err() {
            Some(AskError::NoToken { var: v }) => assert_eq!(v, var),
            other => panic!("{other:?}"),
        }
    }
}
