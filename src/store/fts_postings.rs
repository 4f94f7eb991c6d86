//! Posting lists of single tokens of an FTS5 table, read once and kept in memory per
//! tracker connection, so a caller can rank every row holding a common word without
//! asking FTS5 to walk (and decode positions of) the same lists on every query.
//!
//! A list holds, for each row holding the token, its rowid, the token's count in each
//! of the first two columns and the row's length in tokens (all columns): what
//! FTS5's `bm25()` reads of a row for a one-token phrase. With the table's row count
//! and token total ([`totals`]) a caller computes `bm25()`'s score to the bit. Per
//! block of [`BLOCK`] rows a list also keeps the largest weighted count and the
//! shortest row ([`Postings::block_max`]), which bound any row's score in the block,
//! so a top-k caller can pass over blocks that cannot reach its best rows.
//!
//! A list is used as it is only in the state of the database it was read in (SQLite's
//! data version and the connection's change count, as `fts_rank`'s phrase counts are),
//! and only outside explicit transactions. After a commit, by this connection or
//! another process, it is brought up to date when next asked for: the rows past its
//! last rowid are read and appended (rowids only grow), and the list is read again
//! from scratch only if FTS5 then counts another number of rows holding the token
//! (some were deleted). At most [`MAX_POSTINGS`] postings are held per connection.
//!
//! Owns: the `fts_row_stats` auxiliary function and the per-connection lists. Must
//! never write.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex, OnceLock};

use rusqlite::ffi;
use rusqlite::Connection;

use super::fts_rank::{db_state, fts5_api_of, unavailable};
use super::{Result, StoreError};

/// One row holding a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Posting {
    pub rowid: i64,
    /// The token's count in the first and the second column (saturated at
    /// `u16::MAX`; see [`Postings::saturated`]).
    pub tf: [u16; 2],
    /// The row's length in tokens, all columns.
    pub len: u32,
}

/// A token's posting list, by ascending rowid.
#[derive(Debug, Default)]
pub struct Postings {
    pub rows: Vec<Posting>,
    /// Some count did not fit (a token more than 65,535 times in a column, or in a
    /// third column, or a row longer than `u32::MAX` tokens): the list cannot give
    /// exact scores.
    pub saturated: bool,
    /// [`Postings::block_max`] for the column weights (as bits) it was made with.
    block_max: OnceLock<([u64; 2], Vec<BlockMax>)>,
}

/// Rows per block of [`Postings::block_max`].
pub const BLOCK: usize = 16;

/// What bounds the score of any row of one block: its largest weighted count and its
/// shortest row. BM25's share of a token grows with the count and falls with the row's
/// length, so the share computed from these two is at least every row's in the block.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BlockMax {
    pub max_freq: f64,
    pub min_len: u32,
}

impl Postings {
    /// A list of these rows, as read.
    pub fn new(rows: Vec<Posting>, saturated: bool) -> Self {
        Postings {
            rows,
            saturated,
            block_max: OnceLock::new(),
        }
    }

    /// Per block of [`BLOCK`] rows (block `b` is `rows[b * BLOCK..]`), the largest
    /// `weights[0] * tf[0] + weights[1] * tf[1]` and the shortest row. Made once per
    /// list for the first weights asked for (a list is immutable once shared); other
    /// weights get a fresh copy.
    pub fn block_max(&self, weights: [f64; 2]) -> Cow<'_, [BlockMax]> {
        let key = weights.map(f64::to_bits);
        let made = self
            .block_max
            .get_or_init(|| (key, block_max_of(&self.rows, weights)));
        if made.0 == key {
            Cow::Borrowed(&made.1)
        } else {
            Cow::Owned(block_max_of(&self.rows, weights))
        }
    }
}

fn block_max_of(rows: &[Posting], weights: [f64; 2]) -> Vec<BlockMax> {
    rows.chunks(BLOCK)
        .map(|block| BlockMax {
            max_freq: block
                .iter()
                .map(|p| f64::from(p.tf[0]) * weights[0] + f64::from(p.tf[1]) * weights[1])
                .fold(0.0, f64::max),
            min_len: block.iter().map(|p| p.len).min().unwrap_or(0),
        })
        .collect()
}

/// Postings held per connection at most (16 bytes each).
pub const MAX_POSTINGS: usize = 12 << 20;

/// The function's SQL name.
const ROW_STATS: &str = "fts_row_stats";

/// A state of the database, as `fts_rank::db_state` gives it.
type State = (u32, i64);

/// What one connection keeps.
struct Cache {
    /// The connection, to find the entry in [`REGISTRY`] again when it closes.
    handle: usize,
    state: State,
    /// (table, token) → the list and the state it is up to date with.
    lists: HashMap<(String, String), (Arc<Postings>, State)>,
    /// Table → row count and token total, in `state`.
    totals: HashMap<String, (i64, i64)>,
    held: usize,
    /// (table, token) asked for once and not read: the second ask reads the list.
    asked: HashSet<(String, String)>,
}

/// Connection handle → its `Mutex<Cache>`, while the connection is open (FTS5 drops
/// the entry with the function's user data, when the connection closes).
static REGISTRY: Mutex<Option<HashMap<usize, usize>>> = Mutex::new(None);

/// Register `fts_row_stats` on `db`, with the connection's (empty) lists.
pub(super) fn register(db: &Connection) -> Result<()> {
    // SAFETY: as `fts_rank::register`: a live connection, a function with FTS5's
    // signature, user data freed by FTS5 through `free_cache` (or here on failure).
    unsafe {
        let handle = db.handle();
        let api = fts5_api_of(handle)?;
        let Some(create) = (*api).xCreateFunction else {
            return Err(unavailable("FTS5 offers no xCreateFunction"));
        };
        let cache = Box::into_raw(Box::new(Mutex::new(Cache {
            handle: handle as usize,
            state: (0, -1),
            lists: HashMap::new(),
            totals: HashMap::new(),
            held: 0,
            asked: HashSet::new(),
        })));
        let rc = create(
            api,
            c"fts_row_stats".as_ptr(),
            cache.cast::<c_void>(),
            Some(row_stats),
            Some(free_cache),
        );
        if rc != ffi::SQLITE_OK {
            drop(Box::from_raw(cache));
            return Err(rusqlite::Error::SqliteFailure(
                ffi::Error::new(rc),
                Some("registering fts_row_stats".into()),
            )
            .into());
        }
        let mut reg = REGISTRY.lock().unwrap_or_else(|p| p.into_inner());
        reg.get_or_insert_with(HashMap::new)
            .insert(handle as usize, cache as usize);
    }
    Ok(())
}

unsafe extern "C" fn free_cache(p: *mut c_void) {
    if p.is_null() {
        return;
    }
    let cache = Box::from_raw(p.cast::<Mutex<Cache>>());
    let handle = cache
        .lock()
        .map(|c| c.handle)
        .unwrap_or_else(|e| e.into_inner().handle);
    let mut reg = REGISTRY.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(map) = reg.as_mut() {
        if map.get(&handle) == Some(&(p as usize)) {
            map.remove(&handle);
        }
    }
}

/// `fts_row_stats(table)`: the current row's length in tokens (low 32 bits), its count
/// of the query's first phrase in column 0 (bits 32-47) and column 1 (bits 48-62), each
/// saturated; -1 when a count does not fit or a phrase is in another column.
/// `fts_row_stats(table, 1)`: the table's row count; `(table, 2)`: its token total.
unsafe extern "C" fn row_stats(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    ctx: *mut ffi::sqlite3_context,
    n_val: c_int,
    ap_val: *mut *mut ffi::sqlite3_value,
) {
    let api = &*api;
    let mode = if n_val > 0 && !ap_val.is_null() {
        ffi::sqlite3_value_int64(*ap_val)
    } else {
        0
    };
    let out = match mode {
        1 => api.xRowCount.map(|f| {
            let mut n = 0i64;
            (f(fts, &mut n), n)
        }),
        2 => api.xColumnTotalSize.map(|f| {
            let mut n = 0i64;
            (f(fts, -1, &mut n), n)
        }),
        _ => stats_of_row(api, fts),
    };
    match out {
        Some((ffi::SQLITE_OK, v)) => ffi::sqlite3_result_int64(ctx, v),
        Some((rc, _)) => ffi::sqlite3_result_error_code(ctx, rc),
        None => ffi::sqlite3_result_error_code(ctx, ffi::SQLITE_MISUSE),
    }
}

unsafe fn stats_of_row(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
) -> Option<(c_int, i64)> {
    let (inst_count, inst, column_size) = (api.xInstCount?, api.xInst?, api.xColumnSize?);
    let mut n_inst = 0;
    let rc = inst_count(fts, &mut n_inst);
    if rc != ffi::SQLITE_OK {
        return Some((rc, 0));
    }
    let mut tf = [0i64; 2];
    let mut fits = true;
    for i in 0..n_inst {
        let (mut phrase, mut col, mut off) = (0, 0, 0);
        let rc = inst(fts, i, &mut phrase, &mut col, &mut off);
        if rc != ffi::SQLITE_OK {
            return Some((rc, 0));
        }
        match tf.get_mut(col.max(0) as usize) {
            Some(n) if phrase == 0 && col >= 0 => *n += 1,
            _ => fits = false,
        }
    }
    let mut len = 0;
    let rc = column_size(fts, -1, &mut len);
    if rc != ffi::SQLITE_OK {
        return Some((rc, 0));
    }
    let fits = fits && tf.iter().all(|&n| n < 0x7fff) && len >= 0;
    if !fits {
        return Some((ffi::SQLITE_OK, -1));
    }
    Some((
        ffi::SQLITE_OK,
        i64::from(len) | (tf[0] << 32) | (tf[1] << 48),
    ))
}

/// Run `f` on this connection's cache, emptied first if the database changed since it
/// was filled. `None` inside an explicit transaction (nothing is kept there) or when
/// the connection has none.
fn with_cache<T>(db: &Connection, f: impl FnOnce(&mut Cache) -> Result<T>) -> Result<Option<T>> {
    if !db.is_autocommit() {
        return Ok(None);
    }
    // SAFETY: the handle of a live connection; the pointer in the registry stays
    // valid while the connection is open, and the caller holds it open.
    let handle = unsafe { db.handle() };
    let ptr = {
        let reg = REGISTRY.lock().unwrap_or_else(|p| p.into_inner());
        reg.as_ref()
            .and_then(|m| m.get(&(handle as usize)).copied())
    };
    let Some(ptr) = ptr else {
        return Ok(None);
    };
    let cache = unsafe { &*(ptr as *const Mutex<Cache>) };
    let mut cache = cache.lock().unwrap_or_else(|p| p.into_inner());
    let now = unsafe { db_state(handle) };
    if now == (u32::MAX, i64::MIN) {
        // The state is unknown: nothing can be kept for it.
        return Ok(None);
    }
    if cache.state != now {
        cache.totals.clear();
        cache.state = now;
    }
    f(&mut cache).map(Some)
}

fn check_table(table: &str) -> Result<()> {
    if table.is_empty()
        || !table
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
    {
        return Err(StoreError::Invalid(format!(
            "{table:?} is not a full-text table name"
        )));
    }
    Ok(())
}

/// The rows of `table` holding `token` (one token as the table's tokenizer writes it:
/// the caller makes sure of that), from this connection's cache or read now. `None`
/// inside an explicit transaction, and the first time this connection asks for a
/// token it does not hold: reading a common word's whole list costs more than one
/// FTS5 query over it (347 against 242 ms at 1M memories), which a one-shot CLI call
/// would pay for nothing, so only a token asked for again is read and kept.
pub fn postings(db: &Connection, table: &str, token: &str) -> Result<Option<Arc<Postings>>> {
    check_table(table)?;
    let got = with_cache(db, |cache| {
        let key = (table.to_string(), token.to_string());
        let now = cache.state;
        if let Some((list, state)) = cache.lists.get(&key) {
            if *state == now {
                return Ok(Some(list.clone()));
            }
        } else if !cache.asked.remove(&key) {
            if cache.asked.len() >= MAX_ASKED {
                cache.asked.clear();
            }
            cache.asked.insert(key);
            return Ok(None);
        }
        let list = match cache.lists.remove(&key) {
            Some((old, _)) => {
                cache.held -= old.rows.len();
                Arc::new(refreshed(db, table, token, old)?)
            }
            None => Arc::new(read_list(db, table, token, None)?),
        };
        if cache.held + list.rows.len() > MAX_POSTINGS {
            cache.lists.clear();
            cache.held = 0;
        }
        if list.rows.len() <= MAX_POSTINGS {
            cache.held += list.rows.len();
            cache.lists.insert(key, (list.clone(), now));
        }
        Ok(Some(list))
    })?;
    Ok(got.flatten())
}

/// Tokens remembered as asked for once, per connection, before the set starts over.
const MAX_ASKED: usize = 1 << 16;

/// `old` brought up to the database's present state: the rows past its last appended,
/// unless FTS5 then counts another number of rows holding `token` (some were
/// deleted), in which case the whole list is read again.
fn refreshed(db: &Connection, table: &str, token: &str, old: Arc<Postings>) -> Result<Postings> {
    let Some(last) = old.rows.last().map(|p| p.rowid) else {
        return read_list(db, table, token, None);
    };
    let tail = read_list(db, table, token, Some(last))?;
    let phrase = format!("\"{}\"", token.replace('"', "\"\""));
    let holding: i64 = db
        .prepare_cached(&format!(
            "SELECT count(*) FROM {table} WHERE {table} MATCH ?1"
        ))?
        .query_row([phrase], |r| r.get(0))?;
    if holding != (old.rows.len() + tail.rows.len()) as i64 {
        tracing::debug!(table, token, "rows were deleted: the list is read again");
        return read_list(db, table, token, None);
    }
    let (mut rows, saturated) = match Arc::try_unwrap(old) {
        Ok(list) => (list.rows, list.saturated),
        Err(shared) => (shared.rows.clone(), shared.saturated),
    };
    rows.extend_from_slice(&tail.rows);
    // A new list: the old one's block maxima do not cover the tail.
    Ok(Postings::new(rows, saturated | tail.saturated))
}

/// The rows holding `token`, all of them or those past rowid `after`.
fn read_list(db: &Connection, table: &str, token: &str, after: Option<i64>) -> Result<Postings> {
    let mut stmt = db.prepare_cached(&format!(
        "SELECT rowid, {ROW_STATS}({table}) FROM {table} WHERE {table} MATCH ?1 AND rowid > ?2"
    ))?;
    let phrase = format!("\"{}\"", token.replace('"', "\"\""));
    let mut out = Postings::default();
    let mut rows = stmt.query(rusqlite::params![phrase, after.unwrap_or(i64::MIN)])?;
    while let Some(r) = rows.next()? {
        let (rowid, packed): (i64, i64) = (r.get(0)?, r.get(1)?);
        if packed < 0 {
            out.saturated = true;
        }
        out.rows.push(Posting {
            rowid,
            tf: [(packed >> 32) as u16, ((packed >> 48) & 0x7fff) as u16],
            len: packed as u32,
        });
    }
    if !out.rows.is_sorted_by_key(|p| p.rowid) {
        out.rows.sort_unstable_by_key(|p| p.rowid);
    }
    tracing::debug!(
        table,
        token,
        after,
        rows = out.rows.len(),
        "read a posting list"
    );
    Ok(out)
}

/// `table`'s row count and token total, as FTS5's `bm25()` reads them; `token` must be
/// one some row holds (FTS5 gives them only inside a query). `None` inside an explicit
/// transaction or when no row holds `token`.
pub fn totals(db: &Connection, table: &str, token: &str) -> Result<Option<(i64, i64)>> {
    check_table(table)?;
    let found = with_cache(db, |cache| {
        if let Some(t) = cache.totals.get(table) {
            return Ok(Some(*t));
        }
        let phrase = format!("\"{}\"", token.replace('"', "\"\""));
        let t = db
            .prepare_cached(&format!(
                "SELECT {ROW_STATS}({table}, 1), {ROW_STATS}({table}, 2) FROM {table} \
                 WHERE {table} MATCH ?1 LIMIT 1"
            ))?
            .query_row([phrase], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
            .map(Some)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                e => Err(e),
            })?;
        if let Some(t) = t {
            cache.totals.insert(table.to_string(), t);
        }
        Ok(t)
    })?;
    Ok(found.flatten())
}
