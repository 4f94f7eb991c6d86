//! Which type a call's receiver is in Kotlin, Swift and Scala, where the file says
//! so (the rules of `bindings.rs`, for these grammars' nodes): `val o = Foo()`,
//! `val o: Foo`, `new Foo()` in Scala, `o: Foo` as a parameter, and a property or
//! a class parameter of the enclosing type, bound both as `o` (these languages reach
//! members without `this`) and as `this.o` / `self.o`.
//!
//! Syntax only, as there: never a type guessed from a name, nothing followed
//! through what a function returns.

use tree_sitter::Node;

use super::bindings::{Binding, Binds};
use super::written_type::declared;

/// The bindings `node` makes, in one of the languages this file reads.
pub(super) fn of(node: Node, src: &[u8], binds: Binds) -> Vec<Binding> {
    let text = |n: Node| String::from_utf8_lossy(&src[n.byte_range()]).into_owned();
    let line = node.start_position().row as u64 + 1;
    let this = if binds == Binds::Swift {
        "self"
    } else {
        "this"
    };
    // A member binds the bare name and the `this.` one; a local the bare name.
    let bind = |name: String, ty: Option<String>, member: bool| -> Vec<Binding> {
        let Some(ty) = ty.filter(|_| !name.is_empty()) else {
            return Vec::new();
        };
        let mut out = vec![Binding {
            name: name.clone(),
            ty: ty.clone(),
            member,
            line,
        }];
        if member {
            out.push(Binding {
                name: format!("{this}.{name}"),
                ty,
                member,
                line,
            });
        }
        out
    };
    let in_body = node
        .parent()
        .is_some_and(|p| matches!(p.kind(), "class_body" | "template_body"));
    match (binds, node.kind()) {
        (Binds::Kotlin, "property_declaration") => {
            let Some(var) = named(node, "variable_declaration") else {
                return Vec::new();
            };
            let Some(name) = named(var, "identifier") else {
                return Vec::new();
            };
            let ty = named(var, "user_type")
                .and_then(|t| declared(&text(t)))
                .or_else(|| {
                    named(node, "call_expression").and_then(|v| constructed(v, src, binds))
                });
            bind(text(name), ty, in_body)
        }
        (Binds::Kotlin, "parameter" | "class_parameter") => {
            let (Some(name), Some(ty)) = (named(node, "identifier"), named(node, "user_type"))
            else {
                return Vec::new();
            };
            let t = text(node);
            let property = node.kind() == "class_parameter"
                && t.split_whitespace().any(|w| matches!(w, "val" | "var"));
            bind(text(name), declared(&text(ty)), property)
        }
        (Binds::Swift, "property_declaration") => {
            let Some(pattern) = node.child_by_field_name("name") else {
                return Vec::new();
            };
            let name = pattern
                .child_by_field_name("bound_identifier")
                .map_or_else(|| text(pattern), text);
            let ty = named(node, "type_annotation")
                .and_then(|a| a.child_by_field_name("name"))
                .and_then(|t| declared(&text(t)))
                .or_else(|| {
                    node.child_by_field_name("value")
                        .and_then(|v| constructed(v, src, binds))
                });
            bind(name, ty, in_body)
        }
        (Binds::Swift, "parameter") => {
            // Two `name` fields: the parameter's, then its type.
            let mut cursor = node.walk();
            let names: Vec<Node> = node.children_by_field_name("name", &mut cursor).collect();
            match names.as_slice() {
                [name, ty] => bind(text(*name), declared(&text(*ty)), false),
                _ => Vec::new(),
            }
        }
        (Binds::Scala, "val_definition" | "var_definition") => {
            let Some(name) = node
                .child_by_field_name("pattern")
                .filter(|p| p.kind() == "identifier")
            else {
                return Vec::new();
            };
            let ty = node
                .child_by_field_name("type")
                .and_then(|t| declared(&text(t)))
                .or_else(|| {
                    node.child_by_field_name("value")
                        .and_then(|v| constructed(v, src, binds))
                });
            bind(text(name), ty, in_body)
        }
        (Binds::Scala, "parameter" | "class_parameter") => {
            let (Some(name), Some(ty)) = (
                node.child_by_field_name("name"),
                node.child_by_field_name("type"),
            ) else {
                return Vec::new();
            };
            bind(
                text(name),
                declared(&text(ty)),
                node.kind() == "class_parameter",
            )
        }
        _ => Vec::new(),
    }
}

/// The first named child of `n` of kind `kind`.
fn named<'t>(n: Node<'t>, kind: &str) -> Option<Node<'t>> {
    let mut cursor = n.walk();
    let found = n.named_children(&mut cursor).find(|c| c.kind() == kind);
    found
}

/// The type a constructing expression makes: `Foo(…)` (a capitalised callee) in
/// all three, `new Foo(…)` in Scala.
fn constructed(value: Node, src: &[u8], binds: Binds) -> Option<String> {
    let text = |n: Node| String::from_utf8_lossy(&src[n.byte_range()]).into_owned();
    let callee = match (binds, value.kind()) {
        (Binds::Scala, "instance_expression") => value.named_child(0)?,
        (Binds::Scala, "call_expression") => value.child_by_field_name("function")?,
        (Binds::Kotlin | Binds::Swift, "call_expression") => value.named_child(0)?,
        _ => return None,
    };
    let f = text(callee);
    let last = f.rsplit('.').next().unwrap_or(&f);
    let capitalised = last.starts_with(|c: char| c.is_uppercase());
    (capitalised || value.kind() == "instance_expression")
        .then(|| declared(&f))
        .flatten()
}
