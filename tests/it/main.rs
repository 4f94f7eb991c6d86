//! engram's integration tests, one binary (as ripgrep's `tests/tests.rs`): every
//! `tests/it/<topic>.rs` is a module, and `support/` holds the helpers they share.
//! One binary links the engram crate once, not once per topic. Run one topic with
//! `cargo test --profile ci --all-features --test it <topic>::`.
//!
//! The tests run as threads of one process: a test must not change process-wide
//! state (environment variables, the current directory). A test that must is a
//! binary of its own beside this one (`tests/<name>.rs`), saying why at its top.

mod support;

mod audit;
mod cli;
mod cli_first_use;
mod cli_hooks;
mod code_graph;
mod coding_memory;
mod concurrency;
mod crash;
mod crash_recovery;
mod embed_http;
mod embedder_switch;
mod format_vectors;
mod gate;
mod group_commit;
mod index_parallel;
mod index_resident;
mod index_search;
mod layers;
mod llm_assist;
mod llm_cli;
mod llm_mcp;
mod llm_parse;
mod llm_wire;
mod manager;
mod mcp_adversarial;
mod mcp_http;
mod mcp_many;
mod mcp_providers;
mod mcp_stdio;
mod mcp_team;
mod memory_backends;
mod memory_entries;
mod memory_filters;
mod memory_history_model;
mod memory_import;
mod memory_pg;
mod memory_pg_ef_search;
mod memory_pg_import;
mod memory_recall;
mod model;
mod model_cli;
mod multiprocess;
mod neural_reference;
mod patterns;
mod read_only;
mod redact_stored;
mod sealed_vectors;
mod seams;
mod search_eval;
mod search_eval_corpus;
mod secrets_corpus;
mod secrets_redactor;
mod seed_conformance;
mod seed_files;
mod stale;
mod stale_impact;
mod stale_model;
mod store_basics;
mod store_model;
mod symbols;
mod team_assisted;
mod team_audit;
mod team_context;
mod team_patterns;
mod team_secrets;
mod team_stale;
mod team_tls;
mod torture;
mod vector_cache_ahead;
mod vector_cache_writes;
mod watch;
