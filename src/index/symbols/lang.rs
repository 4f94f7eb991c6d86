//! What each language's syntax tree calls a definition, a call and an import.
//!
//! One table per language, read by the extractor; adding a language is adding a
//! table (and its grammar crate). Node kind names are the grammars' own — see each
//! grammar's `node-types.json`.

use tree_sitter::Language;

use super::bindings::Binds;
use super::imports::Style;
use super::lang_more::{BASH, KOTLIN, LUA, SCALA, SWIFT};
use super::SymbolKind;

/// How to read one language's tree.
pub(super) struct Rules {
    /// The language's name (as [`crate::index::language`] gives it): one parser per
    /// name per thread.
    pub name: &'static str,
    pub language: fn() -> Language,
    /// Joins a parent's and a child's names (`::` in Rust and C++, `.` elsewhere).
    pub sep: &'static str,
    /// Definition node kinds and what they define.
    pub defs: &'static [(&'static str, SymbolKind)],
    /// Nodes that give their contents a parent without being a symbol themselves
    /// (Rust's `impl Foo`), named by the given field.
    pub containers: &'static [(&'static str, &'static str)],
    /// Call node kinds and the field holding what is called (`""`: the first named
    /// child, for grammars that give the callee no field).
    pub calls: &'static [(&'static str, &'static str)],
    /// Import node kinds (their text is kept, one line each).
    pub imports: &'static [&'static str],
    /// How the import statements read (what each binds).
    pub import_style: Style,
    /// Whether any comment above a definition is its doc (false: only doc-comment
    /// forms, as in Rust where `//` is not documentation).
    pub any_comment_is_doc: bool,
    /// How a name is declared or constructed as a type (receivers of method calls).
    pub binds: Binds,
}

use SymbolKind::*;

const BRACE_CALLS: &[(&str, &str)] = &[("call_expression", "function")];

static RUST: Rules = Rules {
    name: "rust",
    language: || tree_sitter_rust::LANGUAGE.into(),
    sep: "::",
    defs: &[
        ("function_item", Function),
        ("function_signature_item", Function),
        ("struct_item", Struct),
        ("union_item", Struct),
        ("enum_item", Enum),
        ("trait_item", Trait),
        ("mod_item", Module),
        ("const_item", Constant),
        ("static_item", Constant),
        ("type_item", TypeAlias),
        ("macro_definition", Function),
    ],
    containers: &[("impl_item", "type")],
    calls: &[
        ("call_expression", "function"),
        ("macro_invocation", "macro"),
        // `ast::Concat { span, asts }`: a struct literal constructs its type.
        ("struct_expression", "name"),
    ],
    imports: &["use_declaration", "extern_crate_declaration"],
    import_style: Style::Rust,
    any_comment_is_doc: false,
    binds: Binds::Rust,
};

static PYTHON: Rules = Rules {
    name: "python",
    language: || tree_sitter_python::LANGUAGE.into(),
    sep: ".",
    defs: &[
        ("function_definition", Function),
        ("class_definition", Class),
        ("assignment", Constant),
    ],
    containers: &[],
    calls: &[("call", "function")],
    imports: &["import_statement", "import_from_statement"],
    import_style: Style::Python,
    any_comment_is_doc: true,
    binds: Binds::Python,
};

static GO: Rules = Rules {
    name: "go",
    language: || tree_sitter_go::LANGUAGE.into(),
    sep: ".",
    defs: &[
        ("function_declaration", Function),
        ("method_declaration", Method),
        ("type_spec", Struct),
        ("type_alias", TypeAlias),
        ("const_spec", Constant),
    ],
    containers: &[],
    calls: BRACE_CALLS,
    imports: &["import_spec"],
    import_style: Style::Go,
    any_comment_is_doc: true,
    binds: Binds::Go,
};

static JAVASCRIPT: Rules = Rules {
    name: "javascript",
    language: || tree_sitter_javascript::LANGUAGE.into(),
    sep: ".",
    defs: &[
        ("function_declaration", Function),
        ("generator_function_declaration", Function),
        ("class_declaration", Class),
        ("method_definition", Method),
        ("variable_declarator", Function),
    ],
    containers: &[],
    calls: &[
        ("call_expression", "function"),
        ("new_expression", "constructor"),
    ],
    imports: &["import_statement"],
    import_style: Style::Ecma,
    any_comment_is_doc: true,
    binds: Binds::Ecma,
};

const TS_DEFS: &[(&str, SymbolKind)] = &[
    ("function_declaration", Function),
    ("generator_function_declaration", Function),
    ("function_signature", Function),
    ("class_declaration", Class),
    ("abstract_class_declaration", Class),
    ("method_definition", Method),
    ("method_signature", Method),
    ("abstract_method_signature", Method),
    ("variable_declarator", Function),
    ("interface_declaration", Interface),
    ("type_alias_declaration", TypeAlias),
    ("enum_declaration", Enum),
    ("internal_module", Module),
    ("module", Module),
];

static TYPESCRIPT: Rules = Rules {
    name: "typescript",
    language: || tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
    sep: ".",
    defs: TS_DEFS,
    containers: &[],
    calls: &[
        ("call_expression", "function"),
        ("new_expression", "constructor"),
    ],
    imports: &["import_statement"],
    import_style: Style::Ecma,
    any_comment_is_doc: true,
    binds: Binds::Ecma,
};

static TSX: Rules = Rules {
    name: "tsx",
    language: || tree_sitter_typescript::LANGUAGE_TSX.into(),
    ..TYPESCRIPT
};

static JAVA: Rules = Rules {
    name: "java",
    language: || tree_sitter_java::LANGUAGE.into(),
    sep: ".",
    defs: &[
        ("class_declaration", Class),
        ("interface_declaration", Interface),
        ("enum_declaration", Enum),
        ("record_declaration", Class),
        ("annotation_type_declaration", Interface),
        ("method_declaration", Method),
        ("constructor_declaration", Method),
        ("field_declaration", Constant),
    ],
    containers: &[],
    calls: &[
        ("method_invocation", "name"),
        ("object_creation_expression", "type"),
    ],
    imports: &["import_declaration"],
    import_style: Style::Java,
    any_comment_is_doc: true,
    binds: Binds::Java,
};

const C_DEFS: &[(&str, SymbolKind)] = &[
    ("function_definition", Function),
    ("struct_specifier", Struct),
    ("union_specifier", Struct),
    ("enum_specifier", Enum),
    ("preproc_def", Constant),
    ("preproc_function_def", Function),
];

static C: Rules = Rules {
    name: "c",
    language: || tree_sitter_c::LANGUAGE.into(),
    sep: "::",
    defs: C_DEFS,
    containers: &[],
    calls: BRACE_CALLS,
    imports: &["preproc_include"],
    import_style: Style::C,
    any_comment_is_doc: true,
    binds: Binds::None,
};

static CPP: Rules = Rules {
    name: "cpp",
    language: || tree_sitter_cpp::LANGUAGE.into(),
    sep: "::",
    defs: &[
        ("function_definition", Function),
        ("struct_specifier", Struct),
        ("union_specifier", Struct),
        ("class_specifier", Class),
        ("enum_specifier", Enum),
        ("namespace_definition", Module),
        ("preproc_def", Constant),
        ("preproc_function_def", Function),
    ],
    containers: &[],
    calls: BRACE_CALLS,
    imports: &["preproc_include", "using_declaration"],
    import_style: Style::C,
    any_comment_is_doc: true,
    binds: Binds::None,
};

static CSHARP: Rules = Rules {
    name: "csharp",
    language: || tree_sitter_c_sharp::LANGUAGE.into(),
    sep: ".",
    defs: &[
        ("class_declaration", Class),
        ("struct_declaration", Struct),
        ("record_declaration", Class),
        ("interface_declaration", Interface),
        ("enum_declaration", Enum),
        ("namespace_declaration", Module),
        ("file_scoped_namespace_declaration", Module),
        ("method_declaration", Method),
        ("constructor_declaration", Method),
        ("local_function_statement", Function),
    ],
    containers: &[],
    calls: &[
        ("invocation_expression", "function"),
        ("object_creation_expression", "type"),
    ],
    imports: &["using_directive"],
    import_style: Style::CSharp,
    any_comment_is_doc: true,
    binds: Binds::None,
};

static RUBY: Rules = Rules {
    name: "ruby",
    language: || tree_sitter_ruby::LANGUAGE.into(),
    sep: ".",
    defs: &[
        ("method", Function),
        ("singleton_method", Method),
        ("class", Class),
        ("module", Module),
        ("assignment", Constant),
    ],
    containers: &[],
    calls: &[("call", "method")],
    imports: &[],
    import_style: Style::None,
    any_comment_is_doc: true,
    binds: Binds::None,
};

static PHP: Rules = Rules {
    name: "php",
    language: || tree_sitter_php::LANGUAGE_PHP.into(),
    sep: ".",
    defs: &[
        ("function_definition", Function),
        ("class_declaration", Class),
        ("interface_declaration", Interface),
        ("trait_declaration", Trait),
        ("enum_declaration", Enum),
        ("method_declaration", Method),
        ("namespace_definition", Module),
    ],
    containers: &[],
    calls: &[
        ("function_call_expression", "function"),
        ("member_call_expression", "name"),
        ("scoped_call_expression", "name"),
        ("object_creation_expression", "class"),
    ],
    imports: &["namespace_use_declaration"],
    import_style: Style::Php,
    any_comment_is_doc: true,
    binds: Binds::None,
};

/// The rules of a language as [`crate::index::language`] names it.
pub(super) fn rules(lang: &str) -> Option<&'static Rules> {
    Some(match lang {
        "rust" => &RUST,
        "python" => &PYTHON,
        "go" => &GO,
        "javascript" => &JAVASCRIPT,
        "typescript" => &TYPESCRIPT,
        "tsx" => &TSX,
        "java" => &JAVA,
        "c" => &C,
        "cpp" => &CPP,
        "csharp" => &CSHARP,
        "ruby" => &RUBY,
        "php" => &PHP,
        "kotlin" => &KOTLIN,
        "swift" => &SWIFT,
        "scala" => &SCALA,
        "shell" => &BASH,
        "lua" => &LUA,
        _ => return None,
    })
}

/// Node kinds that add a branch to a function's complexity, across languages.
pub(super) const BRANCHES: &[&str] = &[
    "if_statement",
    "if_expression",
    "if_let_expression",
    "elif_clause",
    "else_if_clause",
    "for_statement",
    "for_in_statement",
    "for_expression",
    "enhanced_for_statement",
    "foreach_statement",
    "while_statement",
    "while_expression",
    "do_statement",
    "loop_expression",
    "match_arm",
    "case_clause",
    "switch_case",
    "switch_section",
    "expression_case",
    "type_case",
    "communication_case",
    "case_statement",
    "when",
    "catch_clause",
    "except_clause",
    "rescue",
    "conditional_expression",
    "ternary_expression",
    "conditional",
    "if",
    "unless",
    "while",
    "until",
    "for",
    // Kotlin, Swift, Scala, Lua, Bash.
    "when_entry",
    "do_while_statement",
    "catch_block",
    "guard_statement",
    "repeat_while_statement",
    "switch_entry",
    "elseif_statement",
    "repeat_statement",
    "c_style_for_statement",
    "case_item",
];
