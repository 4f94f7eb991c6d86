//! Many writers and readers on one store at once: separate processes, and threads
//! sharing one `Store`.

use std::collections::HashSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;

use engram::store::{verify, Store, StoreOptions, WriteBatch};
use serde_json::Map;

fn open(dir: &Path) -> Store {
    Store::open(dir, StoreOptions::default(), engram::projections()).unwrap()
}

#[test]
fn writer_processes_appending_at_once_lose_and_duplicate_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store_arg = dir.path().to_str().unwrap().to_string();
    let (writers, batches, size) = (3u64, 60u64, 7u64);
    let reader = Command::new(env!("CARGO_BIN_EXE_engram-writer"))
        .args(["--store", &store_arg, "--read", "3"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let children: Vec<_> = (0..writers)
        .map(|id| {
            Command::new(env!("CARGO_BIN_EXE_engram-writer"))
                .args(["--store", &store_arg, "--id", &id.to_string()])
                .args([
                    "--batches",
                    &batches.to_string(),
                    "--batch-size",
                    &size.to_string(),
                ])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut commit_seqs = HashSet::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "a writer failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        assert_eq!(text.lines().count() as u64, batches);
        for line in text.lines() {
            let seq: u64 = line.rsplit(' ').next().unwrap().parse().unwrap();
            assert!(
                commit_seqs.insert(seq),
                "two commits acknowledged with sequence number {seq}"
            );
        }
    }
    let out = reader.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the reader saw a corrupt value or failed: {}",
        String::from_utf8_lossy(&out.stdout)
    );

    let store = open(dir.path());
    assert_eq!(store.live_records().unwrap(), writers * batches * size);
    for id in 0..writers {
        for b in 0..batches {
            for r in 0..size {
                let key = format!("file:w{id}/b{b}/r{r}");
                assert!(
                    store
                        .get(&key)
                        .unwrap()
                        .unwrap()
                        .body
                        .starts_with(key.as_bytes()),
                    "{key}"
                );
            }
        }
    }
    // Every record and every commit got its own sequence number, with no gaps.
    assert_eq!(
        store.meta().unwrap().applied_seq,
        writers * batches * (size + 1)
    );
    drop(store);
    assert!(verify(dir.path()).unwrap().is_sound());
}

#[test]
fn threads_sharing_a_store_write_and_read_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(open(dir.path()));
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                for i in 0..50 {
                    let key = format!("file:t{t}/{i}");
                    let mut b = WriteBatch::new();
                    b.put(&key, Map::new(), key.clone()).unwrap();
                    store.commit(&b).unwrap();
                    // Read back own write and someone else's latest.
                    assert_eq!(store.get(&key).unwrap().unwrap().body, key.as_bytes());
                    let _ = store.get(&format!("file:t{}/{}", (t + 1) % 4, i)).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(store.live_records().unwrap(), 200);
    drop(store);
    assert!(verify(dir.path()).unwrap().is_sound());
}
