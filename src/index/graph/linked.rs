//! Search's graph signal: the code linked by calls to a query's best chunks, one step
//! either way (what their code calls, and who calls the definitions they hold).
//!
//! Owns: turning chunks into the symbols they define and call, and back into chunks.
//! Must never: rank against other lists (search fuses what this returns) or write.

use std::collections::HashMap;

use rusqlite::Connection;

use super::query::Graph;
use super::resolve::{call_row, Confidence, CALL_COLUMNS};
use crate::store::Result;

/// A name called at more places than this is not followed back to its callers: a
/// common method name (`get`, `push`) resolves to many definitions by name, and
/// resolving every call of it would cost more than the signal is worth.
const MAX_CALLS_FOLLOWED: i64 = 200;

/// Chunks linked by calls to `seeds` (chunk keys, best first) at `min` or better: the
/// chunks holding the definitions that calls inside a seed reach, and the chunks
/// holding the symbols that call a definition inside a seed. Best first: a chunk
/// scores `1 / (1 + i)` for each seed `i` it is linked to (so a chunk several seeds
/// agree on, or the best seed's neighbour, comes first); seeds themselves are left
/// out. At most `limit`.
pub fn linked_chunks(
    db: &Connection,
    seeds: &[String],
    min: Confidence,
    limit: usize,
) -> Result<Vec<String>> {
    let mut g = Graph::new(db);
    let mut score: HashMap<String, (f64, usize)> = HashMap::new();
    let mut order = 0usize;
    for (i, seed) in seeds.iter().enumerate() {
        let Some((path, start, end)) = chunk_lines(db, seed)? else {
            continue;
        };
        let mut linked: Vec<String> = Vec::new();
        // Callees: calls made inside the chunk's lines.
        let calls = {
            let mut stmt = db.prepare_cached(&format!(
                "SELECT {CALL_COLUMNS} WHERE f.path = ?1 AND c.line BETWEEN ?2 AND ?3"
            ))?;
            let rows = stmt.query_map(rusqlite::params![path, start, end], call_row)?;
            rows.collect::<rusqlite::Result<Vec<_>>>()?
        };
        for c in &calls {
            if let Some((targets, conf)) = g.r.resolve(c)? {
                if conf >= min {
                    linked.extend(targets.iter().map(|t| t.key.clone()));
                }
            }
        }
        // Callers: calls elsewhere that reach a definition starting in the chunk.
        let defs: Vec<_> =
            g.r.defs_in(&path)?
                .iter()
                .filter(|d| d.start_line as i64 >= start && d.start_line as i64 <= end)
                .cloned()
                .collect();
        for d in &defs {
            let n: i64 = db
                .prepare_cached("SELECT count(*) FROM code_calls WHERE name = ?1")?
                .query_row([&d.name], |r| r.get(0))?;
            if n > MAX_CALLS_FOLLOWED {
                continue;
            }
            for (c, found) in g.calls_named(&d.name)?.iter() {
                let Some((targets, conf)) = found else {
                    continue;
                };
                if *conf >= min && targets.iter().any(|t| t.key == d.key) {
                    if let Some(caller) = &c.caller {
                        linked.push(caller.clone());
                    }
                }
            }
        }
        linked.sort();
        linked.dedup();
        let chunks = symbol_chunks(db, &linked)?;
        let mut seen_here: Vec<&String> = Vec::new();
        for chunk in chunks.iter().flatten() {
            if seeds.contains(chunk) || seen_here.contains(&chunk) {
                continue;
            }
            seen_here.push(chunk);
            let e = score.entry(chunk.clone()).or_insert_with(|| {
                order += 1;
                (0.0, order)
            });
            e.0 += 1.0 / (1.0 + i as f64);
        }
    }
    let mut out: Vec<(String, (f64, usize))> = score.into_iter().collect();
    out.sort_by(|a, b| b.1 .0.total_cmp(&a.1 .0).then(a.1 .1.cmp(&b.1 .1)));
    out.truncate(limit);
    Ok(out.into_iter().map(|(k, _)| k).collect())
}

/// The path and lines of a chunk, by key.
fn chunk_lines(db: &Connection, key: &str) -> Result<Option<(String, i64, i64)>> {
    use rusqlite::OptionalExtension;
    Ok(db
        .prepare_cached(
            "SELECT c.path, c.start_line, c.end_line FROM records r
             JOIN code_chunks c ON c.seq = r.seq WHERE r.key_hash = ?1 AND r.key = ?2",
        )?
        .query_row(
            rusqlite::params![crate::key::hash64(key) as i64, key],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?)
}

/// For each symbol key, the chunk holding its first line.
fn symbol_chunks(db: &Connection, keys: &[String]) -> Result<Vec<Option<String>>> {
    use rusqlite::OptionalExtension;
    let mut stmt = db.prepare_cached(
        "SELECT (SELECT r2.key FROM code_chunks c JOIN records r2 ON r2.seq = c.seq
                 WHERE c.path = s.path AND c.start_line <= s.start_line AND c.end_line >= s.start_line
                 ORDER BY c.start_line DESC LIMIT 1)
         FROM records k JOIN code_symbols s ON s.seq = k.seq WHERE k.key_hash = ?1",
    )?;
    let mut out = Vec::with_capacity(keys.len());
    for key in keys {
        let chunk: Option<Option<String>> = stmt
            .query_row([crate::key::hash64(key) as i64], |r| r.get(0))
            .optional()?;
        out.push(chunk.flatten());
    }
    Ok(out)
}
