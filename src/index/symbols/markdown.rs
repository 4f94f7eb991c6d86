//! Markdown headings as symbols (kind `section`), nested by level: a section runs
//! from its heading to the line before the next heading of the same or a higher
//! level, its parent is the nearest heading above it of a higher level, and its
//! qualified name joins the headings with ` > ` (`Install > From source`).
//!
//! A line scanner, not a parser: ATX headings (`## Title`, up to three spaces in,
//! closing `#`s dropped) and setext headings (a paragraph line over `===` or
//! `---`), never inside fenced code blocks or a YAML front matter. That is all a
//! heading needs, it costs one pass over the lines, and no grammar is linked for it.

use super::{Symbol, SymbolKind};

/// Longest heading kept as a name.
const NAME_CHARS: usize = 120;
/// Longest doc (the section's first paragraph) kept.
const DOC_CHARS: usize = 300;
/// How qualified names join a section to its parents.
pub const SEP: &str = " > ";

/// A heading found: its level, text and 0-based line.
struct Heading {
    level: usize,
    text: String,
    /// The line the heading starts on (a setext heading's text line).
    line: usize,
    /// The lines it takes (2 for setext).
    lines: usize,
}

/// The headings of `text` as sections, in document order.
pub fn headings(text: &str) -> Vec<Symbol> {
    let lines: Vec<&str> = text.lines().collect();
    let found = scan(&lines);
    let mut out: Vec<Symbol> = Vec::with_capacity(found.len());
    // Open sections, outermost first: (level, index in `out`).
    let mut open: Vec<(usize, usize)> = Vec::new();
    for (i, h) in found.iter().enumerate() {
        while open.last().is_some_and(|&(level, _)| level >= h.level) {
            open.pop();
        }
        // Ends before the next heading of this level or higher, blank lines trimmed.
        let next = found[i + 1..]
            .iter()
            .find(|n| n.level <= h.level)
            .map_or(lines.len(), |n| n.line);
        let mut end = next;
        while end > h.line + h.lines && lines[end - 1].trim().is_empty() {
            end -= 1;
        }
        let parent = open.last().map(|&(_, k)| out[k].qualified_name.clone());
        let qualified = match &parent {
            Some(p) => format!("{p}{SEP}{}", h.text),
            None => h.text.clone(),
        };
        let signature: String = lines[h.line].trim().chars().take(200).collect();
        open.push((h.level, out.len()));
        out.push(Symbol {
            name: h.text.clone(),
            qualified_name: qualified,
            kind: SymbolKind::Section,
            parent,
            signature,
            doc: first_paragraph(&lines[(h.line + h.lines).min(end)..end]),
            start_line: h.line as u64 + 1,
            end_line: end.max(h.line + h.lines) as u64,
            calls: Vec::new(),
            complexity: 1,
        });
    }
    out
}

/// Every heading outside fences and front matter.
fn scan(lines: &[&str]) -> Vec<Heading> {
    let mut out = Vec::new();
    let mut fence: Option<(char, usize)> = None;
    let mut i = 0;
    // A YAML front matter: `---` on the first line up to the next `---` or `...`.
    if lines.first().is_some_and(|l| l.trim_end() == "---") {
        if let Some(end) = lines[1..]
            .iter()
            .position(|l| matches!(l.trim_end(), "---" | "..."))
        {
            i = end + 2;
        }
    }
    while i < lines.len() {
        let line = lines[i];
        let indent = line.len() - line.trim_start_matches(' ').len();
        let t = line.trim();
        if indent < 4 {
            if let Some(f) = fence_of(t) {
                match fence {
                    None => fence = Some(f),
                    // Closed by the same character, at least as long, nothing after.
                    Some((c, n)) if f.0 == c && f.1 >= n && t.trim_start_matches(c).is_empty() => {
                        fence = None
                    }
                    Some(_) => {}
                }
                i += 1;
                continue;
            }
        }
        if fence.is_some() || indent >= 4 {
            i += 1;
            continue;
        }
        if let Some((level, text)) = atx(t) {
            if !text.is_empty() {
                out.push(Heading {
                    level,
                    text,
                    line: i,
                    lines: 1,
                });
            }
            i += 1;
            continue;
        }
        // Setext: a paragraph line (not a list item, quote, table or HTML) over an
        // underline, the line before it blank or the start of the file.
        if let Some(level) = lines.get(i + 1).and_then(|u| underline(u)) {
            let starts_paragraph = i == 0 || lines[i - 1].trim().is_empty();
            let plain = !t.is_empty()
                && !t.starts_with(['-', '*', '+', '>', '|', '<'])
                && !t.starts_with(|c: char| c.is_ascii_digit() && t.contains(". "));
            if starts_paragraph && plain {
                out.push(Heading {
                    level,
                    text: t.chars().take(NAME_CHARS).collect(),
                    line: i,
                    lines: 2,
                });
                i += 2;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// An opening or closing code fence: its character and length.
fn fence_of(t: &str) -> Option<(char, usize)> {
    let c = t.chars().next().filter(|c| matches!(c, '`' | '~'))?;
    let n = t.chars().take_while(|&x| x == c).count();
    (n >= 3).then_some((c, n))
}

/// `## Title ##` → (2, `Title`).
fn atx(t: &str) -> Option<(usize, String)> {
    let level = t.chars().take_while(|&c| c == '#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &t[level..];
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    let mut text = rest.trim();
    // A closing sequence of `#`s, after a space, is not part of the heading.
    let stripped = text.trim_end_matches('#');
    if stripped.is_empty() || stripped.ends_with([' ', '\t']) {
        text = stripped.trim_end();
    }
    Some((level, text.chars().take(NAME_CHARS).collect()))
}

/// `===` → 1, `---` → 2 (up to three spaces in, nothing else on the line).
fn underline(l: &str) -> Option<usize> {
    let indent = l.len() - l.trim_start_matches(' ').len();
    let t = l.trim();
    if indent >= 4 || t.is_empty() {
        return None;
    }
    if t.chars().all(|c| c == '=') {
        Some(1)
    } else if t.chars().all(|c| c == '-') {
        Some(2)
    } else {
        None
    }
}

/// The first paragraph of a section's body, on one line.
fn first_paragraph(body: &[&str]) -> Option<String> {
    let para: Vec<&str> = body
        .iter()
        .map(|l| l.trim())
        .skip_while(|l| l.is_empty())
        .take_while(|l| !l.is_empty() && !l.starts_with('#') && fence_of(l).is_none())
        .collect();
    let d: String = para.join(" ").chars().take(DOC_CHARS).collect();
    (!d.is_empty()).then_some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atx_and_setext_nest_and_fences_hide() {
        let text = "---\ntitle: x\n---\n# Guide\n\nIntro text.\n\n## Install ##\n\n```sh\n# not a heading\n```\n\nSetext\n------\n\nbody\n\n#hashtag\n### Deep\n# Other\n";
        let h = headings(text);
        let got: Vec<(&str, Option<&str>, u64, u64)> = h
            .iter()
            .map(|s| {
                (
                    s.qualified_name.as_str(),
                    s.parent.as_deref(),
                    s.start_line,
                    s.end_line,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("Guide", None, 4, 20),
                ("Guide > Install", Some("Guide"), 8, 12),
                ("Guide > Setext", Some("Guide"), 14, 20),
                ("Guide > Setext > Deep", Some("Guide > Setext"), 20, 20),
                ("Other", None, 21, 21),
            ]
        );
        assert_eq!(h[0].doc.as_deref(), Some("Intro text."));
        assert_eq!(h[1].signature, "## Install ##");
    }
}
