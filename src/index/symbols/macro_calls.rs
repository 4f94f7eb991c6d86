//! Call sites inside a Rust macro's arguments (`assert_eq!(self.char(), '|')`,
//! `vec![s("a"), s("b")]`): tree-sitter leaves a macro's input as a token tree, so the
//! calls in it are no `call_expression` and the walker would never see them. A token
//! tree's own tokens are read for the shapes of a call: a name followed by a `(` tree,
//! reached through `.` (`self.char(`, `x.y.f(`), through a `::` path (`Ast::f(`), or
//! bare (`s(`); and of a struct literal, a capitalised name before a `{` tree
//! (`ast::Concat {`) that no item keyword opens.
//!
//! Syntax only, as `sites` is, and one level at a time: each nested token tree is read
//! when the walker reaches it. It never reports a name after `fn` (a macro that
//! defines functions), a metavariable (`$f(`), or a name a `!` follows (a nested macro,
//! which the walker reports as one).

use tree_sitter::Node;

use super::sites::CallSite;

/// The call sites among `tree`'s own tokens (not those of the trees it nests).
pub(super) fn sites(tree: Node, src: &[u8], symbol: Option<usize>) -> Vec<CallSite> {
    let mut cursor = tree.walk();
    let tokens: Vec<Node> = tree.children(&mut cursor).collect();
    let text = |n: &Node| std::str::from_utf8(&src[n.byte_range()]).unwrap_or("");
    let mut out = Vec::new();
    for i in 1..tokens.len().saturating_sub(1) {
        let (name, args) = (tokens[i], tokens[i + 1]);
        // A method may share a primitive type's name (`self.char()`), which a token
        // tree tokenises as the type.
        let after_dot = matches!(text(&tokens[i - 1]), "." | "::");
        let named = name.kind() == "identifier" || (after_dot && name.kind() == "primitive_type");
        // A struct literal (`ast::Concat { .. }` in `vec![…]`): a capitalised name
        // before a `{` tree that no item keyword opens (`impl S {`, `struct S {`).
        let literal = name.kind() == "identifier"
            && text(&name).starts_with(|c: char| c.is_ascii_uppercase())
            && text(&args).starts_with('{');
        if !named || args.kind() != "token_tree" || !(text(&args).starts_with('(') || literal) {
            continue;
        }
        let mut qual = Vec::new();
        let mut j = i;
        // Walk back over `recv.` / `path::` pairs: `self.a.f(` -> `self.a`.
        while j >= 2 {
            let sep = text(&tokens[j - 1]);
            let prev = tokens[j - 2];
            let joins = sep == "." || sep == "::";
            if !joins || !matches!(prev.kind(), "identifier" | "self" | "crate" | "super") {
                break;
            }
            // Pushed backwards, reversed below: `self`, `.`, `a`, `.`.
            qual.push(sep.to_string());
            qual.push(text(&prev).to_string());
            j -= 2;
        }
        let before = if j >= 1 { text(&tokens[j - 1]) } else { "" };
        let item = matches!(
            before,
            "impl" | "struct" | "enum" | "union" | "trait" | "for" | "where" | "->" | "mod"
        );
        if before == "fn" || before.ends_with(['$', '.', ':']) || (literal && item) {
            // A definition, a metavariable, or a call reached through something that
            // is no name (`(a).f(`, `x?.f(`, `Vec::<u8>::new(`): nothing to resolve it by.
            continue;
        }
        qual.reverse();
        let qual: String = qual.concat();
        let qual = qual.trim_end_matches(['.', ':']).to_string();
        let start = name.start_position();
        out.push(CallSite {
            name: text(&name).to_string(),
            qual,
            line: start.row as u64 + 1,
            column: start.column as u64 + 1,
            kind: if literal { "construct" } else { "call" }.to_string(),
            symbol,
            recv: None,
        });
    }
    out
}
