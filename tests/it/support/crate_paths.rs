//! Reading Rust source for the paths it names: every `crate::Y` path, `use crate::{Y,
//! …}` group, `super::` path that climbs to the crate root, and intra-doc link, with
//! its line. Plain comments and string and character literals are skipped. Used by
//! `tests/it/layers.rs`; a reader of text, not a Rust parser: it needs only to find
//! paths, and its unit tests below say which shapes it handles.

/// One `crate::` reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    pub line: usize,
    pub to: String,
    /// The path as written, for the failure message.
    pub path: String,
}

// ---------------------------------------------------------------------------------
// Reading source: comments and literals out, doc comments apart.

/// `src` with plain comments and the contents of string and character literals
/// blanked (line breaks kept, so line numbers stay), and, line-aligned, the text of
/// its doc comments (`///`, `//!`) alone.
fn strip(src: &str) -> (String, String) {
    /// Both outputs, one character each per character read.
    struct Out {
        code: String,
        docs: String,
    }
    impl Out {
        fn keep(&mut self, c: char) {
            self.code.push(c);
            self.docs.push(if c == '\n' { '\n' } else { ' ' });
        }
        fn blank(&mut self, c: char) {
            let b = if c == '\n' { '\n' } else { ' ' };
            self.code.push(b);
            self.docs.push(b);
        }
        fn doc(&mut self, c: char) {
            self.code.push(' ');
            self.docs.push(c);
        }
    }
    let s: Vec<char> = src.chars().collect();
    let mut out = Out {
        code: String::with_capacity(src.len()),
        docs: String::with_capacity(src.len()),
    };
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            let doc = matches!(s.get(i + 2), Some('/') | Some('!')) && s.get(i + 3) != Some(&'/');
            while i < s.len() && s[i] != '\n' {
                if doc {
                    out.doc(s[i]);
                } else {
                    out.blank(s[i]);
                }
                i += 1;
            }
            continue;
        }
        if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < s.len() {
                if s[i] == '/' && s.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.blank(' ');
                    out.blank(' ');
                    i += 2;
                } else if s[i] == '*' && s.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.blank(' ');
                    out.blank(' ');
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.blank(s[i]);
                    i += 1;
                }
            }
            continue;
        }
        // Raw strings: r"…", r#"…"#, br#"…"# (the `r` not ending an identifier).
        if c == 'r' {
            let before = if i > 0 && s[i - 1] == 'b' {
                i.checked_sub(2)
            } else {
                i.checked_sub(1)
            };
            let starts = before.is_none_or(|b| !ident(s[b]));
            let mut j = i + 1;
            while j < s.len() && s[j] == '#' {
                j += 1;
            }
            if starts && s.get(j) == Some(&'"') {
                let hashes = j - i - 1;
                out.keep('r');
                for _ in 0..=hashes {
                    out.blank(' ');
                }
                i = j + 1;
                while i < s.len() {
                    if s[i] == '"' && (0..hashes).all(|k| s.get(i + 1 + k) == Some(&'#')) {
                        for _ in 0..=hashes {
                            out.blank(' ');
                        }
                        i += hashes + 1;
                        break;
                    }
                    out.blank(s[i]);
                    i += 1;
                }
                continue;
            }
        }
        if c == '"' {
            out.blank(' ');
            i += 1;
            while i < s.len() && s[i] != '"' {
                if s[i] == '\\' && i + 1 < s.len() {
                    out.blank(' ');
                    i += 1;
                }
                out.blank(s[i]);
                i += 1;
            }
            out.blank(' ');
            i += 1;
            continue;
        }
        if c == '\'' {
            // A character literal ('x', '\n', '\''), or else a lifetime or label.
            let end = if next == Some('\\') {
                (i + 3..s.len()).find(|&j| s[j] == '\'')
            } else if s.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            if let Some(end) = end {
                for &k in &s[i..=end] {
                    out.blank(k);
                }
                i = end + 1;
                continue;
            }
        }
        out.keep(c);
        i += 1;
    }
    (out.code, out.docs)
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    PathSep,
    Open,
    Close,
    Comma,
    Other,
}

/// Identifiers, `::`, braces and commas of blanked code, with their line numbers.
fn tokens(code: &str) -> Vec<(usize, Tok)> {
    let s: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < s.len() {
        let c = s[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < s.len() && (s[i].is_alphanumeric() || s[i] == '_') {
                i += 1;
            }
            out.push((line, Tok::Ident(s[start..i].iter().collect())));
        } else if c == ':' && s.get(i + 1) == Some(&':') {
            out.push((line, Tok::PathSep));
            i += 2;
        } else {
            out.push((
                line,
                match c {
                    '{' => Tok::Open,
                    '}' => Tok::Close,
                    ',' => Tok::Comma,
                    _ => Tok::Other,
                },
            ));
            i += 1;
        }
    }
    out
}

/// The first segments named at `toks[at..]`: one identifier, or each top-level
/// member of a `{…}` group (`self` aside). With the index after what was read.
fn first_segments(toks: &[(usize, Tok)], at: usize) -> (Vec<String>, usize) {
    match toks.get(at) {
        Some((_, Tok::Ident(x))) => (vec![x.clone()], at + 1),
        Some((_, Tok::Open)) => {
            let (mut names, mut depth, mut expect, mut i) = (Vec::new(), 0usize, true, at);
            while i < toks.len() {
                match &toks[i].1 {
                    Tok::Open => {
                        depth += 1;
                        expect = depth == 1;
                    }
                    Tok::Close => {
                        depth -= 1;
                        if depth == 0 {
                            return (names, i + 1);
                        }
                    }
                    Tok::Comma => expect = depth == 1,
                    Tok::Ident(x) if expect => {
                        if x != "self" {
                            names.push(x.clone());
                        }
                        expect = false;
                    }
                    _ => expect = false,
                }
                i += 1;
            }
            (names, i)
        }
        _ => (Vec::new(), at),
    }
}

/// Every edge out of one file whose module path (from the crate root) is `module`.
pub fn edges(src: &str, module: &[String]) -> Vec<Edge> {
    let (code, docs) = strip(src);
    let mut out = Vec::new();
    // Doc comments: intra-doc links, `crate::Y` only.
    for (n, line) in docs.lines().enumerate() {
        for (at, _) in line.match_indices("crate::") {
            let before = line[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
                continue;
            }
            let rest = &line[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.push(Edge {
                    line: n + 1,
                    to: name.clone(),
                    path: format!("crate::{name}"),
                });
            }
        }
    }
    // Code: paths, with inline modules tracked so `super::` resolves.
    let toks = tokens(&code);
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        let (line, tok) = &toks[i];
        let after_sep = i > 0 && toks[i - 1].1 == Tok::PathSep;
        match tok {
            Tok::Open => depth += 1,
            Tok::Close => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            Tok::Ident(m) if m == "mod" => {
                if let (Some((_, Tok::Ident(name))), Some((_, Tok::Open))) =
                    (toks.get(i + 1), toks.get(i + 2))
                {
                    inline.push((name.clone(), depth + 1));
                }
            }
            Tok::Ident(c)
                if c == "crate"
                    && !after_sep
                    && toks.get(i + 1).map(|t| &t.1) == Some(&Tok::PathSep) =>
            {
                let (names, _) = first_segments(&toks, i + 2);
                for name in names {
                    out.push(Edge {
                        line: *line,
                        to: name.clone(),
                        path: format!("crate::{name}"),
                    });
                }
            }
            Tok::Ident(c) if c == "super" && !after_sep => {
                let mut ups = 0;
                let mut j = i;
                while let (Some((_, Tok::Ident(w))), Some((_, Tok::PathSep))) =
                    (toks.get(j), toks.get(j + 1))
                {
                    if w != "super" {
                        break;
                    }
                    ups += 1;
                    j += 2;
                }
                let here = module.len() + inline.len();
                if ups >= here {
                    let (names, _) = first_segments(&toks, j);
                    for name in names {
                        out.push(Edge {
                            line: *line,
                            to: name.clone(),
                            path: format!("{}{name}", "super::".repeat(ups)),
                        });
                    }
                }
                i = j.max(i + 1);
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out.sort_by_key(|e| e.line);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(src: &str, module: &[&str]) -> Vec<(usize, String)> {
        let module: Vec<String> = module.iter().map(|m| m.to_string()).collect();
        edges(src, &module)
            .into_iter()
            .map(|e| (e.line, e.to))
            .collect()
    }

    #[test]
    fn paths_groups_and_doc_links_are_edges() {
        let src = "//! Uses [`crate::alpha::A`].\n\
                   use crate::{beta::B, gamma::{self, C}, self as me};\n\
                   use crate::delta;\n\
                   fn f() { crate::epsilon::go(); }\n";
        assert_eq!(
            targets(src, &["m"]),
            [
                (1, "alpha".into()),
                (2, "beta".into()),
                (2, "gamma".into()),
                (3, "delta".into()),
                (4, "epsilon".into())
            ]
        );
    }

    #[test]
    fn comments_and_literals_are_not_edges() {
        let src = "// `crate::token::Custom`: a path in a plain comment\n\
                   /* crate::block /* nested crate::x */ crate::y */\n\
                   const S: &str = \"crate::string\";\n\
                   const R: &str = r#\"crate::raw \" still\"#;\n\
                   const C: char = '\"'; const D: char = '\\'';\n\
                   fn g<'a>(x: &'a str) -> &'a str { x }\n\
                   use crate::after;\n";
        assert_eq!(targets(src, &["m"]), [(7, "after".into())]);
    }

    #[test]
    fn super_paths_count_only_when_they_leave_the_module() {
        let src = "use super::inside;\n\
                   mod tests {\n\
                       use super::super::is_zero;\n\
                       use super::super::super::outside;\n\
                   }\n\
                   use super::super::{left, right};\n";
        assert_eq!(
            targets(src, &["embed", "hashed"]),
            [
                (4, "outside".into()),
                (6, "left".into()),
                (6, "right".into())
            ]
        );
    }
}
