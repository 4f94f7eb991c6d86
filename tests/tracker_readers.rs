//! Threads of one process reading the tracker at once: a thread that finds the
//! store's connection busy reads through a connection of its own, sees what is
//! committed, and cannot write.

use std::sync::mpsc;

use engram::store::{Store, StoreOptions, WriteBatch};
use serde_json::Map;

fn open(dir: &std::path::Path) -> Store {
    Store::open(dir, StoreOptions::default(), engram::projections()).unwrap()
}

fn put(store: &Store, key: &str) {
    let mut b = WriteBatch::new();
    b.put(key, Map::new(), "x").unwrap();
    store.commit(&b).unwrap();
}

fn count(db: &rusqlite::Connection) -> i64 {
    db.query_row("SELECT count(*) FROM records", [], |r| r.get(0))
        .unwrap()
}

/// Run `f` while another thread holds the store's own tracker connection.
fn while_connection_held<T>(store: &Store, f: impl FnOnce() -> T) -> T {
    let (held_tx, held_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        let holder = s.spawn(move || {
            store
                .with_tracker(|db| {
                    held_tx.send(count(db)).unwrap();
                    release_rx.recv().unwrap();
                    Ok(())
                })
                .unwrap()
        });
        held_rx.recv().unwrap();
        let out = f();
        release_tx.send(()).unwrap();
        holder.join().unwrap();
        out
    })
}

#[test]
fn a_reader_does_not_wait_for_a_busy_connection_and_sees_what_is_committed() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    put(&store, "note:a");
    // Before, this waited for the holder: here it would have waited forever.
    let seen = while_connection_held(&store, || store.with_tracker(|db| Ok(count(db))).unwrap());
    assert_eq!(seen, 1);
    // A write needs the store's connection (it applies the batch with it).
    put(&store, "note:b");
    // The reader's connection, kept from the first read, sees the later commit.
    let seen = while_connection_held(&store, || store.with_tracker(|db| Ok(count(db))).unwrap());
    assert_eq!(seen, 2);
    // A reader's connection is for reading only.
    let refused = while_connection_held(&store, || {
        store
            .with_tracker(|db| {
                Ok(db
                    .execute("DELETE FROM records", [])
                    .map_err(|e| e.to_string()))
            })
            .unwrap()
    });
    assert!(refused.is_err(), "a reader deleted records: {refused:?}");
    assert_eq!(store.live_records().unwrap(), 2);
    assert!(store.get("note:a").unwrap().is_some());
}

#[test]
fn many_threads_search_at_once_and_get_what_one_thread_gets() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut b = WriteBatch::new();
    for i in 0..200 {
        let mut meta = Map::new();
        meta.insert("n".into(), i.into());
        b.put(&format!("note:{i}"), meta, format!("body {i}"))
            .unwrap();
    }
    store.commit(&b).unwrap();
    let one: Vec<i64> = store
        .with_tracker(|db| {
            let mut st = db
                .prepare("SELECT seq FROM records ORDER BY key_hash")
                .unwrap();
            let rows = st.query_map([], |r| r.get(0)).unwrap();
            Ok(rows.map(Result::unwrap).collect())
        })
        .unwrap();
    assert_eq!(one.len(), 200);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    (0..50)
                        .map(|_| {
                            store
                                .with_tracker(|db| {
                                    let mut st = db
                                        .prepare_cached("SELECT seq FROM records ORDER BY key_hash")
                                        .unwrap();
                                    let rows = st.query_map([], |r| r.get(0)).unwrap();
                                    Ok(rows.map(Result::unwrap).collect::<Vec<i64>>())
                                })
                                .unwrap()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            for got in h.join().unwrap() {
                assert_eq!(got, one);
            }
        }
    });
}
