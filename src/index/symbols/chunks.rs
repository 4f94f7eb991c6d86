//! Cutting a file into chunks along its structure: symbols for source code, headings
//! for Markdown, line windows for everything else.
//!
//! A chunk is what search returns and what gets one vector, so it should be one idea:
//! a function with its doc comment, a method, a small class. With source code:
//!
//! - each symbol without smaller symbols inside is one chunk, its doc comment and
//!   attributes (the comment lines right above it) included; a symbol with members
//!   (a class, a trait) is cut into its members when it is too long to keep whole;
//! - the file's header (module docs, imports: the lines before its first symbol) is a
//!   chunk of its own;
//! - small neighbours are merged only when they share a parent (methods of one type,
//!   top-level items of one file), so no chunk mixes two types' code;
//! - a body too long for one chunk is cut into pieces at statement boundaries (a line
//!   at the body's own indentation), never in the middle of a nested block when one
//!   can be avoided.
//!
//! Every line of the file is in exactly one chunk for source and Markdown (pieces of a
//! long body do not overlap: the chunk's context line, which repeats the signature,
//! does what an overlap would), and in at least one for line windows.
//!
//! Each chunk carries a context line (`Type · signature`), which the index puts before
//! the chunk's text for the keyword index and the embedder; the stored text stays the
//! source.

use super::Symbol;
use crate::index::chunk::{line_windows, WINDOW};

/// Longest symbol kept whole; a longer one is cut into members or pieces.
const LONGEST: usize = WINDOW;
/// Longest piece of a long body.
const PIECE: usize = 50;
/// Shortest piece worth cutting at a statement boundary (else cut at [`PIECE`]).
const PIECE_MIN: usize = 20;
/// A segment this short may merge with a neighbour of the same parent...
const SMALL: usize = 6;
/// ...while the merged chunk stays this short.
const MERGED: usize = 20;

/// One chunk: lines `start_line..=end_line` (1-based) of its file, the symbol (or
/// Markdown heading) it belongs to, and its context line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolChunk {
    pub start_line: u64,
    pub end_line: u64,
    /// The source lines, exactly.
    pub text: String,
    /// The qualified name of the symbol (or the heading) it is, or of the largest one
    /// of a merged chunk.
    pub symbol: Option<String>,
    /// What the chunk is, for search: the enclosing type and the signature
    /// (`Session · def request(self, method, url)`), the merged symbols' names, the
    /// heading, or `header` for a file's header; empty for line windows.
    pub context: String,
}

/// A run of lines (1-based, inclusive) and what it belongs to.
#[derive(Debug, Clone)]
struct Segment {
    start: usize,
    end: usize,
    /// Index of the symbol it is, if any.
    symbol: Option<usize>,
    /// The parent whose members may merge with it (`None`: the file's top level).
    parent: Option<String>,
    /// A file's header: never merged with a symbol.
    header: bool,
    /// Lines between symbols (`symbol` may still name the type they are inside).
    gap: bool,
}

impl Segment {
    fn len(&self) -> usize {
        self.end + 1 - self.start
    }
}

/// Chunks of a file whose symbols are `symbols` (empty for no grammar).
pub fn chunk_file(lang: &str, text: &str, symbols: &[Symbol]) -> Vec<SymbolChunk> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    if lines.is_empty() {
        return Vec::new();
    }
    if lang == "markdown" {
        return sections(&lines);
    }
    if symbols.is_empty() {
        return line_windows(text)
            .into_iter()
            .map(|c| SymbolChunk {
                start_line: c.start_line,
                end_line: c.end_line,
                text: c.text,
                symbol: None,
                context: String::new(),
            })
            .collect();
    }
    let tree = Tree::new(symbols, &lines);
    let mut segments = Vec::new();
    tree.units(&tree.roots, 1, lines.len(), None, true, &mut segments);
    let segments = merge(&lines, segments);
    let mut out = Vec::new();
    for seg in &segments {
        emit(&lines, symbols, seg, &mut out);
    }
    out
}

/// Symbols arranged by containment of their line ranges, each with the line its doc
/// comment starts on.
struct Tree<'a> {
    symbols: &'a [Symbol],
    lines: &'a [&'a str],
    roots: Vec<usize>,
    children: Vec<Vec<usize>>,
}

impl<'a> Tree<'a> {
    fn new(symbols: &'a [Symbol], lines: &'a [&'a str]) -> Tree<'a> {
        let n_lines = lines.len();
        let mut order: Vec<usize> = (0..symbols.len())
            .filter(|&i| {
                let s = &symbols[i];
                s.start_line >= 1 && s.start_line <= s.end_line && s.start_line as usize <= n_lines
            })
            .collect();
        order.sort_by_key(|&i| {
            (
                symbols[i].start_line,
                std::cmp::Reverse(symbols[i].end_line),
            )
        });
        let mut roots = Vec::new();
        let mut children = vec![Vec::new(); symbols.len()];
        let mut open: Vec<usize> = Vec::new();
        for i in order {
            while open
                .last()
                .is_some_and(|&p| symbols[p].end_line < symbols[i].end_line)
            {
                open.pop();
            }
            match open.last() {
                Some(&p) => children[p].push(i),
                None => roots.push(i),
            }
            open.push(i);
        }
        Tree {
            symbols,
            lines,
            roots,
            children,
        }
    }

    /// Segments covering lines `a..=b`: each of `kids` (with its doc comment) whole,
    /// or cut into its own members when it is too long and has some; the lines between
    /// them as segments of `parent`. `top`: `a..` starts the file, so the lines before
    /// the first symbol are its header.
    fn units(
        &self,
        kids: &[usize],
        a: usize,
        b: usize,
        parent: Option<String>,
        top: bool,
        out: &mut Vec<Segment>,
    ) {
        let gap = |start: usize, end: usize, header: bool, out: &mut Vec<Segment>| {
            if start <= end {
                out.push(Segment {
                    start,
                    end,
                    symbol: None,
                    parent: parent.clone(),
                    header,
                    gap: true,
                });
            }
        };
        let mut at = a;
        let mut first = true;
        for &k in kids {
            let s = &self.symbols[k];
            let end = (s.end_line as usize).min(b);
            let start = (s.start_line as usize).max(at);
            if start > end {
                continue;
            }
            let start = doc_start(self.lines, start, at);
            gap(at, start - 1, top && first, out);
            first = false;
            if end + 1 - start > LONGEST && !self.children[k].is_empty() {
                let me = Some(s.qualified_name.clone());
                // The member list's own lines (declaration, fields, closing brace)
                // are segments of this symbol, owned by it.
                let mut inner = Vec::new();
                self.units(&self.children[k], start, end, me.clone(), false, &mut inner);
                for mut seg in inner {
                    if seg.symbol.is_none() {
                        seg.symbol = Some(k);
                    }
                    out.push(seg);
                }
            } else {
                out.push(Segment {
                    start,
                    end,
                    symbol: Some(k),
                    parent: s.parent.clone(),
                    header: false,
                    gap: false,
                });
            }
            at = end + 1;
        }
        gap(at, b, top && first, out);
    }
}

/// The first line of the comment, attribute and decorator lines right above line
/// `start` (no blank line between), not above `floor`.
fn doc_start(lines: &[&str], start: usize, floor: usize) -> usize {
    let mut s = start;
    while s > floor {
        let t = lines[s - 2].trim_start();
        let doc = ["//", "/*", "*", "#", "@", "--", "\"\"\""]
            .iter()
            .any(|p| t.starts_with(p));
        if !doc {
            break;
        }
        s -= 1;
    }
    s
}

/// Neighbours merged when both are small, they share a parent (and neither is a
/// header), and the result stays small. A few lines that belong to no symbol join a
/// neighbour whatever its parent: closing brackets the segment before them, anything
/// else (`impl Foo {`, a decorator the grammar left out) the segment after them.
fn merge(lines: &[&str], segments: Vec<Segment>) -> Vec<Segment> {
    let mut out: Vec<Segment> = Vec::new();
    let mut pending: Option<usize> = None;
    let n = segments.len();
    for (i, mut seg) in segments.into_iter().enumerate() {
        let stray = seg.gap && seg.len() <= 3 && !seg.header;
        let closing = stray && only_closing(lines, &seg);
        if let Some(start) = pending.take() {
            seg.start = start;
        }
        if let Some(last) = out.last_mut() {
            let same_parent = last.parent == seg.parent && !last.header && !seg.header;
            let small = last.len() < MERGED && seg.len() < SMALL;
            if closing || (same_parent && small && last.len() + seg.len() <= MERGED) {
                last.end = seg.end;
                // A merged chunk is named by its first symbol, or by the one it took.
                if last.symbol.is_none() {
                    last.symbol = seg.symbol;
                }
                continue;
            }
        }
        if stray && !closing && i + 1 < n {
            pending = Some(seg.start);
            continue;
        }
        out.push(seg);
    }
    out
}

/// Whether a segment's lines are only closing brackets, `;`, `,` and blanks.
fn only_closing(lines: &[&str], seg: &Segment) -> bool {
    lines[seg.start - 1..seg.end].iter().all(|t| {
        t.trim()
            .chars()
            .all(|c| matches!(c, ')' | ']' | '}' | ';' | ','))
    })
}

/// The context line of a segment: `Parent · signature` of its symbol.
fn context_of(symbols: &[Symbol], seg: &Segment, names: &[&str]) -> String {
    if seg.header {
        return "header".into();
    }
    let Some(k) = seg.symbol else {
        return seg.parent.clone().unwrap_or_default();
    };
    let s = &symbols[k];
    let mut parts: Vec<&str> = Vec::new();
    if let Some(p) = &s.parent {
        parts.push(p);
    }
    let joined;
    if names.len() > 1 {
        joined = names.join(", ");
        parts.push(&joined);
    } else if !s.signature.is_empty() {
        parts.push(&s.signature);
    } else {
        parts.push(&s.qualified_name);
    }
    parts.join(" · ")
}

fn emit(lines: &[&str], symbols: &[Symbol], seg: &Segment, out: &mut Vec<SymbolChunk>) {
    // The symbols that start inside the segment (a merged chunk's several).
    let names: Vec<&str> = symbols
        .iter()
        .filter(|s| {
            (s.start_line as usize) >= seg.start
                && (s.end_line as usize) <= seg.end
                && seg.symbol.is_some_and(|k| symbols[k].parent == s.parent)
        })
        .map(|s| s.name.as_str())
        .take(6)
        .collect();
    let context = context_of(symbols, seg, &names);
    let symbol = seg.symbol.map(|k| symbols[k].qualified_name.clone());
    for (start, end) in pieces(lines, seg.start, seg.end) {
        out.push(SymbolChunk {
            start_line: start as u64,
            end_line: end as u64,
            text: lines[start - 1..end].concat(),
            symbol: symbol.clone(),
            context: context.clone(),
        });
    }
}

/// `a..=b` whole when short, else cut into pieces of at most [`PIECE`] lines, each
/// ending before a statement boundary where one is found.
fn pieces(lines: &[&str], a: usize, b: usize) -> Vec<(usize, usize)> {
    if b + 1 - a <= LONGEST {
        return vec![(a, b)];
    }
    let indent = |l: &str| l.len() - l.trim_start().len();
    // The body's statement level: the least indentation of its non-blank lines after
    // the first (the declaration) and before the last (its closing line).
    let level = lines[a..b.saturating_sub(1).max(a)]
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| indent(l))
        .min()
        .unwrap_or(0);
    let boundary = |i: usize| {
        let l = lines[i - 1];
        let t = l.trim_start();
        !t.is_empty() && indent(l) == level && !t.starts_with(|c: char| ")]}.,&|+-*/?:".contains(c))
    };
    let mut out = Vec::new();
    let mut p = a;
    while p <= b {
        if b + 1 - p <= LONGEST.min(PIECE + PIECE_MIN / 2) {
            out.push((p, b));
            break;
        }
        let limit = p + PIECE - 1;
        let cut = (p + PIECE_MIN..=limit)
            .rev()
            .find(|&i| i <= b && boundary(i))
            .map(|i| i - 1)
            .unwrap_or(limit);
        out.push((p, cut));
        p = cut + 1;
    }
    out
}

/// A Markdown section: first and last line, and its heading.
type Section = (usize, usize, Option<String>);

/// Markdown sections: each heading (outside code fences) starts one; small ones merge.
fn sections(lines: &[&str]) -> Vec<SymbolChunk> {
    let mut segs: Vec<Section> = Vec::new();
    let mut fenced = false;
    let mut current = (1usize, 0usize, None::<String>);
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fenced = !fenced;
        }
        if !fenced && t.starts_with('#') && i > 0 {
            current.1 = i;
            segs.push(current);
            current = (i + 1, 0, None);
        }
        if !fenced && t.starts_with('#') && current.2.is_none() {
            let heading = t.trim_start_matches('#').trim();
            if !heading.is_empty() {
                current.2 = Some(heading.chars().take(120).collect());
            }
        }
    }
    current.1 = lines.len();
    segs.push(current);
    // Neighbours merged while the result stays within one window; a merged chunk is
    // named by its largest named part.
    let mut merged: Vec<(Section, usize)> = Vec::new();
    for seg in segs {
        let len = seg.1 + 1 - seg.0;
        let owned = if seg.2.is_some() { len } else { 0 };
        if let Some((last, best)) = merged.last_mut() {
            let last_len = last.1 + 1 - last.0;
            if last_len + len <= WINDOW && last_len < LONGEST && len < LONGEST {
                last.1 = seg.1;
                if owned > *best {
                    last.2 = seg.2;
                    *best = owned;
                }
                continue;
            }
        }
        merged.push((seg, owned));
    }
    let mut out = Vec::new();
    for ((a, b, name), _) in merged {
        for (start, end) in pieces(lines, a, b) {
            out.push(SymbolChunk {
                start_line: start as u64,
                end_line: end as u64,
                text: lines[start - 1..end].concat(),
                symbol: name.clone(),
                context: name.clone().unwrap_or_default(),
            });
        }
    }
    out
}
