//! Crash safety beyond `crash_recovery.rs`: torn last batches holding vectors, events
//! and keep-history puts (cut short, or torn by a power loss into zero-filled pages),
//! damage inside *early* committed batches (open, rebuild and compact must never throw
//! later committed batches away), and SIGKILL during streamed batches and during
//! compaction.
//!
//! Child processes are this test binary itself, re-run with `--ignored --exact
//! crash::child_process` and the mode in `ENGRAM_CRASH_CHILD`: that runs any library code in
//! a process that can be killed, without another binary target.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use engram::key::hash64;
use engram::store::{verify, Store, StoreOptions, WriteBatch};
use serde_json::Map;

use crate::support::parallel;
use crate::support::rerun;
use crate::support::vectors;

fn open(dir: &Path) -> Store {
    Store::open(dir, StoreOptions::default(), engram::projections()).unwrap()
}

fn try_open(dir: &Path) -> engram::store::Result<Store> {
    Store::open(dir, StoreOptions::default(), engram::projections())
}

// ---------------------------------------------------------------------------------
// The reference store: batches of every record kind, and a model of what each prefix
// of them leaves.

#[derive(Clone, Debug)]
enum Op {
    Put(&'static str, Vec<u8>),
    PutKeepingHistory(&'static str, Vec<u8>),
    Delete(&'static str),
    Vector(&'static str, &'static str, [f32; 4]),
    Event(Vec<u8>),
}

const KEYS: [&str; 5] = ["file:a", "file:b", "file:c", "mem:0000000d", "note:e"];
const EMBEDDERS: [&str; 2] = ["mini", "wide"];

fn batches() -> Vec<Vec<Op>> {
    use Op::*;
    vec![
        vec![
            Put("file:a", b"alpha".to_vec()),
            Put("file:b", vec![b'b'; 100]),
            Vector("file:a", "mini", [1.0, 0.0, 0.0, 0.0]),
        ],
        vec![
            PutKeepingHistory("mem:0000000d", b"first version".to_vec()),
            Event(b"audit: session started".to_vec()),
            Vector("file:b", "wide", [0.5, 0.5, 0.0, 0.25]),
        ],
        vec![
            Delete("file:a"),
            Put("file:c", vec![b'c'; 333]),
            Vector("file:c", "mini", [0.0, 1.0, 0.0, 0.0]),
        ],
        // The last batch: one of each kind, superseding and deleting earlier values.
        vec![
            Put("file:b", b"beta, replaced (its vector goes stale)".to_vec()),
            PutKeepingHistory("mem:0000000d", b"second version".to_vec()),
            Vector("file:a", "wide", [0.0, 0.0, 1.0, 0.0]),
            Delete("file:c"),
            Event(b"audit: batch four".to_vec()),
            Put("note:e", vec![b'e'; 77]),
        ],
    ]
}

#[derive(Default, Debug, PartialEq)]
struct Model {
    values: BTreeMap<String, Vec<u8>>,
    vectors: BTreeMap<(String, String), Vec<u8>>,
}

fn model_after(n: usize) -> Model {
    let mut m = Model::default();
    for batch in batches().into_iter().take(n) {
        for op in batch {
            match op {
                Op::Put(k, v) | Op::PutKeepingHistory(k, v) => {
                    m.values.insert(k.into(), v);
                    m.vectors.retain(|(vk, _), _| vk != k);
                }
                Op::Delete(k) => {
                    m.values.remove(k);
                    m.vectors.retain(|(vk, _), _| vk != k);
                }
                Op::Vector(k, e, v) => {
                    let bytes = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                    m.vectors.insert((k.into(), e.into()), bytes);
                }
                Op::Event(_) => {}
            }
        }
    }
    m
}

fn write_batch(store: &Store, ops: &[Op]) {
    let mut wb = WriteBatch::new();
    for op in ops {
        match op {
            Op::Put(k, v) => wb.put(k, Map::new(), v.clone()).unwrap(),
            Op::PutKeepingHistory(k, v) => {
                wb.put_keeping_history(k, Map::new(), v.clone()).unwrap()
            }
            Op::Delete(k) => wb.delete(k).unwrap(),
            Op::Vector(k, e, v) => wb.put_vector(k, e, v).unwrap(),
            Op::Event(b) => wb.event(Map::new(), b.clone()).unwrap(),
        };
    }
    store.commit(&wb).unwrap();
}

/// What the store holds, read back through `get` and the tracker's vectors table
/// (each vector's bytes read from the log at the offset the tracker names).
fn observe(store: &Store) -> Model {
    let mut m = Model::default();
    for k in KEYS {
        if let Some(r) = store.get(k).unwrap() {
            assert_eq!(r.key, k);
            m.values.insert(k.into(), r.body);
        }
    }
    let snap = store.snapshot().unwrap();
    for k in KEYS {
        for e in EMBEDDERS {
            let offset: Option<i64> = store
                .with_tracker(|db| {
                    use rusqlite::OptionalExtension;
                    Ok(db
                        .query_row(
                            "SELECT offset FROM vectors WHERE key_hash = ?1 AND embedder = ?2",
                            rusqlite::params![hash64(k) as i64, e],
                            |r| r.get(0),
                        )
                        .optional()?)
                })
                .unwrap();
            if let Some(off) = offset {
                let rec = snap.record_at(off as u64).unwrap();
                m.vectors.insert((k.into(), e.into()), rec.body.to_vec());
            }
        }
    }
    m
}

/// The reference log's bytes (the whole file, zero-filled space included), the end
/// of each batch's data, and where the data ends.
fn reference() -> (Vec<u8>, Vec<u64>) {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut ends = Vec::new();
    for (i, b) in batches().iter().enumerate() {
        write_batch(&store, b);
        assert_eq!(observe(&store), model_after(i + 1));
        ends.push(store.meta().unwrap().applied_end);
    }
    drop(store);
    let bytes = std::fs::read(dir.path().join("blob.dat")).unwrap();
    assert!(bytes.len() as u64 >= *ends.last().unwrap());
    (bytes, ends)
}

/// A store directory holding `blob` and, optionally, the tracker an earlier open of
/// `tracker_from` built.
fn store_with(blob: &[u8], tracker_from: Option<&[u8]>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    if let Some(prefix) = tracker_from {
        std::fs::write(dir.path().join("blob.dat"), prefix).unwrap();
        drop(open(dir.path()));
    }
    std::fs::write(dir.path().join("blob.dat"), blob).unwrap();
    dir
}

fn assert_opens_with(dir: &Path, committed: usize, context: &str) {
    assert_opens_with_then(dir, committed, true, context)
}

fn assert_opens_with_then(dir: &Path, committed: usize, write_after: bool, context: &str) {
    let store = try_open(dir).unwrap_or_else(|e| panic!("{context}: open failed: {e}"));
    assert_eq!(
        observe(&store),
        model_after(committed),
        "{context}: the store does not hold exactly the first {committed} batches"
    );
    assert_eq!(
        store.live_records().unwrap(),
        model_after(committed).values.len() as u64,
        "{context}"
    );
    if write_after {
        // Still writable at the right place: one more batch commits and reads back.
        write_batch(&store, &[Op::Put("file:after", b"after".to_vec())]);
        assert_eq!(store.get("file:after").unwrap().unwrap().body, b"after");
    }
    drop(store);
    let report = verify(dir).unwrap();
    assert!(report.is_sound(), "{context}: {report:?}");
    // A vector cache not built yet is fine (it is derived and built on first search);
    // an uncommitted tail or a tracker behind the log is not.
    let log_warnings = report
        .warnings
        .iter()
        .filter(|w| !w.contains("vector cache"))
        .count();
    assert_eq!(log_warnings, 0, "{context}: {report:?}");
}

// ---------------------------------------------------------------------------------
// Torn last batch.

#[test]
fn a_last_batch_of_every_kind_cut_at_every_byte_leaves_exactly_the_committed_batches() {
    let (bytes, ends) = reference();
    let last_start = ends[2] as usize;
    let data_end = ends[3] as usize;
    parallel::for_each_parallel(last_start..=data_end, |cut| {
        let committed = if cut == data_end { 4 } else { 3 };
        // A crash that cut the file short, with no tracker (rebuilt from the log) and
        // with the tracker as it was before the last batch (caught up by replay).
        // Every eighth cut also checks the next write lands where it should.
        let write_after = cut % 8 == 3 || cut == data_end;
        let dir = store_with(&bytes[..cut], None);
        let context = format!("cut at {cut}, no tracker");
        assert_opens_with_then(dir.path(), committed, write_after, &context);
        let dir = store_with(&bytes[..cut], Some(&bytes[..last_start]));
        let context = format!("cut at {cut}, old tracker");
        assert_opens_with_then(dir.path(), committed, write_after, &context);
    });
}

#[test]
fn a_last_batch_torn_into_zero_filled_space_leaves_exactly_the_committed_batches() {
    // With preallocation the file keeps its length: a torn write leaves the batch's
    // first bytes followed by the zeros that were there before.
    let (bytes, ends) = reference();
    let last_start = ends[2] as usize;
    let data_end = ends[3] as usize;
    assert!(
        bytes.len() > data_end,
        "expected zero-filled space after the data"
    );
    for cut in (last_start..data_end).step_by(7).chain([data_end - 1]) {
        let mut torn = bytes.clone();
        torn[cut..data_end].fill(0);
        // Zeros over the commit record's zero padding change nothing: still committed.
        let committed = if torn == bytes { 4 } else { 3 };
        let dir = store_with(&torn, Some(&bytes[..last_start]));
        assert_opens_with(
            dir.path(),
            committed,
            &format!("zeros from {cut}, old tracker"),
        );
        let dir = store_with(&torn, None);
        assert_opens_with(
            dir.path(),
            committed,
            &format!("zeros from {cut}, no tracker"),
        );
    }
}

#[test]
fn a_power_loss_hole_in_an_unacknowledged_last_batch_is_dropped_on_open() {
    // A power loss before the last batch's fsync returned can persist any subset of its
    // pages. Whatever subset: the batch was never acknowledged, open must leave the
    // first three batches and a store that verifies sound (no unreachable commit left
    // lying past the data).
    let (bytes, ends) = reference();
    let last_start = ends[2] as usize;
    let data_end = ends[3] as usize;
    for hole_start in (last_start..data_end - 8).step_by(8) {
        let hole_end = (hole_start + 64).min(data_end - 8);
        let mut torn = bytes.clone();
        torn[hole_start..hole_end].fill(0);
        let context = format!("hole {hole_start}..{hole_end} (batch at {last_start})");
        if torn == bytes {
            continue; // the hole fell on zero padding only
        }
        let dir = store_with(&torn, Some(&bytes[..last_start]));
        // Open, write one batch, and open again: the store must stay writable and
        // hold the three batches plus the new one.
        let store = try_open(dir.path()).unwrap();
        write_batch(&store, &[Op::Put("file:after", b"after".to_vec())]);
        drop(store);
        let store = try_open(dir.path()).unwrap();
        assert!(
            store.open_report().damaged.is_none(),
            "{context}: the store became read-only: {:?}",
            store.open_report()
        );
        assert_eq!(store.get("file:after").unwrap().unwrap().body, b"after");
        assert_eq!(observe(&store), model_after(3), "{context}");
        assert_eq!(store.live_records().unwrap(), 4, "{context}");
        drop(store);
        let report = verify(dir.path()).unwrap();
        assert!(report.is_sound(), "{context}: {report:?}");
    }
}

// ---------------------------------------------------------------------------------
// Damage inside earlier committed batches: nothing may silently drop later batches.

/// Flip one bit in the payload of the first record of batch 2 (committed, with two
/// committed batches after it).
fn damaged_in_batch_two(bytes: &[u8], ends: &[u64]) -> Vec<u8> {
    let mut damaged = bytes.to_vec();
    let at = ends[0] as usize + 48 + 4; // inside the first record's payload
    damaged[at] ^= 0x10;
    damaged
}

fn assert_later_batches_still_in_the_log(dir: &Path, bytes: &[u8], ends: &[u64], what: &str) {
    let now = std::fs::read(dir.join("blob.dat")).unwrap();
    let data_end = ends[3] as usize;
    assert!(
        now.len() >= data_end
            && now[ends[1] as usize..data_end] == bytes[ends[1] as usize..data_end],
        "{what} threw away committed batches 3 and 4 (blob.dat is now {} bytes, was {data_end}) \
         because of damage inside batch 2",
        now.len()
    );
}

#[test]
fn opening_a_log_damaged_inside_an_early_batch_never_truncates_later_committed_batches() {
    let (bytes, ends) = reference();
    let damaged = damaged_in_batch_two(&bytes, &ends);
    let report = {
        let dir = store_with(&damaged, None);
        verify(dir.path()).unwrap()
    };
    assert!(
        !report.is_sound(),
        "verify must report the damage: {report:?}"
    );
    // No tracker: open has to rebuild from the log. It may refuse (an error naming the
    // damage) or open read-only, but it must not cut off the two intact batches after it.
    let dir = store_with(&damaged, None);
    if let Ok(store) = try_open(dir.path()) {
        // Readable up to the damage, and no write may land after it.
        assert!(
            store.open_report().damaged.is_some(),
            "{:?}",
            store.open_report()
        );
        assert_eq!(store.get("file:a").unwrap().unwrap().body, b"alpha");
        let mut b = WriteBatch::new();
        b.put("file:x", Map::new(), "x").unwrap();
        assert!(
            store.commit(&b).is_err(),
            "a write was accepted past damage"
        );
    }
    assert_later_batches_still_in_the_log(dir.path(), &bytes, &ends, "open (no tracker)");
}

#[test]
fn rebuild_never_drops_batches_after_damage_in_an_early_batch() {
    let (bytes, ends) = reference();
    let damaged = damaged_in_batch_two(&bytes, &ends);
    // The tracker was built while the log was intact; the damage came later (bit rot).
    let dir = store_with(&damaged, Some(&bytes));
    let store = open(dir.path());
    let _ = store.rebuild();
    drop(store);
    assert_later_batches_still_in_the_log(dir.path(), &bytes, &ends, "rebuild");
}

#[test]
fn compact_never_drops_batches_after_damage_in_an_early_batch() {
    let (bytes, ends) = reference();
    let damaged = damaged_in_batch_two(&bytes, &ends);
    let dir = store_with(&damaged, Some(&bytes));
    let store = open(dir.path());
    let before = observe(&store);
    assert_eq!(before, model_after(4));
    let result = store.compact();
    // Compaction may refuse; if it claims success, nothing live may have vanished.
    if result.is_ok() {
        let after = observe(&store);
        assert_eq!(
            after.values.keys().collect::<Vec<_>>(),
            before.values.keys().collect::<Vec<_>>(),
            "compaction succeeded but dropped live keys: {result:?}"
        );
    }
}

// ---------------------------------------------------------------------------------
// SIGKILL during streamed batches and during compaction.

/// `body_for(tag, len)`: `tag|` repeated to `len` bytes.
fn body_for(tag: &str, len: usize) -> Vec<u8> {
    tag.bytes()
        .chain(std::iter::once(b'|'))
        .cycle()
        .take(len)
        .collect()
}

/// The embedder of "stream_ahead"'s batch `batch`: one new to the store for an odd
/// batch, the same one (`e0`) for every even batch.
fn stream_embedder(batch: u64) -> String {
    format!("e{}", if batch.is_multiple_of(2) { 0 } else { batch })
}

/// The vector "stream_ahead" gives key `r` in batch `batch`.
fn stream_vector(batch: u64, r: u64) -> Vec<f32> {
    vectors::unit(batch * 1000 + r, 64)
}

const STREAM_KEYS: u64 = 300;
const STREAM_BYTES: usize = 28_000; // 300 × 28 kB ≈ 8.4 MB: two flushes per batch
const COMPACT_KEYS: u64 = 400;
const COMPACT_BYTES: usize = 6_000;
const COMPACT_REWRITTEN: u64 = 40;

/// Run by the child process only (see the module doc).
#[test]
#[ignore = "helper run as a child process by the SIGKILL tests"]
fn child_process() {
    let Ok(mode) = std::env::var("ENGRAM_CRASH_CHILD") else {
        return;
    };
    let dir = std::env::var("ENGRAM_CRASH_DIR").unwrap();
    let start: u64 = std::env::var("ENGRAM_CRASH_START")
        .unwrap()
        .parse()
        .unwrap();
    let store = open(Path::new(&dir));
    let mut out = std::io::stdout().lock();
    if mode == "compact_once" {
        match store.compact() {
            Ok(_) => writeln!(out, "compacted").unwrap(),
            Err(e) => writeln!(out, "compaction failed: {e}").unwrap(),
        }
        return;
    }
    for i in start.. {
        match mode.as_str() {
            // Every batch rewrites all keys, streamed through `begin_batch` (and with
            // "stream_ahead" applied to the tracker while it is written).
            "stream" | "stream_ahead" => {
                let mut w = store.begin_batch().unwrap();
                if mode == "stream_ahead" {
                    w.apply_while_writing().unwrap();
                }
                for r in 0..STREAM_KEYS {
                    w.put(
                        &format!("file:s/r{r}"),
                        Map::new(),
                        body_for(&format!("b{i}/r{r}"), STREAM_BYTES),
                    )
                    .unwrap();
                }
                if mode == "stream_ahead" {
                    // Vectors whose cache is built beside the batch and swapped in
                    // after the commit: a new embedder's from the batch alone, an
                    // existing one's as a copy.
                    w.expect_vectors(STREAM_KEYS);
                    for r in 0..STREAM_KEYS {
                        w.put_vector(
                            &format!("file:s/r{r}"),
                            &stream_embedder(i),
                            &stream_vector(i, r),
                        )
                        .unwrap();
                    }
                }
                let info = w.finish().unwrap();
                out.write_all(format!("ack {i} {}\n", info.commit_seq).as_bytes())
                    .unwrap();
                out.flush().unwrap();
            }
            // Each batch rewrites a window of keys; then the log is compacted.
            "compact" => {
                let mut b = WriteBatch::new();
                for j in 0..COMPACT_REWRITTEN {
                    let r = (i * COMPACT_REWRITTEN + j) % COMPACT_KEYS;
                    b.put(
                        &format!("file:c/r{r}"),
                        Map::new(),
                        body_for(&format!("b{i}/r{r}"), COMPACT_BYTES),
                    )
                    .unwrap();
                }
                b.event(Map::new(), format!("batch {i}")).unwrap();
                let info = store.commit(&b).unwrap();
                out.write_all(format!("ack {i} {}\n", info.commit_seq).as_bytes())
                    .unwrap();
                out.flush().unwrap();
                store.compact().unwrap();
                out.write_all(format!("compacted {i}\n").as_bytes())
                    .unwrap();
                out.flush().unwrap();
            }
            other => panic!("unknown child mode {other}"),
        }
    }
}

/// Spawn a child in `mode`, kill it after `delay`, and return the batch numbers it
/// acknowledged.
fn run_and_kill(mode: &str, dir: &Path, start: u64, delay: Duration) -> Vec<u64> {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "--nocapture"])
        .arg(rerun::test_name(module_path!(), "child_process"))
        .args(["--test-threads", "1"])
        .env("ENGRAM_CRASH_CHILD", mode)
        .env("ENGRAM_CRASH_DIR", dir)
        .env("ENGRAM_CRASH_START", start.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .filter_map(|l| {
                let at = l.find("ack ")?;
                l[at + 4..].split(' ').next()?.parse::<u64>().ok()
            })
            .collect::<Vec<u64>>()
    });
    std::thread::sleep(delay);
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(
        !status.success(),
        "the child ended on its own instead of being killed"
    );
    reader.join().unwrap()
}

/// xorshift64: the tests' only randomness, seeded so a failure reproduces.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Every key's value names the batch that wrote it; return each key's batch number
/// after checking the value is intact.
fn batch_numbers(store: &Store, prefix: &str, keys: u64, len: usize) -> Vec<Option<u64>> {
    (0..keys)
        .map(|r| {
            let key = format!("{prefix}/r{r}");
            let rec = store.get(&key).unwrap()?;
            let text = String::from_utf8_lossy(&rec.body[..rec.body.len().min(40)]).to_string();
            let b: u64 = text
                .strip_prefix('b')
                .and_then(|t| t.split('/').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{key}: value {text:?} is not one a writer wrote"));
            assert_eq!(
                rec.body,
                body_for(&format!("b{b}/r{r}"), len),
                "{key}: value torn"
            );
            Some(b)
        })
        .collect()
}

#[test]
fn streamed_batches_killed_mid_stream_are_all_or_nothing() {
    killed_mid_stream("stream");
}

/// The same with the tracker applying each batch while it is written, in a transaction
/// that must commit only after the batch is durable.
#[test]
fn streamed_batches_applied_while_written_killed_mid_stream_are_all_or_nothing() {
    killed_mid_stream("stream_ahead");
}

fn killed_mid_stream(mode: &str) {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut next_batch = 0u64;
    let mut last_acked: Option<u64> = None;
    let mut kills_mid_batch = 0;
    for round in 0..10 {
        let delay = Duration::from_millis(80 + rng.next() % 400);
        let acked = run_and_kill(mode, dir.path(), next_batch, delay);
        if let Some(&a) = acked.last() {
            last_acked = Some(a);
        }
        let store = open(dir.path());
        let seen = batch_numbers(&store, "file:s", STREAM_KEYS, STREAM_BYTES);
        match last_acked {
            None => {
                let committed = seen.iter().all(|b| *b == Some(next_batch));
                assert!(
                    committed || seen.iter().all(|b| b.is_none()),
                    "round {round}: a partial first batch is visible: {seen:?}"
                );
                if committed {
                    last_acked = Some(next_batch);
                }
            }
            Some(a) => {
                let b =
                    seen[0].unwrap_or_else(|| panic!("round {round}: acknowledged batch {a} lost"));
                assert!(
                    seen.iter().all(|x| *x == Some(b)),
                    "round {round}: keys from different batches: a batch was applied in part"
                );
                // At most one batch committed whose ack the kill cut off.
                assert!(
                    b == a || b == a + 1,
                    "round {round}: holds batch {b}, last ack {a}"
                );
                if b == a + 1 {
                    last_acked = Some(b);
                }
            }
        }
        if let (Some(b), "stream_ahead") = (last_acked, mode) {
            // The last batch's vectors are found, whichever way its cache was made.
            let hits = store
                .vector_search(&stream_embedder(b), &stream_vector(b, 7), 1)
                .unwrap();
            assert_eq!(
                hits[0].key, "file:s/r7",
                "round {round}: batch {b}'s vectors"
            );
        }
        if store.open_report().truncated_bytes > 0 {
            kills_mid_batch += 1;
        }
        next_batch = last_acked.map_or(next_batch, |a| a + 1);
        // Keep the test's disk use bounded.
        store.compact().unwrap();
        drop(store);
        let report = verify(dir.path()).unwrap();
        assert!(report.is_sound(), "round {round}: {report:?}");
    }
    assert!(last_acked.is_some(), "no batch was ever acknowledged");
    eprintln!("streamed: {kills_mid_batch} of 10 kills left a partial batch to drop");
}

#[test]
fn compaction_killed_at_any_moment_loses_nothing_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    // Fill every key once so compaction has a few megabytes to copy.
    {
        let store = open(dir.path());
        let mut b = WriteBatch::new();
        for r in 0..COMPACT_KEYS {
            b.put(
                &format!("file:c/r{r}"),
                Map::new(),
                body_for(&format!("b0/r{r}"), COMPACT_BYTES),
            )
            .unwrap();
        }
        store.commit(&b).unwrap();
    }
    // What each key must hold: its value from the last acknowledged batch that wrote it
    // (or from the one unacknowledged batch after it that may have committed).
    let mut expected: Vec<u64> = vec![0; COMPACT_KEYS as usize];
    let mut next_batch = 1u64;
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    for round in 0..12 {
        let delay = Duration::from_millis(60 + rng.next() % 500);
        let acked = run_and_kill("compact", dir.path(), next_batch, delay);
        let writes = |i: u64| {
            (0..COMPACT_REWRITTEN)
                .map(move |j| ((i * COMPACT_REWRITTEN + j) % COMPACT_KEYS) as usize)
        };
        for &i in &acked {
            for r in writes(i) {
                expected[r] = i;
            }
        }
        let last = acked.last().copied().unwrap_or(next_batch - 1);
        let store = try_open(dir.path()).unwrap_or_else(|e| {
            panic!("round {round}: a killed compaction left a store that does not open: {e}")
        });
        assert!(
            !dir.path().join("blob.dat.compact").exists(),
            "round {round}: the open left the killed compaction's new log behind"
        );
        let seen = batch_numbers(&store, "file:c", COMPACT_KEYS, COMPACT_BYTES);
        let maybe = last + 1; // committed, killed before its ack was printed
        let took_maybe = writes(maybe).any(|r| seen[r] == Some(maybe));
        if took_maybe {
            for r in writes(maybe) {
                expected[r] = maybe;
            }
        }
        for (r, b) in seen.iter().enumerate() {
            assert_eq!(
                *b,
                Some(expected[r]),
                "round {round}: file:c/r{r} holds the wrong version (last ack {last})"
            );
        }
        assert_eq!(store.live_records().unwrap(), COMPACT_KEYS);
        next_batch = if took_maybe { maybe + 1 } else { maybe };
        drop(store);
        let report = verify(dir.path()).unwrap();
        assert!(report.is_sound(), "round {round}: {report:?}");
    }
}

/// A store of `COMPACT_KEYS` values of `COMPACT_BYTES` (2.4 MB), all live.
fn store_to_compact() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut b = WriteBatch::new();
    for r in 0..COMPACT_KEYS {
        b.put(
            &format!("file:c/r{r}"),
            Map::new(),
            body_for(&format!("b0/r{r}"), COMPACT_BYTES),
        )
        .unwrap();
    }
    store.commit(&b).unwrap();
    dir
}

/// A compaction that fails part way (here: the new log may not grow past 256 KiB,
/// as on a full disk) removes its new log, and the store takes writes afterwards.
#[test]
fn a_compaction_that_runs_out_of_space_removes_its_new_log_and_writes_go_on() {
    let dir = store_to_compact();
    // RLIMIT_FSIZE (in 512-byte blocks for sh) makes a write past 256 KiB fail with
    // EFBIG; SIGXFSZ is ignored so the write fails instead of killing the process.
    let out = Command::new("sh")
        .args(["-c", "trap '' XFSZ; ulimit -f 512; exec \"$0\" \"$@\""])
        .arg(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "--nocapture"])
        .arg(rerun::test_name(module_path!(), "child_process"))
        .args(["--test-threads", "1"])
        .env("ENGRAM_CRASH_CHILD", "compact_once")
        .env("ENGRAM_CRASH_DIR", dir.path())
        .env("ENGRAM_CRASH_START", "0")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("compaction failed") && text.contains("File too large"),
        "the compaction did not fail as the limit should make it: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("blob.dat."))
        .collect();
    assert!(left.is_empty(), "the failed compaction left {left:?}");
    let store = open(dir.path());
    let mut b = WriteBatch::new();
    b.put("file:after", Map::new(), "written after").unwrap();
    store.commit(&b).unwrap();
    store.compact().unwrap();
    assert_eq!(store.live_records().unwrap(), COMPACT_KEYS + 1);
    assert!(batch_numbers(&store, "file:c", COMPACT_KEYS, COMPACT_BYTES)
        .iter()
        .all(|b| *b == Some(0)));
    drop(store);
    assert!(verify(dir.path()).unwrap().is_sound());
}

/// What a crash leaves (a compaction's new log, a cache being rebuilt, a log being
/// created) is removed by the next writable open, and nothing else is; a read-only
/// open removes nothing.
#[test]
fn temporaries_left_by_a_crash_are_removed_at_the_next_writers_open() {
    let dir = store_to_compact();
    let stale = [
        "blob.dat.compact",
        "blob.dat.new",
        "vectors-mini-00.vec.new",
        "vectors-mini-00.vec.ahead",
    ];
    for name in stale {
        std::fs::write(dir.path().join(name), vec![7u8; 300_000]).unwrap();
    }
    std::fs::write(dir.path().join("blob.dat.compact.mine"), "not ours").unwrap();
    let read_only = StoreOptions {
        read_only: true,
        ..StoreOptions::default()
    };
    drop(Store::open(dir.path(), read_only, engram::projections()).unwrap());
    for name in stale {
        assert!(
            dir.path().join(name).exists(),
            "a read-only open removed {name}"
        );
    }
    let store = open(dir.path());
    let mut removed = store.open_report().removed_temporaries.clone();
    removed.sort();
    let mut expected: Vec<String> = stale.iter().map(|s| s.to_string()).collect();
    expected.sort();
    assert_eq!(removed, expected);
    for name in stale {
        assert!(!dir.path().join(name).exists(), "{name} is still there");
    }
    assert!(dir.path().join("blob.dat.compact.mine").exists());
    assert_eq!(store.live_records().unwrap(), COMPACT_KEYS);
    store.compact().unwrap();
}
