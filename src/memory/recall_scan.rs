//! Keyword ranking of memories over posting lists held in memory: the same order and
//! scores as the FTS5 statement ([`super::recall`]'s `ranked`), without asking FTS5 to
//! walk and score every memory holding a common word on each query.
//!
//! In a million memories two common words are held by hundreds of thousands of rows;
//! FTS5 merges their position lists and the ranking function reads each row's instances
//! on every query (about 240 ms). Here the lists of each token (rowid, count per column,
//! row length) are read once per database state (`store::fts_postings`), merged by rowid
//! and scored with `bm25()`'s formula, operations and inputs, so the scores are equal to
//! the bit and ties go, as in the statement, to the later row.
//!
//! It takes the expressions engram writes when they are flat (phrases all joined by AND,
//! or all by OR) and every phrase is one ASCII token; anything else, a saturated list,
//! an explicit transaction, or a filter that rejects too many of the best rows returns
//! `None` and the caller runs the statement.
//!
//! Owns: parsing those expressions, the merge, the scores and the order. Must never write.

use std::cmp::Ordering;
use std::sync::Arc;

use rusqlite::types::Value;
use rusqlite::Connection;

use crate::store::fts_postings::{self, Postings};

/// The memories' full-text table and its column weights (text, tags).
const TABLE: &str = "memories_fts";
const WEIGHTS: [f64; 2] = [1.0, 2.0];

/// BM25's constants, as FTS5's `bm25()` has them.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// Rows checked against a filter at most before the statement is cheaper.
const MAX_FILTER_CHECKS: usize = 4096;

/// A flat expression: its tokens and whether every one must be held.
#[derive(Debug, PartialEq)]
struct Flat {
    tokens: Vec<String>,
    all: bool,
}

/// The tokens of `expr` when it is `"a"`, `"a" AND "b" …` or `"a" OR "b" …`, each phrase
/// one lower-case ASCII token (what `unicode61` keeps as it is).
fn parse_flat(expr: &str) -> Option<Flat> {
    let mut tokens = Vec::new();
    let mut op: Option<bool> = None;
    let mut rest = expr;
    loop {
        let body = rest.strip_prefix('"')?;
        let end = body.find('"')?;
        let token = &body[..end];
        let ok = !token.is_empty()
            && token
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        if !ok {
            return None;
        }
        tokens.push(token.to_string());
        rest = &body[end + 1..];
        if rest.is_empty() {
            break;
        }
        let (this, after) = if let Some(a) = rest.strip_prefix(" AND ") {
            (true, a)
        } else if let Some(a) = rest.strip_prefix(" OR ") {
            (false, a)
        } else {
            return None;
        };
        if op.is_some_and(|o| o != this) {
            return None;
        }
        op = Some(this);
        rest = after;
    }
    Some(Flat {
        tokens,
        all: op.unwrap_or(true),
    })
}

/// A scored row: `bm25()`'s score (higher is better) and its rowid.
#[derive(Clone, Copy)]
struct Scored {
    score: f64,
    rowid: i64,
}

/// The statement's order: best score first, then the later row.
fn better(a: &Scored, b: &Scored) -> Ordering {
    b.score
        .total_cmp(&a.score)
        .then_with(|| b.rowid.cmp(&a.rowid))
}

/// `(id, score)` of the best `limit` memories matching `expr` among those `cond` keeps
/// (with `filter_args`, from [`super::MemoryFilter::sql_per_row`]), best first, ties
/// to the later write; `None` when this path cannot answer exactly (see the module).
pub(super) fn ranked(
    db: &Connection,
    expr: &str,
    cond: &str,
    filter_args: &[Value],
    limit: usize,
) -> crate::store::Result<Option<Vec<(String, f64)>>> {
    let Some(flat) = parse_flat(expr) else {
        return Ok(None);
    };
    // Every token is asked for, even after one is missing, so that the next query of
    // the same words finds all their lists (see `fts_postings::postings`).
    let mut lists: Vec<Arc<Postings>> = Vec::with_capacity(flat.tokens.len());
    let mut complete = true;
    for token in &flat.tokens {
        match fts_postings::postings(db, TABLE, token)? {
            Some(list) if !list.saturated => lists.push(list),
            _ => complete = false,
        }
    }
    if !complete {
        return Ok(None);
    }
    let Some(first) = flat
        .tokens
        .iter()
        .zip(&lists)
        .find(|(_, l)| !l.rows.is_empty())
    else {
        return Ok(Some(Vec::new()));
    };
    let Some((n_row, n_token)) = fts_postings::totals(db, TABLE, first.0)? else {
        return Ok(None);
    };
    let mut scored = score_all(&lists, flat.all, n_row, n_token);
    let mut id_of = db.prepare_cached(&format!(
        "SELECT m.id FROM memories m WHERE m.seq = ?{cond}"
    ))?;
    let mut out = Vec::with_capacity(limit.min(scored.len()));
    let mut checked = 0usize;
    let mut start = 0usize;
    // The best rows a chunk at a time: a row without its memory (a projection bug) or
    // one the filter rejects makes way for the next.
    while out.len() < limit && start < scored.len() {
        let want = (limit - out.len()).max(64).min(scored.len() - start);
        let rest = &mut scored[start..];
        if want < rest.len() {
            rest.select_nth_unstable_by(want - 1, better);
        }
        rest[..want].sort_unstable_by(better);
        for s in &rest[..want] {
            if out.len() == limit {
                break;
            }
            checked += 1;
            if !cond.is_empty() && checked > MAX_FILTER_CHECKS {
                return Ok(None);
            }
            let mut args = Vec::with_capacity(1 + filter_args.len());
            args.push(Value::Integer(s.rowid));
            args.extend(filter_args.iter().cloned());
            let mut rows = id_of.query(rusqlite::params_from_iter(args))?;
            if let Some(r) = rows.next()? {
                out.push((r.get::<_, String>(0)?, s.score));
            }
        }
        start += want;
    }
    Ok(Some(out))
}

/// Every row matching the flat expression over `lists`, with its score.
fn score_all(lists: &[Arc<Postings>], all: bool, n_row: i64, n_token: i64) -> Vec<Scored> {
    let avgdl = n_token as f64 / n_row as f64;
    let idf: Vec<f64> = lists
        .iter()
        .map(|l| {
            let hits = l.rows.len() as i64;
            let v = (((n_row - hits) as f64 + 0.5) / (hits as f64 + 0.5)).ln();
            if v <= 0.0 {
                1e-6
            } else {
                v
            }
        })
        .collect();
    let mut at = vec![0usize; lists.len()];
    let mut freq = vec![0.0f64; lists.len()];
    let cap = if all {
        lists.iter().map(|l| l.rows.len()).min().unwrap_or(0)
    } else {
        lists.iter().map(|l| l.rows.len()).max().unwrap_or(0)
    };
    let mut out = Vec::with_capacity(cap);
    loop {
        // The next rowid: for AND the largest head (every list must reach it), for OR
        // the smallest.
        let mut next: Option<i64> = None;
        for (l, &i) in lists.iter().zip(&at) {
            match l.rows.get(i) {
                Some(p) => {
                    next = Some(match next {
                        None => p.rowid,
                        Some(n) if all => n.max(p.rowid),
                        Some(n) => n.min(p.rowid),
                    })
                }
                None if all => return out,
                None => {}
            }
        }
        let Some(rowid) = next else {
            return out;
        };
        let mut held = 0usize;
        let mut len = 0u32;
        for (k, l) in lists.iter().enumerate() {
            let rows = &l.rows[at[k]..];
            // Skip ahead to `rowid`: galloping, since an AND may pass long runs.
            at[k] += if all { gallop(rows, rowid) } else { 0 };
            freq[k] = 0.0;
            if let Some(p) = l.rows.get(at[k]) {
                if p.rowid == rowid {
                    freq[k] = f64::from(p.tf[0]) * WEIGHTS[0] + f64::from(p.tf[1]) * WEIGHTS[1];
                    len = p.len;
                    held += 1;
                    at[k] += 1;
                }
            }
        }
        if all && held < lists.len() {
            continue;
        }
        let mut score = 0.0;
        let norm = 1.0 - B + B * f64::from(len) / avgdl;
        for (idf, f) in idf.iter().zip(&freq) {
            score += idf * ((f * (K1 + 1.0)) / (f + K1 * norm));
        }
        out.push(Scored { score, rowid });
    }
}

/// How many leading rows of `rows` are before `rowid`.
fn gallop(rows: &[fts_postings::Posting], rowid: i64) -> usize {
    if rows.first().is_none_or(|p| p.rowid >= rowid) {
        return 0;
    }
    let mut hi = 1usize;
    while hi < rows.len() && rows[hi].rowid < rowid {
        hi *= 2;
    }
    let lo = hi / 2;
    let hi = hi.min(rows.len());
    lo + rows[lo..hi].partition_point(|p| p.rowid < rowid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{Memories, Memory, MemoryFilter, MemoryProjection};
    use crate::store::StoreOptions;

    /// The scan answers (no fallback) and equals the statement, ids and scores, for
    /// AND and OR expressions, with and without a filter, before and after writes
    /// that append, replace and delete rows.
    #[test]
    fn the_scan_answers_as_the_statement_does() {
        let dir = tempfile::tempdir().unwrap();
        let m = Memories::open_with_projections(
            dir.path(),
            StoreOptions::default(),
            vec![Box::new(MemoryProjection)],
        )
        .unwrap();
        let words = ["cache", "retry", "queue", "lock"];
        let mut ids = Vec::new();
        for i in 0..60usize {
            let text: Vec<&str> = (0..1 + i % 7).map(|j| words[(i * 3 + j * j) % 4]).collect();
            let mut e = Memory::new(text.join(" "));
            e.tags = vec![words[i % 4].to_string()];
            e.task = Some(if i % 2 == 0 { "debug" } else { "refactor" }.into());
            ids.push(m.write(e).unwrap().id);
        }
        let debug = MemoryFilter {
            task: Some("debug".into()),
            ..MemoryFilter::default()
        };
        // A word's first ask goes to the statement; the second reads its list.
        m.store()
            .with_tracker(|db| {
                assert!(ranked(db, r#""queue""#, "", &[], 3)?.is_none());
                assert!(ranked(db, r#""queue""#, "", &[], 3)?.is_some());
                Ok(())
            })
            .unwrap();
        let check = |m: &Memories| {
            for expr in [
                r#""cache""#,
                r#""cache" AND "retry""#,
                r#""queue" OR "lock" OR "cache""#,
                r#""absent" OR "lock""#,
            ] {
                for filter in [&MemoryFilter::default(), &debug] {
                    let (cond, args) = filter.sql();
                    let (row_cond, row_args) = filter.sql_per_row();
                    m.store()
                        .with_tracker(|db| {
                            // The first ask of a word is left to the statement; the
                            // second reads and keeps its list.
                            let first = ranked(db, expr, &row_cond, &row_args, 7)?;
                            let got = match first {
                                Some(got) => got,
                                None => ranked(db, expr, &row_cond, &row_args, 7)?
                                    .expect("the scan answers the second time"),
                            };
                            let want = super::super::recall::ranked(db, expr, &cond, &args, 7)?;
                            assert!(!want.is_empty(), "{expr}");
                            assert_eq!(got, want, "{expr}, {filter:?}");
                            Ok(())
                        })
                        .unwrap();
                }
            }
        };
        check(&m);
        m.write(Memory::new("cache cache retry")).unwrap();
        m.update(&ids[3], Memory::new("lock lock lock queue"))
            .unwrap();
        m.forget(&ids[5]).unwrap();
        check(&m);
    }

    #[test]
    fn only_flat_expressions_of_ascii_tokens_are_taken() {
        let f = parse_flat(r#""retry" AND "backoff""#).unwrap();
        assert_eq!(f.tokens, ["retry", "backoff"]);
        assert!(f.all);
        let f = parse_flat(r#""a" OR "b2" OR "c""#).unwrap();
        assert!(!f.all);
        assert_eq!(f.tokens.len(), 3);
        assert!(parse_flat(r#""x""#).unwrap().all);
        for bad in [
            r#""a" AND "b" OR "c""#,
            r#"("a" OR ("b" AND "c")) AND "d""#,
            r#""café""#,
            r#""Upper""#,
            r#""a"""b""#,
            r#""a" "b""#,
            "",
        ] {
            assert_eq!(parse_flat(bad), None, "{bad}");
        }
    }
}
