//! Cutting a file into chunks along its structure: symbols for source code, headings
//! for Markdown, line windows for everything else.
//!
//! A chunk is what search returns and what gets one vector, so it should be one idea:
//! a function, a small class, a section. Small neighbours are merged (a chunk per
//! three-line constant is noise); a symbol too long for one chunk is cut into
//! overlapping windows, each of which starts with the symbol's first line so it stays
//! findable by name. Every line of the file is in at least one chunk.

use super::Symbol;
use crate::index::chunk::{line_windows, OVERLAP, WINDOW};

/// Longest chunk kept whole; longer ones are windowed.
const LONGEST: usize = WINDOW + 20;

/// One chunk: lines `start_line..=end_line` (1-based) of its file, and the symbol (or
/// Markdown heading) it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolChunk {
    pub start_line: u64,
    pub end_line: u64,
    pub text: String,
    pub symbol: Option<String>,
}

/// A run of lines (1-based, inclusive) and what it belongs to.
#[derive(Debug, Clone)]
struct Segment {
    start: usize,
    end: usize,
    /// Name of the symbol or heading, and its first line (for windows' context).
    owner: Option<(String, usize)>,
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
    let segments = if lang == "markdown" {
        sections(&lines)
    } else if !symbols.is_empty() {
        let mut out = Vec::new();
        let tree = Tree::new(symbols, lines.len());
        tree.units(&tree.roots, 1, lines.len(), None, &mut out);
        out
    } else {
        return line_windows(text)
            .into_iter()
            .map(|c| SymbolChunk {
                start_line: c.start_line,
                end_line: c.end_line,
                text: c.text,
                symbol: None,
            })
            .collect();
    };
    emit(&lines, merge(segments))
}

/// Symbols arranged by containment of their line ranges.
struct Tree<'a> {
    symbols: &'a [Symbol],
    roots: Vec<usize>,
    children: Vec<Vec<usize>>,
}

impl<'a> Tree<'a> {
    fn new(symbols: &'a [Symbol], n_lines: usize) -> Tree<'a> {
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
            roots,
            children,
        }
    }

    /// Segments covering lines `a..=b`: each child symbol whole, or its own units when
    /// it is too long and has children; the lines between them as gaps owned by
    /// `owner`.
    fn units(
        &self,
        kids: &[usize],
        a: usize,
        b: usize,
        owner: Option<(String, usize)>,
        out: &mut Vec<Segment>,
    ) {
        let mut at = a;
        for &k in kids {
            let s = &self.symbols[k];
            let start = (s.start_line as usize).max(at);
            let end = (s.end_line as usize).min(b);
            if start > end {
                continue;
            }
            if start > at {
                out.push(Segment {
                    start: at,
                    end: start - 1,
                    owner: owner.clone(),
                });
            }
            let me = Some((s.qualified_name.clone(), s.start_line as usize));
            if end + 1 - start > LONGEST && !self.children[k].is_empty() {
                self.units(&self.children[k], start, end, me, out);
            } else {
                out.push(Segment {
                    start,
                    end,
                    owner: me,
                });
            }
            at = end + 1;
        }
        if at <= b {
            out.push(Segment {
                start: at,
                end: b,
                owner,
            });
        }
    }
}

/// Markdown sections: each heading (outside code fences) starts one.
fn sections(lines: &[&str]) -> Vec<Segment> {
    let mut out: Vec<Segment> = Vec::new();
    let mut fenced = false;
    let mut current = Segment {
        start: 1,
        end: 0,
        owner: None,
    };
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fenced = !fenced;
        }
        if !fenced && t.starts_with('#') && i > 0 {
            current.end = i;
            out.push(current);
            current = Segment {
                start: i + 1,
                end: 0,
                owner: None,
            };
        }
        if !fenced && t.starts_with('#') && current.owner.is_none() {
            let heading = t.trim_start_matches('#').trim();
            if !heading.is_empty() {
                current.owner = Some((heading.chars().take(120).collect(), i + 1));
            }
        }
    }
    current.end = lines.len();
    out.push(current);
    out
}

/// Neighbours merged while the result stays within one window; a merged chunk belongs
/// to the owner of its largest owned part.
fn merge(segments: Vec<Segment>) -> Vec<Segment> {
    let mut out: Vec<(Segment, usize)> = Vec::new();
    for seg in segments {
        let owned = if seg.owner.is_some() { seg.len() } else { 0 };
        if let Some((last, best)) = out.last_mut() {
            if last.len() + seg.len() <= WINDOW && last.len() < LONGEST && seg.len() < LONGEST {
                last.end = seg.end;
                if owned > *best {
                    last.owner = seg.owner;
                    *best = owned;
                }
                continue;
            }
        }
        out.push((seg, owned));
    }
    out.into_iter().map(|(s, _)| s).collect()
}

fn emit(lines: &[&str], segments: Vec<Segment>) -> Vec<SymbolChunk> {
    let mut out = Vec::new();
    for seg in segments {
        let name = seg.owner.as_ref().map(|(n, _)| n.clone());
        if seg.len() <= LONGEST {
            out.push(SymbolChunk {
                start_line: seg.start as u64,
                end_line: seg.end as u64,
                text: lines[seg.start - 1..seg.end].concat(),
                symbol: name,
            });
            continue;
        }
        // Too long: overlapping windows; later ones repeat the owner's first line.
        let context = seg
            .owner
            .as_ref()
            .map(|(_, first)| lines[first - 1].trim_end().to_string());
        let mut start = seg.start;
        loop {
            let end = (start + WINDOW - 1).min(seg.end);
            let mut text = String::new();
            if start != seg.start {
                if let Some(c) = &context {
                    text.push_str(c);
                    text.push_str(" …\n");
                }
            }
            text.push_str(&lines[start - 1..end].concat());
            out.push(SymbolChunk {
                start_line: start as u64,
                end_line: end as u64,
                text,
                symbol: name.clone(),
            });
            if end == seg.end {
                break;
            }
            start = end + 1 - OVERLAP;
        }
    }
    out
}
