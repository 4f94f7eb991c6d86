//! The main table of MCP tools: each tool's name, its description (written for the
//! agent choosing one), its parameters and the profiles that list it.
//!
//! Data only: the types, the schemas made from them and the argument checks are in
//! `tools.rs`; the seeds' small tools and the TeleCoder names have their own tables
//! (`extra.rs`, `compat.rs`).

use super::tools::{opt, req, Param, Profile, ToolSpec, Ty};

#[allow(non_upper_case_globals)]
const Core: Profile = Profile::Core;
#[allow(non_upper_case_globals)]
const Code: Profile = Profile::Code;
#[allow(non_upper_case_globals)]
const Memory: Profile = Profile::Memory;
#[allow(non_upper_case_globals)]
const Coding: Profile = Profile::Coding;
/// Listed by default (see [`Profile::Default`]).
#[allow(non_upper_case_globals)]
const Dflt: Profile = Profile::Default;
use Ty::*;

const TOP_K: Param = opt(
    "top_k",
    Int,
    "How many results (1-100, default 10); also limit, k.",
)
.aka(&["limit", "k", "topK"]);
/// How many items a list tool returns.
const LIMIT: Param = opt(
    "limit",
    Int,
    "Most items (default 20); a reply that leaves some out says truncated and omitted.",
);
/// Ask the configured external MCP servers too.
const PROVIDERS: Param = opt(
    "providers",
    Bool,
    "Also ask the configured external MCP providers (default false): their results are attributed [source: NAME: path:line], sanitised and flagged; one that is slow or down is skipped with a note.",
);
/// The session a record belongs to.
const SESSION: Param =
    opt("session", Str, "The session id (also session_id).").aka(&["session_id"]);
const MEM_FILTERS: [Param; 7] = [
    opt(
        "task",
        Str,
        "Only entries of this task type (debug, refactor, ...).",
    ),
    opt(
        "insights",
        StrList,
        "Only entries with all these insight types (decision, pitfall, ...).",
    ),
    opt(
        "contexts",
        StrList,
        "Only entries with all these context types (backend, auth, ...); also context.",
    )
    .aka(&["context"]),
    opt("tags", StrList, "Only entries with all these tags."),
    opt(
        "kind",
        Str,
        "Only entries of this kind: memory, note, session, change, error, decision.",
    ),
    opt(
        "since",
        Str,
        "Only entries updated since: Unix ms or an age like 7d, 12h.",
    ),
    opt("session", Str, "Only entries of this coding session id.").aka(&["session_id"]),
];

/// Every tool engram serves.
pub static TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "code_search",
        description: "Search the indexed code of this repository (keyword, meaning and symbol names fused). Call it whenever you need to find where something is done before reading or changing code. Returns attributed hits with path, lines and a snippet.",
        params: &[req("query", Str, "What you look for, in words or identifiers."), TOP_K,
            opt("lang", Str, "Only this language (rust, python, ...)."), opt("path", Str, "Only paths matching this glob."),
            opt("kind", Str, "Only file, symbol or chunk hits."), PROVIDERS],
        profiles: &[Dflt, Core, Code],
    },
    ToolSpec {
        name: "symbol_search",
        description: "Find a function, method, class or other symbol by name: exact (Session.request), prefix (request) or fuzzy (sesreq). Call it when you know or half-know a name.",
        params: &[req("name", Str, "The symbol's name or part of it (also symbol).").aka(&["symbol"]),
            opt("limit", Int, "Most results (default 20); also top_k, topK, k.").aka(&["top_k", "topK", "k"])],
        profiles: &[Dflt, Core, Code],
    },
    ToolSpec {
        name: "jit_index_file",
        description: "Bring the index up to date after you created or changed a file, so code_search sees it at once. Secrets are redacted before anything is stored.",
        params: &[req("path", Str, "The file, relative to the repository root.")],
        profiles: &[Code],
    },
    ToolSpec {
        name: "jit_index_directory",
        description: "Index (incrementally) a directory of the repository, by default all of it. Call it once at the start of work in a repository that was never indexed.",
        params: &[opt("path", Str, "A directory relative to the repository root (default: the root).")],
        profiles: &[Code],
    },
    ToolSpec {
        name: "jit_search",
        description: "Index what changed, then search: use it instead of code_search right after editing files.",
        params: &[req("query", Str, "What you look for."), opt("path", Str, "Only paths matching this glob."), TOP_K],
        profiles: &[Code],
    },
    ToolSpec {
        name: "register_file",
        description: "Register one file of the repository with the index (same as jit_index_file); use it for files you want found later.",
        params: &[req("path", Str, "The file, relative to the repository root.")],
        profiles: &[Code],
    },
    ToolSpec {
        name: "memory_write",
        description: "Remember something for later sessions: a fact, a finding, a preference. Write one whenever you learn something about this repository that you would want to know next time.",
        params: &[req("text", Str, "What to remember, self-contained."), opt("tags", StrList, "Tags."),
            opt("metadata", Object, "Free-form metadata (an object) kept with it.")],
        profiles: &[Dflt, Core, Memory],
    },
    ToolSpec {
        name: "memory_search",
        description: "Search what was remembered about this repository. Call it at the start of debugging, before designing a change, and whenever prior decisions, constraints or pitfalls are mentioned.",
        params: &[req("query", Str, "What you look for."), TOP_K],
        profiles: &[Dflt, Core, Memory],
    },
    ToolSpec {
        name: "memory_list_threads",
        description: "List coding sessions (threads of work) with their descriptions and summaries, newest first, to see what was worked on recently.",
        params: &[opt("limit", Int, "Most sessions (default 20).")],
        profiles: &[Memory],
    },
    ToolSpec {
        name: "memory_write_structured",
        description: "Write a typed memory. Call it when a decision, constraint, pitfall, assumption, tradeoff or todo appears in the conversation, with its task, insight and context types so it is found in the right situations.",
        params: &[req("text", Str, "The memory, self-contained."),
            opt("task", Str, "Task type: debug, bugfix, implement_feature, refactor, ..."),
            opt("insights", StrList, "Insight types: decision, constraint, assumption, pitfall, tradeoff, invariant, todo, context."),
            opt("contexts", StrList, "Context types: frontend, backend, auth, billing, ui, infra, devops, data, testing, api (also context).").aka(&["context"]),
            opt("tags", StrList, "Tags."),
            opt("symbols", StrList, "sym: keys of code it is about (also symbol_keys; 64-bit key hashes are resolved).").aka(&["symbol_keys"]),
            opt("provenance", Str, "user_stated, agent_observed, llm_extracted or inferred."),
            SESSION, opt("metadata", Object, "Free-form metadata (an object).")],
        profiles: &[Memory],
    },
    ToolSpec {
        name: "memory_search_structured",
        description: "Search memories with filters (task, insight and context types, tags, kind, time, session). Call it to find e.g. all pitfalls about auth before touching auth code. Without a query it returns the filtered entries newest first.",
        params: &[opt("query", Str, "What you look for (default: none, filters only)."), TOP_K, MEM_FILTERS[0], MEM_FILTERS[1], MEM_FILTERS[2],
            MEM_FILTERS[3], MEM_FILTERS[4], MEM_FILTERS[5], MEM_FILTERS[6]],
        profiles: &[Memory],
    },
    ToolSpec {
        name: "memory_get",
        description: "Read one memory by id (mem:xxxxxxxx), e.g. one cited in a search result or a context block.",
        params: &[req("id", Str, "The memory id (also memory_id).").aka(&["memory_id"])],
        profiles: &[Core, Memory],
    },
    ToolSpec {
        name: "memory_list_structured",
        description: "List memories newest first with filters and pagination, to review what is known.",
        params: &[opt("limit", Int, "Page size (default 20)."), opt("offset", Int, "Entries to skip."), MEM_FILTERS[0],
            MEM_FILTERS[1], MEM_FILTERS[2], MEM_FILTERS[3], MEM_FILTERS[4], MEM_FILTERS[5], MEM_FILTERS[6]],
        profiles: &[Memory],
    },
    ToolSpec {
        name: "pattern_load",
        description: "Load (or replace) a named pattern set, to scan stored code or memories for it later: as TOML text, as JSON or TOML text (detected), or as arguments (id, patterns, description, tags).",
        params: &[opt("toml", Str, "The pattern set as TOML (name, description, [[patterns]] with id, regex)."),
            opt("definition", Str, "The pattern set as JSON or TOML text (detected by content; id or name, patterns as regex strings or objects)."),
            opt("id", Str, "The set's name, pat:slug or slug (also pattern_set_id, name).").aka(&["pattern_set_id", "name"]),
            opt("patterns", StrList, "The regexes (with id)."),
            opt("description", Str, "What the set finds (with id)."), opt("tags", StrList, "Tags (with id)."),
            opt("replace", Bool, "Replace a built-in set of the same name (default false).")],
        profiles: &[],
    },
    ToolSpec {
        name: "pattern_scan",
        description: "Scan stored code (or one key) with a pattern set: secrets, security-smells, debug-leftovers or a loaded one. Call it before a release or a review.",
        params: &[req("set", Str, "The pattern set name (also pattern_set_id).").aka(&["pattern_set_id"]),
            opt("key", Str, "Only this key (a file: key scans the file's chunks), or its 64-bit key hash (also target_key; default: all indexed code).").aka(&["target_key"]),
            LIMIT],
        profiles: &[],
    },
    ToolSpec {
        name: "pattern_scan_memories",
        description: "Scan stored memories with a pattern set, e.g. to check no secret was written into a memory.",
        params: &[req("set", Str, "The pattern set name (also pattern_set_id).").aka(&["pattern_set_id"]),
            opt("task", Str, "Only memories of this task type."),
            opt("context", StrList, "Only memories with all these context types (one or a list)."), LIMIT],
        profiles: &[],
    },
    ToolSpec {
        name: "pattern_list",
        description: "List the pattern sets available (built-in and loaded).",
        params: &[LIMIT],
        profiles: &[],
    },
    ToolSpec {
        name: "pattern_delete",
        description: "Delete a pattern set loaded with pattern_load; a built-in set it replaced is back. Returns whether there was one.",
        params: &[req("set", Str, "The set's name, pat:slug or slug (also pattern_set_id, id, name).").aka(&["pattern_set_id", "id", "name"])],
        profiles: &[],
    },
    ToolSpec {
        name: "audit_read",
        description: "Read this repository's audit trail: every tool call and chat-model call, newest first, with what it asked (redacted), how many results, flags and errors.",
        params: &[opt("since", Str, "Only events since: Unix ms or an age like 7d, 12h (default: all)."),
            opt("limit", Int, "Most events, the newest (1-500, default 20).")],
        profiles: &[],
    },
    ToolSpec {
        name: "get_notes",
        description: "Read the repository's notes (key/value, human-editable): conventions, commands, contacts. Call it at the start of a session.",
        params: &[opt("name", Str, "One note's name (also key; default: all notes).").aka(&["key"]), LIMIT],
        profiles: &[Dflt, Core, Memory],
    },
    ToolSpec {
        name: "set_note",
        description: "Set a repository note (key/value), e.g. the test command or a convention the user stated.",
        params: &[req("name", Str, "The note's name (also key).").aka(&["key"]), req("value", Str, "Its value.")],
        profiles: &[Dflt, Core, Memory],
    },
    ToolSpec {
        name: "coding_start_session",
        description: "Start a coding session when you begin a task; record changes, errors and decisions under its id, and end it when done.",
        params: &[req("description", Str, "What the session is for."), opt("tags", StrList, "Tags.")],
        profiles: &[Dflt, Coding],
    },
    ToolSpec {
        name: "coding_end_session",
        description: "End a coding session; returns a summary of what it recorded (files, errors fixed, decisions) and its statistics. Without an id it ends the one active session.",
        params: &[opt("id", Str, "The session id (also session_id; default: the one active session).").aka(&["session_id"]),
            opt("success", Bool, "Whether the goal was reached (default true)."),
            opt("summary", Str, "Your own summary, stored beside the generated one.")],
        profiles: &[Dflt, Coding],
    },
    ToolSpec {
        name: "coding_track_file_change",
        description: "Record a file change and, above all, why it was made. Call it after each meaningful edit.",
        params: &[req("path", Str, "The file (also file_path).").aka(&["file_path"]),
            req("action", Str, "create, edit, delete, rename, refactor or test."),
            req("reason", Str, "Why the change was made."),
            opt("diff_summary", Str, "What changed, briefly (also diff).").aka(&["diff"]),
            opt("related_files", StrList, "Files changed with it."),
            opt("start_line", Int, "First line changed (line_range [a, b] or \"a,b\" sets both)."),
            opt("end_line", Int, "Last line changed."), SESSION],
        profiles: &[Dflt, Coding],
    },
    ToolSpec {
        name: "coding_record_error",
        description: "Record an error met while coding, with its solution once known. A recurring error increases its frequency instead of duplicating. Call it whenever a build, test or runtime error costs you time.",
        params: &[req("error_type", Str, "The error's type or class."), req("message", Str, "The message."),
            opt("stack_trace", Str, "The stack trace."),
            opt("file", Str, "Where it happened (also file_path).").aka(&["file_path"]),
            opt("line", Int, "Line (also line_number).").aka(&["line_number"]),
            opt("solution", Str, "How it was fixed."), opt("resolved", Bool, "Whether it is fixed."),
            opt("screenshot", Str, "A screenshot path (also screenshot_path; screenshot_base64 is kept as its size and hash only).").aka(&["screenshot_path"]),
            SESSION, opt("resolved_by", Str, "The change (mem: id) that fixed it."),
            opt("tags", StrList, "Tags.")],
        profiles: &[Dflt, Coding],
    },
    ToolSpec {
        name: "coding_record_decision",
        description: "Record a design decision with its rationale and the alternatives considered. Call it whenever a choice is made that someone might later question.",
        params: &[req("decision", Str, "The decision."), opt("rationale", Str, "Why."),
            opt("alternatives", StrList, "Alternatives considered."), opt("impact", Str, "What it affects."),
            opt("tags", StrList, "Tags."), opt("related_files", StrList, "Files it concerns."),
            opt("confidence", Num, "0 to 1."), opt("reviewed", Bool, "Whether someone reviewed it."),
            SESSION],
        profiles: &[Dflt, Coding],
    },
    ToolSpec {
        name: "coding_search_errors",
        description: "Search past errors similar to one you face; solutions come first. Call it at the start of debugging, before investigating.",
        params: &[req("query", Str, "The error message or type."), TOP_K],
        profiles: &[Coding],
    },
    ToolSpec {
        name: "coding_get_project_context",
        description: "A compact overview for a new session: recent sessions, open pitfalls, constraints and todos, most-changed files, unresolved errors, key decisions. Call it first in a new session.",
        params: &[opt("budget", Int, "Most bytes (default 4000)."),
            opt("focus", Str, "What the session is about: memories matching it are put first."),
            opt("compress", Str, "brief, detailed or comprehensive: the configured chat model compresses the context to the budget (without one, the full context is returned with a warning).")],
        profiles: &[Core, Coding],
    },
    ToolSpec {
        name: "coding_suggest_solution",
        description: "Suggest a solution for a recorded error: from the configured chat model given similar past errors and their solutions, else the most similar solved past error's solution. Returns a solution, a confidence (0-1, when the model states one) and alternatives. Call it after coding_record_error when the fix is not obvious.",
        params: &[req("error_id", Str, "The error's id (mem:…), as coding_record_error returned it (also id).").aka(&["id"]), opt("dry_run", Bool, "Return the exact requests the chat model would be sent, and send nothing (default false).")],
        profiles: &[Coding],
    },
    ToolSpec {
        name: "coding_analyze_patterns",
        description: "Patterns in the recorded work: recurring error types, files that change together, hot files, decision tags over time.",
        params: &[],
        profiles: &[Coding],
    },
    ToolSpec {
        name: "enrich_prompt",
        description: "The context block to put before a prompt: relevant code, notes and memories, each attributed [source: path:line] or [memory: mem:id], sanitised and within a byte budget. Call it with the user's request at the start of a task.",
        params: &[req("prompt", Str, "The user's request."), opt("budget", Int, "Most bytes (default 8000, at most the total cap)."), PROVIDERS],
        profiles: &[Dflt, Core, Code, Memory],
    },
];
