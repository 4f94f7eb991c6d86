//! The TeleCoder tool names (seed 000): `telecoder_search_code`,
//! `telecoder_search_symbol`, `telecoder_get_notes`, `telecoder_set_note` and the
//! phase 4.1 names `search_code`, `search_symbol`. Each is listed only under the
//! `compat` profile (`--tools all,compat`), with the seed's own argument names in its
//! schema, and is callable whatever the profile. A call is routed to engram's tool;
//! the seed's argument names are that tool's aliases ([`super::normalise`]), and
//! `repo` is checked there like on every tool.

use super::tools::{opt, req, Profile, ToolSpec, Ty};

const REPO: super::tools::Param = req(
    "repo",
    Ty::Str,
    "The repository: its folder name, path, `.`, `owner/name` of a git remote, an alias or its store name.",
);
const COMPAT: &[Profile] = &[Profile::Compat];

/// The TeleCoder tools, for listing; calls go to [`target`].
pub static COMPAT_TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "telecoder_search_code",
        description: "TeleCoder name of code_search: search the repository's indexed code.",
        params: &[
            REPO,
            req("query", Ty::Str, "What you look for."),
            req("top_k", Ty::Int, "How many results (1-100)."),
        ],
        profiles: COMPAT,
    },
    ToolSpec {
        name: "search_code",
        description: "TeleCoder name of code_search: search the repository's indexed code.",
        params: &[
            REPO,
            req("query", Ty::Str, "What you look for."),
            req("top_k", Ty::Int, "How many results (1-100)."),
        ],
        profiles: COMPAT,
    },
    ToolSpec {
        name: "telecoder_search_symbol",
        description: "TeleCoder name of symbol_search: find a symbol by name.",
        params: &[
            REPO,
            req("symbol", Ty::Str, "The symbol's name or part of it."),
            opt("topK", Ty::Int, "Most results (default 20)."),
        ],
        profiles: COMPAT,
    },
    ToolSpec {
        name: "search_symbol",
        description: "TeleCoder name of symbol_search: find a symbol by name.",
        params: &[
            REPO,
            req("symbol", Ty::Str, "The symbol's name or part of it."),
            opt("topK", Ty::Int, "Most results (default 20)."),
        ],
        profiles: COMPAT,
    },
    ToolSpec {
        name: "telecoder_get_notes",
        description: "TeleCoder name of get_notes: the repository's notes (key/value).",
        params: &[REPO, opt("key", Ty::Str, "One note (default: all).")],
        profiles: COMPAT,
    },
    ToolSpec {
        name: "telecoder_set_note",
        description: "TeleCoder name of set_note: set a repository note (key/value).",
        params: &[
            REPO,
            req("key", Ty::Str, "The note's key."),
            req("value", Ty::Str, "Its value."),
        ],
        profiles: COMPAT,
    },
];

/// The engram tool a TeleCoder name calls.
pub fn target(name: &str) -> Option<&'static str> {
    Some(match name {
        "telecoder_search_code" | "search_code" => "code_search",
        "telecoder_search_symbol" | "search_symbol" => "symbol_search",
        "telecoder_get_notes" => "get_notes",
        "telecoder_set_note" => "set_note",
        _ => return None,
    })
}
