//! Concurrency beyond `multiprocess.rs`: compaction running while other processes
//! write and read, and several `Store` handles in one process (streamed batches,
//! plain commits, compaction and reads at once) — every acknowledged batch must be
//! visible at once through every handle, exactly once, intact.
//!
//! The compactor process is this test binary re-run with `--ignored --exact
//! compactor_process` (mode in `ENGRAM_CONC_DIR`); writers and the reader are
//! `engram-writer`.

use std::collections::HashSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use engram::store::{verify, Store, StoreOptions, WriteBatch};
use serde_json::Map;

use crate::support::rerun;

fn open(dir: &Path) -> Store {
    Store::open(dir, StoreOptions::default(), engram::projections()).unwrap()
}

/// engram-writer's bodies: the key and `|` repeated to the value's length.
fn body_for(key: &str, len: usize) -> Vec<u8> {
    key.bytes()
        .chain(std::iter::once(b'|'))
        .cycle()
        .take(len)
        .collect()
}

/// Run by the child process only: compact the store `ENGRAM_CONC_COMPACTIONS` times,
/// printing one line per compaction.
#[test]
#[ignore = "helper run as a child process by the multi-process tests"]
fn compactor_process() {
    let Ok(dir) = std::env::var("ENGRAM_CONC_DIR") else {
        return;
    };
    let n: u64 = std::env::var("ENGRAM_CONC_COMPACTIONS")
        .unwrap()
        .parse()
        .unwrap();
    let store = open(Path::new(&dir));
    for i in 0..n {
        let r = store.compact().unwrap();
        println!("compacted {i} generation {}", r.generation);
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn writer_processes_a_reader_and_a_compactor_at_once_lose_and_duplicate_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store_arg = dir.path().to_str().unwrap().to_string();
    let (writers, batches, size, value) = (2u64, 50u64, 5u64, 300usize);
    // Create the store first so every process opens an existing one.
    drop(open(dir.path()));
    let reader = Command::new(env!("CARGO_BIN_EXE_engram-writer"))
        .args(["--store", &store_arg, "--read", "3"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let compactor = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "--nocapture"])
        .arg(rerun::test_name(module_path!(), "compactor_process"))
        .env("ENGRAM_CONC_DIR", dir.path())
        .env("ENGRAM_CONC_COMPACTIONS", "8")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let children: Vec<_> = (0..writers)
        .map(|id| {
            Command::new(env!("CARGO_BIN_EXE_engram-writer"))
                .args(["--store", &store_arg, "--id", &id.to_string()])
                .args(["--batches", &batches.to_string()])
                .args(["--batch-size", &size.to_string()])
                .args(["--value-bytes", &value.to_string()])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
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
        assert_eq!(text.lines().count() as u64, batches, "{text}");
        for line in text.lines() {
            let seq: u64 = line.rsplit(' ').next().unwrap().parse().unwrap();
            assert!(
                commit_seqs.insert(seq),
                "commit sequence {seq} acknowledged twice"
            );
        }
    }
    let out = compactor.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the compactor failed: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(text.matches("compacted ").count(), 8, "{text}");
    let out = reader.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the reader saw a corrupt value or failed: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reads: u64 = text
        .trim()
        .strip_prefix("reads ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("reader printed {text:?}"));
    assert!(reads > 0, "the reader never read a value");

    let store = open(dir.path());
    assert_eq!(store.live_records().unwrap(), writers * batches * size);
    for id in 0..writers {
        for b in 0..batches {
            for r in 0..size {
                let key = format!("file:w{id}/b{b}/r{r}");
                let rec = store
                    .get(&key)
                    .unwrap()
                    .unwrap_or_else(|| panic!("{key} lost"));
                assert_eq!(rec.body, body_for(&key, value), "{key}");
            }
        }
    }
    // Compaction renumbers nothing: the tracker's last sequence number counts every
    // record and commit the writers wrote, plus the "compacted" event and its commit
    // that each of the 8 compactions appends.
    let written = writers * batches * (size + 1) + 8 * 2;
    assert_eq!(store.meta().unwrap().applied_seq, written);
    assert!(commit_seqs.iter().all(|&s| s <= written));
    drop(store);
    let report = verify(dir.path()).unwrap();
    assert!(report.is_sound(), "{report:?}");
}

#[test]
fn several_handles_in_one_process_stream_commit_compact_and_read_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let a = Arc::new(open(dir.path()));
    let b = Arc::new(open(dir.path()));
    const BATCHES: u64 = 30;
    const SIZE: u64 = 20;
    // Per writer: how many of its batches have been acknowledged.
    let acked: Arc<Vec<AtomicU64>> = Arc::new((0..3).map(|_| AtomicU64::new(0)).collect());
    let done = Arc::new(AtomicBool::new(false));

    let key = |w: u64, i: u64, r: u64| format!("file:t{w}/b{i}/r{r}");
    let mut writers = Vec::new();
    for w in 0..3u64 {
        // Writer 0 streams through handle A, writer 1 commits through A, writer 2
        // commits through handle B.
        let store = Arc::clone(if w == 2 { &b } else { &a });
        let acked = Arc::clone(&acked);
        writers.push(std::thread::spawn(move || {
            for i in 0..BATCHES {
                if w == 0 {
                    let mut bw = store.begin_batch().unwrap();
                    for r in 0..SIZE {
                        let k = key(w, i, r);
                        bw.put(&k, Map::new(), body_for(&k, 200)).unwrap();
                    }
                    bw.finish().unwrap();
                } else {
                    let mut batch = WriteBatch::new();
                    for r in 0..SIZE {
                        let k = key(w, i, r);
                        batch.put(&k, Map::new(), body_for(&k, 200)).unwrap();
                    }
                    store.commit(&batch).unwrap();
                }
                acked[w as usize].store(i + 1, Ordering::SeqCst);
            }
        }));
    }
    let compactor = {
        let b = Arc::clone(&b);
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut n = 0;
            while !done.load(Ordering::SeqCst) || n == 0 {
                b.compact().unwrap();
                n += 1;
            }
            n
        })
    };
    // Readers on both handles: anything acknowledged is visible at once, intact.
    let readers: Vec<_> = [Arc::clone(&a), Arc::clone(&b)]
        .into_iter()
        .map(|store| {
            let acked = Arc::clone(&acked);
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                let mut x = 0x2545_f491_4f6c_dd1du64;
                let mut reads = 0u64;
                while !done.load(Ordering::SeqCst) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let w = x % 3;
                    let n = acked[w as usize].load(Ordering::SeqCst);
                    if n == 0 {
                        continue;
                    }
                    let k = key(w, (x >> 8) % n, (x >> 32) % SIZE);
                    let rec = store.get(&k).unwrap();
                    let rec = rec.unwrap_or_else(|| panic!("acknowledged {k} not visible"));
                    assert_eq!(rec.body, body_for(&k, 200), "{k}");
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    done.store(true, Ordering::SeqCst);
    let compactions = compactor.join().unwrap();
    for r in readers {
        assert!(r.join().unwrap() > 0, "a reader read nothing");
    }
    assert!(compactions > 0);
    for store in [&a, &b] {
        assert_eq!(store.live_records().unwrap(), 3 * BATCHES * SIZE);
        // Each compaction appends one event record and its commit.
        assert_eq!(
            store.meta().unwrap().applied_seq,
            3 * BATCHES * (SIZE + 1) + 2 * compactions
        );
        for w in 0..3 {
            for i in 0..BATCHES {
                let k = key(w, i, i % SIZE);
                assert_eq!(store.get(&k).unwrap().unwrap().body, body_for(&k, 200));
            }
        }
    }
    drop(a);
    drop(b);
    let report = verify(dir.path()).unwrap();
    assert!(report.is_sound(), "{report:?}");
}
