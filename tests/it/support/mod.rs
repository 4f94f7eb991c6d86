//! Helpers shared by the integration tests, compiled once for the whole binary:
//! engram's CLI and MCP clients, the test servers (HTTP, LLM, PostgreSQL), model
//! files, the secrets corpus. Each test module imports the ones it needs.

pub mod contexts;
pub mod crate_paths;
pub mod engram_cli;
pub mod http_server;
pub mod leaks;
pub mod llm_server;
pub mod model_dir;
pub mod parallel;
pub mod pg;
pub mod providers;
pub mod python_mcp;
pub mod rerun;
pub mod secrets;
pub mod team_cli;
pub mod tls_pg;
pub mod vectors;
