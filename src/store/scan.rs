//! Finding committed batches in a run of log bytes.
//!
//! This is the one place that decides what "committed" means (format-spec/blob-log.md,
//! "Recovery"): a batch counts only when its commit record is valid and agrees with
//! the records before it, and [`classify_tail`] is the one place that decides whether
//! what follows the last commit is a torn tail (dropped) or damage (kept, reported).
//! Open, replay, rebuild and verify all use both. It reads bytes only; applying
//! batches is the tracker's business.

use crate::format::{decode_record, BatchCrc, CommitBody, FormatError, RecordKind, RecordView};

/// One committed batch. Its records are decoded on demand from the log, so a batch
/// of any size costs no memory to hold.
pub struct Batch<'a> {
    log: &'a [u8],
    /// Offset of the batch's first record.
    pub start: u64,
    /// Records in the batch, the commit not counted.
    pub record_count: u32,
    pub commit_offset: u64,
    pub commit_seq: u64,
    /// Offset just past the commit record.
    pub end: u64,
}

impl<'a> Batch<'a> {
    /// The batch's records (commit excluded) with their offsets, in log order.
    pub fn records(&self) -> impl Iterator<Item = (u64, RecordView<'a>)> + 'a {
        let log = self.log;
        let end = self.commit_offset;
        let mut off = self.start;
        std::iter::from_fn(move || {
            if off >= end {
                return None;
            }
            // Already checked by the scan that produced the batch.
            let rec = decode_record(&log[off as usize..]).ok()?;
            let at = off;
            off += rec.record_len() as u64;
            Some((at, rec))
        })
    }
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
    // The open batch is tracked by its count, first seq and running CRC only; its
    // records are read again from `log` once its commit checks out.
    let mut pending = Pending::default();
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
                log,
                start: end.committed_end,
                record_count: pending.count,
                commit_offset: off,
                commit_seq: rec.seq(),
                end: off + len,
            };
            on_batch(batch)?;
            end.committed_end = off + len;
            end.last_commit = off;
            end.last_seq = rec.seq();
            crc = BatchCrc::new();
            pending = Pending::default();
        } else {
            crc.push(rec.crc());
            if pending.count == 0 {
                pending.first_seq = rec.seq();
            }
            pending.count += 1;
        }
        prev_seq = rec.seq();
        off += rec.record_len() as u64;
    }
}

#[derive(Default)]
struct Pending {
    count: u32,
    first_seq: u64,
}

fn check_commit(
    rec: &RecordView<'_>,
    pending: &Pending,
    crc: &BatchCrc,
    batch_start: u64,
    prev_commit: u64,
) -> Result<(), String> {
    let body = CommitBody::decode(rec.body).map_err(|e| e.to_string())?;
    if pending.count == 0 {
        return Err("commit record closes an empty batch".into());
    }
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
    if body.record_count.get() != pending.count {
        return Err(format!(
            "commit counts {} records, {} precede it",
            body.record_count.get(),
            pending.count
        ));
    }
    if body.first_seq.get() != pending.first_seq {
        return Err("commit's first sequence number does not match its batch".into());
    }
    if body.batch_crc.get() != crc.finish() {
        return Err("commit's batch checksum does not match its records".into());
    }
    Ok(())
}

/// What lies after the last valid commit, as recovery and `verify` must both see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tail {
    /// Nothing, or only zero-filled space.
    Clean,
    /// Bytes no commit covers: a batch that was never acknowledged (a writer that
    /// died, a torn write, pages a power loss kept or lost). Recovery drops it.
    Torn { at: u64, why: String },
    /// The scan stopped before committed batches: damage in the middle of the log,
    /// which must never be dropped.
    Damaged { at: u64, why: String },
}

/// Classify what follows the committed data of `log` after a scan ended at `end`.
/// The one decision of "torn tail or damage" (format-spec/blob-log.md, "Recovery").
pub fn classify_tail(log: &[u8], end: &ScanEnd) -> Tail {
    let (at, why) = match &end.stopped {
        Some((at, why)) => (*at, why.clone()),
        None => {
            // The data ended on a commit boundary, followed by zero-filled space —
            // unless a power loss tore the next batch so that its first bytes are
            // zeros and later ones are not.
            let rest = &log[(end.committed_end as usize).min(log.len())..];
            match rest.iter().position(|&b| b != 0) {
                None => return Tail::Clean,
                Some(p) => (
                    end.committed_end + p as u64,
                    "bytes of a torn write behind zero-filled space".to_string(),
                ),
            }
        }
    };
    if committed_batches_after(log, at, end.last_commit) {
        Tail::Damaged { at, why }
    } else {
        Tail::Torn { at, why }
    }
}

/// After a scan stopped at `from`: does a whole committed batch lie beyond it?
///
/// A torn last batch has at most its own commit after the stop, and that commit names
/// `last_commit`. So a commit beyond the stop proves committed batches after damage
/// only when it names a predecessor that is itself past the stop, and its own batch
/// verifies where it claims to be: its records decode from `batch_start` on, in
/// sequence, with the count and checksum the commit holds. A record that merely looks
/// like a commit (a copied log, test vectors or a fuzz corpus stored in a body) names
/// a batch that is not there, so it cannot make recovery refuse a torn tail.
fn committed_batches_after(log: &[u8], from: u64, last_commit: u64) -> bool {
    let mut off = from as usize;
    while off + crate::format::RECORD_HEADER_LEN <= log.len() {
        if log[off..].starts_with(&crate::format::record::RECORD_MAGIC) {
            if let Some(body) = commit_at(log, off as u64) {
                let prev = body.prev_commit.get();
                if prev != last_commit
                    && prev >= from
                    && batch_verifies_in_place(log, off as u64, &body)
                {
                    return true;
                }
            }
        }
        off += crate::format::RECORD_ALIGN;
    }
    false
}

pub(crate) fn commit_at(log: &[u8], offset: u64) -> Option<CommitBody> {
    let rec = decode_record(log.get(offset as usize..)?).ok()?;
    if rec.kind != RecordKind::Commit {
        return None;
    }
    CommitBody::decode(rec.body).ok()
}

/// The batch a commit at `commit_offset` describes is exactly where it says.
pub(crate) fn batch_verifies_in_place(log: &[u8], commit_offset: u64, body: &CommitBody) -> bool {
    let start = body.batch_start.get();
    if start >= commit_offset || body.prev_commit.get() >= start {
        return false;
    }
    let Some(first_seq) = body.first_seq.get().checked_sub(1) else {
        return false;
    };
    // The first batch from `start` must be the one this commit closes; the callback
    // stops the scan there either way.
    let found = scan_batches::<bool>(
        log,
        ScanStart {
            offset: start,
            last_commit: body.prev_commit.get(),
            last_seq: first_seq,
        },
        |b| Err(b.commit_offset == commit_offset),
    );
    matches!(found, Err(true))
}

fn describe(e: &FormatError) -> String {
    match e {
        FormatError::Truncated { .. } => format!("torn record at end of log ({e})"),
        _ => e.to_string(),
    }
}
