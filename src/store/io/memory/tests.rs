//! A memory tracker and a tracker file give the same open and verify results on the
//! same log bytes: sound stores, damaged ones, with and without a tracker built first.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Map;

use super::MemoryTracker;
use crate::store::{verify, Store, StoreOptions, WriteBatch, BLOB_FILE, TRACKER_FILE};

/// The log of a store with a few commits (puts, a delete, an overwrite).
fn sound_log() -> Vec<u8> {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), StoreOptions::default(), Vec::new()).expect("open");
    for (i, ops) in [
        vec![("a", Some("a1")), ("b", Some("b1"))],
        vec![("c", Some("c1")), ("b", None)],
        vec![("a", Some("a2")), ("d", Some("d1"))],
    ]
    .into_iter()
    .enumerate()
    {
        let mut batch = WriteBatch::new();
        for (k, v) in ops {
            match v {
                Some(v) => batch.put(k, Map::new(), v.as_bytes()).expect("put"),
                None => batch.delete(k).expect("delete"),
            };
        }
        store
            .commit(&batch)
            .unwrap_or_else(|e| panic!("commit {i}: {e}"));
    }
    drop(store);
    std::fs::read(dir.path().join(BLOB_FILE)).expect("read log")
}

/// What a store shows: verify before, the open's report (or error), the keys it
/// reads, verify after; the directory's path written as `DIR`.
fn outcome(dir: &Path) -> String {
    let mut out = String::new();
    let mut note = |what: &str, s: String| {
        out.push_str(&format!(
            "{what}: {}\n",
            s.replace(&*dir.to_string_lossy(), "DIR")
        ));
    };
    let summary = |r: crate::store::Result<crate::store::VerifyReport>| match r {
        Ok(r) => format!(
            "sound={} problems={:?} warnings={:?} records={} batches={} live={}",
            r.is_sound(),
            r.problems,
            r.warnings,
            r.records,
            r.batches,
            r.live_keys
        ),
        Err(e) => format!("error {e}"),
    };
    note("verify before", summary(verify(dir)));
    match Store::open(dir, StoreOptions::default(), Vec::new()) {
        Ok(store) => {
            note("open", format!("{:?}", store.open_report()));
            let values: BTreeMap<&str, Option<String>> = ["a", "b", "c", "d"]
                .into_iter()
                .map(|k| {
                    let v = store.get(k).ok().flatten();
                    (k, v.map(|r| String::from_utf8_lossy(&r.body).into_owned()))
                })
                .collect();
            note("values", format!("{values:?}"));
        }
        Err(e) => note("open", format!("error {e}")),
    }
    note("verify after", summary(verify(dir)));
    out
}

/// Run `log` through both kinds of tracker: `build_first` opens the store once over
/// `sound` before `log` replaces it (so a tracker of the sound log meets the damage).
fn both(sound: &[u8], log: &[u8], build_first: bool) -> (String, String) {
    let run = |dir: &Path| {
        if build_first {
            std::fs::write(dir.join(BLOB_FILE), sound).expect("write");
            drop(Store::open(dir, StoreOptions::default(), Vec::new()).expect("first open"));
        }
        std::fs::write(dir.join(BLOB_FILE), log).expect("write");
        outcome(dir)
    };
    let file_dir = tempfile::tempdir().expect("tempdir");
    let file = run(file_dir.path());
    let memory_dir = tempfile::tempdir().expect("tempdir");
    let mounted = MemoryTracker::mount(memory_dir.path()).expect("mount");
    let memory = run(memory_dir.path());
    assert!(
        !memory_dir.path().join(TRACKER_FILE).exists(),
        "the memory tracker wrote a file"
    );
    assert_eq!(
        mounted.exists(),
        build_first || file_dir.path().join(TRACKER_FILE).exists()
    );
    (file, memory)
}

#[test]
fn a_memory_tracker_opens_and_verifies_as_a_file_does() {
    let sound = sound_log();
    let mut flipped = sound.clone();
    let middle = sound.len() / 2;
    flipped[middle] ^= 0x40;
    let mut torn = sound.clone();
    torn.truncate(sound.len() - 5);
    let mut garbage = sound.clone();
    garbage.extend_from_slice(b"not a record, not zeros either");
    let mut zeroed_header = sound.clone();
    zeroed_header[..16].fill(0);
    let cases: [(&str, &[u8]); 5] = [
        ("sound", &sound),
        ("a flipped byte", &flipped),
        ("a torn tail", &torn),
        ("garbage after the last commit", &garbage),
        ("a zeroed header", &zeroed_header),
    ];
    let mut opened = 0;
    for (name, log) in cases {
        for build_first in [false, true] {
            let (file, memory) = both(&sound, log, build_first);
            assert_eq!(
                file, memory,
                "{name} (tracker built first: {build_first}): file, then memory"
            );
            opened += usize::from(file.contains("values:"));
        }
    }
    // The cases reach open's several ends, not only its refusals.
    assert!(opened >= 6, "only {opened} of 10 runs opened a store");
}

#[test]
fn a_restored_image_is_the_tracker_it_was_saved_from() {
    let sound = sound_log();
    let dir = tempfile::tempdir().expect("tempdir");
    let mounted = MemoryTracker::mount(dir.path()).expect("mount");
    assert!(MemoryTracker::mount(dir.path()).is_err(), "mounted twice");
    std::fs::write(dir.path().join(BLOB_FILE), &sound).expect("write");
    drop(Store::open(dir.path(), StoreOptions::default(), Vec::new()).expect("open"));
    let image = mounted.image().expect("image");
    // Gone, the next open builds a tracker from the log; restored, it has nothing to do.
    mounted.remove().expect("remove");
    assert!(!mounted.exists());
    assert!(verify(dir.path()).expect("verify").warnings[0].contains("no tracker.db"));
    let store = Store::open(dir.path(), StoreOptions::default(), Vec::new()).expect("open");
    assert!(store.open_report().rebuilt.is_some());
    drop(store);
    mounted.restore(&image).expect("restore");
    let store = Store::open(dir.path(), StoreOptions::default(), Vec::new()).expect("open");
    assert_eq!(store.open_report(), &Default::default());
    assert_eq!(store.get("a").expect("get").expect("a").body, b"a2");
    drop(store);
    assert!(verify(dir.path()).expect("verify").is_sound());
    // An image of a file tracker (in WAL mode) is refused rather than misread.
    let file_dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(file_dir.path().join(BLOB_FILE), &sound).expect("write");
    drop(Store::open(file_dir.path(), StoreOptions::default(), Vec::new()).expect("open"));
    let file_image = std::fs::read(file_dir.path().join(TRACKER_FILE)).expect("read");
    assert!(mounted.restore(&file_image).is_err());
}
