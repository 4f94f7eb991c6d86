//! Reading one import statement's text into what it binds: the module it names, the
//! item it takes from that module, and the local name it introduces
//! (`from a.b import c as d` → module `a.b`, item `c`, bound as `d`).
//!
//! Pure string work on the statement's text, per language style; it never guesses
//! where a module lives (that is resolution's job, at query time) and accepts any
//! text: what it cannot read yields nothing rather than an error.

use serde::{Deserialize, Serialize};

/// How a language writes its imports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    Rust,
    Python,
    Go,
    /// JavaScript and TypeScript (`import x, { a as b } from './m'`).
    Ecma,
    Java,
    /// `#include "x.h"` and C++'s `using std::cout;`.
    C,
    CSharp,
    Php,
    None,
}

/// One name an import statement brings in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Import {
    /// The module named, as written (`a.b`, `./util`, a Rust path, `net/http`, `x.h`).
    pub module: String,
    /// The item taken from it (`c` in `from a.b import c`); `*` for a glob;
    /// absent when the module itself is bound (`import a.b`, `import * as ns`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The local name introduced (an alias, the item, or the module's first or last
    /// segment); absent for a glob or a bare side-effect import.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bind: Option<String>,
    /// 1-based line of the statement.
    pub line: u64,
}

/// The imports of one statement's text, starting on `line`.
pub(crate) fn parse(style: Style, text: &str, line: u64) -> Vec<Import> {
    let marker = match style {
        Style::Python => "#",
        _ => "//",
    };
    let t = text
        .lines()
        .map(|l| strip_comment(l, marker))
        .flat_map(str::split_whitespace)
        .collect::<Vec<_>>()
        .join(" ");
    let mut out = Vec::new();
    let mut add = |module: &str, name: Option<&str>, bind: Option<&str>| {
        let module = module.trim();
        if module.is_empty() && name.is_none() {
            return;
        }
        let clean = |s: &str| {
            let s = s.trim();
            (!s.is_empty()).then(|| s.to_string())
        };
        out.push(Import {
            module: module.to_string(),
            name: name.and_then(clean),
            bind: bind.and_then(clean),
            line,
        });
    };
    match style {
        Style::Python => python(&t, &mut add),
        Style::Rust => rust(&t, &mut add),
        Style::Go => {
            let t = t.trim();
            let (alias, path) = match t.find('"') {
                Some(q) => (t[..q].trim(), t[q..].trim_matches(['"', ' '])),
                None => return out,
            };
            match alias {
                "." => add(path, Some("*"), None),
                "_" => add(path, None, None),
                "" => add(path, None, path.rsplit('/').next()),
                a => add(path, None, Some(a)),
            }
        }
        Style::Ecma => ecma(&t, &mut add),
        Style::Java => {
            let t = t.trim_start_matches("import").trim().trim_end_matches(';');
            let t = t.strip_prefix("static ").unwrap_or(t).trim();
            if let Some((m, n)) = t.rsplit_once('.') {
                let bind = (n != "*").then_some(n);
                add(m, Some(n), bind);
            }
        }
        Style::C => {
            if let Some(rest) = t.strip_prefix("#include") {
                let m = rest.trim().trim_matches(['"', '<', '>', ' ']);
                add(m, Some("*"), None);
            } else {
                let t = t.trim_start_matches("using").trim().trim_end_matches(';');
                if let Some(ns) = t.strip_prefix("namespace ") {
                    add(ns.trim(), Some("*"), None);
                } else if let Some((m, n)) = t.rsplit_once("::") {
                    add(m, Some(n), Some(n));
                }
            }
        }
        Style::CSharp => {
            let t = t.trim_start_matches("global ").trim_start_matches("using");
            let t = t.trim().trim_end_matches(';').trim();
            let t = t.strip_prefix("static ").unwrap_or(t);
            match t.split_once('=') {
                Some((alias, target)) => match target.trim().rsplit_once('.') {
                    Some((m, n)) => add(m, Some(n), Some(alias)),
                    None => add(target, None, Some(alias)),
                },
                None => add(t, Some("*"), None),
            }
        }
        Style::Php => {
            let t = t.trim_start_matches("use").trim().trim_end_matches(';');
            let t = t
                .strip_prefix("function ")
                .or_else(|| t.strip_prefix("const "))
                .unwrap_or(t);
            let (prefix, items) = match t.split_once('{') {
                Some((p, rest)) => (p.trim_end_matches('\\'), rest.trim_end_matches('}')),
                None => ("", t),
            };
            for item in items.split(',') {
                let (path, alias) = split_as(item);
                let full = if prefix.is_empty() {
                    path.to_string()
                } else {
                    format!("{prefix}\\{path}")
                };
                let full = full.trim_start_matches('\\');
                let (m, n) = full.rsplit_once('\\').unwrap_or(("", full));
                add(m, Some(n), Some(alias.unwrap_or(n)));
            }
        }
        Style::None => {}
    }
    out
}

/// Move each item of a multi-line statement to the line its name is on (so
/// `from m import (\n    a,\n    b,\n)` gives `b` the line `b` is written on).
pub(crate) fn place(items: &mut [Import], text: &str, first_line: u64) {
    if !text.contains('\n') {
        return;
    }
    // Names follow `import` (Python), or an opening brace (Rust, JavaScript).
    let from = text
        .find(" import ")
        .or_else(|| text.find('{'))
        .unwrap_or(0);
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'$';
    for item in items.iter_mut() {
        let Some(name) = item
            .name
            .as_deref()
            .filter(|n| !matches!(*n, "*" | "default"))
        else {
            continue;
        };
        let bytes = text.as_bytes();
        let mut at = from;
        while let Some(i) = text.get(at..).and_then(|t| t.find(name)).map(|i| i + at) {
            let end = i + name.len();
            let before_ok = i == 0 || !is_word(bytes[i - 1]);
            let after_ok = end >= bytes.len() || !is_word(bytes[end]);
            if before_ok && after_ok {
                item.line = first_line + text[..i].matches('\n').count() as u64;
                break;
            }
            at = end;
        }
    }
}

/// `line` up to a comment marker outside quotes.
fn strip_comment<'a>(line: &'a str, marker: &str) -> &'a str {
    let mut quote: Option<char> = None;
    for (i, c) in line.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' || c == '`' => quote = Some(c),
            None if line[i..].starts_with(marker) => return &line[..i],
            None => {}
        }
    }
    line
}

/// `x as y` → (`x`, Some(`y`)).
fn split_as(s: &str) -> (&str, Option<&str>) {
    let s = s.trim();
    match s.split_once(" as ") {
        Some((a, b)) => (a.trim(), Some(b.trim())),
        None => (s, None),
    }
}

type Add<'a> = dyn FnMut(&str, Option<&str>, Option<&str>) + 'a;

fn python(t: &str, add: &mut Add<'_>) {
    let t = t.trim();
    if let Some(rest) = t.strip_prefix("from ") {
        let Some((module, items)) = rest.split_once(" import ") else {
            return;
        };
        let items = items.trim().trim_start_matches('(').trim_end_matches(')');
        for item in items.split(',') {
            let (n, alias) = split_as(item);
            if n.is_empty() {
                continue;
            }
            let bind = if n == "*" {
                None
            } else {
                Some(alias.unwrap_or(n))
            };
            add(module.trim(), Some(n), bind);
        }
    } else if let Some(rest) = t.strip_prefix("import ") {
        for item in rest.split(',') {
            let (m, alias) = split_as(item);
            // `import a.b` binds `a`; with an alias, the alias names `a.b` itself.
            let bind = alias.or_else(|| m.split('.').next());
            add(m, None, bind);
        }
    }
}

fn ecma(t: &str, add: &mut Add<'_>) {
    let t = t.trim().trim_end_matches(';');
    let quote = |s: &str| s.trim().trim_matches(['"', '\'', '`', ' ']).to_string();
    if let Some(rest) = t.strip_prefix("export") {
        reexport(rest, &quote, add);
        return;
    }
    let Some(rest) = t.strip_prefix("import") else {
        return;
    };
    let rest = rest.trim();
    let rest = rest.strip_prefix("type ").unwrap_or(rest);
    let Some((clause, module)) = rest.rsplit_once(" from ") else {
        // `import './side-effect'`
        add(&quote(rest), None, None);
        return;
    };
    let module = quote(module);
    let mut clause = clause.trim();
    if let Some(open) = clause.find('{') {
        let close = clause.rfind('}').unwrap_or(clause.len());
        for item in clause[open + 1..close.max(open + 1)].split(',') {
            let item = item.trim().trim_start_matches("type ");
            let (n, alias) = split_as(item);
            if !n.is_empty() {
                add(&module, Some(n), Some(alias.unwrap_or(n)));
            }
        }
        clause = clause[..open].trim().trim_end_matches(',');
    }
    for part in clause.split(',') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        if let Some(ns) = part.strip_prefix('*') {
            let ns = ns.trim();
            let alias = ns.strip_prefix("as ").map(str::trim);
            add(&module, None, alias);
        } else {
            add(&module, Some("default"), Some(part));
        }
    }
}

/// A re-export, after `export`: `{ f, g as h } from './m'` takes `f` and `g` from
/// `./m` (bound as `f` and `h`), `* from './m'` everything (a glob), `* as ns from
/// './m'` the module under `ns`.
fn reexport(rest: &str, quote: &dyn Fn(&str) -> String, add: &mut Add<'_>) {
    let rest = rest.trim();
    let rest = rest.strip_prefix("type ").unwrap_or(rest);
    let Some((clause, module)) = rest.rsplit_once(" from ") else {
        return;
    };
    let module = quote(module);
    let clause = clause.trim();
    if let Some(ns) = clause.strip_prefix('*') {
        match ns.trim().strip_prefix("as ").map(str::trim) {
            Some(alias) => add(&module, None, Some(alias)),
            None => add(&module, Some("*"), None),
        }
        return;
    }
    let inner = clause.trim_start_matches('{').trim_end_matches('}');
    for item in inner.split(',') {
        let item = item.trim().trim_start_matches("type ");
        let (n, alias) = split_as(item);
        if !n.is_empty() {
            add(&module, Some(n), Some(alias.unwrap_or(n)));
        }
    }
}

/// A Rust `use` tree, flattened: `use a::{b, c::d as e, f::*};` gives `a::b`,
/// `a::c::d` bound as `e`, and the glob `a::f::*`. A stack of prefixes, no recursion.
fn rust(t: &str, add: &mut Add<'_>) {
    let mut t = t.trim().trim_end_matches(';').trim();
    if let Some(rest) = t.strip_prefix("extern crate ") {
        let (m, alias) = split_as(rest);
        add(m, None, Some(alias.unwrap_or(m)));
        return;
    }
    // `pub use`, `pub(crate) use`, attributes before it.
    match t.find("use ") {
        Some(i) => t = &t[i + 4..],
        None => return,
    }
    let mut prefixes: Vec<Vec<String>> = vec![Vec::new()];
    let mut current: Vec<String> = Vec::new();
    let mut alias: Option<String> = None;
    let mut glob = false;
    let mut emit = |prefix: &[String], current: &[String], alias: Option<&str>, glob: bool| {
        let mut path: Vec<&str> = prefix.iter().map(String::as_str).collect();
        path.extend(current.iter().map(String::as_str));
        if glob {
            add(&path.join("::"), Some("*"), None);
            return;
        }
        let Some((last, module)) = path.split_last() else {
            return;
        };
        if *last == "self" {
            if let Some((item, module)) = module.split_last() {
                add(&module.join("::"), Some(item), Some(alias.unwrap_or(item)));
            }
        } else {
            add(&module.join("::"), Some(last), Some(alias.unwrap_or(last)));
        }
    };
    let bytes = t.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_alphanumeric() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            let word = &t[start..i];
            if word == "as" {
                // The alias follows.
                while i < bytes.len() && bytes[i] == b' ' {
                    i += 1;
                }
                let s = i;
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                alias = Some(t[s..i].to_string());
            } else {
                current.push(word.to_string());
            }
            continue;
        }
        match c {
            b'*' => glob = true,
            b'{' => {
                let mut p = prefixes.last().cloned().unwrap_or_default();
                p.append(&mut current);
                prefixes.push(p);
            }
            b',' | b'}' => {
                if !current.is_empty() || glob {
                    let prefix = prefixes.last().map(Vec::as_slice).unwrap_or_default();
                    emit(prefix, &current, alias.as_deref(), glob);
                }
                current.clear();
                alias = None;
                glob = false;
                if c == b'}' && prefixes.len() > 1 {
                    prefixes.pop();
                }
            }
            _ => {}
        }
        i += 1;
    }
    if !current.is_empty() || glob {
        let prefix = prefixes.last().map(Vec::as_slice).unwrap_or_default();
        emit(prefix, &current, alias.as_deref(), glob);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(style: Style, t: &str) -> Vec<(String, Option<String>, Option<String>)> {
        parse(style, t, 1)
            .into_iter()
            .map(|i| (i.module, i.name, i.bind))
            .collect()
    }

    fn s(m: &str, n: Option<&str>, b: Option<&str>) -> (String, Option<String>, Option<String>) {
        (m.into(), n.map(Into::into), b.map(Into::into))
    }

    #[test]
    fn python_forms() {
        assert_eq!(
            p(Style::Python, "from .util import (helper as h, Thing)"),
            [
                s(".util", Some("helper"), Some("h")),
                s(".util", Some("Thing"), Some("Thing"))
            ]
        );
        assert_eq!(
            p(Style::Python, "import os.path, numpy as np"),
            [s("os.path", None, Some("os")), s("numpy", None, Some("np"))]
        );
        assert_eq!(
            p(Style::Python, "from m import *"),
            [s("m", Some("*"), None)]
        );
    }

    #[test]
    fn items_of_a_multi_line_statement_get_their_own_lines() {
        let text = "from .models import (  # noqa\n    Request,\n    Response as R,\n)";
        let mut items = parse(Style::Python, text, 10);
        place(&mut items, text, 10);
        let lines: Vec<(Option<&str>, u64)> =
            items.iter().map(|i| (i.name.as_deref(), i.line)).collect();
        assert_eq!(lines, [(Some("Request"), 11), (Some("Response"), 12)]);
    }

    #[test]
    fn rust_use_trees() {
        assert_eq!(
            p(
                Style::Rust,
                "pub(crate) use crate::a::{b, c::d as e, f::*, self};"
            ),
            [
                s("crate::a", Some("b"), Some("b")),
                s("crate::a::c", Some("d"), Some("e")),
                s("crate::a::f", Some("*"), None),
                s("crate", Some("a"), Some("a")),
            ]
        );
        assert_eq!(
            p(Style::Rust, "use std::io;"),
            [s("std", Some("io"), Some("io"))]
        );
        assert_eq!(
            p(Style::Rust, "extern crate serde as s;"),
            [s("serde", None, Some("s"))]
        );
    }

    #[test]
    fn other_languages() {
        assert_eq!(
            p(Style::Ecma, "import d, { a as b, c } from './m';"),
            [
                s("./m", Some("a"), Some("b")),
                s("./m", Some("c"), Some("c")),
                s("./m", Some("default"), Some("d")),
            ]
        );
        assert_eq!(
            p(
                Style::Ecma,
                "import { a, // the first\n b } from \"http://x/y\";"
            ),
            [
                s("http://x/y", Some("a"), Some("a")),
                s("http://x/y", Some("b"), Some("b"))
            ]
        );
        assert_eq!(
            p(
                Style::Ecma,
                "export { a, b as c, type T } from './m'; // re-exported"
            ),
            [
                s("./m", Some("a"), Some("a")),
                s("./m", Some("b"), Some("c")),
                s("./m", Some("T"), Some("T")),
            ]
        );
        assert_eq!(
            p(Style::Ecma, "export * from \"./atom\""),
            [s("./atom", Some("*"), None)]
        );
        assert_eq!(
            p(Style::Ecma, "export * as ops from './ops';"),
            [s("./ops", None, Some("ops"))]
        );
        assert_eq!(
            p(Style::Ecma, "import * as ns from \"lib\""),
            [s("lib", None, Some("ns"))]
        );
        assert_eq!(
            p(Style::Go, "h \"net/http\""),
            [s("net/http", None, Some("h"))]
        );
        assert_eq!(
            p(Style::Go, "\"net/http\""),
            [s("net/http", None, Some("http"))]
        );
        assert_eq!(
            p(Style::Java, "import static a.b.C.m;"),
            [s("a.b.C", Some("m"), Some("m"))]
        );
        assert_eq!(
            p(Style::C, "#include \"x/y.h\""),
            [s("x/y.h", Some("*"), None)]
        );
        assert_eq!(
            p(Style::CSharp, "using IO = System.IO;"),
            [s("System", Some("IO"), Some("IO"))]
        );
        assert_eq!(
            p(Style::Php, "use App\\Models\\User as U;"),
            [s("App\\Models", Some("User"), Some("U"))]
        );
    }
}
