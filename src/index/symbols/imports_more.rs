//! Which syntax nodes are import statements, and how the statements of Swift,
//! Scala, Bash and Lua read (what each binds); `imports.rs` reads the other
//! languages'. The same contract: pure string work on a statement's text, any text
//! accepted, what cannot be read yields nothing.
//!
//! Bash and Lua have no import syntax: `source file` and `. file` are commands, and
//! `require("a.b")` a call, so they are recognised by shape here.

use tree_sitter::Node;

use super::imports::{split_as, Add, Style};
use super::lang::Rules;

/// Whether `node` is an import statement of its language: a kind the rules list, an
/// ECMAScript re-export, Bash's `source`/`.`, or a Lua `require`.
pub(super) fn is_import(node: Node, src: &[u8], rules: &Rules) -> bool {
    let kind = node.kind();
    if rules.imports.contains(&kind) {
        return true;
    }
    let text = |n: Node| String::from_utf8_lossy(&src[n.byte_range()]).into_owned();
    match rules.import_style {
        // `export { f as g } from './m'` and `export * from './m'`: an export naming
        // a module re-exports what it takes from it, so it reads as an import (an
        // `export` without `from` declares, and its children are walked as
        // definitions).
        Style::Ecma => kind == "export_statement" && node.child_by_field_name("source").is_some(),
        Style::Shell => {
            kind == "command"
                && node
                    .child_by_field_name("name")
                    .is_some_and(|n| matches!(text(n).as_str(), "source" | "."))
        }
        Style::Lua => match kind {
            "function_call" => node
                .child_by_field_name("name")
                .is_some_and(|n| text(n) == "require"),
            // `local m = require("a.b")`, `m = require "a.b"`, `require("a").sub`.
            "variable_declaration" | "assignment_statement" => {
                let t = text(node);
                t.split_once('=')
                    .is_some_and(|(_, v)| lua_module(v.trim_start()).is_some())
            }
            _ => false,
        },
        _ => false,
    }
}

/// The module a Lua `require` names when `v` starts with one (`require("a.b")`,
/// `require 'a.b'`, `require("a").sub`).
fn lua_module(v: &str) -> Option<&str> {
    let rest = v.strip_prefix("require")?.trim_start();
    let rest = rest.strip_prefix('(').unwrap_or(rest).trim_start();
    let q = rest.chars().next().filter(|c| matches!(c, '"' | '\''))?;
    let inner = &rest[1..];
    let end = inner.find(q)?;
    Some(&inner[..end])
}

/// One statement's imports in `style` (one of the styles this file reads); `t` is
/// the statement's text on one line.
pub(super) fn parse(style: Style, t: &str, add: &mut Add<'_>) {
    let t = t.trim();
    match style {
        Style::Swift => swift(t, add),
        Style::Scala => {
            let t = t.strip_prefix("import").unwrap_or(t);
            for part in split_top(t.trim()) {
                scala(part, add);
            }
        }
        Style::Shell => {
            let rest = t
                .strip_prefix("source")
                .or_else(|| t.strip_prefix('.'))
                .unwrap_or("");
            let m = first_word(rest.trim()).replace(['"', '\''], "");
            if !m.is_empty() {
                add(&m, Some("*"), None);
            }
        }
        Style::Lua => {
            let (bind, value) = match t.split_once('=') {
                Some((b, v)) => {
                    let b = b.trim().trim_start_matches("local").trim();
                    (b.split(',').next().map(str::trim), v.trim())
                }
                None => (None, t),
            };
            if let Some(m) = lua_module(value) {
                add(m, None, bind);
            }
        }
        _ => {}
    }
}

/// `import Foundation` makes the module's names visible (a glob); `import struct
/// Net.Client` takes one declaration from it. Attributes (`@testable`) are skipped.
fn swift(t: &str, add: &mut Add<'_>) {
    let Some(i) = t.find("import ") else {
        return;
    };
    let mut rest = t[i + 7..].trim();
    let mut single = false;
    for kw in [
        "typealias ",
        "struct ",
        "class ",
        "enum ",
        "protocol ",
        "let ",
        "var ",
        "func ",
    ] {
        if let Some(r) = rest.strip_prefix(kw) {
            rest = r.trim();
            single = true;
            break;
        }
    }
    let path = rest.trim_end_matches(';').trim();
    match path.rsplit_once('.') {
        Some((m, n)) if single => add(m, Some(n), Some(n)),
        _ => add(path, Some("*"), None),
    }
}

/// One Scala import clause: `a.b.C`, `a.b.{C => D, E}`, `a.b.{C as D}`, `a.b._`,
/// `a.b.*`, `a.b.C as D`, `a.b.given`.
fn scala(t: &str, add: &mut Add<'_>) {
    let t = t.trim();
    if let Some(open) = t.find('{') {
        let module = t[..open].trim().trim_end_matches('.');
        let close = t.rfind('}').unwrap_or(t.len());
        for item in t[open + 1..close.max(open + 1)].split(',') {
            let item = item.trim();
            let (n, alias) = match item.split_once("=>") {
                Some((n, a)) => (n.trim(), Some(a.trim())),
                None => split_as(item),
            };
            match (n, alias) {
                ("" | "given", _) => {}
                ("_" | "*", _) => add(module, Some("*"), None),
                // `C => _` hides `C`.
                (_, Some("_")) => {}
                (n, a) => add(module, Some(n), Some(a.unwrap_or(n))),
            }
        }
        return;
    }
    let (path, alias) = split_as(t);
    match path.rsplit_once('.') {
        Some((m, "_" | "*" | "given")) => add(m, Some("*"), None),
        Some((m, n)) => add(m, Some(n), Some(alias.unwrap_or(n))),
        None => {}
    }
}

/// A shell word: up to the first blank outside quotes and `$( … )`.
fn first_word(t: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut depth = 0i32;
    for (i, c) in t.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') => depth -= 1,
            (None, c) if c.is_whitespace() && depth <= 0 => return &t[..i],
            _ => {}
        }
    }
    t
}

/// `a.b, c.{d, e}` split at the commas outside braces.
fn split_top(t: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in t.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&t[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&t[start..]);
    out
}

#[cfg(test)]
mod tests {
    use super::super::imports::parse as parse_all;
    use super::*;

    fn p(style: Style, t: &str) -> Vec<(String, Option<String>, Option<String>)> {
        parse_all(style, t, 1)
            .into_iter()
            .map(|i| (i.module, i.name, i.bind))
            .collect()
    }

    fn s(m: &str, n: Option<&str>, b: Option<&str>) -> (String, Option<String>, Option<String>) {
        (m.into(), n.map(Into::into), b.map(Into::into))
    }

    #[test]
    fn swift_scala_shell_and_lua_forms() {
        assert_eq!(
            p(Style::Swift, "@testable import Foundation"),
            [s("Foundation", Some("*"), None)]
        );
        assert_eq!(
            p(Style::Swift, "import struct Net.Client"),
            [s("Net", Some("Client"), Some("Client"))]
        );
        assert_eq!(
            p(Style::Scala, "import a.b.{C => D, E, F as G, H => _, _}"),
            [
                s("a.b", Some("C"), Some("D")),
                s("a.b", Some("E"), Some("E")),
                s("a.b", Some("F"), Some("G")),
                s("a.b", Some("*"), None),
            ]
        );
        assert_eq!(
            p(Style::Scala, "import a.b._, c.D as E"),
            [s("a.b", Some("*"), None), s("c", Some("D"), Some("E"))]
        );
        assert_eq!(
            p(Style::Shell, "source \"./lib/common.sh\" arg"),
            [s("./lib/common.sh", Some("*"), None)]
        );
        assert_eq!(
            p(Style::Shell, ". \"$(dirname \"$0\")/x.sh\" # the helpers"),
            [s("$(dirname $0)/x.sh", Some("*"), None)]
        );
        assert_eq!(
            p(Style::Lua, "local u = require(\"app.util\")"),
            [s("app.util", None, Some("u"))]
        );
        assert_eq!(
            p(Style::Lua, "require 'app.boot'"),
            [s("app.boot", None, None)]
        );
        assert_eq!(
            p(Style::Java, "import com.example.Helper as H"),
            [s("com.example", Some("Helper"), Some("H"))]
        );
    }
}
