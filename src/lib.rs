//! engram: a codebase memory engine for AI coding agents.
//!
//! The crate is layered; each layer knows only those beneath it, as the matrix in
//! `tests/it/layers.rs` allows (that test fails on any other `crate::` edge; the matrix
//! is drawn in `ARCHITECTURE.md`):
//!
//! ```text
//!   cli                     the binary: uses the library as engram::…
//!   mcp                     the MCP server
//!   manager                 providers composed behind the gate
//!   assist                  optional chat-model features, through the gate
//!   search     gate         one query, hits fused · scope, caps, audit
//!   stale      memory_pg    memories whose code changed · the team backend (PostgreSQL)
//!   memory     index        peers: neither knows the other
//!   patterns                Hyperscan sets, the one secret redactor
//!   store      llm          the engine · chat-model and HTTP-embedding client
//!   format  fts  embed      exact bytes (pure) · FTS5 queries · embedders
//!   location                where engram's files live
//!   key   text   cores      keys (pure) · code-aware words · how many cores to use
//!   open, config            every tracker projection · settings (for openers)
//! ```
//!
//! - [`key`] and [`format`](mod@format): canonical key strings, `hash64`, and the exact
//!   bytes of every file (pure, no I/O; see `format-spec/`). Only the store uses
//!   `format`; layers above see records through the store.
//! - [`text`], [`fts`] and [`embed`]: code-aware words, the full-text index's tokens,
//!   safe FTS5 queries and the BM25 statement built from them (pure, no I/O), and the
//!   embedders that turn text into vectors, shared by memory and code search (the
//!   built-in one is pure; the static and neural ones read their files, and
//!   `engram model fetch` downloads them). [`cores`]: how many cores the process may use.
//! - [`store`]: the storage engine — the append-only `blob.dat`, the derived
//!   `tracker.db` and vector caches, the commit protocol, recovery, verify and compact.
//!   [`location`] says where stores and caches live.
//! - [`patterns`]: Hyperscan pattern sets scanned over the stored bodies in place, and
//!   the secret redactor every way into the store calls.
//! - [`memory`]: memories, the first user of the store, and the `MemoryBackend`
//!   trait every backend of memories implements.
//! - `memory_pg` (cargo feature `postgres`): the team backend, memories on
//!   PostgreSQL with pgvector, isolated per repository by row-level security.
//! - [`index`]: a repository walked, secrets redacted, chunked and made searchable.
//! - [`stale`]: what code a memory references, and whether it has changed since.
//! - [`search`]: one query over code and memories, keyword and vector hits fused.
//! - [`gate`]: scope, caps, sanitising and the audit trail for callers outside.
//! - [`manager`]: code, memory and note providers composed behind the gate, and other
//!   MCP servers asked beside them (`[[mcp_providers]]`, through rmcp's client; their
//!   results untrusted, never stored).
//! - `llm` and `assist` (cargo feature `llm`): a chat-model client (OpenAI-compatible
//!   and Anthropic APIs) and the optional features built on it — summaries, relevance
//!   scoring, suggested solutions, extraction, compression, screenshots — each sending
//!   only what the gate cleared, each with a result without a model.
//! - [`mcp`]: the MCP server agents call.
//! - [`projections`]: every tracker projection of this build, which every opener of a
//!   store passes (`Memories::open` does); [`config`]: the binary's settings.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let memories = engram::memory::Memories::open("/tmp/my-store")?;
//! let m = memories.remember("Use WAL mode for tracker.db", &["sqlite".into()], None)?;
//! let hits = memories.recall("tracker WAL", 5)?;
//! assert_eq!(hits[0].memory.id, m.id);
//! # Ok(()) }
//! ```

#[cfg(all(feature = "index", feature = "llm"))]
pub mod assist;
#[cfg(feature = "store")]
pub mod config;
pub mod cores;
pub mod embed;
pub mod format;
pub mod fts;
#[cfg(feature = "index")]
pub mod gate;
#[cfg(feature = "index")]
pub mod index;
pub mod key;
#[cfg(feature = "llm")]
pub mod llm;
#[cfg(feature = "store")]
pub mod location;
#[cfg(feature = "index")]
pub mod manager;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "store")]
pub mod memory;
#[cfg(feature = "postgres")]
pub mod memory_pg;
#[cfg(feature = "store")]
pub mod patterns;
#[cfg(feature = "index")]
pub mod search;
#[cfg(feature = "index")]
pub mod stale;
#[cfg(feature = "store")]
pub mod store;
pub mod text;

#[cfg(feature = "store")]
mod open;
#[cfg(feature = "store")]
pub use open::projections;
