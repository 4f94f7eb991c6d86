//! Crash safety: a store cut at every byte of its last batch, bits flipped at random,
//! and writers killed with SIGKILL in the middle of their work.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use engram::store::{verify, Store, StoreOptions, WriteBatch};
use serde_json::Map;

use crate::support::parallel;

fn open(dir: &Path) -> Store {
    Store::open(dir, StoreOptions::default(), engram::projections()).unwrap()
}

/// Batches as the model sees them: key → Some(body) for a put, None for a delete.
type Batch = Vec<(String, Option<Vec<u8>>)>;

fn batches() -> Vec<Batch> {
    vec![
        vec![
            ("file:a".into(), Some(b"alpha".to_vec())),
            ("file:b".into(), Some(b"beta".to_vec())),
        ],
        vec![("file:c".into(), Some(vec![b'c'; 300]))],
        vec![
            ("file:a".into(), None),
            ("file:b".into(), Some(b"beta two".to_vec())),
        ],
        vec![
            ("file:d".into(), Some(b"delta".to_vec())),
            ("file:c".into(), None),
            ("file:e".into(), Some(vec![b'e'; 1000])),
            ("file:a".into(), Some(b"alpha again".to_vec())),
        ],
    ]
}

fn model_after(n: usize) -> BTreeMap<String, Vec<u8>> {
    let mut m = BTreeMap::new();
    for b in batches().into_iter().take(n) {
        for (k, v) in b {
            match v {
                Some(v) => m.insert(k, v),
                None => m.remove(&k),
            };
        }
    }
    m
}

fn assert_holds(store: &Store, model: &BTreeMap<String, Vec<u8>>, context: &str) {
    for k in ["file:a", "file:b", "file:c", "file:d", "file:e"] {
        let got = store.get(k).unwrap().map(|r| r.body);
        assert_eq!(got.as_ref(), model.get(k), "{context}: key {k}");
    }
    assert_eq!(
        store.live_records().unwrap(),
        model.len() as u64,
        "{context}"
    );
}

/// Build the reference store and return its blob.dat bytes (data only, without the
/// zero-filled space after it) and the end offset of each batch.
fn reference() -> (Vec<u8>, Vec<u64>) {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut ends = Vec::new();
    for b in batches() {
        let mut wb = WriteBatch::new();
        for (k, v) in b {
            match v {
                Some(v) => wb.put(&k, Map::new(), v).unwrap(),
                None => wb.delete(&k).unwrap(),
            };
        }
        store.commit(&wb).unwrap();
        ends.push(store.meta().unwrap().applied_end);
    }
    drop(store);
    let mut bytes = std::fs::read(dir.path().join("blob.dat")).unwrap();
    bytes.truncate(*ends.last().unwrap() as usize);
    (bytes, ends)
}

#[test]
fn cut_at_every_byte_of_the_last_batch_opens_with_exactly_the_committed_batches() {
    let (bytes, ends) = reference();
    let last_start = ends[ends.len() - 2] as usize;
    parallel::for_each_parallel(last_start..=bytes.len(), |cut| {
        for keep_tracker in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            if keep_tracker {
                // The tracker as a crash during the fourth batch leaves it: the first
                // three applied.
                std::fs::write(dir.path().join("blob.dat"), &bytes[..ends[2] as usize]).unwrap();
                drop(open(dir.path()));
            }
            std::fs::write(dir.path().join("blob.dat"), &bytes[..cut]).unwrap();
            let store = open(dir.path());
            let committed = ends.iter().filter(|&&e| e as usize <= cut).count();
            assert_holds(&store, &model_after(committed), &format!("cut at {cut}"));
            drop(store);
            let report = verify(dir.path()).unwrap();
            assert!(report.is_sound(), "cut at {cut}: {report:?}");
            assert!(
                report.warnings.is_empty(),
                "cut at {cut}: the tail was dropped on open: {report:?}"
            );
        }
    });
}

#[test]
fn a_tracker_left_behind_by_a_crash_is_caught_up_by_replay() {
    let (bytes, ends) = reference();
    // A store whose tracker applied two batches while the log holds all four.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("blob.dat"), &bytes[..ends[1] as usize]).unwrap();
    drop(open(dir.path()));
    std::fs::write(dir.path().join("blob.dat"), &bytes).unwrap();
    let store = open(dir.path());
    assert_eq!(store.open_report().replayed_batches, 2);
    assert!(store.open_report().rebuilt.is_none());
    assert_holds(&store, &model_after(4), "replayed");
}

#[test]
fn random_bit_flips_are_reported_by_verify_and_never_panic() {
    let (bytes, ends) = reference();
    let committed_end = *ends.last().unwrap() as usize;
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for round in 0..300 {
        let dir = tempfile::tempdir().unwrap();
        let mut damaged = bytes.clone();
        let at = 64 + (next() as usize % (damaged.len() - 64));
        damaged[at] ^= 1 << (next() % 8);
        std::fs::write(dir.path().join("blob.dat"), &damaged).unwrap();
        let report = verify(dir.path()).unwrap();
        let in_last_batch = at >= ends[ends.len() - 2] as usize && at < committed_end;
        if in_last_batch {
            // A flip anywhere in the last batch — its records or its commit — leaves
            // no commit after it that chains back: a torn tail. Verify (before any
            // open) and recovery must say the same: a warning, then dropped.
            assert!(
                report.is_sound() && !report.warnings.is_empty(),
                "round {round}, byte {at}: {report:?}"
            );
            let store = open(dir.path());
            assert!(store.open_report().damaged.is_none(), "round {round}");
            assert_holds(
                &store,
                &model_after(ends.len() - 1),
                &format!("round {round}, byte {at}"),
            );
            drop(store);
            let after = verify(dir.path()).unwrap();
            assert!(after.is_sound(), "round {round}: {after:?}");
            continue;
        } else {
            assert!(
                !report.is_sound(),
                "round {round}: flip at byte {at} not reported: {report:?}"
            );
            assert!(
                report.problems.iter().any(|p| p.offset.is_some()),
                "round {round}: no offset named"
            );
        }
        // Opening must not panic either; it may refuse or drop what it cannot trust.
        let _ = Store::open(dir.path(), StoreOptions::default(), engram::projections());
    }
    // A damaged file header is reported, not a panic.
    let dir = tempfile::tempdir().unwrap();
    let mut damaged = bytes.clone();
    damaged[20] ^= 0xff;
    std::fs::write(dir.path().join("blob.dat"), &damaged).unwrap();
    assert!(!verify(dir.path()).unwrap().is_sound());
}

#[test]
fn writers_killed_mid_batch_lose_nothing_they_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let mut acked: Vec<(u64, u64)> = Vec::new();
    for round in 0..20u64 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_engram-writer"))
            .args([
                "--store",
                dir.path().to_str().unwrap(),
                "--id",
                &round.to_string(),
            ])
            .args([
                "--batches",
                "100000",
                "--batch-size",
                "20",
                "--value-bytes",
                "700",
            ])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (first_tx, first_rx) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut first = Some(first_tx);
            BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .filter_map(|l| {
                    if let Some(tx) = first.take() {
                        let _ = tx.send(());
                    }
                    let mut p = l.split(' ').skip(1);
                    Some((p.next()?.parse().ok()?, p.next()?.parse().ok()?))
                })
                .collect::<Vec<(u64, u64)>>()
        });
        // Once it has acknowledged a batch (opening a grown store after a kill takes
        // longer on a busy machine), let it go on, then kill it at a random moment.
        first_rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("round {round}: the writer acknowledged nothing in 60 s"));
        std::thread::sleep(Duration::from_millis(20 + (round * 37) % 140));
        child.kill().unwrap();
        child.wait().unwrap();
        let got = reader.join().unwrap();
        assert!(
            !got.is_empty(),
            "round {round}: the writer acknowledged nothing"
        );
        acked.extend(got);

        let store = open(dir.path());
        for &(id, b) in &acked {
            for r in 0..20 {
                let key = format!("file:w{id}/b{b}/r{r}");
                let rec = store
                    .get(&key)
                    .unwrap()
                    .unwrap_or_else(|| panic!("round {round}: acknowledged {key} lost"));
                assert_eq!(rec.body.len(), 700);
                assert!(
                    rec.body.starts_with(key.as_bytes()),
                    "round {round}: {key} corrupt"
                );
            }
        }
        // Whole batches only: the live record count is a multiple of the batch size.
        assert_eq!(
            store.live_records().unwrap() % 20,
            0,
            "round {round}: a partial batch is visible"
        );
        drop(store);
        let report = verify(dir.path()).unwrap();
        assert!(report.is_sound(), "round {round}: {report:?}");
    }
}

#[test]
fn damage_before_later_commits_is_never_truncated_away() {
    let (bytes, ends) = reference();
    // Flip a byte inside the second batch's record; batches three and four follow.
    let mut damaged = bytes.clone();
    let at = ends[0] as usize + 48 + 2;
    damaged[at] ^= 0x40;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("blob.dat"), &damaged).unwrap();

    let store = open(dir.path());
    let why = store
        .open_report()
        .damaged
        .clone()
        .expect("damage is reported");
    assert!(why.contains(&ends[0].to_string()), "{why}");
    assert_holds(&store, &model_after(1), "readable up to the damage");
    let mut b = WriteBatch::new();
    b.put("file:new", Map::new(), "x").unwrap();
    assert!(store.commit(&b).is_err(), "writes are refused");
    assert!(store.rebuild().is_err(), "rebuild refuses to truncate");
    assert!(
        store.compact().is_err(),
        "compaction refuses to drop later batches"
    );
    drop(store);
    assert_eq!(
        std::fs::read(dir.path().join("blob.dat")).unwrap(),
        damaged,
        "not a byte changed"
    );
    assert!(!verify(dir.path()).unwrap().is_sound());

    // Restoring the byte brings every batch back.
    std::fs::write(dir.path().join("blob.dat"), &bytes).unwrap();
    let store = open(dir.path());
    assert!(store.open_report().damaged.is_none());
    assert_holds(&store, &model_after(4), "restored");
}
