//! engram: a codebase memory engine for AI coding agents.
//!
//! The crate is layered; each layer knows only those beneath it:
//!
//! - [`key`] and [`format`]: canonical key strings, `hash64`, and the exact bytes of
//!   every file (pure, no I/O; see `format-spec/`).
//! - [`store`]: the storage engine — the append-only `blob.dat`, the derived
//!   `tracker.db` and vector caches, the commit protocol, recovery, verify and compact.
//! - [`memory`]: memories, the first user of the store.
//! - [`patterns`]: Hyperscan pattern sets scanned over the stored bodies in place.
//! - [`text`], [`fts`] and [`embed`]: code-aware words, the full-text index's tokens
//!   and safe FTS5 queries built from them, and the embedders that turn text into
//!   vectors (pure, no I/O), shared by memory and code search.
//! - [`index`]: a repository walked, secrets redacted, chunked and made searchable.
//! - [`search`]: one query over code and memories, keyword and vector hits fused.
//! - [`gate`]: scope, caps, sanitising and the audit trail for callers outside.
//! - [`manager`]: code, memory and note providers composed behind the gate.
//! - [`mcp`]: the MCP server agents call.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let memories = engram::memory::Memories::open("/tmp/my-store")?;
//! let m = memories.remember("Use WAL mode for tracker.db", &["sqlite".into()], None)?;
//! let hits = memories.recall("tracker WAL", 5)?;
//! assert_eq!(hits[0].memory.id, m.id);
//! # Ok(()) }
//! ```

#[cfg(feature = "store")]
pub mod config;
pub mod embed;
pub mod format;
pub mod fts;
#[cfg(feature = "index")]
pub mod gate;
#[cfg(feature = "index")]
pub mod index;
pub mod key;
#[cfg(feature = "store")]
pub mod location;
#[cfg(feature = "index")]
pub mod manager;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "store")]
pub mod memory;
#[cfg(feature = "store")]
pub mod patterns;
#[cfg(feature = "index")]
pub mod search;
#[cfg(feature = "store")]
pub mod store;
pub mod text;

#[cfg(feature = "store")]
mod open;
#[cfg(feature = "store")]
pub use open::projections;
