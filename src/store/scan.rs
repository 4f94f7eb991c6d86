//! Finding committed batches in a run of log bytes.
//!
//! This is the one place that decides what "committed" means (format-spec/blob-log.md,
//! "Recovery"): a batch counts only when its commit record is valid and agrees with
//! the records before it. Open, replay, rebuild and verify all use it, so they cannot
//! disagree. It reads bytes only; applying batches is the tracker's business.

use crate::format::{decode_record, BatchCrc, CommitBody, FormatError, RecordKind, RecordView};

/// One committed batch: its records (commit excluded) with their offsets.
pub struct Batch<'a> {
    pub records: Vec<(u64, RecordView<'a>)>,
    pub commit_offset: u64,
    pub commit_seq: u64,
    /// Offset just past the commit record.
    pub end: u64,
}

/// Where scanning stopped and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanEnd {
    /// Offset just past the last valid commit (or the start, if none).
    pub committed_end: u64,
    /// Offset of the last valid commit record, 0 if none was seen.
    pub last_commit: u64,
    /// Sequence number of the last valid commit, or the one passed in.
    pub last_seq: u64,
    /// `None` when the data ended exactly on a commit boundary (at the end of the
    /// bytes or at zero-filled space); otherwise the offset of the first byte not
    /// accepted and why.
    pub stopped: Option<(u64, String)>,
}

impl ScanEnd {
    /// Bytes after the last commit that recovery would drop.
    pub fn uncommitted_bytes(&self, total_len: u64) -> u64 {
        total_len - self.committed_end
    }
}

/// The state scanning resumes from: a commit boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanStart {
    pub offset: u64,
    pub last_commit: u64,
    pub last_seq: u64,
}

/// Scan `log[start.offset..]` (where `log` is the whole file's bytes), calling
/// `on_batch` for each committed batch in order. Stops at the first record that does
/// not decode or does not fit, and reports it.
pub fn scan_batches<'a, E>(
    log: &'a [u8],
    start: ScanStart,
    mut on_batch: impl FnMut(Batch<'a>) -> Result<(), E>,
) -> Result<ScanEnd, E> {
    let mut end = ScanEnd {
        committed_end: start.offset,
        last_commit: start.last_commit,
        last_seq: start.last_seq,
        stopped: None,
    };
    let mut pending: Vec<(u64, RecordView<'a>)> = Vec::new();
    let mut crc = BatchCrc::new();
    let mut prev_seq = start.last_seq;
    let mut off = start.offset;
    loop {
        if off as usize >= log.len() {
            if off != end.committed_end {
                end.stopped = Some((end.committed_end, "batch has no commit record".into()));
            }
            return Ok(end);
        }
        let rec = match decode_record(&log[off as usize..]) {
            Ok(r) => r,
            Err(FormatError::ZeroFill) if off == end.committed_end => return Ok(end),
            Err(e) => {
                end.stopped = Some((off, describe(&e)));
                return Ok(end);
            }
        };
        if rec.seq() <= prev_seq {
            end.stopped = Some((
                off,
                format!("sequence number {} does not follow {}", rec.seq(), prev_seq),
            ));
            return Ok(end);
        }
        if rec.kind == RecordKind::Commit {
            if let Err(why) = check_commit(&rec, &pending, &crc, end.committed_end, end.last_commit)
            {
                end.stopped = Some((off, why));
                return Ok(end);
            }
            let len = rec.record_len() as u64;
            let batch = Batch {
                records: std::mem::take(&mut pending),
                commit_offset: off,
                commit_seq: rec.seq(),
                end: off + len,
            };
            on_batch(batch)?;
            end.committed_end = off + len;
            end.last_commit = off;
            end.last_seq = rec.seq();
            crc = BatchCrc::new();
        } else {
            crc.push(rec.crc());
            pending.push((off, rec));
        }
        prev_seq = rec.seq();
        off += rec.record_len() as u64;
    }
}

fn check_commit(
    rec: &RecordView<'_>,
    pending: &[(u64, RecordView<'_>)],
    crc: &BatchCrc,
    batch_start: u64,
    prev_commit: u64,
) -> Result<(), String> {
    let body = CommitBody::decode(rec.body).map_err(|e| e.to_string())?;
    let first = pending
        .first()
        .ok_or("commit record closes an empty batch")?;
    if body.batch_start.get() != batch_start {
        return Err(format!(
            "commit says its batch starts at {}, but the previous commit ends at {}",
            body.batch_start.get(),
            batch_start
        ));
    }
    if body.prev_commit.get() != prev_commit {
        return Err(format!(
            "commit chain broken: previous commit is at {}, commit names {}",
            prev_commit,
            body.prev_commit.get()
        ));
    }
    if body.record_count.get() as usize != pending.len() {
        return Err(format!(
            "commit counts {} records, {} precede it",
            body.record_count.get(),
            pending.len()
        ));
    }
    if body.first_seq.get() != first.1.seq() {
        return Err("commit's first sequence number does not match its batch".into());
    }
    if body.batch_crc.get() != crc.finish() {
        return Err("commit's batch checksum does not match its records".into());
    }
    Ok(())
}

fn describe(e: &FormatError) -> String {
    match e {
        FormatError::Truncated { .. } => format!("torn record at end of log ({e})"),
        _ => e.to_string(),
    }
}
