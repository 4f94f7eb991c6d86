//! Keyword ranking of memories over posting lists held in memory: the same order and
//! scores as the FTS5 statement ([`super::recall`]'s `ranked`), without asking FTS5 to
//! walk and score every memory holding a common word on each query.
//!
//! In a million memories two common words are held by hundreds of thousands of rows;
//! FTS5 merges their position lists and the ranking function reads each row's instances
//! on every query (about 240 ms). Here the lists of each token (rowid, count per column,
//! row length) are read once per database state (`store::fts_postings`) and the best
//! rows found by [`super::recall_topk`], which passes over whole blocks of rows that
//! cannot reach the best `k`; scores use `bm25()`'s formula, operations and inputs, so
//! they are equal to the bit and ties go, as in the statement, to the later row.
//!
//! It takes the expressions engram writes when they are flat (phrases all joined by AND,
//! or all by OR) and every phrase is one ASCII token; anything else, a saturated list,
//! an explicit transaction, or a filter that rejects too many of the best rows returns
//! `None` and the caller runs the statement.
//!
//! Owns: parsing those expressions, the idf and the check of the best rows against a
//! filter. Must never write.

use std::sync::Arc;

use rusqlite::types::Value;
use rusqlite::Connection;

use super::recall_topk::{top_k, Scoring};
use crate::store::fts_postings::{self, Postings};
use crate::store::Store;

/// The memories' full-text table and its column weights (text, tags).
const TABLE: &str = "memories_fts";
const WEIGHTS: [f64; 2] = [1.0, 2.0];

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

/// `(id, score)` of the best `limit` memories matching `expr` among those `cond` keeps
/// (with `filter_args`, from [`super::MemoryFilter::sql_per_row`]), best first, ties
/// to the later write; `None` when this path cannot answer exactly (see the module).
///
/// The tracker connection is held to read the lists and to look the best rows up, not
/// while they are ranked: a search's vector half, on another thread, needs it
/// meanwhile. A write in between can only take a row's memory away (its rowid is then
/// found in no memory), which makes way for the next row, as a projection bug would.
pub(super) fn ranked(
    store: &Store,
    expr: &str,
    cond: &str,
    filter_args: &[Value],
    limit: usize,
) -> crate::store::Result<Option<Vec<(String, f64)>>> {
    let Some(flat) = parse_flat(expr) else {
        return Ok(None);
    };
    let Some((lists, n_row, n_token)) = store.with_tracker(|db| lists_of(db, &flat))? else {
        return Ok(None);
    };
    if lists.iter().all(|l| l.rows.is_empty()) {
        return Ok(Some(Vec::new()));
    }
    let idf = idf_of(&lists, n_row);
    let scoring = Scoring {
        idf: &idf,
        weights: WEIGHTS,
        avgdl: n_token as f64 / n_row as f64,
    };
    let refs: Vec<&Postings> = lists.iter().map(|l| &**l).collect();
    let mut out = Vec::with_capacity(limit.min(1024));
    // The best `want` rows; a row without its memory (a projection bug) or one the
    // filter rejects makes way for the next, so while rows are rejected `want` grows
    // and the ranking runs again (its first rows are the same: they are checked once).
    let mut want = if cond.is_empty() {
        limit
    } else {
        limit.max(64)
    };
    let mut checked = 0usize;
    loop {
        let best = top_k(&refs, &scoring, flat.all, want);
        let answered = store.with_tracker(|db| {
            let mut id_of = db.prepare_cached(&format!(
                "SELECT m.id FROM memories m WHERE m.seq = ?{cond}"
            ))?;
            for s in &best[checked.min(best.len())..] {
                if out.len() == limit {
                    break;
                }
                checked += 1;
                if !cond.is_empty() && checked > MAX_FILTER_CHECKS {
                    return Ok(false);
                }
                let mut args = Vec::with_capacity(1 + filter_args.len());
                args.push(Value::Integer(s.rowid));
                args.extend(filter_args.iter().cloned());
                let mut rows = id_of.query(rusqlite::params_from_iter(args))?;
                if let Some(r) = rows.next()? {
                    out.push((r.get::<_, String>(0)?, s.score));
                }
            }
            Ok(true)
        })?;
        if !answered {
            return Ok(None);
        }
        if out.len() == limit || best.len() < want {
            return Ok(Some(out));
        }
        want = want.saturating_mul(4);
    }
}

/// A query's lists, in its tokens' order, with the table's row count and token total.
type Lists = (Vec<Arc<Postings>>, i64, i64);

/// The lists of `flat`'s tokens, with the table's row count and token total; `None`
/// when one cannot be used (see the module).
fn lists_of(db: &Connection, flat: &Flat) -> crate::store::Result<Option<Lists>> {
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
        return Ok(Some((lists, 0, 0)));
    };
    let Some((n_row, n_token)) = fts_postings::totals(db, TABLE, first.0)? else {
        return Ok(None);
    };
    Ok(Some((lists, n_row, n_token)))
}

/// Each list's token's idf, as `bm25()` computes it (never below a millionth).
fn idf_of(lists: &[Arc<Postings>], n_row: i64) -> Vec<f64> {
    lists
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
        .collect()
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
        assert!(ranked(m.store(), r#""queue""#, "", &[], 3)
            .unwrap()
            .is_none());
        assert!(ranked(m.store(), r#""queue""#, "", &[], 3)
            .unwrap()
            .is_some());
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
                    // The first ask of a word is left to the statement; the second
                    // reads and keeps its list.
                    let store = m.store();
                    let got = match ranked(store, expr, &row_cond, &row_args, 7).unwrap() {
                        Some(got) => got,
                        None => ranked(store, expr, &row_cond, &row_args, 7)
                            .unwrap()
                            .expect("the scan answers the second time"),
                    };
                    let want = store
                        .with_tracker(|db| super::super::recall::ranked(db, expr, &cond, &args, 7))
                        .unwrap();
                    assert!(!want.is_empty(), "{expr}");
                    assert_eq!(got, want, "{expr}, {filter:?}");
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
