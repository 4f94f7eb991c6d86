//! Turning fused keys into hits: look each key up, drop what the filters exclude,
//! apply the boosts, and cut a snippet.

use globset::{Glob, GlobMatcher};

use super::{parent_dir, HitKind, SearchError, SearchHit, SearchOptions};
use crate::index;
use crate::key::hash64;
use crate::memory::Memory;
use crate::store::Store;
use crate::text::split_identifier;

/// The filters that need more than SQL: a compiled path glob.
pub(super) struct Filter {
    glob: Option<GlobMatcher>,
}

impl Filter {
    pub(super) fn new(opts: &SearchOptions) -> Result<Filter, SearchError> {
        let glob = match &opts.path_glob {
            Some(g) => Some(
                Glob::new(g)
                    .map_err(|e| {
                        SearchError::Invalid(format!(
                            "path glob {g:?} is not valid: {e}; use forms like src/**/*.rs"
                        ))
                    })?
                    .compile_matcher(),
            ),
            None => None,
        };
        Ok(Filter { glob })
    }
}

impl Filter {
    /// Whether code of language `lang` at `path` passes the language and path filters.
    fn admits(&self, opts: &SearchOptions, lang: &str, path: &str) -> bool {
        opts.lang.as_deref().is_none_or(|l| l == lang)
            && self.glob.as_ref().is_none_or(|g| g.is_match(path))
    }
}

/// A code hit at `path`, lines `start..=end`; score, snippet and symbol to be set.
fn code_hit(key: String, kind: HitKind, path: String, (start, end): (u64, u64)) -> SearchHit {
    SearchHit {
        key,
        kind,
        path: Some(path),
        start_line: Some(start),
        end_line: Some(end),
        symbol: None,
        signature: None,
        score: 0.0,
        snippet: String::new(),
        text: None,
        stale: None,
    }
}

/// Boost for a hit in the file the user is in, and in its directory.
const SAME_FILE_BOOST: f64 = 1.5;
const SAME_DIR_BOOST: f64 = 1.2;
/// Most a recent change adds (fading to nothing over [`RECENT_MS`]).
const RECENT_BOOST: f64 = 0.3;
const RECENT_MS: f64 = 7.0 * 24.0 * 3600.0 * 1000.0;

/// How much each further chunk of a file adds to the file's score, as a share of its
/// own fused score, when files are asked for (`kind: file`). A file whose code matches
/// a question in several places is likelier the one to change than a file with one
/// stronger match: on the localization eval's tune half (benches/localize_eval.rs,
/// built-in embedder) ranking files by their best chunk alone gave Acc@1 0.298 and
/// MRR@10 0.448, adding 0.05 of each further chunk 0.340 / 0.479, 0.1 0.356 / 0.491,
/// 0.25 0.370 / 0.507, 0.5 0.354 / 0.498.
const FILE_EVIDENCE: f64 = 0.25;

/// Hits for the fused keys, best first, at most `top_k`.
pub(super) fn hits(
    store: &Store,
    query: &str,
    fused: &[(String, f64)],
    opts: &SearchOptions,
    filter: &Filter,
    top_k: usize,
) -> Result<Vec<SearchHit>, SearchError> {
    let terms = query_terms(query);
    let now = crate::store::now_ms();
    if opts.kind == Some(HitKind::File) {
        return file_hits(store, &terms, fused, opts, filter, top_k, now);
    }
    let mut out: Vec<(SearchHit, u64)> = Vec::new();
    // Without a boost a hit keeps its fused score, and `fused` is best first: once
    // `top_k` hits are in, only a key scoring as much as the last of them can still
    // place (a tie, which freshness and recency break). Each key resolved costs a
    // lookup and a read of its text.
    let boosted = opts.near.is_some() || opts.boost_recent;
    for (key, score) in fused {
        // Enough to re-rank after boosts without resolving the whole candidate list.
        if out.len() >= top_k * 3 {
            break;
        }
        if !boosted && out.len() >= top_k && *score < out[top_k - 1].0.score {
            break;
        }
        let (mut hit, changed_ms) = if key.starts_with("mem:") {
            let Some(m) = store.get(key)?.as_ref().and_then(Memory::from_record) else {
                continue;
            };
            let snippet = best_line(&m.text, &terms);
            let updated = m.updated_ms;
            (
                SearchHit {
                    key: key.clone(),
                    kind: HitKind::Memory,
                    path: None,
                    start_line: None,
                    end_line: None,
                    symbol: None,
                    signature: None,
                    score: *score,
                    snippet,
                    text: Some(m.text),
                    stale: None,
                },
                updated,
            )
        } else if key.starts_with("sym:") {
            let Some(info) = index::symbol_info(store, hash64(key))? else {
                continue;
            };
            if !filter.admits(opts, &info.lang, &info.path) {
                continue;
            }
            let snippet = info.signature.chars().take(200).collect();
            let signature = Some(info.signature.clone()).filter(|s| !s.is_empty());
            let hit = code_hit(
                info.key,
                HitKind::Symbol,
                info.path,
                (info.start_line, info.end_line),
            );
            (
                SearchHit {
                    symbol: Some(info.qualified_name),
                    signature,
                    score: *score,
                    snippet,
                    ..hit
                },
                0,
            )
        } else {
            let Some(info) = index::chunk_info(store, hash64(key))? else {
                continue;
            };
            if !filter.admits(opts, &info.lang, &info.path) {
                continue;
            }
            let (hit_key, kind) = (info.key, HitKind::Chunk);
            let (body, signature) = chunk_text(store, key)?;
            let hit = SearchHit {
                symbol: info.symbol,
                signature,
                score: *score,
                snippet: best_span(&body, &terms),
                ..code_hit(hit_key, kind, info.path, (info.start_line, info.end_line))
            };
            (hit, info.mtime_ms)
        };
        boost(&mut hit, opts, changed_ms, now);
        out.push((hit, changed_ms));
    }
    finish(store, out, top_k)
}

/// The `near` and `boost_recent` boosts of one hit.
fn boost(hit: &mut SearchHit, opts: &SearchOptions, changed_ms: u64, now: u64) {
    if let (Some(near), Some(path)) = (&opts.near, &hit.path) {
        if path == near {
            hit.score *= SAME_FILE_BOOST;
        } else if parent_dir(path) == parent_dir(near) {
            hit.score *= SAME_DIR_BOOST;
        }
    }
    if opts.boost_recent {
        let age = now.saturating_sub(changed_ms) as f64;
        hit.score *= 1.0 + RECENT_BOOST * (1.0 - age / RECENT_MS).max(0.0);
    }
}

/// Files for the fused chunk keys: each file scored by its best chunk plus
/// [`FILE_EVIDENCE`] of each of its other chunks', its snippet and lines its best
/// chunk's. Every fused key is looked at (a later chunk can lift an earlier file), so
/// the candidate lists are fetched deeper for files (see `search`).
fn file_hits(
    store: &Store,
    terms: &[String],
    fused: &[(String, f64)],
    opts: &SearchOptions,
    filter: &Filter,
    top_k: usize,
    now: u64,
) -> Result<Vec<SearchHit>, SearchError> {
    let mut out: Vec<(SearchHit, u64)> = Vec::new();
    let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (key, score) in fused {
        if !key.starts_with("chunk:") {
            continue;
        }
        let Some(info) = index::chunk_info(store, hash64(key))? else {
            continue;
        };
        if !filter.admits(opts, &info.lang, &info.path) {
            continue;
        }
        if let Some(&i) = at.get(&info.path) {
            out[i].0.score += FILE_EVIDENCE * score;
            continue;
        }
        let (body, signature) = chunk_text(store, key)?;
        at.insert(info.path.clone(), out.len());
        let hit = SearchHit {
            symbol: info.symbol,
            signature,
            score: *score,
            snippet: best_span(&body, terms),
            ..code_hit(
                format!("file:{}", info.path),
                HitKind::File,
                info.path,
                (info.start_line, info.end_line),
            )
        };
        out.push((hit, info.mtime_ms));
    }
    for (hit, changed_ms) in &mut out {
        boost(hit, opts, *changed_ms, now);
    }
    finish(store, out, top_k)
}

/// Stale marks, then best first and at most `top_k`.
fn finish(
    store: &Store,
    mut out: Vec<(SearchHit, u64)>,
    top_k: usize,
) -> Result<Vec<SearchHit>, SearchError> {
    super::mark_stale(store, out.iter_mut().map(|(h, _)| h))?;
    // Best first; among equals fresh memories before stale ones, then the more
    // recent (the tie-breaker memories promise).
    let is_stale = |h: &SearchHit| h.stale.as_ref().is_some_and(|s| !s.is_empty());
    out.sort_by(|a, b| {
        b.0.score
            .total_cmp(&a.0.score)
            .then(is_stale(&a.0).cmp(&is_stale(&b.0)))
            .then(b.1.cmp(&a.1))
    });
    out.truncate(top_k);
    Ok(out.into_iter().map(|(h, _)| h).collect())
}

/// Lower-cased words and sub-words of the query, for picking a snippet line.
fn query_terms(query: &str) -> Vec<String> {
    let mut terms: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| w.len() > 1)
        .flat_map(|w| std::iter::once(w.to_lowercase()).chain(split_identifier(w)))
        .filter(|w| w.len() > 1)
        .collect();
    terms.sort();
    terms.dedup();
    terms
}

/// A chunk's text and the signature of the symbol it is code of (the last part of
/// its context line, `Type · signature`), if it has one.
fn chunk_text(store: &Store, key: &str) -> Result<(String, Option<String>), SearchError> {
    let Some(r) = store.get(key)? else {
        return Ok((String::new(), None));
    };
    let signature = r
        .meta
        .get("context")
        .and_then(|c| c.as_str())
        .and_then(|c| c.rsplit(" · ").next())
        .map(|s| s.trim().chars().take(300).collect::<String>())
        .filter(|s| !s.is_empty());
    Ok((String::from_utf8_lossy(&r.body).into_owned(), signature))
}

/// Lines a code snippet shows at most: the best line, two before and three after.
const SPAN_BEFORE: usize = 2;
const SPAN_AFTER: usize = 3;
/// Characters a code snippet holds at most (each line also at most 200).
const SPAN_CHARS: usize = 800;

/// The lines around the line holding the most query terms (see [`best_line`]),
/// within the chunk: blank lines at either end dropped, the indentation they share
/// removed, each line cut at 200 characters and the whole at [`SPAN_CHARS`].
fn best_span(text: &str, terms: &[String]) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let best = best_line_index(&lines, terms).unwrap_or(0);
    let mut from = best.saturating_sub(SPAN_BEFORE);
    let mut to = (best + SPAN_AFTER + 1).min(lines.len());
    while from < best && lines[from].trim().is_empty() {
        from += 1;
    }
    while to > best + 1 && lines[to - 1].trim().is_empty() {
        to -= 1;
    }
    let span = lines.get(from..to).unwrap_or(&[]);
    let indent = span
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out = String::new();
    for line in span {
        let line: String = line
            .get(indent..)
            .unwrap_or(line.trim_start())
            .trim_end()
            .chars()
            .take(200)
            .collect();
        if out.len() + line.len() + 1 > SPAN_CHARS && !out.is_empty() {
            break;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&line);
    }
    out.chars().take(SPAN_CHARS).collect()
}

/// The index of the line holding the most query terms (the first on a tie), else of
/// the first non-blank line.
fn best_line_index(lines: &[&str], terms: &[String]) -> Option<usize> {
    let mut best: Option<(usize, usize)> = None;
    for (i, line) in lines.iter().enumerate() {
        let lower = line.to_lowercase();
        let n = terms.iter().filter(|t| lower.contains(t.as_str())).count();
        if n > 0 && best.is_none_or(|(_, b)| n > b) {
            best = Some((i, n));
        }
    }
    best.map(|(i, _)| i)
        .or_else(|| lines.iter().position(|l| !l.trim().is_empty()))
}

/// The line holding the most query terms (the first such on a tie), else the first
/// non-blank line; trimmed to 200 characters.
fn best_line(text: &str, terms: &[String]) -> String {
    let mut best: Option<(&str, usize)> = None;
    for line in text.lines() {
        let lower = line.to_lowercase();
        let n = terms.iter().filter(|t| lower.contains(t.as_str())).count();
        if n > 0 && best.is_none_or(|(_, b)| n > b) {
            best = Some((line, n));
        }
    }
    let line = match best {
        Some((l, _)) => l,
        None => text.lines().find(|l| !l.trim().is_empty()).unwrap_or(""),
    };
    line.trim().chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_snippet_is_the_line_with_most_query_words() {
        let text = "use std::io;\nfn parse(x) {}\nfn parse_request(req: Request) {}\n";
        let terms = query_terms("parse request");
        assert_eq!(best_line(text, &terms), "fn parse_request(req: Request) {}");
        assert_eq!(best_line("\n\n  first  \nsecond", &terms), "first");
        assert_eq!(best_line(&"x".repeat(500), &[]).len(), 200);
    }

    #[test]
    fn the_code_snippet_is_the_span_around_the_best_line_dedented_and_capped() {
        let text = "impl Server {\n    /// Parse a request line.\n    fn parse_request(&self, line: &str) -> Request {\n        let mut parts = line.split(' ');\n        let method = parts.next();\n        let path = parts.next();\n        Request::new(method, path)\n    }\n}\n";
        let terms = query_terms("split parts");
        assert_eq!(
            best_span(text, &terms),
            "/// Parse a request line.\nfn parse_request(&self, line: &str) -> Request {\n    let mut parts = line.split(' ');\n    let method = parts.next();\n    let path = parts.next();\n    Request::new(method, path)"
        );
        // Blank lines at the ends are dropped; no match shows the first lines.
        assert_eq!(best_span("\n\nfn a() {}\n\n", &[]), "fn a() {}");
        // Long lines and long spans are capped.
        let long = format!("{}\n", "y".repeat(300)).repeat(10);
        let span = best_span(&long, &[]);
        assert_eq!(span.lines().count(), 3);
        assert!(span.lines().all(|l| l.chars().count() == 200));
        assert!(best_span(&long, &[]).len() <= SPAN_CHARS);
        assert_eq!(best_span("", &terms), "");
    }
}
