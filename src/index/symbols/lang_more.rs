//! The tables of Kotlin, Swift, Scala, Bash and Lua: what each one's syntax tree
//! calls a definition, a call and an import (as `lang.rs` does for the first
//! eleven languages). Node kind names are the grammars' own (tree-sitter-kotlin-ng,
//! tree-sitter-swift, tree-sitter-scala, tree-sitter-bash, tree-sitter-lua); the
//! shapes a kind alone does not tell apart (a Kotlin `interface`, a Swift
//! `extension`, a Lua `function M.f`) are read in `extract::definition`.

use super::bindings::Binds;
use super::imports::Style;
use super::lang::Rules;
use super::SymbolKind::*;

pub(super) static KOTLIN: Rules = Rules {
    name: "kotlin",
    language: || tree_sitter_kotlin_ng::LANGUAGE.into(),
    sep: ".",
    defs: &[
        // `interface` and `enum class` too: told apart by their keywords.
        ("class_declaration", Class),
        ("object_declaration", Class),
        ("function_declaration", Function),
        ("type_alias", TypeAlias),
    ],
    containers: &[],
    // The callee has no field: the first named child (`foo`, `this.log`, `a?.b`).
    calls: &[("call_expression", "")],
    imports: &["import"],
    import_style: Style::Java,
    any_comment_is_doc: true,
    binds: Binds::Kotlin,
};

pub(super) static SWIFT: Rules = Rules {
    name: "swift",
    language: || tree_sitter_swift::LANGUAGE.into(),
    sep: ".",
    defs: &[
        // `class`, `struct`, `enum`, `actor` by `declaration_kind`; an `extension`
        // is no symbol but a container of its type's members (below).
        ("class_declaration", Class),
        ("protocol_declaration", Interface),
        ("function_declaration", Function),
        ("protocol_function_declaration", Function),
        ("init_declaration", Function),
        ("deinit_declaration", Function),
        ("typealias_declaration", TypeAlias),
    ],
    containers: &[("class_declaration", "name")],
    calls: &[("call_expression", "")],
    imports: &["import_declaration"],
    import_style: Style::Swift,
    any_comment_is_doc: true,
    binds: Binds::Swift,
};

pub(super) static SCALA: Rules = Rules {
    name: "scala",
    language: || tree_sitter_scala::LANGUAGE.into(),
    sep: ".",
    defs: &[
        ("class_definition", Class),
        ("object_definition", Class),
        ("trait_definition", Trait),
        ("enum_definition", Enum),
        ("function_definition", Function),
        ("function_declaration", Function),
        ("type_definition", TypeAlias),
    ],
    containers: &[],
    calls: &[
        ("call_expression", "function"),
        // `new Foo(…)`: the type is the first named child.
        ("instance_expression", ""),
    ],
    imports: &["import_declaration"],
    import_style: Style::Scala,
    any_comment_is_doc: true,
    binds: Binds::Scala,
};

/// Bash (and the `.sh`/`.zsh` files the index calls `shell`): functions, the
/// commands they run, and `source`/`.` as imports.
pub(super) static BASH: Rules = Rules {
    name: "shell",
    language: || tree_sitter_bash::LANGUAGE.into(),
    sep: ".",
    defs: &[("function_definition", Function)],
    containers: &[],
    calls: &[("command", "name")],
    // `source file` and `. file` are commands: found by `imports::is_import`.
    imports: &[],
    import_style: Style::Shell,
    any_comment_is_doc: true,
    binds: Binds::None,
};

pub(super) static LUA: Rules = Rules {
    name: "lua",
    language: || tree_sitter_lua::LANGUAGE.into(),
    sep: ".",
    defs: &[
        // `function f`, `local function f`, `function M.f`, `function M:f`.
        ("function_declaration", Function),
        // `M.f = function(…) … end`, `local f = function(…) … end`.
        ("assignment_statement", Function),
    ],
    containers: &[],
    calls: &[("function_call", "name")],
    // `local m = require("a.b")`: found by `imports::is_import`.
    imports: &[],
    import_style: Style::Lua,
    any_comment_is_doc: true,
    binds: Binds::None,
};
