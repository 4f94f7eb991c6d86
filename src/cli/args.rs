//! The command line as clap parses it: every command, flag and argument of the
//! `engram` binary, with the help text users read. Definitions only: nothing here
//! opens a store, reads configuration or runs a command.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use engram::store::Durability;

mod groups;
pub use groups::*;

/// engram: durable, searchable memory of a codebase for AI coding agents.
#[derive(Debug, Parser)]
#[command(name = "engram", version, about, propagate_version = true)]
pub struct Cli {
    /// Store directory (default: one per repository under $ENGRAM_HOME or the XDG data directory).
    #[arg(long, global = true, env = "ENGRAM_STORE", value_name = "DIR")]
    pub store: Option<PathBuf>,
    /// Print machine-readable JSON on stdout.
    #[arg(long, global = true)]
    pub json: bool,
    /// When writes are made durable: always (fsync per batch, the default), batch, never.
    #[arg(long, global = true, env = "ENGRAM_DURABILITY")]
    pub durability: Option<Durability>,
    /// Configuration file (default: $XDG_CONFIG_HOME/engram/config.toml).
    #[arg(long, global = true, env = "ENGRAM_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// More logging on stderr (-v info, -vv debug).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Local embedding models: list the known ones and where their files are; fetch one.
    #[cfg(feature = "neural")]
    Model {
        #[command(subcommand)]
        command: ModelCommand,
    },
    /// Store a memory; prints its id.
    Remember {
        text: String,
        #[command(flatten)]
        fields: MemoryFields,
    },
    /// Change a memory as a new version (the old one stays in its history): the text
    /// and fields given replace the old ones, every field not given is kept, and
    /// --metadata adds to the old metadata.
    Update {
        id: String,
        /// The new text (default: the old one).
        text: Option<String>,
        #[command(flatten)]
        fields: MemoryFields,
    },
    /// Show every version of a memory, oldest first.
    History { id: String },
    /// Errors met while coding: record one (recurrences are counted), search past ones.
    Error {
        #[command(subcommand)]
        command: ErrorCommand,
    },
    /// Record a design decision with its rationale.
    Decision {
        decision: String,
        #[arg(long, default_value = "")]
        rationale: String,
        /// An alternative considered (repeatable).
        #[arg(long = "alternative")]
        alternatives: Vec<String>,
        #[arg(long)]
        impact: Option<String>,
        /// A file the decision concerns (repeatable).
        #[arg(long = "file")]
        files: Vec<String>,
        /// A tag (repeatable).
        #[arg(long = "tag")]
        tags: Vec<String>,
        /// Confidence from 0 to 1.
        #[arg(long)]
        confidence: Option<f64>,
        #[arg(long)]
        session: Option<String>,
    },
    /// Coding sessions: start one, end it with a summary of what it recorded.
    Session {
        #[command(subcommand)]
        command: SessionCommand,
    },
    /// Record a change to a file and the reason for it.
    Change {
        path: String,
        /// create, edit, delete, rename, refactor or test.
        #[arg(long)]
        action: String,
        #[arg(long)]
        reason: String,
        #[arg(long)]
        diff_summary: Option<String>,
        /// A related file (repeatable).
        #[arg(long = "related")]
        related: Vec<String>,
        /// Line range, e.g. 10-42.
        #[arg(long)]
        lines: Option<String>,
        #[arg(long)]
        session: Option<String>,
    },
    /// The context a new session should start from, within a byte budget.
    Context {
        /// Most bytes printed: the context, or with --json the whole JSON.
        #[arg(long, default_value_t = 4096)]
        budget: usize,
        /// Have the configured chat model compress it: brief, detailed or comprehensive.
        #[arg(long, value_name = "LEVEL")]
        compress: Option<String>,
        /// Print the request that would be sent to the model, and send nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Recurring errors, files that change together, hot files, decision tags over time.
    Analyze,
    /// Entries, files and symbols related to ID within 1-3 hops.
    Related {
        id: String,
        #[arg(long, default_value_t = 1)]
        hops: u32,
    },
    /// Notes: key/value pairs for this repository.
    Note {
        #[command(subcommand)]
        command: NoteCommand,
    },
    /// Memories whose code changed since they were written, newest change first.
    Stale {
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Also list memories possibly affected by a change to a function their
        /// symbols call (since the memory was written), apart from the stale ones.
        #[arg(long)]
        impact: bool,
        /// With --impact: 1 (what the symbol calls) or 2 (and what those call).
        #[arg(long, default_value_t = 1, requires = "impact",
              value_parser = clap::value_parser!(u32).range(1..=2))]
        depth: u32,
    },
    /// Re-anchor a stale memory to the code as it is now (a new version, fresh again).
    Confirm { id: String },
    /// Show a memory.
    Get { id: String },
    /// Delete a memory.
    Forget { id: String },
    /// List memories, most recently updated first.
    List {
        #[arg(long, default_value_t = 20)]
        limit: usize,
        #[arg(long, default_value_t = 0)]
        offset: usize,
        #[command(flatten)]
        filter: FilterArgs,
    },
    /// Find memories by keyword.
    Recall {
        query: String,
        #[arg(long, short = 'k', default_value_t = 10)]
        top_k: usize,
        #[command(flatten)]
        filter: FilterArgs,
        /// `llm`: the configured chat model scores each candidate from 0 to 1 with a
        /// reason; those under llm_rerank_threshold are dropped.
        #[arg(long, value_name = "HOW", value_parser = ["llm", "none"])]
        rerank: Option<String>,
        /// Print the requests that would be sent to the model, and send nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Import memories from a JSON Lines file (all or nothing).
    Import { file: PathBuf },
    /// Export memories as JSON Lines to FILE or stdout.
    Export { file: Option<PathBuf> },
    /// Create an empty store in the store directory, which must be empty or new.
    Init,
    /// Check every record, the commit chain, and that derived files agree with the log.
    Verify,
    /// Print records of blob.dat.
    Dump {
        /// Only records of this kind: put, tombstone, commit, vector, event.
        #[arg(long)]
        kind: Option<String>,
        /// Only records of this key.
        #[arg(long)]
        key: Option<String>,
        /// Only the record at this offset.
        #[arg(long)]
        offset: Option<u64>,
        /// At most this many records.
        #[arg(long)]
        limit: Option<usize>,
    },
    /// Counts and sizes.
    Stats,
    /// Recreate tracker.db and the vector caches from blob.dat alone.
    Rebuild,
    /// Copy every batch of a damaged blob.dat that still verifies into a new store in
    /// DIR, skipping past damage, and report what was lost (by byte range, key and
    /// seq). The damaged store is only read.
    Salvage {
        /// Where to write the new store: a new or empty directory.
        #[arg(long, value_name = "DIR")]
        into: PathBuf,
    },
    /// Rewrite blob.dat without dead records and swap it in atomically.
    Compact,
    /// Seal the store's vectors under a key (XChaCha20-Poly1305), or rotate it: a
    /// compaction that re-encrypts every vector and deletes the vector cache files.
    /// The current key, when the store is already sealed, comes from key_file /
    /// ENGRAM_KEY_FILE / ENGRAM_KEY.
    Encrypt {
        /// The key to seal under: 32 bytes or 64 hex digits, outside the store.
        #[arg(long, value_name = "FILE")]
        key_file: PathBuf,
        /// Write a fresh random key to FILE first (mode 0600; never over an existing file).
        #[arg(long)]
        new_key: bool,
    },
    /// Index a repository (incremental): files and chunks, secrets redacted before writing.
    Index {
        /// The repository (default: the current directory).
        path: Option<PathBuf>,
        /// Skip files larger than this many bytes (default 1 MiB; setting max_file_bytes).
        #[arg(long)]
        max_file_bytes: Option<u64>,
        /// Leave chunks holding a secret out instead of redacting the secret.
        #[arg(long)]
        exclude_secrets: bool,
        /// Threads that read, parse and embed files (default: one per core). The
        /// records written are the same whatever the number.
        #[arg(long, default_value_t = 0)]
        threads: usize,
        /// After indexing, keep watching and re-index on every change (until killed).
        #[arg(long)]
        watch: bool,
    },
    /// Find symbols by name: exact, prefix or fuzzy (`Session.request`, `request`, `sesreq`).
    Symbol {
        name: String,
        #[arg(long, short = 'k', default_value_t = 20)]
        limit: usize,
    },
    /// Every reference to a definition (calls, constructions, imports), each with its
    /// enclosing symbol and how sure the match is (resolved, imported, same-name,
    /// ambiguous). A receiver's type is known where its file says it (`o = Foo()`,
    /// `o: Foo`, `o = f()` with `f` declared `-> Foo`); otherwise `obj.get()` refers to
    /// every method named `get`, at a lower confidence.
    Refs {
        #[command(flatten)]
        target: GraphTarget,
    },
    /// The symbols that call a definition, up to --depth steps back.
    Callers {
        #[command(flatten)]
        target: GraphTarget,
        #[command(flatten)]
        depth: GraphDepth,
    },
    /// The definitions a definition calls, up to --depth steps on.
    Callees {
        #[command(flatten)]
        target: GraphTarget,
        #[command(flatten)]
        depth: GraphDepth,
    },
    /// The imports out of a file (and the repository files they reach) and the files
    /// importing it.
    Deps { path: String },
    /// An outline of a file or folder (default: the repository): its symbols with
    /// their signatures.
    Overview {
        path: Option<String>,
        /// At most this many symbols.
        #[arg(long, short = 'k', default_value_t = 500)]
        limit: usize,
    },
    /// What depends on a file, folder or definition, transitively: the symbols calling
    /// it and the files importing it, nearest first, then by fan-in.
    Impact {
        /// A repository-relative file or folder, or a definition's name.
        target: String,
        /// Steps to follow, 1 to 3.
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=3))]
        depth: u32,
        /// Only edges at least this sure: resolved, imported, same-name (the default)
        /// or ambiguous.
        #[arg(long, default_value = "same-name", value_name = "LEVEL",
              value_parser = ["resolved", "imported", "same-name", "ambiguous"])]
        min_confidence: String,
        /// At most this many dependents.
        #[arg(long, short = 'k', default_value_t = 100)]
        limit: usize,
    },
    /// Serve the MCP tools over stdio (one process per agent window; they share the store).
    Serve {
        /// The repository (default: the one containing the current directory). With
        /// --http, give it once per repository to serve several, each at /mcp/NAME
        /// with its own store (under ENGRAM_HOME; --store serves one only).
        #[arg(long)]
        repo: Vec<PathBuf>,
        /// Tool profile: default (the dozen most used tools listed, every tool
        /// callable), core, code, memory, coding, all; join with commas, e.g. all,compat
        /// (setting `tools`).
        #[arg(long)]
        tools: Option<String>,
        /// Serve streamable HTTP on this address instead of stdio (default: setting
        /// server_addr); bearer tokens from the tokens file are required.
        #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "")]
        http: Option<String>,
    },
    /// Bearer tokens for `engram serve --http`.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// Print the context block an agent gets for a prompt (code, notes, memories; attributed, sanitised).
    Enrich {
        prompt: String,
        /// Most bytes printed: the context, or with --json the whole JSON (at least 256).
        #[arg(long, default_value_t = 8000)]
        budget: usize,
        /// Also ask the external MCP providers of the config file ([[mcp_providers]]).
        #[arg(long)]
        providers: bool,
    },
    /// The external MCP providers of the config file, each with its health.
    Providers,
    /// The audit trail: one event per read and write through the MCP tools.
    Audit {
        /// Only events since: Unix ms or an age like 7d, 12h.
        #[arg(long)]
        since: Option<String>,
    },
    /// The team backend's PostgreSQL database (setting database_url): `engram db
    /// migrate` prepares or upgrades its schema, `engram db status` shows it.
    Db {
        #[command(subcommand)]
        command: DbCommand,
    },
    /// Configuration: `engram config show`.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Search code and memories: keyword, vector and symbol matches fused.
    Search {
        query: String,
        #[arg(long, short = 'k', default_value_t = 10)]
        top_k: usize,
        /// Only this language (rust, python, go, javascript, typescript, …).
        #[arg(long)]
        lang: Option<String>,
        /// Only paths matching this glob, e.g. 'src/**/*.rs'.
        #[arg(long)]
        path: Option<String>,
        /// Only hits of this kind: file, symbol, chunk, memory.
        #[arg(long)]
        kind: Option<String>,
        /// The file you are in: hits in it and its directory rank higher.
        #[arg(long)]
        near: Option<String>,
        /// Rank recently changed files and memories higher.
        #[arg(long)]
        recent: bool,
        /// Keyword and symbol matches only, no vectors.
        #[arg(long)]
        keyword_only: bool,
    },
    /// Pattern sets: load and list.
    Pattern {
        #[command(subcommand)]
        command: PatternCommand,
    },
    /// Scan stored text with a pattern set (secrets, security-smells, debug-leftovers, or a loaded one).
    /// `engram scan secrets` alone reads every record of the log (live values, kept
    /// versions, audit events, superseded records) for what an older engram let through,
    /// and with database_url set the repository's memory and version rows in the
    /// database too.
    Scan {
        /// The set, e.g. `secrets` or `pat:security-smells`.
        pattern_set: String,
        /// Scan only this key.
        #[arg(long, conflicts_with_all = ["memories", "code"])]
        key: Option<String>,
        /// Scan every memory (the default).
        #[arg(long, conflicts_with = "code")]
        memories: bool,
        /// Scan every code chunk.
        #[arg(long)]
        code: bool,
        /// With --memories: only memories of this task type.
        #[arg(long)]
        task: Option<String>,
        /// With --memories: only memories of this context type.
        #[arg(long)]
        context: Option<String>,
    },
    /// Rewrite every record holding a secret (found as `engram scan secrets` finds them)
    /// with the secret replaced, by compacting the store; afterwards the old bytes are
    /// in no file of the store. With database_url set, the database's rows holding one
    /// are rewritten in place too (VACUUM reclaims the old row versions).
    Redact,
    /// Claude Code hooks that capture sessions without the agent's help: `engram hooks
    /// install` writes them into the repository's .claude/settings.json (SessionStart
    /// injects `engram context`, edits are recorded as file changes, SessionEnd ends
    /// the session with its summary); `engram hooks uninstall` removes them.
    Hooks {
        #[command(subcommand)]
        command: HooksCommand,
    },
    /// Key utilities.
    Key {
        #[command(subcommand)]
        command: KeyCommand,
    },
}
