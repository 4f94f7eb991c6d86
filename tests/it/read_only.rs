//! A store opened for reading only (asked for, or forced by permissions) reads
//! everything and changes nothing in its directory.

use std::collections::BTreeMap;
use std::path::Path;

use engram::memory::Memories;
use engram::store::{StoreError, StoreOptions};

/// Every file of the directory with a hash of its bytes.
fn files(dir: &Path) -> BTreeMap<String, (usize, u64)> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| {
            (e.file_name().to_string_lossy().into_owned(), {
                let b = std::fs::read(e.path()).unwrap();
                (b.len(), engram::key::hash64(&String::from_utf8_lossy(&b)))
            })
        })
        .collect()
}

#[test]
fn a_read_only_open_reads_everything_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let id = {
        let m = Memories::open(dir.path()).unwrap();
        let first = m
            .remember("tracker uses WAL mode", &["sqlite".into()], None)
            .unwrap();
        m.update(
            &first.id,
            engram::memory::Memory::new("tracker uses WAL mode, synchronous NORMAL"),
        )
        .unwrap();
        m.note_set("owner", "storage team", None).unwrap();
        // Leave a tail a writable open would drop, and a vector cache to search.
        let _ = m.recall("WAL", 3).unwrap();
        first.id
    };
    let before = files(dir.path());
    let opts = StoreOptions {
        read_only: true,
        ..StoreOptions::default()
    };
    let m = Memories::open_with(dir.path(), opts).unwrap();
    assert_eq!(m.get(&id).unwrap().unwrap().version, 2);
    assert_eq!(m.history(&id).unwrap().len(), 2);
    assert_eq!(m.note_get("owner").unwrap().unwrap().text, "storage team");
    assert_eq!(m.recall("synchronous", 3).unwrap()[0].memory.id, id);
    let err = m.remember("refused", &[], None).unwrap_err();
    assert!(
        matches!(
            err,
            engram::memory::MemoryError::Store(StoreError::ReadOnly { .. })
        ),
        "{err}"
    );
    assert!(m.store().compact().is_err());
    drop(m);
    // SQLite may add its WAL coordination files next to the tracker (on a read-only
    // mount it cannot, and opens the tracker as immutable instead); nothing else may
    // appear, and no existing file may change.
    let mut after = files(dir.path());
    after.remove("tracker.db-shm");
    if after
        .get("tracker.db-wal")
        .is_some_and(|&(len, _)| len == 0)
        && !before.contains_key("tracker.db-wal")
    {
        after.remove("tracker.db-wal");
    }
    assert_eq!(after, before, "a read-only open changed the directory");
}

#[test]
fn a_read_only_open_of_a_missing_store_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent");
    std::fs::create_dir(&path).unwrap();
    let opts = StoreOptions {
        read_only: true,
        ..StoreOptions::default()
    };
    assert!(Memories::open_with(&path, opts).is_err());
    assert_eq!(std::fs::read_dir(&path).unwrap().count(), 0);
}
