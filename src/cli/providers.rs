//! External MCP providers from the configuration (`[[mcp_providers]]`), and
//! `engram providers`: each one with its health.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use engram::config::{McpProviderConfig, ProviderTransport};
use engram::manager::{ExternalProvider, McpProvider, McpProviderSpec, McpTransport};

use super::config;
use super::output::Output;

fn spec(c: &McpProviderConfig) -> McpProviderSpec {
    McpProviderSpec {
        name: c.name.clone(),
        transport: match &c.transport {
            ProviderTransport::Command { argv, env } => McpTransport::Command {
                argv: argv.clone(),
                env: env.clone(),
            },
            ProviderTransport::Url { url, token_env } => McpTransport::Http {
                url: url.clone(),
                token_env: token_env.clone(),
            },
        },
        tool: c.tool.clone(),
        query_arg: c.query_arg.clone(),
        deadline: Duration::from_millis(c.timeout_ms),
    }
}

/// The configured providers (none started or connected yet).
fn configured() -> Result<Vec<Arc<McpProvider>>> {
    let specs = config().mcp_providers().iter().map(spec).collect();
    Ok(McpProvider::all(specs)?)
}

/// The configured providers, as the manager takes them.
pub fn external() -> Result<Vec<Arc<dyn ExternalProvider>>> {
    Ok(configured()?
        .into_iter()
        .map(|p| p as Arc<dyn ExternalProvider>)
        .collect())
}

/// `engram providers`: every configured provider, reached once (all at once, each
/// within its deadline): reachable, whether it offers its tool, how long that took.
pub fn list(out: &Output) -> Result<ExitCode> {
    let providers = configured()?;
    let health: Vec<_> = std::thread::scope(|s| {
        let asked: Vec<_> = providers
            .iter()
            .map(|p| s.spawn(move || p.health()))
            .collect();
        asked.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    out.value(&serde_json::json!({ "providers": health }), || {
        if health.is_empty() {
            return "no external providers configured (add [[mcp_providers]] tables to the config file; see the README, \"Outward providers\")".into();
        }
        health
            .iter()
            .map(|h| {
                let state = match (h.reachable, h.tool_present) {
                    (true, Some(true)) => "ok",
                    (true, _) => "NO TOOL",
                    (false, _) => "DOWN",
                };
                format!(
                    "{:<20} {:<8} {:>6} ms  tool {}  via {}{}",
                    h.name,
                    state,
                    h.latency_ms,
                    h.tool,
                    h.transport,
                    h.error
                        .as_deref()
                        .map(|e| format!("\n    {e}"))
                        .unwrap_or_default()
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    Ok(ExitCode::SUCCESS)
}
