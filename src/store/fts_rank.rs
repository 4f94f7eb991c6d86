//! `bm25_top`: the tracker connections' BM25 ranking function for a query that keeps
//! only its best rows. It gives the same scores as FTS5's `bm25()`, for less work.
//!
//! `bm25_top(table, limit, table_name, expr, w0, w1, …)` returns what
//! `bm25(table, w0, w1, …)` returns, for every row that can be among the `limit` best
//! of the query. For the other rows it returns a worse (higher) value than the
//! `limit`-th best row's. `table_name` is the table's name as text and `expr` the
//! query's MATCH expression (either may be NULL).
//!
//! It saves two costs of `bm25()`:
//!
//! - **Row lengths.** `bm25()` reads each matching row's length from the `%_docsize`
//!   table, one statement and one B-tree search per row: about 30% of a keyword
//!   query's time over a common word in a million chunks. The length only lowers a
//!   row's score, so the score at the least length the row can have (one past each
//!   column's last matched token) bounds the true score. A row whose bound is below
//!   the `limit` best exact scores seen so far in the query cannot make the cut: its
//!   length is never read, and it gets its bound. Every row that can make the cut gets
//!   its exact score, so the order and scores of the best `limit` rows are those
//!   `bm25()` gives.
//! - **Row counts per phrase** (for the IDF). `bm25()` counts, in every query, the rows
//!   holding each phrase, by walking its whole posting list. Here a connection keeps
//!   the counts between queries, keyed by table and phrase, for as long as the database
//!   is unchanged (SQLite's data version and the connection's change count), and only
//!   outside explicit transactions. That needs the phrases' text, hence `table_name`
//!   and `expr`: double-quoted phrases joined by AND, OR and parentheses, which is how
//!   engram writes every query.
//!
//! The caller's statement must keep at most `limit` rows, ordered by this value, and
//! compute it only for rows that pass its filters (SQLite evaluates result columns after
//! the `WHERE` clause). A `limit` of 0 or less ranks every row exactly.
//!
//! Owns: registering the function on a connection, and the function. Must never write.

use std::collections::{BinaryHeap, HashMap};
use std::ffi::{c_int, c_void};
use std::ptr;
use std::sync::Mutex;

use rusqlite::ffi;
use rusqlite::Connection;

use super::Result;

/// The function's SQL name.
pub const BM25_TOP: &str = "bm25_top";

/// BM25's constants, as FTS5's `bm25()` has them.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// Register [`BM25_TOP`] on `db`.
pub(super) fn register(db: &Connection) -> Result<()> {
    // SAFETY: `handle` is the live connection; `fts5_api_of` only runs a statement on
    // it, and the function registered is `extern "C"` with FTS5's signature.
    unsafe {
        let handle = db.handle();
        let api = fts5_api_of(handle)?;
        let Some(create) = (*api).xCreateFunction else {
            return Err(unavailable("FTS5 offers no xCreateFunction"));
        };
        let counts = Box::into_raw(Box::new(Mutex::new(DocCounts::default())));
        // FTS5 frees the counts with the connection; not if this fails (below).
        let rc = create(
            api,
            c"bm25_top".as_ptr(),
            counts.cast::<c_void>(),
            Some(bm25_top),
            Some(free_counts),
        );
        if rc != ffi::SQLITE_OK {
            free_counts(counts.cast::<c_void>());
            return Err(rusqlite::Error::SqliteFailure(
                ffi::Error::new(rc),
                Some("registering bm25_top".into()),
            )
            .into());
        }
    }
    Ok(())
}

pub(super) fn unavailable(what: &str) -> super::StoreError {
    rusqlite::Error::SqliteFailure(
        ffi::Error::new(ffi::SQLITE_ERROR),
        Some(format!("{what}: this SQLite was built without FTS5")),
    )
    .into()
}

/// FTS5's API object for `db`, as its documentation says to get it: bind a pointer
/// of type `fts5_api_ptr` to `SELECT fts5(?1)`.
///
/// # Safety
/// `db` must be a live connection.
pub(super) unsafe fn fts5_api_of(db: *mut ffi::sqlite3) -> Result<*mut ffi::fts5_api> {
    let mut api: *mut ffi::fts5_api = ptr::null_mut();
    let mut stmt: *mut ffi::sqlite3_stmt = ptr::null_mut();
    let rc = ffi::sqlite3_prepare_v2(
        db,
        c"SELECT fts5(?1)".as_ptr(),
        -1,
        &mut stmt,
        ptr::null_mut(),
    );
    if rc != ffi::SQLITE_OK {
        ffi::sqlite3_finalize(stmt);
        return Err(unavailable("SELECT fts5(?1) failed"));
    }
    ffi::sqlite3_bind_pointer(
        stmt,
        1,
        (&mut api as *mut *mut ffi::fts5_api).cast::<c_void>(),
        c"fts5_api_ptr".as_ptr(),
        None,
    );
    ffi::sqlite3_step(stmt);
    ffi::sqlite3_finalize(stmt);
    if api.is_null() {
        return Err(unavailable("no fts5_api"));
    }
    Ok(api)
}

/// How many rows hold each phrase, per table, as counted for one state of the
/// database: one connection's, kept between its queries.
///
/// `bm25()` counts them for every query by walking every row that holds the phrase: a
/// pass over a common word's whole posting list, about a third of a keyword query's
/// time over a million chunks. Any commit, by this connection or another process,
/// changes the key and empties the map, so a count is never used for another state
/// than the one it was made in.
#[derive(Default)]
struct DocCounts {
    /// SQLite's data version of the main database and this connection's total change
    /// count, when `rows_with` was filled.
    state: (u32, i64),
    /// (table, phrase as written in the MATCH expression) → rows holding it.
    rows_with: HashMap<(String, String), i64>,
}

/// At most this many phrases are remembered; past it the map starts again.
const MAX_COUNTS: usize = 16_384;

unsafe extern "C" fn free_counts(p: *mut c_void) {
    if !p.is_null() {
        drop(Box::from_raw(p.cast::<Mutex<DocCounts>>()));
    }
}

/// The database's state as [`DocCounts::state`] records it.
///
/// # Safety
/// `db` must be a live connection.
pub(super) unsafe fn db_state(db: *mut ffi::sqlite3) -> (u32, i64) {
    let mut version: u32 = 0;
    let rc = ffi::sqlite3_file_control(
        db,
        c"main".as_ptr(),
        ffi::SQLITE_FCNTL_DATA_VERSION,
        (&mut version as *mut u32).cast::<c_void>(),
    );
    if rc != ffi::SQLITE_OK {
        // Unknown: a state no other call returns, so nothing is reused.
        return (u32::MAX, i64::MIN);
    }
    (version, ffi::sqlite3_total_changes64(db))
}

/// The phrases of a MATCH expression as engram writes them (double-quoted strings
/// joined by AND, OR and parentheses), in order: FTS5 numbers its phrases the same way.
fn quoted_phrases(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = expr.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '"' {
            continue;
        }
        let mut phrase = String::new();
        loop {
            match chars.next() {
                Some('"') if chars.peek() == Some(&'"') => {
                    chars.next();
                    phrase.push('"');
                }
                Some('"') | None => break,
                Some(c) => phrase.push(c),
            }
        }
        out.push(phrase);
    }
    out
}

/// What one query keeps between rows (FTS5 auxiliary data, freed with the query).
struct QueryState {
    /// Inverse document frequency per phrase, as `bm25()` computes it.
    idf: Vec<f64>,
    /// Average row length in tokens.
    avgdl: f64,
    /// Weighted frequency per phrase of the current row (scratch).
    freq: Vec<f64>,
    /// How many rows the statement keeps; 0: rank every row exactly.
    limit: usize,
    /// The best exact scores so far (higher is better), at most `limit`, the worst on
    /// top.
    best: BinaryHeap<std::cmp::Reverse<Score>>,
    /// Per column, the length the current row's column has at least: one past its
    /// last instance's offset (scratch).
    seen_len: Vec<i64>,
    /// The last row ranked and its value: SQLite may evaluate the function twice for
    /// one row, and a score must enter `best` once.
    last: Option<(i64, f64)>,
}

/// A score ordered as a float (BM25 of finite inputs is finite; `total_cmp` orders
/// any value).
#[derive(Clone, Copy)]
struct Score(f64);
impl PartialEq for Score {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}
impl Eq for Score {}
impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Score {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

unsafe extern "C" fn free_state(p: *mut c_void) {
    if !p.is_null() {
        drop(Box::from_raw(p.cast::<QueryState>()));
    }
}

unsafe extern "C" fn count_row(
    _api: *const ffi::Fts5ExtensionApi,
    _fts: *mut ffi::Fts5Context,
    user: *mut c_void,
) -> c_int {
    *user.cast::<i64>() += 1;
    ffi::SQLITE_OK
}

/// A missing entry in FTS5's API table: treated as an error, never called.
const MISSING: c_int = ffi::SQLITE_MISUSE;

/// The query's state, made on its first row from the function's arguments (the
/// limit, the table's name, the expression): average length and IDFs exactly as
/// FTS5's `fts5Bm25GetData` makes them.
unsafe fn state<'a>(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    ctx: *mut ffi::sqlite3_context,
    args: &[*mut ffi::sqlite3_value],
) -> std::result::Result<&'a mut QueryState, c_int> {
    let (Some(get), Some(set)) = (api.xGetAuxdata, api.xSetAuxdata) else {
        return Err(MISSING);
    };
    let found = get(fts, 0).cast::<QueryState>();
    if !found.is_null() {
        return Ok(&mut *found);
    }
    // The arguments that stay the same for the whole query, read once.
    let limit = match args.first() {
        Some(v) => ffi::sqlite3_value_int64(*v).max(0) as usize,
        None => 0,
    };
    let counted = text_arg(args, 1).zip(text_arg(args, 2));
    let (Some(phrases), Some(rows), Some(total), Some(query_phrase)) = (
        api.xPhraseCount,
        api.xRowCount,
        api.xColumnTotalSize,
        api.xQueryPhrase,
    ) else {
        return Err(MISSING);
    };
    let n_phrase = phrases(fts).max(0) as usize;
    let n_col = api.xColumnCount.map_or(0, |f| f(fts).max(0) as usize);
    let (mut n_row, mut n_token) = (0i64, 0i64);
    check(rows(fts, &mut n_row))?;
    check(total(fts, -1, &mut n_token))?;
    let avgdl = n_token as f64 / n_row as f64;
    // The counts this connection made for this state of the database, when the
    // caller named the table and the expression, and the expression's phrases are
    // the ones FTS5 sees (one may vanish if it holds no token).
    let phrases_written = counted
        .map(|(table, expr)| (table, quoted_phrases(expr)))
        .filter(|(_, p)| p.len() == n_phrase);
    // Only outside an explicit transaction: inside one, rows this connection has not
    // committed may yet be rolled back, and neither the data version nor the change
    // count goes back when they are.
    let db = ffi::sqlite3_context_db_handle(ctx);
    let counts = api.xUserData.map(|f| f(fts).cast::<Mutex<DocCounts>>());
    let mut counts = match (counts, &phrases_written) {
        (Some(c), Some(_)) if !c.is_null() && ffi::sqlite3_get_autocommit(db) != 0 => {
            let mut c = (*c).lock().unwrap_or_else(|p| p.into_inner());
            let now = db_state(db);
            if c.state != now || c.rows_with.len() > MAX_COUNTS {
                c.rows_with.clear();
                c.state = now;
            }
            Some(c)
        }
        _ => None,
    };
    let mut idf = Vec::with_capacity(n_phrase);
    for i in 0..n_phrase {
        let key = phrases_written
            .as_ref()
            .and_then(|(table, p)| Some(((*table).to_string(), p.get(i)?.clone())));
        let known = match (&counts, &key) {
            (Some(c), Some(k)) => c.rows_with.get(k).copied(),
            _ => None,
        };
        let hits = match known {
            Some(n) => n,
            None => {
                let mut hits = 0i64;
                check(query_phrase(
                    fts,
                    i as c_int,
                    (&mut hits as *mut i64).cast::<c_void>(),
                    Some(count_row),
                ))?;
                if let (Some(c), Some(k)) = (&mut counts, key) {
                    c.rows_with.insert(k, hits);
                }
                hits
            }
        };
        let v = (((n_row - hits) as f64 + 0.5) / (hits as f64 + 0.5)).ln();
        idf.push(if v <= 0.0 { 1e-6 } else { v });
    }
    drop(counts);
    let st = Box::new(QueryState {
        idf,
        avgdl,
        freq: vec![0.0; n_phrase],
        seen_len: vec![0; n_col],
        limit,
        best: BinaryHeap::with_capacity(limit.min(4096) + 1),
        last: None,
    });
    let raw = Box::into_raw(st);
    // On failure FTS5 calls the destructor itself.
    check(set(fts, raw.cast::<c_void>(), Some(free_state)))?;
    Ok(&mut *raw)
}

fn check(rc: c_int) -> std::result::Result<(), c_int> {
    if rc == ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(rc)
    }
}

/// BM25 of the current row's phrase frequencies at row length `len` (in tokens), with
/// FTS5's operations in FTS5's order, so exact scores equal `bm25()`'s to the bit.
fn bm25(st: &QueryState, len: f64) -> f64 {
    let mut score = 0.0;
    for (idf, f) in st.idf.iter().zip(&st.freq) {
        score += idf * ((f * (K1 + 1.0)) / (f + K1 * (1.0 - B + B * len / st.avgdl)));
    }
    score
}

unsafe extern "C" fn bm25_top(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    ctx: *mut ffi::sqlite3_context,
    n_val: c_int,
    ap_val: *mut *mut ffi::sqlite3_value,
) {
    let args: &[*mut ffi::sqlite3_value] = if n_val > 0 && !ap_val.is_null() {
        std::slice::from_raw_parts(ap_val, n_val as usize)
    } else {
        &[]
    };
    match rank_row(&*api, fts, ctx, args) {
        Ok(rank) => ffi::sqlite3_result_double(ctx, rank),
        Err(rc) => ffi::sqlite3_result_error_code(ctx, rc),
    }
}

/// Argument `i` as text, if it is text.
///
/// # Safety
/// The values must be the function's live arguments.
unsafe fn text_arg<'a>(args: &[*mut ffi::sqlite3_value], i: usize) -> Option<&'a str> {
    let v = *args.get(i)?;
    if ffi::sqlite3_value_type(v) != ffi::SQLITE_TEXT {
        return None;
    }
    let p = ffi::sqlite3_value_text(v);
    let n = ffi::sqlite3_value_bytes(v);
    if p.is_null() || n < 0 {
        return None;
    }
    std::str::from_utf8(std::slice::from_raw_parts(p, n as usize)).ok()
}

/// The current row's value: minus its score (lower is better, as with `bm25()`).
unsafe fn rank_row(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    ctx: *mut ffi::sqlite3_context,
    args: &[*mut ffi::sqlite3_value],
) -> std::result::Result<f64, c_int> {
    let weights = args.get(3..).unwrap_or(&[]);
    let st = state(api, fts, ctx, args)?;
    let (Some(rowid_of), Some(inst_count), Some(inst), Some(column_size)) =
        (api.xRowid, api.xInstCount, api.xInst, api.xColumnSize)
    else {
        return Err(MISSING);
    };
    let rowid = rowid_of(fts);
    if let Some((last, value)) = st.last {
        if last == rowid {
            return Ok(value);
        }
    }
    st.freq.iter_mut().for_each(|f| *f = 0.0);
    st.seen_len.iter_mut().for_each(|n| *n = 0);
    let mut n_inst = 0;
    check(inst_count(fts, &mut n_inst))?;
    for i in 0..n_inst {
        let (mut phrase, mut col, mut off) = (0, 0, 0);
        check(inst(fts, i, &mut phrase, &mut col, &mut off))?;
        let w = match weights.get(col.max(0) as usize) {
            Some(v) if col >= 0 => ffi::sqlite3_value_double(*v),
            _ => 1.0,
        };
        if let Some(f) = st.freq.get_mut(phrase.max(0) as usize) {
            *f += w;
        }
        if let Some(n) = st.seen_len.get_mut(col.max(0) as usize) {
            *n = (*n).max(i64::from(off) + 1);
        }
    }
    // A row's length only lowers its score, so the length it has at least (a
    // column holds a token at each instance's offset) bounds it.
    let bound = bm25(st, st.seen_len.iter().sum::<i64>() as f64);
    let cut = (st.limit > 0 && st.best.len() >= st.limit)
        .then(|| st.best.peek().map(|w| w.0 .0))
        .flatten();
    let score = match cut {
        Some(worst_kept) if bound < worst_kept => bound,
        _ => {
            let mut len = 0;
            check(column_size(fts, -1, &mut len))?;
            let exact = bm25(st, f64::from(len));
            if st.limit > 0 {
                st.best.push(std::cmp::Reverse(Score(exact)));
                if st.best.len() > st.limit {
                    st.best.pop();
                }
            }
            exact
        }
    };
    st.last = Some((rowid, -score));
    Ok(-score)
}

#[cfg(test)]
mod tests;
