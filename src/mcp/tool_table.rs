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
/// The definition a graph tool is about: by name …
const NAME: Param = opt(
    "name",
    Str,
    "The definition: a name (request), qualified name (Session.request) or sym: key (also symbol). Give this or at.",
)
.aka(&["symbol"]);
/// … or by place.
const AT: Param = opt(
    "at",
    Str,
    "The innermost definition around PATH:LINE instead, e.g. src/app.py:42.",
);
const MIN_CONFIDENCE: Param = opt(
    "min_confidence",
    Str,
    "Only edges at least this sure: resolved, imported, same-name (default) or ambiguous (all). Calls through an object (obj.get()) are matched by name only.",
);
const GRAPH_LIMIT: Param = opt("limit", Int, "Most items (default 20, at most 500).");
/// Ask the configured external MCP servers too.
const PROVIDERS: Param = opt(
    "providers",
    Bool,
    "Also ask the configured external MCP providers (default false): their results are attributed [source: NAME: path:line], sanitised and flagged; one that is slow or down is skipped with a note.",
);
/// The session a coding record belongs to.
const SESSION: Param = opt(
    "session",
    Str,
    "The session id (also session_id; default: the session you started, else the one open).",
)
.aka(&["session_id"]);
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
        description: "Search this repository's indexed code by words, identifiers or meaning; hits carry path, lines and a snippet. Use it to find where something is done before reading or changing code.",
        params: &[req("query", Str, "What you look for, in words or identifiers."), TOP_K,
            opt("lang", Str, "Only this language (rust, python, ...)."), opt("path", Str, "Only paths matching this glob."),
            opt("kind", Str, "Only file, symbol or chunk hits."), PROVIDERS],
        profiles: &[Dflt, Core, Code],
    },
    ToolSpec {
        name: "symbol_search",
        description: "Find a function, class or other symbol by exact, prefix or fuzzy name (Session.request, request, sesreq). Use it when you know or half-know a name.",
        params: &[req("name", Str, "The symbol's name or part of it (also symbol).").aka(&["symbol"]),
            opt("limit", Int, "Most results (default 20); also top_k, topK, k.").aka(&["top_k", "topK", "k"])],
        profiles: &[Dflt, Core, Code],
    },
    ToolSpec {
        name: "find_references",
        description: "Every reference to a definition (calls, constructions, imports) with its place, enclosing symbol and confidence (resolved, imported, same-name, ambiguous). Use it before changing or renaming a function or class.",
        params: &[NAME, AT, MIN_CONFIDENCE, GRAPH_LIMIT],
        profiles: &[Code],
    },
    ToolSpec {
        name: "find_callers",
        description: "The functions and methods that call a definition, up to three steps back, each with its confidence. Use it to see who depends on a function before you change its behaviour.",
        params: &[NAME, AT, opt("depth", Int, "Steps back, 1-3 (default 1)."), MIN_CONFIDENCE, GRAPH_LIMIT],
        profiles: &[Code],
    },
    ToolSpec {
        name: "impact_analysis",
        description: "What depends on a file, folder or definition, transitively: callers and importing files, nearest first, then by fan-in. Use it to judge the blast radius of a change.",
        params: &[req("target", Str, "A repository-relative file or folder, or a definition's name (also path, name).").aka(&["path", "name"]),
            opt("depth", Int, "Steps, 1-3 (default 2)."), MIN_CONFIDENCE, GRAPH_LIMIT],
        profiles: &[Code],
    },
    ToolSpec {
        name: "symbols_overview",
        description: "An outline of a file or folder: its functions, classes and methods with signatures and lines. Use it to learn a file's shape without reading it.",
        params: &[opt("path", Str, "A repository-relative file or folder (default: the whole repository)."), GRAPH_LIMIT],
        profiles: &[Code],
    },
    ToolSpec {
        name: "jit_index_file",
        description: "Bring the index up to date after you created or changed a file. Use it when code_search must see an edit at once.",
        params: &[req("path", Str, "The file, relative to the repository root.")],
        profiles: &[Code],
    },
    ToolSpec {
        name: "jit_index_directory",
        description: "Index a directory of the repository incrementally (default: all of it). Use it once in a repository that was never indexed.",
        params: &[opt("path", Str, "A directory relative to the repository root (default: the root).")],
        profiles: &[Code],
    },
    ToolSpec {
        name: "jit_search",
        description: "Index what changed, then search code. Use it instead of code_search right after editing files.",
        params: &[req("query", Str, "What you look for."), opt("path", Str, "Only paths matching this glob."), TOP_K],
        profiles: &[Code],
    },
    ToolSpec {
        name: "register_file",
        description: "Index one file (the same as jit_index_file). Use it for a file you want found later.",
        params: &[req("path", Str, "The file, relative to the repository root.")],
        profiles: &[Code],
    },
    ToolSpec {
        name: "memory_write",
        description: "Remember a fact, finding or preference for later sessions. Use it whenever you learn something about this repository you would want to know next time.",
        params: &[req("text", Str, "What to remember, self-contained."), opt("tags", StrList, "Tags."),
            opt("metadata", Object, "Free-form metadata (an object) kept with it.")],
        profiles: &[Dflt, Core, Memory],
    },
    ToolSpec {
        name: "memory_search",
        description: "Search what was remembered about this repository. Use it before debugging or designing a change, and whenever earlier decisions, constraints or pitfalls come up.",
        params: &[req("query", Str, "What you look for."), TOP_K],
        profiles: &[Dflt, Core, Memory],
    },
    ToolSpec {
        name: "memory_list_threads",
        description: "List coding sessions, newest first, with their descriptions and summaries. Use it to see what was worked on recently.",
        params: &[opt("limit", Int, "Most sessions (default 20).")],
        profiles: &[Memory],
    },
    ToolSpec {
        name: "memory_write_structured",
        description: "Write a memory with its task, insight and context types so it is found in the right situations. Use it when a decision, constraint, pitfall, assumption, tradeoff or todo appears.",
        params: &[req("text", Str, "The memory, self-contained."),
            opt("task", Str, "Task type: debug, bugfix, implement_feature, refactor, ..."),
            opt("insights", StrList, "Insight types: decision, constraint, assumption, pitfall, tradeoff, invariant, todo, context."),
            opt("contexts", StrList, "Context types: frontend, backend, auth, billing, ui, infra, devops, data, testing, api (also context).").aka(&["context"]),
            opt("tags", StrList, "Tags."),
            opt("symbols", StrList, "sym: keys of code it is about (also symbol_keys; 64-bit key hashes are resolved).").aka(&["symbol_keys"]),
            opt("provenance", Str, "user_stated, agent_observed, llm_extracted or inferred."),
            opt("session", Str, "The session id (also session_id).").aka(&["session_id"]),
            opt("metadata", Object, "Free-form metadata (an object).")],
        profiles: &[Memory],
    },
    ToolSpec {
        name: "memory_search_structured",
        description: "Search memories with filters (task, insight and context types, tags, kind, time, session); without a query, the filtered entries newest first. Use it to find e.g. every pitfall about auth before touching auth code.",
        params: &[opt("query", Str, "What you look for (default: none, filters only)."), TOP_K, MEM_FILTERS[0], MEM_FILTERS[1], MEM_FILTERS[2],
            MEM_FILTERS[3], MEM_FILTERS[4], MEM_FILTERS[5], MEM_FILTERS[6]],
        profiles: &[Memory],
    },
    ToolSpec {
        name: "memory_get",
        description: "Read one memory by id (mem:xxxxxxxx). Use it for a memory cited in a search result or a context block.",
        params: &[req("id", Str, "The memory id (also memory_id).").aka(&["memory_id"])],
        profiles: &[Core, Memory],
    },
    ToolSpec {
        name: "memory_list_structured",
        description: "List memories newest first, filtered and paged. Use it to review what is known.",
        params: &[opt("limit", Int, "Page size (default 20)."), opt("offset", Int, "Entries to skip."), MEM_FILTERS[0],
            MEM_FILTERS[1], MEM_FILTERS[2], MEM_FILTERS[3], MEM_FILTERS[4], MEM_FILTERS[5], MEM_FILTERS[6]],
        profiles: &[Memory],
    },
    ToolSpec {
        name: "pattern_load",
        description: "Load (or replace) a named pattern set as TOML, JSON or arguments (id, patterns, description, tags). Use it before scanning code or memories for your own patterns.",
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
        description: "Scan stored code, or one key, with a pattern set (secrets, security-smells, debug-leftovers or a loaded one). Use it before a release or a review.",
        params: &[req("set", Str, "The pattern set name (also pattern_set_id).").aka(&["pattern_set_id"]),
            opt("key", Str, "Only this key (a file: key scans the file's chunks), or its 64-bit key hash (also target_key; default: all indexed code).").aka(&["target_key"]),
            LIMIT],
        profiles: &[],
    },
    ToolSpec {
        name: "pattern_scan_memories",
        description: "Scan stored memories with a pattern set. Use it e.g. to check that no secret was written into a memory.",
        params: &[req("set", Str, "The pattern set name (also pattern_set_id).").aka(&["pattern_set_id"]),
            opt("task", Str, "Only memories of this task type."),
            opt("context", StrList, "Only memories with all these context types (one or a list)."), LIMIT],
        profiles: &[],
    },
    ToolSpec {
        name: "pattern_list",
        description: "List the pattern sets available, built-in and loaded. Use it to choose a set for pattern_scan.",
        params: &[LIMIT],
        profiles: &[],
    },
    ToolSpec {
        name: "pattern_delete",
        description: "Delete a pattern set loaded with pattern_load (a built-in set it replaced is back). Use it to remove a set you no longer need.",
        params: &[req("set", Str, "The set's name, pat:slug or slug (also pattern_set_id, id, name).").aka(&["pattern_set_id", "id", "name"])],
        profiles: &[],
    },
    ToolSpec {
        name: "audit_read",
        description: "Read this repository's audit trail, newest first: every tool and chat-model call with what it asked (redacted), its result count, flags and errors. Use it to review what agents did.",
        params: &[opt("since", Str, "Only events since: Unix ms or an age like 7d, 12h (default: all)."),
            opt("limit", Int, "Most events, the newest (1-500, default 20).")],
        profiles: &[],
    },
    ToolSpec {
        name: "get_notes",
        description: "Read the repository's notes (name and value): conventions, commands, contacts. Use it at the start of a session.",
        params: &[opt("name", Str, "One note's name (also key; default: all notes).").aka(&["key"]), LIMIT],
        profiles: &[Dflt, Core, Memory],
    },
    ToolSpec {
        name: "set_note",
        description: "Set a repository note (name and value). Use it when the user states a convention, a command (such as the test command) or a fact to keep.",
        params: &[req("name", Str, "The note's name (also key).").aka(&["key"]), req("value", Str, "Its value.")],
        profiles: &[Dflt, Core, Memory],
    },
    ToolSpec {
        name: "coding_start_session",
        description: "Start a coding session when you begin a task; changes, errors and decisions you record afterwards join it without an id. End it with coding_end_session.",
        params: &[req("description", Str, "What the session is for."), opt("tags", StrList, "Tags.")],
        profiles: &[Dflt, Coding],
    },
    ToolSpec {
        name: "coding_end_session",
        description: "End the coding session when the task is done (without an id: the one you started, else the one open). Returns its summary with counts of files, errors and decisions.",
        params: &[opt("id", Str, "The session id (also session_id; default: the session you started, else the one open).").aka(&["session_id"]),
            opt("success", Bool, "Whether the goal was reached (default true)."),
            opt("summary", Str, "Your own summary, stored beside the generated one.")],
        profiles: &[Dflt, Coding],
    },
    ToolSpec {
        name: "coding_track_file_change",
        description: "Record a file change and why it was made. Use it after each meaningful edit.",
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
        description: "Record an error with its solution once known; a recurrence is counted, not duplicated. Use it whenever a build, test or runtime error costs you time.",
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
        description: "Record a design decision with its rationale and the alternatives considered. Use it whenever you make a choice someone might later question.",
        params: &[req("decision", Str, "The decision."), opt("rationale", Str, "Why."),
            opt("alternatives", StrList, "Alternatives considered."), opt("impact", Str, "What it affects."),
            opt("tags", StrList, "Tags."), opt("related_files", StrList, "Files it concerns."),
            opt("confidence", Num, "0 to 1."), opt("reviewed", Bool, "Whether someone reviewed it."),
            SESSION],
        profiles: &[Dflt, Coding],
    },
    ToolSpec {
        name: "coding_search_errors",
        description: "Search past errors like one you face, solved ones first. Use it at the start of debugging, before investigating.",
        params: &[req("query", Str, "The error message or type."), TOP_K],
        profiles: &[Coding],
    },
    ToolSpec {
        name: "coding_get_project_context",
        description: "A compact overview: recent sessions, open pitfalls, constraints and todos, hot files, unresolved errors, key decisions. Use it first in a new session.",
        params: &[opt("budget", Int, "Most bytes of the whole reply, JSON included (default 4000, at least 256)."),
            opt("focus", Str, "What the session is about: memories matching it are put first."),
            opt("compress", Str, "brief, detailed or comprehensive: the configured chat model compresses the context to the budget (without one, the full context is returned with a warning).")],
        profiles: &[Core, Coding],
    },
    ToolSpec {
        name: "coding_suggest_solution",
        description: "Suggest a fix for a recorded error, from the configured chat model given similar solved errors, else the most similar solved error's solution. Use it after coding_record_error when the fix is not obvious.",
        params: &[req("error_id", Str, "The error's id (mem:…), as coding_record_error returned it (also id).").aka(&["id"]), opt("dry_run", Bool, "Return the exact requests the chat model would be sent, and send nothing (default false).")],
        profiles: &[Coding],
    },
    ToolSpec {
        name: "coding_analyze_patterns",
        description: "Patterns in the recorded work: recurring errors, files changed together, hot files, decision tags over time. Use it when planning a refactor or a review.",
        params: &[],
        profiles: &[Coding],
    },
    ToolSpec {
        name: "enrich_prompt",
        description: "Relevant code, notes and memories for a request, each attributed and sanitised, the whole reply within a byte budget. Use it with the user's request at the start of a task.",
        params: &[req("prompt", Str, "The user's request."), opt("budget", Int, "Most bytes of the whole reply, JSON included (default 8000, at least 256, at most the total cap)."), PROVIDERS],
        profiles: &[Dflt, Core, Code, Memory],
    },
];
