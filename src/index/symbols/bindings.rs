//! Which type a call's receiver is, where the file itself says so: `o = Foo()`,
//! `o = cast(Foo, x)`, `const o = new Foo()`, `let o: Foo`, `o: Foo` as a parameter, `self.o = Foo()`,
//! a field `o: Foo` of the enclosing type, Go's `func (s *Server)`.
//!
//! Syntax only, within one file: a name bound to a type by a declaration or a
//! construction, looked up from the call outwards (the function, its enclosing
//! functions, the enclosing type's members, the file). A Python name bound to what a
//! function returns (`o = f()`, `o = a.f()`) is kept as the marker `f()` / `a.f()`,
//! for the graph to read the return annotation at query time. No flow is followed:
//! the last binding above the call wins. The type is
//! kept as written (`Foo`, `mod.Foo`, `a::b::Foo`), wrappers a method call sees
//! through (`Box<Foo>`, `Optional[Foo]`, `Foo | None`) removed; resolving it to a
//! definition is the graph's business, at query time. Must never guess a type from
//! a name.

use std::collections::HashMap;

use tree_sitter::Node;

use super::sites::CallSite;
use super::written_type::declared;
use super::Symbol;

/// How one language declares what a name holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Binds {
    None,
    Python,
    Ecma,
    Rust,
    Go,
    Java,
    /// Read in `bindings_more.rs`.
    Kotlin,
    Swift,
    Scala,
}

/// A name the syntax binds to a type at one place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Binding {
    /// `o`, or `self.o` / `this.o` for a member.
    pub name: String,
    pub ty: String,
    /// A member of the enclosing type (a field, `self.o = …`) rather than a local.
    pub member: bool,
    /// 1-based line of the binding.
    pub line: u64,
}

/// A binding and where it was met.
pub(super) struct Placed {
    pub binding: Binding,
    /// The innermost enclosing symbol (index in the file's symbols).
    pub symbol: Option<usize>,
    /// The qualified name of the nearest enclosing type (class, struct, `impl`).
    pub owner: Option<String>,
}

/// The bindings `node` makes.
pub(super) fn of(node: Node, src: &[u8], binds: Binds) -> Vec<Binding> {
    let text = |n: Node| String::from_utf8_lossy(&src[n.byte_range()]).into_owned();
    let field = |f: &str| node.child_by_field_name(f);
    let line = node.start_position().row as u64 + 1;
    let one = |name: String, ty: Option<String>, member: bool| -> Vec<Binding> {
        match ty {
            Some(ty) if !name.is_empty() => vec![Binding {
                name,
                ty,
                member,
                line,
            }],
            _ => Vec::new(),
        }
    };
    match (binds, node.kind()) {
        (Binds::Kotlin | Binds::Swift | Binds::Scala, _) => {
            super::bindings_more::of(node, src, binds)
        }
        (Binds::Python, "assignment") => {
            let Some(left) = field("left") else {
                return Vec::new();
            };
            let ty = field("type")
                .and_then(|t| declared(&text(t)))
                .or_else(|| field("right").and_then(|v| constructed(v, src, binds)));
            let name = text(left);
            let member = name.starts_with("self.") && name.matches('.').count() == 1;
            if left.kind() == "identifier" || member {
                one(name, ty, member)
            } else {
                Vec::new()
            }
        }
        (Binds::Python, "typed_parameter" | "typed_default_parameter") => {
            let name = field("name")
                .or_else(|| node.named_child(0).filter(|c| c.kind() == "identifier"))
                .map(text)
                .unwrap_or_default();
            one(name, field("type").and_then(|t| declared(&text(t))), false)
        }
        (Binds::Ecma, "variable_declarator") => {
            let Some(name) = field("name").filter(|n| n.kind() == "identifier") else {
                return Vec::new();
            };
            let ty = field("type")
                .and_then(|t| declared(&text(t)))
                .or_else(|| field("value").and_then(|v| constructed(v, src, binds)));
            one(text(name), ty, false)
        }
        (Binds::Ecma, "required_parameter" | "optional_parameter") => {
            let Some(name) = field("pattern").filter(|n| n.kind() == "identifier") else {
                return Vec::new();
            };
            let name = text(name);
            let ty = field("type").and_then(|t| declared(&text(t)));
            let mut out = one(name.clone(), ty.clone(), false);
            // `constructor(private o: Foo)` also declares the member `this.o`.
            let mut cursor = node.walk();
            let property = node
                .children(&mut cursor)
                .any(|c| c.kind() == "accessibility_modifier");
            if property {
                out.extend(one(format!("this.{name}"), ty, true));
            }
            out
        }
        (Binds::Ecma, "public_field_definition") => {
            let Some(name) = field("name").filter(|n| {
                matches!(
                    n.kind(),
                    "property_identifier" | "private_property_identifier"
                )
            }) else {
                return Vec::new();
            };
            let ty = field("type")
                .and_then(|t| declared(&text(t)))
                .or_else(|| field("value").and_then(|v| constructed(v, src, binds)));
            one(format!("this.{}", text(name)), ty, true)
        }
        (Binds::Rust, "let_declaration" | "parameter") => {
            let Some(name) = field("pattern").filter(|n| n.kind() == "identifier") else {
                return Vec::new();
            };
            let ty = field("type")
                .and_then(|t| declared(&text(t)))
                .or_else(|| field("value").and_then(|v| constructed(v, src, binds)));
            one(text(name), ty, false)
        }
        (Binds::Rust, "field_declaration") => {
            let Some(name) = field("name") else {
                return Vec::new();
            };
            let ty = field("type").and_then(|t| declared(&text(t)));
            one(format!("self.{}", text(name)), ty, true)
        }
        (Binds::Go, "parameter_declaration" | "var_spec") => {
            let ty = field("type").and_then(|t| declared(&text(t))).or_else(|| {
                field("value")
                    .and_then(|v| v.named_child(0))
                    .and_then(|v| constructed(v, src, binds))
            });
            let mut cursor = node.walk();
            node.children_by_field_name("name", &mut cursor)
                .flat_map(|n| one(text(n), ty.clone(), false))
                .collect()
        }
        (Binds::Go, "short_var_declaration") => {
            let (Some(left), Some(right)) = (field("left"), field("right")) else {
                return Vec::new();
            };
            let mut lc = left.walk();
            let mut rc = right.walk();
            let names: Vec<Node> = left.named_children(&mut lc).collect();
            let values: Vec<Node> = right.named_children(&mut rc).collect();
            if names.len() != values.len() {
                return Vec::new();
            }
            names
                .into_iter()
                .zip(values)
                .filter(|(n, _)| n.kind() == "identifier")
                .flat_map(|(n, v)| one(text(n), constructed(v, src, binds), false))
                .collect()
        }
        (Binds::Java, "local_variable_declaration" | "field_declaration") => {
            let member = node.kind() == "field_declaration";
            let declared_ty = field("type").and_then(|t| declared(&text(t)));
            let mut cursor = node.walk();
            let declarators: Vec<Node> = node
                .children_by_field_name("declarator", &mut cursor)
                .collect();
            let mut out = Vec::new();
            for d in declarators {
                let Some(name) = d.child_by_field_name("name").map(text) else {
                    continue;
                };
                let ty = declared_ty.clone().or_else(|| {
                    d.child_by_field_name("value")
                        .and_then(|v| constructed(v, src, binds))
                });
                if member {
                    out.extend(one(format!("this.{name}"), ty.clone(), true));
                }
                out.extend(one(name, ty, member));
            }
            out
        }
        (Binds::Java, "formal_parameter") => {
            let name = field("name").map(text).unwrap_or_default();
            one(name, field("type").and_then(|t| declared(&text(t))), false)
        }
        _ => Vec::new(),
    }
}

/// The type a constructing expression makes: `Foo(…)` (Python, a capitalised
/// callee), `new Foo()`, `Foo::new(…)` / `Foo { … }`, `Foo{…}` / `&Foo{…}`.
fn constructed(value: Node, src: &[u8], binds: Binds) -> Option<String> {
    let text = |n: Node| String::from_utf8_lossy(&src[n.byte_range()]).into_owned();
    let ty = match (binds, value.kind()) {
        (Binds::Python, "call") => {
            let f = text(value.child_by_field_name("function")?);
            if f == "cast" || f.ends_with(".cast") {
                // `typing.cast(Foo, x)` says the type in its first argument (a
                // forward reference may quote it).
                let first = value.child_by_field_name("arguments")?.named_child(0)?;
                text(first).trim_matches(['"', '\'']).to_string()
            } else if capitalised(&f) {
                f
            } else if f
                .split('.')
                .all(|s| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_'))
            {
                // `ctx = get_current_context()`, `sub = cmd.make_context(…)`: what
                // the function returns, as its definition declares, worked out at
                // query time from the marker `f()` (`graph::resolve`).
                return Some(format!("{f}()"));
            } else {
                return None;
            }
        }
        (Binds::Ecma, "new_expression") | (Binds::Java, "object_creation_expression") => {
            let f = value
                .child_by_field_name("constructor")
                .or_else(|| value.child_by_field_name("type"))?;
            text(f)
        }
        (Binds::Rust, "call_expression") => {
            let f = text(value.child_by_field_name("function")?);
            let (path, _) = f.rsplit_once("::")?;
            capitalised(path).then(|| path.to_string())?
        }
        (Binds::Rust, "struct_expression") => text(value.child_by_field_name("name")?),
        (Binds::Go, "composite_literal") => text(value.child_by_field_name("type")?),
        (Binds::Go, "unary_expression") => {
            return constructed(value.child_by_field_name("operand")?, src, binds);
        }
        _ => return None,
    };
    declared(&ty)
}

/// Whether a path's last segment reads as a type (`Foo`, `mod.Foo`, `a::Foo`).
fn capitalised(path: &str) -> bool {
    path.rsplit(['.', ':'])
        .next()
        .and_then(|s| s.chars().next())
        .is_some_and(char::is_uppercase)
}

/// Give each call whose receiver a binding names that binding's type: the last
/// binding above the call in its function or an enclosing one, else a member of the
/// enclosing type, else one at the file's top level.
pub(super) fn type_receivers(
    symbols: &[Symbol],
    calls: &mut [CallSite],
    found: &[Placed],
    sep: &str,
) {
    // Bindings by the name they bind: most calls' receivers bind nothing, and are
    // passed over with one lookup rather than a walk over every binding of the file.
    let mut by_name: HashMap<&str, Vec<&Placed>> = HashMap::new();
    for p in found {
        by_name.entry(p.binding.name.as_str()).or_default().push(p);
    }
    if by_name.is_empty() {
        return;
    }
    let by_qualified: HashMap<&str, usize> = symbols
        .iter()
        .enumerate()
        .map(|(i, s)| (s.qualified_name.as_str(), i))
        .collect();
    for call in calls.iter_mut() {
        let Some(named) = by_name.get(call.qual.as_str()) else {
            continue;
        };
        // A binding to what a call returns is not the receiver of the calls in its
        // own value (`url = url.replace(…)`: the old `url` is).
        let above = |p: &&&Placed| {
            p.binding.line < call.line
                || (p.binding.line == call.line && !p.binding.ty.ends_with("()"))
        };
        // Locals, from the innermost function outwards.
        let mut scope = call.symbol;
        let mut ty = None;
        while let Some(s) = scope {
            ty = named
                .iter()
                .filter(above)
                .filter(|p| !p.binding.member && p.symbol == Some(s))
                .max_by_key(|p| p.binding.line)
                .map(|p| p.binding.ty.clone());
            if ty.is_some() {
                break;
            }
            scope = symbols[s]
                .parent
                .as_deref()
                .and_then(|p| by_qualified.get(p).copied());
        }
        // Members of the enclosing types, innermost first.
        if ty.is_none() {
            if let Some(s) = call.symbol {
                let mut owner = symbols[s].qualified_name.as_str();
                while ty.is_none() {
                    ty = named
                        .iter()
                        .find(|p| p.binding.member && p.owner.as_deref() == Some(owner))
                        .map(|p| p.binding.ty.clone());
                    match owner.rfind(sep) {
                        Some(i) => owner = &owner[..i],
                        None => break,
                    }
                }
            }
        }
        // The file's top level.
        if ty.is_none() {
            ty = named
                .iter()
                .filter(above)
                .filter(|p| !p.binding.member && p.symbol.is_none())
                .max_by_key(|p| p.binding.line)
                .map(|p| p.binding.ty.clone());
        }
        call.recv = ty;
    }
}
