//! Group commit (`format-spec/blob-log.md`, "Group commit"): batches committed at the
//! same time from many threads share a sync, yet each stays its own batch of the log
//! with its own answer — contiguous sequence numbers, its own commit record, its own
//! error when it alone is refused — and a SIGKILL never loses an acknowledged one.
//!
//! The killed process is this test binary re-run with `--ignored --exact
//! group_child` and the store in `ENGRAM_GROUP_DIR`.

use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Barrier, Mutex};
use std::time::Duration;

use engram::store::{verify, CommitInfo, Store, StoreError, StoreOptions, WriteBatch};
use serde_json::Map;

use crate::support::rerun;

fn open(dir: &Path) -> Store {
    Store::open(dir, StoreOptions::default(), engram::projections()).unwrap()
}

fn body(key: &str) -> Vec<u8> {
    key.bytes().cycle().take(700).collect()
}

const THREADS: usize = 8;

/// Every thread commits `per_thread` batches of `1 + i % 3` records at once; returns
/// each key with the answer its batch got.
fn commit_from_threads(
    store: &Store,
    per_thread: usize,
    key_of: impl Fn(usize, usize, usize) -> String + Sync,
) -> Vec<(Vec<String>, engram::store::Result<CommitInfo>)> {
    let answers = Mutex::new(Vec::new());
    let start = Barrier::new(THREADS);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (answers, start, key_of) = (&answers, &start, &key_of);
            s.spawn(move || {
                start.wait();
                for i in 0..per_thread {
                    let keys: Vec<String> = (0..1 + i % 3).map(|r| key_of(t, i, r)).collect();
                    let mut b = WriteBatch::new();
                    for k in &keys {
                        b.put(k, Map::new(), body(k)).unwrap();
                    }
                    let answer = store.commit(&b);
                    answers.lock().unwrap().push((keys, answer));
                }
            });
        }
    });
    answers.into_inner().unwrap()
}

#[test]
fn concurrent_commits_each_get_their_own_batch_and_sequence_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let answers = commit_from_threads(&store, 150, |t, i, r| format!("file:t{t}/b{i}/r{r}"));
    let mut seqs = BTreeSet::new();
    let mut commits = BTreeSet::new();
    for (keys, answer) in &answers {
        let info = answer.as_ref().unwrap();
        // Each batch has its own commit record, right after its records.
        assert!(
            commits.insert(info.commit_offset),
            "two batches share a commit record"
        );
        assert_eq!(info.commit_seq - info.first_seq, keys.len() as u64);
        for s in info.first_seq..=info.commit_seq {
            assert!(seqs.insert(s), "sequence number {s} given twice");
        }
        for k in keys {
            assert_eq!(store.get(k).unwrap().unwrap().body, body(k), "{k}");
        }
    }
    // No gaps: the batches' sequence numbers tile 1..=last.
    let last = *seqs.last().unwrap();
    assert_eq!(seqs.len() as u64, last);
    assert_eq!(store.meta().unwrap().applied_seq, last);
    drop(store);
    let report = verify(dir.path()).unwrap();
    assert!(report.is_sound(), "{report:?}");
    // A replay from the log alone finds the same state.
    let store = open(dir.path());
    store.rebuild().unwrap();
    assert_eq!(store.meta().unwrap().applied_seq, last);
    for (keys, _) in &answers {
        for k in keys {
            assert_eq!(
                store.get(k).unwrap().unwrap().body,
                body(k),
                "{k} after rebuild"
            );
        }
    }
}

#[test]
fn a_batch_the_tracker_refuses_fails_alone_inside_a_group() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut b = WriteBatch::new();
    b.put("file:a", Map::new(), "a").unwrap();
    store.commit(&b).unwrap();
    // No real 64-bit collision can be found: the tracker is made to hold another key
    // under the hash of `file:bad`, as a collision would.
    let h = engram::key::hash64("file:bad") as i64;
    let db = rusqlite::Connection::open(dir.path().join("tracker.db")).unwrap();
    db.execute(
        // `seq` keys the table: the made-up row takes one no record will have.
        "INSERT INTO records (key_hash, key, offset, length, seq, timestamp_ms) SELECT ?1, 'file:other', offset, length, 1 << 40, timestamp_ms FROM records WHERE key = 'file:a'",
        [h],
    )
    .unwrap();
    drop(db);
    // Thread 0 writes the refused key in every batch; the others write good keys.
    let answers = commit_from_threads(&store, 60, |t, i, r| {
        if t == 0 && r == 0 {
            "file:bad".to_string()
        } else {
            format!("file:t{t}/b{i}/r{r}")
        }
    });
    let mut refused = 0;
    let mut seqs = BTreeSet::new();
    for (keys, answer) in &answers {
        if keys[0] == "file:bad" {
            match answer {
                Err(StoreError::KeyHashCollision { new, existing }) => {
                    assert_eq!(
                        (new.as_str(), existing.as_str()),
                        ("file:bad", "file:other")
                    );
                    refused += 1;
                }
                other => panic!("the colliding batch got {other:?}"),
            }
            for k in &keys[1..] {
                assert!(
                    store.get(k).unwrap().is_none(),
                    "{k}: part of a refused batch was applied"
                );
            }
        } else {
            let info = answer
                .as_ref()
                .unwrap_or_else(|e| panic!("{keys:?} failed: {e}"));
            seqs.extend(info.first_seq..=info.commit_seq);
            for k in keys {
                assert_eq!(store.get(k).unwrap().unwrap().body, body(k), "{k}");
            }
        }
    }
    assert_eq!(refused, 60);
    // The refused batches left no sequence numbers behind and nothing in the log.
    let first = *seqs.first().unwrap();
    let last = *seqs.last().unwrap();
    assert_eq!(
        (last - first + 1) as usize,
        seqs.len(),
        "a gap in the sequence"
    );
    assert_eq!(store.meta().unwrap().applied_seq, last);
    drop(store);
    // The log itself is sound; the only finding is the row planted above.
    let report = verify(dir.path()).unwrap();
    assert_eq!(report.problems.len(), 1, "{report:?}");
    assert!(report.problems[0].what.contains("file:other"), "{report:?}");
}

/// Run by the child process only: `THREADS` threads commit batch-1 records as fast as
/// they can, printing `ack KEY` once each commit has returned.
#[test]
#[ignore = "helper run as a child process by the SIGKILL test"]
fn group_child() {
    let Ok(dir) = std::env::var("ENGRAM_GROUP_DIR") else {
        return;
    };
    let round: usize = std::env::var("ENGRAM_GROUP_ROUND")
        .unwrap()
        .parse()
        .unwrap();
    let store = open(Path::new(&dir));
    let out = Mutex::new(std::io::stdout());
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (store, out) = (&store, &out);
            s.spawn(move || {
                for i in 0.. {
                    let key = format!("file:round{round}/t{t}/{i}");
                    let mut b = WriteBatch::new();
                    b.put(&key, Map::new(), body(&key)).unwrap();
                    store.commit(&b).unwrap();
                    let mut out = out.lock().unwrap();
                    out.write_all(format!("ack {key}\n").as_bytes()).unwrap();
                    out.flush().unwrap();
                }
            });
        }
    });
}

/// Run the ignored test `child` of this binary on the store in `dir` for `millis`, kill
/// it with SIGKILL, and return what it acknowledged (its `ack …` lines) before.
fn run_and_kill(child: &str, dir: &Path, round: usize, millis: u64) -> Vec<String> {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "--nocapture"])
        .arg(rerun::test_name(module_path!(), child))
        .args(["--test-threads", "1"])
        .env("ENGRAM_GROUP_DIR", dir)
        .env("ENGRAM_GROUP_ROUND", round.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .filter_map(|l| Some(l[l.find("ack ")? + 4..].to_string()))
            .collect::<Vec<String>>()
    });
    std::thread::sleep(Duration::from_millis(millis));
    child.kill().unwrap();
    assert!(
        !child.wait().unwrap().success(),
        "the child ended on its own"
    );
    reader.join().unwrap()
}

#[test]
fn sigkill_never_loses_an_acknowledged_grouped_commit() {
    let dir = tempfile::tempdir().unwrap();
    let mut acked_total = 0;
    for round in 0..6usize {
        let acked = run_and_kill("group_child", dir.path(), round, 300 + 170 * round as u64);
        assert!(
            !acked.is_empty(),
            "round {round}: nothing was acknowledged before the kill"
        );
        acked_total += acked.len();
        let store = open(dir.path());
        for key in &acked {
            let rec = store.get(key).unwrap();
            assert_eq!(
                rec.map(|r| r.body),
                Some(body(key)),
                "round {round}: acknowledged {key} lost or torn"
            );
        }
        // Per thread, what survived is a prefix: a later commit is never kept while an
        // earlier one of the same thread is lost.
        let mut survived: HashMap<usize, Vec<bool>> = HashMap::new();
        for t in 0..THREADS {
            let mut i = 0;
            let mut seen = Vec::new();
            loop {
                let key = format!("file:round{round}/t{t}/{i}");
                let present = store.get(&key).unwrap();
                if let Some(r) = &present {
                    assert_eq!(r.body, body(&key), "{key} torn");
                }
                seen.push(present.is_some());
                if present.is_none() && i > 64 {
                    break;
                }
                i += 1;
            }
            survived.insert(t, seen);
        }
        for (t, seen) in &survived {
            let first_missing = seen.iter().position(|p| !p).unwrap_or(seen.len());
            assert!(
                seen[first_missing..].iter().all(|p| !p),
                "round {round}, thread {t}: a commit survived after a lost one"
            );
        }
        drop(store);
        let report = verify(dir.path()).unwrap();
        assert!(report.is_sound(), "round {round}: {report:?}");
    }
    assert!(acked_total > 0);
}

/// Records per batch in the large-batch child: past the size from which the log syncs
/// on the store's sync thread while the tracker applies (`SYNC_BESIDE_MIN_RECORDS`).
const LARGE: usize = 80;

#[test]
#[ignore = "helper run as a child process by the SIGKILL test"]
fn large_batch_child() {
    let Ok(dir) = std::env::var("ENGRAM_GROUP_DIR") else {
        return;
    };
    let round = std::env::var("ENGRAM_GROUP_ROUND").unwrap();
    let store = open(Path::new(&dir));
    let mut out = std::io::stdout();
    for i in 0.. {
        let mut b = WriteBatch::new();
        for r in 0..LARGE {
            let key = format!("file:large{round}/{i}/{r}");
            b.put(&key, Map::new(), body(&key)).unwrap();
        }
        store.commit(&b).unwrap();
        // Acknowledged: durable and visible to this process.
        let last = format!("file:large{round}/{i}/{}", LARGE - 1);
        assert!(
            store.get(&last).unwrap().is_some(),
            "{last} not visible after its commit"
        );
        out.write_all(format!("ack {i}\n").as_bytes()).unwrap();
        out.flush().unwrap();
    }
}

#[test]
fn sigkill_never_loses_an_acknowledged_large_commit() {
    // Large batches take the path where the sync runs beside the tracker's apply; a
    // kill at any point of it keeps every acknowledged batch whole, and whatever
    // else survives is whole batches too.
    let dir = tempfile::tempdir().unwrap();
    for round in 0..4usize {
        let acked: Vec<usize> = run_and_kill(
            "large_batch_child",
            dir.path(),
            round,
            300 + 130 * round as u64,
        )
        .iter()
        .map(|a| a.parse().unwrap())
        .collect();
        assert!(
            !acked.is_empty(),
            "round {round}: nothing was acknowledged before the kill"
        );
        let store = open(dir.path());
        let whole = |i: usize| {
            let present: Vec<bool> = (0..LARGE)
                .map(|r| {
                    let key = format!("file:large{round}/{i}/{r}");
                    match store.get(&key).unwrap() {
                        Some(rec) => {
                            assert_eq!(rec.body, body(&key), "{key} torn");
                            true
                        }
                        None => false,
                    }
                })
                .collect();
            assert!(
                present.iter().all(|p| *p) || present.iter().all(|p| !p),
                "round {round}: batch {i} survived in part"
            );
            present[0]
        };
        let last_acked = *acked.last().unwrap();
        for i in 0..=last_acked {
            assert!(whole(i), "round {round}: acknowledged batch {i} lost");
        }
        // At most the batch in flight at the kill survives beyond the acknowledged.
        assert!(
            !whole(last_acked + 2),
            "round {round}: a batch never written survived"
        );
        whole(last_acked + 1);
        drop(store);
        let report = verify(dir.path()).unwrap();
        assert!(report.is_sound(), "round {round}: {report:?}");
    }
}
