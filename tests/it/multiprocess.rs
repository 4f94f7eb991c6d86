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

/// Deleting `LOCK` while writers run must not let two of them append at once: each
/// acquisition checks that the file it locked is still the one at `LOCK`, and the log
/// itself is locked under it. Writers start one after another with `LOCK` deleted
/// before each (so each new one makes a new `LOCK` while the others hold the old one)
/// and again every few milliseconds while they write.
#[test]
fn deleting_lock_under_running_writers_loses_no_acknowledged_batch() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let store_arg = dir.path().to_str().unwrap().to_string();
    drop(open(dir.path()));
    let lock = dir.path().join("LOCK");
    let (writers, batches, size) = (4u64, 150u64, 5u64);
    let spawn = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_engram-writer"))
            .args(["--store", &store_arg])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let done = Arc::new(AtomicBool::new(false));
    let deleter = {
        let (done, lock) = (Arc::clone(&done), lock.clone());
        std::thread::spawn(move || {
            let mut deleted = 0u64;
            while !done.load(Ordering::Relaxed) {
                if std::fs::remove_file(&lock).is_ok() {
                    deleted += 1;
                }
                std::thread::sleep(std::time::Duration::from_millis(3));
            }
            deleted
        })
    };
    let reader = spawn(&["--read", "2"]);
    let mut children = Vec::new();
    for id in 0..writers {
        let _ = std::fs::remove_file(&lock);
        children.push(spawn(&[
            "--id",
            &id.to_string(),
            "--batches",
            &batches.to_string(),
            "--batch-size",
            &size.to_string(),
        ]));
        std::thread::sleep(std::time::Duration::from_millis(40));
    }
    let mut acked = Vec::new();
    let mut failures = Vec::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        if !out.status.success() {
            failures.push(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        for line in String::from_utf8(out.stdout).unwrap().lines() {
            let f: Vec<u64> = line
                .split(' ')
                .skip(1)
                .map(|x| x.parse().unwrap())
                .collect();
            acked.push((f[0], f[1]));
        }
    }
    done.store(true, Ordering::Relaxed);
    let deleted = deleter.join().unwrap();
    assert!(deleted > writers, "LOCK was deleted only {deleted} times");
    let out = reader.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the reader saw a corrupt value or failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(failures.is_empty(), "writers failed: {failures:?}");
    assert_eq!(acked.len() as u64, writers * batches);

    let store = open(dir.path());
    let lost: Vec<_> = acked
        .iter()
        .filter(|(id, b)| {
            (0..size).any(|r| {
                let key = format!("file:w{id}/b{b}/r{r}");
                !store
                    .get(&key)
                    .unwrap()
                    .is_some_and(|rec| rec.body.starts_with(key.as_bytes()))
            })
        })
        .collect();
    assert!(
        lost.is_empty(),
        "{} acknowledged batches lost, e.g. {:?}",
        lost.len(),
        &lost[..lost.len().min(5)]
    );
    assert_eq!(store.live_records().unwrap(), writers * batches * size);
    drop(store);
    let report = verify(dir.path()).unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);
}
