//! The argument groups and nested subcommands that `Command`'s variants carry
//! (filters, memory fields, errors, sessions, notes, patterns, keys, models…).
//! Definitions only, like the rest of `args`.

use std::path::PathBuf;

use clap::Subcommand;

/// Which memories a list or recall considers; every given filter must hold.
#[derive(Debug, clap::Args)]
pub struct FilterArgs {
    /// Only entries of this kind: memory, note, session, file_change, error, decision.
    #[arg(long)]
    pub kind: Option<String>,
    /// Only this task type.
    #[arg(long)]
    pub task: Option<String>,
    /// Only memories with this insight type (repeatable: all must hold).
    #[arg(long = "insight")]
    pub insights: Vec<String>,
    /// Only memories with this context type (repeatable).
    #[arg(long = "context")]
    pub contexts: Vec<String>,
    /// Only memories with this tag (repeatable).
    #[arg(long = "tag")]
    pub tags: Vec<String>,
    /// Only memories of this session.
    #[arg(long)]
    pub session: Option<String>,
    /// Only memories updated since: Unix milliseconds, or an age like 30m, 12h, 7d.
    #[arg(long)]
    pub since: Option<String>,
}

/// The classified fields of a memory.
#[derive(Debug, clap::Args)]
pub struct MemoryFields {
    /// A tag (repeatable).
    #[arg(long = "tag", short = 't')]
    pub tags: Vec<String>,
    /// Task type: debug, bugfix, implement_feature, refactor, … (with or without `task:`).
    #[arg(long)]
    pub task: Option<String>,
    /// Insight type (repeatable): decision, constraint, assumption, pitfall, tradeoff, invariant, todo, context.
    #[arg(long = "insight")]
    pub insights: Vec<String>,
    /// Context type (repeatable): frontend, backend, auth, billing, ui, infra, devops, data, testing, api.
    #[arg(long = "context")]
    pub contexts: Vec<String>,
    /// A symbol, file or chunk key the memory is about (repeatable).
    #[arg(long = "symbol")]
    pub symbols: Vec<String>,
    /// user_stated (default), agent_observed, llm_extracted or inferred.
    #[arg(long)]
    pub provenance: Option<String>,
    /// Trust from 0 to 1 (default by provenance).
    #[arg(long)]
    pub trust: Option<f64>,
    /// The coding session the memory belongs to.
    #[arg(long)]
    pub session: Option<String>,
    /// A JSON object of extra metadata.
    #[arg(long)]
    pub metadata: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum ErrorCommand {
    /// Record an error (a recurrence of a known one increments its frequency).
    Record {
        /// The error's type, e.g. TypeError, E0502, SIGSEGV.
        #[arg(long = "type")]
        error_type: String,
        #[arg(long)]
        message: String,
        #[arg(long)]
        stack_trace: Option<String>,
        #[arg(long)]
        file: Option<String>,
        #[arg(long)]
        line: Option<u64>,
        #[arg(long)]
        solution: Option<String>,
        #[arg(long)]
        resolved: bool,
        #[arg(long)]
        screenshot: Option<String>,
        #[arg(long)]
        session: Option<String>,
        /// The file change entry (mem:…) that fixed it.
        #[arg(long)]
        resolved_by: Option<String>,
    },
    /// Find past errors like QUERY, those with a solution first.
    Search {
        query: String,
        #[arg(long, short = 'k', default_value_t = 10)]
        top_k: usize,
    },
    /// Suggest a solution for error ID: from the configured chat model given similar
    /// past errors, else the most similar solved past error's solution.
    Suggest {
        id: String,
        /// Print the request that would be sent to the model, and send nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Make a new token, print it once (the only thing on stdout), and store its hash
    /// in the tokens file; a running server accepts it at once.
    New {
        /// A name for who holds it.
        #[arg(long, default_value = "token")]
        name: String,
        /// A repository it may reach: a path, or any name the server knows it by (store
        /// name, folder name, owner/name of a git remote, alias); `*` for every one;
        /// repeatable; default: the current one.
        #[arg(long = "repo", value_name = "PATH|NAME")]
        repos: Vec<String>,
    },
    /// List the tokens: ids, names, repositories, creation times (never the tokens).
    List,
    /// Revoke a token by its id (or its name, when only one token has it); a running
    /// server refuses it at once.
    Revoke {
        /// The id `engram token list` shows.
        id: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// Write engram's hook entries into .claude/settings.json of the repository (once:
    /// installing again replaces them; the file's other settings and hooks stay).
    Install {
        /// Into ~/.claude/settings.json instead: every repository you open.
        #[arg(long)]
        user: bool,
        /// Print the settings file as it would be, and write nothing.
        #[arg(long)]
        print: bool,
    },
    /// Remove engram's hook entries (and only those) from .claude/settings.json.
    Uninstall {
        /// From ~/.claude/settings.json instead.
        #[arg(long)]
        user: bool,
        /// Print the settings file as it would be, and write nothing.
        #[arg(long)]
        print: bool,
    },
    /// Run one hook: read the JSON Claude Code sends on stdin and act on EVENT
    /// (SessionStart, PostToolUse, SessionEnd or Stop). Claude Code runs this.
    #[command(hide = true)]
    Run { event: String },
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print every setting's effective value and where it came from.
    Show,
}

#[derive(Debug, Subcommand)]
pub enum DbCommand {
    /// Apply the schema migrations the database lacks (one transaction; others wait).
    Migrate,
    /// The database's schema version and the migrations it lacks.
    Status,
}

#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// Start a session; prints its id.
    Start {
        description: String,
        #[arg(long = "tag")]
        tags: Vec<String>,
    },
    /// End a session and print its summary.
    End {
        /// The session (default: the one open session).
        id: Option<String>,
        /// The session did not reach its goal.
        #[arg(long)]
        failed: bool,
        /// Also have the configured chat model write a summary (on by default when
        /// llm_features has `summary`).
        #[arg(long)]
        llm_summary: bool,
        /// Also have the model extract decisions, pitfalls and preferences as memories
        /// (on by default when llm_features has `extract`).
        #[arg(long)]
        extract: bool,
        /// End nothing; print the requests that would be sent to the model.
        #[arg(long)]
        dry_run: bool,
    },
    /// Have the configured chat model extract decisions, pitfalls and preferences from
    /// session ID into memories (provenance llm_extracted).
    Extract {
        id: String,
        /// Print the request that would be sent to the model, and send nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum NoteCommand {
    /// Set a note (a new version if it exists).
    Set {
        name: String,
        value: String,
        /// user_stated (default), agent_observed, llm_extracted or inferred.
        #[arg(long)]
        provenance: Option<String>,
    },
    /// Print a note's value.
    Get { name: String },
    /// List every note.
    List,
    /// Delete a note.
    Delete { name: String },
}

#[derive(Debug, Subcommand)]
pub enum PatternCommand {
    /// Check, compile and store a pattern set from a JSON or TOML file (told apart by
    /// content: JSON starts with `{`). Engram's form (`name`, patterns as objects) or the
    /// Galaxybrain seed's (`id`, patterns as regex strings).
    Load {
        file: PathBuf,
        /// Let a set named like a built-in one (e.g. pat:security-smells) replace it.
        #[arg(long)]
        replace: bool,
    },
    /// List the built-in and loaded sets.
    List,
    /// Delete a loaded set (a built-in it replaced is back).
    Delete { name: String },
}

#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Print hash64(KEY) in decimal.
    Hash { key: String },
    /// Print the live key whose hash64 is HASH (unsigned, or signed as SQLite shows it);
    /// exit code 1 when no live key has it.
    Lookup {
        #[arg(allow_hyphen_values = true)]
        hash: String,
    },
}

/// `engram model …`.
#[cfg(feature = "neural")]
#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// List the known models, whether their files are present, and where.
    List {
        /// The directory of models (default: model_dir, ENGRAM_MODEL_DIR, else the
        /// data directory's models/).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Download a known model's pinned files, each checked by size and sha256.
    #[cfg(feature = "model-fetch")]
    Fetch {
        /// The model's name or alias (`minilm`).
        name: String,
        /// The directory of models to fetch into (default as for `list`).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Where the files are published.
        #[arg(long, env = "ENGRAM_MODEL_BASE_URL", default_value = engram::embed::neural::fetch::DEFAULT_BASE_URL)]
        base_url: String,
    },
}

/// The definition a code-graph command is about, and how sure its edges must be.
#[derive(Debug, clap::Args)]
pub struct GraphTarget {
    /// The definition: a name (`request`), a qualified name (`Session.request`) or a
    /// sym: key.
    #[arg(conflicts_with = "at", required_unless_present = "at")]
    pub name: Option<String>,
    /// The innermost definition around this place instead, e.g. src/app.py:42.
    #[arg(long, value_name = "PATH:LINE")]
    pub at: Option<String>,
    /// Only edges at least this sure: resolved, imported, same-name (the default) or
    /// ambiguous (everything).
    #[arg(long, default_value = "same-name", value_name = "LEVEL",
          value_parser = ["resolved", "imported", "same-name", "ambiguous"])]
    pub min_confidence: String,
    /// At most this many results.
    #[arg(long, short = 'k', default_value_t = 100)]
    pub limit: usize,
}

/// How far a code-graph walk goes.
#[derive(Debug, clap::Args)]
pub struct GraphDepth {
    /// Steps to follow, 1 to 3.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=3))]
    pub depth: u32,
}
