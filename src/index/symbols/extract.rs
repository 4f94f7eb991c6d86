//! Walking a syntax tree into symbols: names, parents, signatures, docs, calls and
//! complexity.
//!
//! The walk uses an explicit stack (never recursion), visits each node once, and
//! attributes calls and branches to the innermost enclosing symbol.

use std::borrow::Cow;

use tree_sitter::{Node, Tree};

use super::bindings::{self, Binds, Placed};
use super::lang::{Rules, BRANCHES};
use super::{imports, sites};
use super::{FileSymbols, Symbol, SymbolKind};

/// A place that gives names to what it contains: a symbol, or a container such as
/// Rust's `impl Foo`.
struct Scope {
    qualified: String,
    holds_methods: bool,
    /// The innermost symbol at or above this scope (where calls are counted).
    symbol: Option<usize>,
    /// The scope this one is in.
    parent: Option<usize>,
}

/// Longest signature kept.
const SIGNATURE_CHARS: usize = 200;

pub(super) fn walk(tree: &Tree, src: &[u8], rules: &Rules) -> FileSymbols {
    let mut out = FileSymbols::default();
    let mut calls: Vec<Vec<String>> = Vec::new();
    let mut scopes: Vec<Scope> = Vec::new();
    let mut stack: Vec<(Node, Option<usize>)> = vec![(tree.root_node(), None)];
    let mut cursor = tree.walk();
    let mut comments = Comments::default();
    let mut placed: Vec<Placed> = Vec::new();
    while let Some((node, scope)) = stack.pop() {
        let kind = node.kind();
        if kind.contains("comment") {
            comments.add(node, src);
            continue;
        }
        let mut inner = scope;
        let innermost = scope.and_then(|s| scopes[s].symbol);
        if let Some(&(_, default_kind)) = rules.defs.iter().find(|(k, _)| *k == kind) {
            if let Some(def) = definition(node, src, default_kind) {
                let parent_scope = scope.map(|s| &scopes[s]);
                let mut sk = def.kind;
                if sk == SymbolKind::Function
                    && (def.parent.is_some() || parent_scope.is_some_and(|s| s.holds_methods))
                {
                    sk = SymbolKind::Method;
                }
                let parent = def
                    .parent
                    .map(|p| match parent_scope {
                        Some(s) => format!("{}{}{p}", s.qualified, rules.sep),
                        None => p,
                    })
                    .or_else(|| parent_scope.map(|s| s.qualified.clone()));
                let qualified = match &parent {
                    Some(p) => format!("{p}{}{}", rules.sep, def.name),
                    None => def.name.clone(),
                };
                let idx = out.symbols.len();
                out.symbols.push(Symbol {
                    name: def.name,
                    qualified_name: qualified.clone(),
                    kind: sk,
                    parent,
                    signature: signature(node, src),
                    doc: doc(node, src, rules, &comments),
                    start_line: node.start_position().row as u64 + 1,
                    end_line: end_line(node),
                    calls: Vec::new(),
                    complexity: 1,
                });
                calls.push(Vec::new());
                scopes.push(Scope {
                    qualified,
                    holds_methods: sk.holds_methods(),
                    symbol: Some(idx),
                    parent: scope,
                });
                inner = Some(scopes.len() - 1);
            }
        } else if let Some(&(_, field)) = rules.containers.iter().find(|(k, _)| *k == kind) {
            if let Some(name) = node
                .child_by_field_name(field)
                .map(|n| type_name(&text(n, src)))
            {
                let qualified = match scope {
                    Some(s) => format!("{}{}{name}", scopes[s].qualified, rules.sep),
                    None => name,
                };
                scopes.push(Scope {
                    qualified,
                    holds_methods: true,
                    symbol: innermost,
                    parent: scope,
                });
                inner = Some(scopes.len() - 1);
            }
        }
        if let Some(&(_, field)) = rules.calls.iter().find(|(k, _)| *k == kind) {
            if let Some(site) = node
                .child_by_field_name(field)
                .and_then(|c| sites::call_site(node, c, src, innermost))
            {
                if let Some(sym) = innermost {
                    calls[sym].push(site.name.clone());
                }
                out.refs.push(site);
            }
        }
        if rules.binds != Binds::None {
            let found = bindings::of(node, src, rules.binds);
            if !found.is_empty() {
                // The nearest enclosing type: what `self.o` and fields belong to.
                let mut s = scope;
                while let Some(i) = s.filter(|&i| !scopes[i].holds_methods) {
                    s = scopes[i].parent;
                }
                let owner = s.map(|i| scopes[i].qualified.clone());
                placed.extend(found.into_iter().map(|binding| Placed {
                    binding,
                    symbol: innermost,
                    owner: owner.clone(),
                }));
            }
        }
        if let Some(sym) = innermost {
            if BRANCHES.contains(&kind) || is_logical(node, src) {
                out.symbols[sym].complexity += 1;
            }
        }
        if rules.imports.contains(&kind) || is_reexport(node, rules) {
            let statement = text(node, src);
            out.imports.push(one_line(&statement, 200));
            let line = node.start_position().row as u64 + 1;
            let mut items = imports::parse(rules.import_style, &statement, line);
            imports::place(&mut items, &statement, line);
            out.import_items.extend(items);
            continue;
        }
        let children: Vec<Node> = node.named_children(&mut cursor).collect();
        for child in children.into_iter().rev() {
            stack.push((child, inner));
        }
    }
    for (sym, mut c) in out.symbols.iter_mut().zip(calls) {
        c.sort();
        c.dedup();
        sym.calls = c;
    }
    bindings::type_receivers(&out.symbols, &mut out.refs, &placed, rules.sep);
    out
}

/// `export { f as g } from './m'` and `export * from './m'`: an ECMAScript export
/// naming a module re-exports what it takes from it, so it reads as an import (an
/// `export` without `from` declares, and its children are walked as definitions).
fn is_reexport(node: Node, rules: &Rules) -> bool {
    rules.import_style == imports::Style::Ecma
        && node.kind() == "export_statement"
        && node.child_by_field_name("source").is_some()
}

/// A definition's name, kind and a parent implied by the definition itself (a Go
/// method's receiver, C++'s `Foo::bar`).
struct Definition {
    name: String,
    kind: SymbolKind,
    parent: Option<String>,
}

fn field<'t>(n: Node<'t>, f: &str) -> Option<Node<'t>> {
    n.child_by_field_name(f)
}

fn definition(node: Node, src: &[u8], kind: SymbolKind) -> Option<Definition> {
    let plain = |name: Node| Definition {
        name: one_line(&text(name, src), 200),
        kind,
        parent: None,
    };
    let def = match node.kind() {
        // `const f = () => …` is a function; other variables are not symbols.
        "variable_declarator" => {
            let value = field(node, "value")?;
            if !matches!(
                value.kind(),
                "arrow_function" | "function_expression" | "function" | "generator_function"
            ) {
                return None;
            }
            plain(field(node, "name")?)
        }
        // Java constants: `static final` fields.
        "field_declaration" => {
            let modifiers = node.named_child(0).filter(|m| m.kind() == "modifiers")?;
            let m = text(modifiers, src);
            if !(m.contains("static") && m.contains("final")) {
                return None;
            }
            let decl = field(node, "declarator")?;
            plain(field(decl, "name")?)
        }
        // Python and Ruby constants: `MAX_RETRIES = 3`, `LIMIT = 10`.
        "assignment" => {
            let left = field(node, "left")?;
            let name = text(left, src);
            let constant = match left.kind() {
                "constant" => true,
                "identifier" => {
                    name.len() > 1
                        && name
                            .bytes()
                            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
                        && name.bytes().any(|b| b.is_ascii_uppercase())
                }
                _ => false,
            };
            if !constant {
                return None;
            }
            plain(left)
        }
        "type_spec" => {
            let kind = match field(node, "type").map(|t| t.kind()) {
                Some("struct_type") => SymbolKind::Struct,
                Some("interface_type") => SymbolKind::Interface,
                _ => SymbolKind::TypeAlias,
            };
            Definition {
                kind,
                ..plain(field(node, "name")?)
            }
        }
        "method_declaration" if field(node, "receiver").is_some() => {
            // Go: the receiver's type is the parent (`func (c *Client) Get()`).
            let receiver = field(node, "receiver")?;
            let ty = receiver
                .named_child(0)
                .and_then(|p| field(p, "type"))
                .map(|t| type_name(text(t, src).trim_start_matches('*')));
            Definition {
                parent: ty,
                ..plain(field(node, "name")?)
            }
        }
        "function_definition" if field(node, "declarator").is_some() => {
            // C and C++: the name sits inside nested declarators.
            let mut d = field(node, "declarator")?;
            while matches!(
                d.kind(),
                "function_declarator"
                    | "pointer_declarator"
                    | "reference_declarator"
                    | "parenthesized_declarator"
                    | "attributed_declarator"
            ) {
                d = field(d, "declarator").or_else(|| d.named_child(0))?;
            }
            let full = one_line(&text(d, src), 200);
            match full.rsplit_once("::") {
                Some((parent, name)) if !parent.is_empty() => Definition {
                    name: name.to_string(),
                    kind,
                    parent: Some(parent.to_string()),
                },
                _ => Definition {
                    name: full,
                    kind,
                    parent: None,
                },
            }
        }
        "struct_specifier" | "union_specifier" | "enum_specifier" | "class_specifier" => {
            // Only definitions with a body; `struct foo *p;` merely uses the type.
            field(node, "body")?;
            plain(field(node, "name")?)
        }
        _ => plain(field(node, "name")?),
    };
    (!def.name.is_empty()).then_some(def)
}

fn text<'a>(node: Node, src: &'a [u8]) -> Cow<'a, str> {
    String::from_utf8_lossy(&src[node.byte_range()])
}

fn end_line(node: Node) -> u64 {
    let end = node.end_position();
    // A node ending at column 0 ends on the line before (its trailing newline).
    if end.column == 0 && end.row > node.start_position().row {
        end.row as u64
    } else {
        end.row as u64 + 1
    }
}

/// `Foo<T>` → `Foo`, `pkg.Foo[T]` → `pkg.Foo`.
fn type_name(t: &str) -> String {
    let t = t.trim();
    let end = t.find(['<', '[', '(', ' ', '\n']).unwrap_or(t.len());
    t[..end].to_string()
}

/// The last identifier in `t` (`self.client.get` → `get`, `Foo::new` → `new`).
pub(super) fn last_identifier(t: &str) -> Option<String> {
    let t = t.trim_end_matches(|c: char| c == '!' || c.is_whitespace());
    let mut start = t
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_alphanumeric() || *c == '_' || *c == '$')
        .last()
        .map(|(i, _)| i)?;
    // An ECMAScript private name: `this.#flush()` calls `#flush`, as it is defined.
    if t[..start].ends_with(".#") {
        start -= 1;
    }
    let id = &t[start..];
    (!id.is_empty() && !id.starts_with(|c: char| c.is_ascii_digit())).then(|| id.to_string())
}

/// `&&`, `||`, `and`, `or`: each is a branch.
fn is_logical(node: Node, src: &[u8]) -> bool {
    matches!(node.kind(), "binary_expression" | "boolean_operator")
        && node
            .child_by_field_name("operator")
            .is_some_and(|op| matches!(&*text(op, src), "&&" | "||" | "and" | "or"))
}

/// Collapse whitespace and keep at most `max` characters.
fn one_line(t: &str, max: usize) -> String {
    let mut s = String::with_capacity(t.len().min(max * 4));
    for (i, w) in t.split_whitespace().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(w);
        if s.len() > max * 4 {
            break;
        }
    }
    s.chars().take(max).collect()
}

/// The declaration up to its body.
fn signature(node: Node, src: &[u8]) -> String {
    let end = node
        .child_by_field_name("body")
        .map(|b| b.start_byte())
        .unwrap_or_else(|| {
            let r = node.byte_range();
            src[r.clone()]
                .iter()
                .position(|&b| b == b'\n')
                .map(|p| r.start + p)
                .unwrap_or(r.end)
        });
    let raw = String::from_utf8_lossy(&src[node.start_byte()..end.max(node.start_byte())]);
    one_line(&raw, SIGNATURE_CHARS)
        .trim_end_matches(['{', ':', ' '])
        .to_string()
}

/// Comments seen so far in the walk, by the row they end on. The walk is in document
/// order, so every comment above a definition is known when the definition is reached.
#[derive(Default)]
struct Comments {
    by_end_row: std::collections::HashMap<usize, (usize, std::ops::Range<usize>)>,
}

impl Comments {
    /// Remember a comment that is the first thing on its line (a trailing comment
    /// belongs to the code before it, not to what follows).
    fn add(&mut self, node: Node, src: &[u8]) {
        let start = node.start_byte();
        let line_start = src[..start]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1);
        if src[line_start..start]
            .iter()
            .all(|b| b.is_ascii_whitespace())
        {
            // Line comments may include their newline, ending at column 0 of the next row.
            let end = node.end_position();
            let end_row = if end.column == 0 && end.row > node.start_position().row {
                end.row - 1
            } else {
                end.row
            };
            self.by_end_row
                .insert(end_row, (node.start_position().row, node.byte_range()));
        }
    }
}

/// The doc comment above a definition, or a Python docstring.
fn doc(node: Node, src: &[u8], rules: &Rules, comments: &Comments) -> Option<String> {
    if let Some(s) = docstring(node, src) {
        return Some(s);
    }
    // Decorators, `export`, templates and `const` wrap the definition; the comment is
    // above them.
    let mut anchor = node;
    while let Some(p) = anchor.parent() {
        let wraps = matches!(
            p.kind(),
            "decorated_definition" | "export_statement" | "template_declaration"
        ) || (matches!(p.kind(), "lexical_declaration" | "variable_declaration")
            && p.named_child(0) == Some(anchor));
        if !wraps {
            break;
        }
        anchor = p;
    }
    let mut row = anchor.start_position().row;
    // Attributes and annotations sit between a doc comment and its definition.
    let mut sib = anchor.prev_sibling();
    while let Some(s) = sib {
        if !matches!(
            s.kind(),
            "attribute_item" | "decorator" | "annotation" | "attribute_list"
        ) || s.end_position().row + 1 < row
        {
            break;
        }
        row = s.start_position().row;
        sib = s.prev_sibling();
    }
    let mut lines: Vec<String> = Vec::new();
    while row > 0 {
        let Some((start_row, range)) = comments.by_end_row.get(&(row - 1)) else {
            break;
        };
        let t = String::from_utf8_lossy(&src[range.clone()]);
        if !(rules.any_comment_is_doc || t.starts_with("///") || t.starts_with("/**")) {
            break;
        }
        lines.push(clean_comment(&t));
        row = *start_row;
    }
    lines.reverse();
    let d = lines.join("\n").trim().to_string();
    (!d.is_empty()).then_some(d)
}

/// A Python docstring: the first statement of the body, when it is a string.
fn docstring(node: Node, src: &[u8]) -> Option<String> {
    if !matches!(node.kind(), "function_definition" | "class_definition") {
        return None;
    }
    let body = node.child_by_field_name("body")?;
    let first = body.named_child(0)?;
    let s = (first.kind() == "expression_statement")
        .then(|| first.named_child(0))
        .flatten()
        .filter(|s| s.kind() == "string")?;
    let t = text(s, src);
    let t = t.trim_start_matches(['r', 'R', 'u', 'U', 'b', 'B', 'f', 'F']);
    let t = ["\"\"\"", "'''", "\"", "'"]
        .iter()
        .find_map(|q| t.strip_prefix(q).and_then(|r| r.strip_suffix(q)))
        .unwrap_or(t);
    let d = t
        .lines()
        .map(str::trim)
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string();
    (!d.is_empty()).then_some(d)
}

/// Comment text without its markers.
fn clean_comment(t: &str) -> String {
    t.lines()
        .map(|l| {
            let l = l.trim();
            let l = l.strip_suffix("*/").unwrap_or(l);
            let l = ["/**", "/*!", "/*", "///", "//!", "//", "#"]
                .iter()
                .find_map(|m| l.strip_prefix(m))
                .unwrap_or(l);
            let l = l.trim_start();
            l.strip_prefix('*').unwrap_or(l).trim()
        })
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}
