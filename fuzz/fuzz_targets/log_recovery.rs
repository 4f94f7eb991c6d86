//! The log side of an open, alone and fast: the scan for committed batches and the
//! decision whether what follows the last commit is a torn tail (which recovery
//! drops) or damage (which it refuses). These are `scan_batches` and `classify_tail`,
//! the functions `Store::open` and `verify` run on the log's bytes; no tracker is made,
//! so this runs thousands of times faster than `open_arbitrary`, which covers the
//! tracker.
//!
//! Inputs are edits of a real log (three batches committed by a real store, made once
//! per process: overwrite, cut and append, insert) or any bytes after a valid header.
//! Checked: the batches found are contiguous and in sequence; resuming the scan at any
//! batch boundary (as a catch-up from the tracker's last commit does) finds the same
//! rest; a torn tail, once zero-filled as recovery drops it, leaves the same batches
//! and a clean log.
#![no_main]
use std::sync::OnceLock;

use engram::format::{FileHeader, FILE_HEADER_LEN};
use engram::store::{
    classify_tail, scan_batches, ScanEnd, ScanStart, Store, StoreOptions, Tail, WriteBatch,
    BLOB_FILE,
};
use libfuzzer_sys::fuzz_target;
use zerocopy::IntoBytes;

/// The log of a store with three committed batches.
fn sound_log() -> &'static [u8] {
    static LOG: OnceLock<Vec<u8>> = OnceLock::new();
    LOG.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), StoreOptions::default(), Vec::new()).expect("open");
        for ops in [
            &[("a", Some("a1")), ("b", Some("b1"))][..],
            &[("c", Some("c1")), ("b", None)],
            &[("a", Some("a2"))],
        ] {
            let mut batch = WriteBatch::new();
            for (k, v) in ops {
                match v {
                    Some(v) => batch.put(k, Default::default(), v.as_bytes()),
                    None => batch.delete(k),
                }
                .expect("batch");
            }
            store.commit(&batch).expect("commit");
        }
        drop(store);
        let log = std::fs::read(dir.path().join(BLOB_FILE)).expect("read");
        // Without the zero-filled space written ahead of the data.
        let data_end = log.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
        log[..data_end.next_multiple_of(8).min(log.len())].to_vec()
    })
}

/// (start, end, commit offset, commit seq, records) of each committed batch.
type Found = Vec<(u64, u64, u64, u64, usize)>;

fn scan(log: &[u8], start: ScanStart) -> (Found, ScanEnd) {
    let mut found = Found::new();
    let end = scan_batches(log, start, |b| {
        assert_eq!(b.records().count(), b.record_count as usize, "record count");
        found.push((b.start, b.end, b.commit_offset, b.commit_seq, b.record_count as usize));
        Ok::<(), ()>(())
    })
    .unwrap_or_else(|()| unreachable!());
    (found, end)
}

const FROM_HEADER: ScanStart = ScanStart {
    offset: FILE_HEADER_LEN as u64,
    last_commit: 0,
    last_seq: 0,
};

fn check(log: &[u8]) {
    if FileHeader::decode(log).is_err() {
        return;
    }
    let (found, end) = scan(log, FROM_HEADER);
    let len = log.len() as u64;
    assert!(end.committed_end >= FILE_HEADER_LEN as u64 && end.committed_end <= len);
    let mut at = FILE_HEADER_LEN as u64;
    let mut seq = 0;
    for &(start, stop, commit, commit_seq, _) in &found {
        assert_eq!(start, at, "batches are contiguous");
        assert!(commit < stop && stop <= end.committed_end);
        assert!(commit_seq > seq, "sequence numbers rise");
        at = stop;
        seq = commit_seq;
    }
    assert_eq!(at, end.committed_end, "the last batch ends where the scan says");
    // A catch-up resumes at a batch boundary and must find the same rest.
    for (i, &(_, stop, commit, commit_seq, _)) in found.iter().enumerate() {
        let from = ScanStart {
            offset: stop,
            last_commit: commit,
            last_seq: commit_seq,
        };
        let (rest, resumed) = scan(log, from);
        assert_eq!(rest[..], found[i + 1..], "resumed after batch {i}");
        assert_eq!(resumed, end, "resumed after batch {i}");
    }
    match classify_tail(log, &end) {
        Tail::Clean => assert!(log[end.committed_end as usize..].iter().all(|&b| b == 0)),
        Tail::Damaged { at, .. } => assert!(at >= end.committed_end),
        Tail::Torn { at, .. } => {
            assert!(at >= end.committed_end);
            // Recovery zero-fills the tail; the log then holds the same batches, clean.
            let mut dropped = log.to_vec();
            dropped[end.committed_end as usize..].fill(0);
            let (again, end_again) = scan(&dropped, FROM_HEADER);
            assert_eq!(again, found, "the batches after dropping the tail");
            assert_eq!(end_again.committed_end, end.committed_end);
            assert_eq!(classify_tail(&dropped, &end_again), Tail::Clean);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&op, rest)) = data.split_first() else {
        return;
    };
    let sound = sound_log();
    let (pos, bytes) = match rest {
        [a, b, tail @ ..] => (usize::from(u16::from_le_bytes([*a, *b])), tail),
        _ => (0, rest),
    };
    let at = if sound.is_empty() { 0 } else { pos % sound.len() };
    let log = match op % 4 {
        0 => {
            let mut log = FileHeader::new(1, [7; 16], 0).as_bytes().to_vec();
            log.extend_from_slice(rest);
            log
        }
        1 => {
            let mut log = sound.to_vec();
            let n = bytes.len().min(log.len() - at);
            log[at..at + n].copy_from_slice(&bytes[..n]);
            log
        }
        2 => {
            let mut log = sound[..at].to_vec();
            log.extend_from_slice(bytes);
            log
        }
        _ => {
            let mut log = sound[..at].to_vec();
            log.extend_from_slice(bytes);
            log.extend_from_slice(&sound[at..]);
            log
        }
    };
    check(&log);
});
