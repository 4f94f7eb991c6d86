//! The MCP server: engram's tools for agents, over stdio, with the official SDK.
//!
//! Every Claude Code or Cursor window starts its own `engram serve`, so many of these
//! processes share one store; the store is multi-process safe and each call is short.
//! A call's arguments are checked against the tool's schema before anything runs; a
//! bad call gets an `invalid_params` error saying what was wrong, a failing tool a
//! tool-level error, and a panic inside a tool is caught and reported — no call can
//! take the server down. This layer knows MCP; what the tools do is in
//! [`handlers`], behind the [`crate::gate`].

mod admin;
mod args;
mod assisted;
mod call;
mod compat;
mod extra;
mod graph_tools;
pub mod handlers;
pub mod http;
pub mod normalise;
mod outward;
mod seeded;
mod shape;
mod stdio;
pub mod tokens;
mod tool_table;
pub mod tools;

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ServerHandler, ServiceExt};

pub use handlers::{Connection, Engine};
pub use tools::Profile;

/// The server: the engine and the tools its profile lists, for one client
/// connection.
pub struct Server {
    engine: Arc<Engine>,
    tools: Arc<Vec<Tool>>,
    names: Arc<Vec<&'static str>>,
    connection: Arc<Connection>,
}

/// A clone is a new connection: it shares the engine and the tool list, not the
/// coding session the original's client started (the HTTP transport clones the
/// server once per MCP session).
impl Clone for Server {
    fn clone(&self) -> Server {
        Server {
            engine: self.engine.clone(),
            tools: self.tools.clone(),
            names: self.names.clone(),
            connection: Arc::default(),
        }
    }
}

impl Server {
    /// A server over `engine` listing the tools of `profile` (and letting be called
    /// those [`tools::callable_for`] gives).
    pub fn new(engine: Engine, profile: Profile) -> Server {
        let specs = tools::tools_for(profile);
        let tools = specs
            .iter()
            .map(|t| Tool::new(t.name, t.description, Arc::new(tools::schema(t))))
            .collect();
        Server {
            engine: Arc::new(engine),
            tools: Arc::new(tools),
            names: Arc::new(
                tools::callable_for(profile)
                    .iter()
                    .map(|t| t.name)
                    .collect(),
            ),
            connection: Arc::default(),
        }
    }

    /// The engine behind the tools.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Serve MCP on stdin/stdout until the client disconnects. A request line over
    /// `stdio::MAX_REQUEST_LINE_BYTES` (16 MiB) is answered with an error naming the limit.
    pub async fn serve_stdio(self) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let transport = stdio::StdioTransport::new(stdio::MAX_REQUEST_LINE_BYTES);
        let running = self.serve(transport).await?;
        running.waiting().await?;
        Ok(())
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("engram", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(
            "engram remembers this repository for you. At the start of a task call \
             enrich_prompt with the request and coding_start_session; search memories before \
             debugging and whenever earlier decisions come up; record file changes, errors and \
             decisions as you go (they join your session) and write a memory when you learn \
             something worth keeping; end with coding_end_session."
                .into(),
        );
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        let args = request.arguments.unwrap_or_default();
        let (engine, names, conn) = (
            self.engine.clone(),
            self.names.clone(),
            self.connection.clone(),
        );
        // Normalising may look key hashes up in the store, so it runs off the async
        // threads with the call; a refused call is audited too.
        let outcome = tokio::task::spawn_blocking(move || {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                match normalise::prepare(&engine, &name, &names, args) {
                    Ok(p) => Ok(engine.call_on(&conn, p.spec.name, &p.args, p.user_id.as_deref())),
                    Err(e) => {
                        let message = shape::error_text(&e.to_string());
                        engine.audit_refused(&name, &message);
                        Err(message)
                    }
                }
            }))
        })
        .await;
        let result = match outcome {
            Ok(Ok(Err(refused))) => return Err(ErrorData::invalid_params(refused, None)),
            Ok(Ok(Ok(Ok(value)))) => CallToolResult::success(vec![ContentBlock::text(
                serde_json::to_string(&value).unwrap_or_else(|_| "{}".into()),
            )]),
            Ok(Ok(Ok(Err(message)))) => CallToolResult::error(vec![ContentBlock::text(message)]),
            Ok(Err(_)) | Err(_) => {
                tracing::error!("a tool panicked; the server goes on");
                CallToolResult::error(vec![ContentBlock::text(
                    "internal error in the tool (reported in the server log); the server goes on",
                )])
            }
        };
        Ok(result.into())
    }
}
