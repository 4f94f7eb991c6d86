//! The schema's mark: a tracker this build made opens with one read and no DDL; one
//! with another mark, none, or a table missing gets its schema made again.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::Mutex;

use rusqlite::{ffi, Connection};

use super::{ensure, is_current, reset};
use crate::store::error::Result;
use crate::store::tracker::{self, Change, Projection};

struct Rows(u32);

impl Projection for Rows {
    fn name(&self) -> &'static str {
        "rows"
    }
    fn version(&self) -> u32 {
        self.0
    }
    fn create(&self, db: &Connection) -> rusqlite::Result<()> {
        db.execute_batch(
            "CREATE TABLE IF NOT EXISTS rows (seq INTEGER PRIMARY KEY, v TEXT);
             CREATE VIRTUAL TABLE IF NOT EXISTS rows_fts USING fts5(v);",
        )
    }
    fn drop_tables(&self, db: &Connection) -> rusqlite::Result<()> {
        db.execute_batch("DROP TABLE IF EXISTS rows; DROP TABLE IF EXISTS rows_fts;")
    }
    fn apply(&self, _db: &Connection, _change: &Change<'_>) -> Result<()> {
        Ok(())
    }
}

/// Every statement SQLite starts on `db` while it lives, by its SQL text.
struct Traced(Box<Mutex<Vec<String>>>);

unsafe extern "C" fn note(
    _kind: c_uint,
    ctx: *mut c_void,
    _stmt: *mut c_void,
    sql: *mut c_void,
) -> c_int {
    // SAFETY: `ctx` is the boxed Mutex `trace` registered, alive while the connection
    // is; for SQLITE_TRACE_STMT `sql` is the statement's text, NUL-terminated.
    let (seen, text) = unsafe {
        (
            &*(ctx as *const Mutex<Vec<String>>),
            CStr::from_ptr(sql as *const c_char),
        )
    };
    if let Ok(mut seen) = seen.lock() {
        seen.push(text.to_string_lossy().trim().to_string());
    }
    0
}

fn trace(db: &Connection) -> Traced {
    let seen = Box::new(Mutex::new(Vec::new()));
    let ctx = &*seen as *const Mutex<Vec<String>> as *mut c_void;
    // SAFETY: the callback reads only `ctx`, which the caller keeps (in `Traced`)
    // for as long as it uses the connection.
    let rc = unsafe {
        ffi::sqlite3_trace_v2(
            db.handle(),
            ffi::SQLITE_TRACE_STMT as c_uint,
            Some(note),
            ctx,
        )
    };
    assert_eq!(rc, ffi::SQLITE_OK);
    Traced(seen)
}

impl Traced {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().expect("trace"))
    }
}

fn creates(statements: &[String]) -> usize {
    statements.iter().filter(|s| s.contains("CREATE")).count()
}

fn master(db: &Connection) -> Vec<String> {
    let mut stmt = db
        .prepare("SELECT type || ' ' || name FROM sqlite_master ORDER BY name")
        .expect("prepare");
    let rows = stmt.query_map([], |r| r.get(0)).expect("query");
    rows.collect::<rusqlite::Result<_>>().expect("rows")
}

fn made(path: &std::path::Path, p: &Rows) {
    drop(tracker::open(path, &[p]).expect("first open makes the schema"));
}

#[test]
fn a_marked_tracker_opens_with_one_read_and_no_ddl() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tracker.db");
    let p = Rows(1);
    made(&path, &p);
    let mut db = Connection::open(&path).expect("open");
    let before = master(&db);
    let traced = trace(&db);
    assert!(!ensure(&mut db, &[&p]).expect("ensure"), "not empty");
    let ran = traced.take();
    assert_eq!(ran.len(), 1, "one read, no DDL: {ran:?}");
    assert_eq!(creates(&ran), 0);
    assert_eq!(master(&db), before, "sqlite_master changed");
    // The control: the same tracker without its mark runs the DDL (and marks it).
    db.execute("DELETE FROM meta WHERE name = 'schema_ddl'", [])
        .expect("unmark");
    traced.take();
    assert!(!ensure(&mut db, &[&p]).expect("ensure"));
    let ran = traced.take();
    assert!(creates(&ran) >= 6, "the DDL did not run: {ran:?}");
    assert!(is_current(&db, &[&p]), "the DDL left no mark");
}

#[test]
fn a_tracker_with_another_mark_or_a_table_missing_gets_its_schema_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tracker.db");
    let p = Rows(1);
    made(&path, &p);
    let expected = master(&Connection::open(&path).expect("open"));
    let damage: [(&str, &str); 4] = [
        (
            "another mark",
            "UPDATE meta SET value = '0123456789abcdef:9' WHERE name = 'schema_ddl'",
        ),
        ("a core table missing", "DROP TABLE records"),
        ("a projection's table missing", "DROP TABLE rows"),
        ("a full-text table missing", "DROP TABLE rows_fts"),
    ];
    for (what, sql) in damage {
        {
            let db = Connection::open(&path).expect("open");
            db.execute_batch(sql).expect(what);
            assert!(!is_current(&db, &[&p]), "{what}: still current");
        }
        let db = tracker::open(&path, &[&p]).expect(what);
        assert_eq!(master(&db), expected, "{what}: schema not made again");
        assert!(is_current(&db, &[&p]), "{what}: not marked");
    }
    // Another version of a projection is another schema: its DDL runs.
    let db = Connection::open(&path).expect("open");
    assert!(
        !is_current(&db, &[&Rows(2)]),
        "version 2 taken for version 1"
    );
    drop(db);
    let mut db = Connection::open(&path).expect("open");
    let traced = trace(&db);
    ensure(&mut db, &[&Rows(2)]).expect("ensure");
    assert!(creates(&traced.take()) >= 6);
    assert!(is_current(&db, &[&Rows(2)]));
}

#[test]
fn a_reset_tracker_is_marked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tracker.db");
    let p = Rows(1);
    made(&path, &p);
    let mut db = Connection::open(&path).expect("open");
    let tx = db.transaction().expect("tx");
    reset(&tx, &[&p]).expect("reset");
    tx.commit().expect("commit");
    assert!(is_current(&db, &[&p]), "reset dropped the mark with meta");
}
