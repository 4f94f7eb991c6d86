//! `salvage`: copy what still verifies out of a damaged log into a new store.
//!
//! As SQLite's `.recover`: every batch whose records and commit verify is kept; at
//! damage, the scan skips forward to the next commit whose batch verifies where it
//! says it is (format-spec/blob-log.md, "Salvage") and carries on from there. Kept
//! batches are written to the destination through the ordinary commit path, one batch
//! for one batch, so its tracker and caches are built as for any write. What could not
//! be kept is reported by byte range and, where a record is still readable, by key and
//! seq. A damaged file header does not stop it (records carry their own checksums and
//! numbers; the new store has a header of its own), and sealed vectors are carried
//! when the new store is given the key they are sealed under: opened there, sealed
//! again in the new store, which is sealed under the same key. This module reads the
//! damaged store's `blob.dat` only: it never opens the damaged store itself, never
//! takes its lock, never writes a byte of it.

use std::collections::HashMap;
use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value};
use zerocopy::FromBytes;

use super::blob_log::BlobLog;
use super::error::{Result, StoreError};
use super::scan::{batch_verifies_in_place, commit_at, scan_batches, Batch, ScanStart};
use super::seal::{parse_sealed_meta, VectorKey};
use super::{Store, WriteBatch, BLOB_FILE};
use crate::format::record::{RecordHeader, RECORD_MAGIC};
use crate::format::{
    decode_record, RecordKind, RecordView, FILE_HEADER_LEN, FLAG_KEEP_HISTORY, FLAG_SEALED,
    RECORD_ALIGN, RECORD_HEADER_LEN,
};

/// What [`salvage`] kept and lost.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SalvageReport {
    /// Size of the damaged `blob.dat`.
    pub source_bytes: u64,
    /// Committed batches that verified and were written to the new store.
    pub batches_kept: u64,
    /// Batches inside damaged ranges (each commit record still readable there counts
    /// one; a range with none counts one).
    pub batches_lost: u64,
    /// Records of kept batches written to the new store.
    pub records_kept: u64,
    /// Records of kept batches not carried over: sealed vectors the new store has no
    /// key for (see `sealed_vectors_not_carried`), `sealed` events (the new store's
    /// sealing is its own), kinds this version does not know, a put without a key, and
    /// tombstones of keys the new store never had.
    pub records_not_carried: u64,
    /// Sealed vectors of kept batches opened and sealed again in the new store.
    pub sealed_vectors_kept: u64,
    /// Sealed vectors of kept batches not carried: the new store was given no key,
    /// or another key than theirs. Re-embed, or salvage again with their key.
    pub sealed_vectors_not_carried: u64,
    /// When the file header is damaged: why, and that salvage went on without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    /// The damaged byte ranges, in log order.
    pub damaged: Vec<DamagedRange>,
}

impl SalvageReport {
    /// Distinct keys of lost records that could be read, in log order.
    pub fn lost_keys(&self) -> Vec<&str> {
        let mut seen = std::collections::HashSet::new();
        self.damaged
            .iter()
            .flat_map(|d| d.lost.iter())
            .filter_map(|r| r.key.as_deref())
            .filter(|k| seen.insert(*k))
            .collect()
    }
}

/// A stretch of the log that no verifying batch covers.
#[derive(Debug, Clone, Serialize)]
pub struct DamagedRange {
    /// Offset of the first byte lost (the start of the batch the damage is in).
    pub start: u64,
    /// Offset just past the last byte lost: where the next kept batch starts, or the
    /// end of the data.
    pub end: u64,
    /// Why the scan stopped there.
    pub why: String,
    /// The records found in the range, commits excluded.
    pub lost: Vec<LostRecord>,
}

/// A record in a damaged range, as far as it can be read.
#[derive(Debug, Clone, Serialize)]
pub struct LostRecord {
    pub offset: u64,
    pub seq: u64,
    /// `put`, `tombstone`, `vector`, `event`, or `unknown` for a kind byte no version
    /// defines.
    pub kind: &'static str,
    /// From the record's metadata, else by its key hash from a key seen elsewhere in
    /// the log; `None` when neither is readable.
    pub key: Option<String>,
    /// The record's own checksum verifies (it is lost because its batch does not).
    pub checksum_ok: bool,
}

/// Salvage the log of the store in `source_dir` into `into`, a store the caller has
/// opened (normally new and empty, with the projections it will be used with).
/// `source_dir` is only read.
pub fn salvage(source_dir: &Path, into: &Store) -> Result<SalvageReport> {
    let path = source_dir.join(BLOB_FILE);
    if !path.exists() {
        return Err(super::presence::missing_log(source_dir));
    }
    let (blob, damaged_header) = BlobLog::open_for_salvage(&path)?;
    let len = blob.len()?;
    let snap = blob.snapshot(len)?;
    let log = snap.bytes();
    let mut report = SalvageReport {
        source_bytes: len,
        ..SalvageReport::default()
    };
    // Of the header's fields, salvage needs none: records start right after it
    // (its length is fixed), each carries its own checksum, flags, sequence number
    // and key, and the new store gets a header of its own. What must be known is
    // that the file is a log at all: some batch after the header verifies.
    if let Some(why) = damaged_header {
        let Some(first) = next_verifying_batch(log, FILE_HEADER_LEN as u64) else {
            return Err(StoreError::NotAStore {
                path,
                reason: format!(
                    "its file header is damaged ({why}) and no batch after it verifies, so nothing in it can be salvaged (is it an engram log?); nothing was written"
                ),
            });
        };
        report.header = Some(format!(
            "the file header is damaged ({why}); salvage read the records without it, from offset {FILE_HEADER_LEN} (the first batch that verifies starts at {})",
            first.offset
        ));
    }
    // With a key, the new store is sealed under it before anything is carried, so
    // every vector it takes (sealed or not in the old one) is sealed there.
    let key = into
        .vector_key
        .read()
        .map_err(|_| StoreError::Invalid("vector key poisoned by a panic".into()))?
        .clone();
    if let Some(k) = &key {
        if into.sealed_key_id()?.as_deref() != Some(k.id_hex().as_str()) {
            into.seal_vectors(k)?;
        }
    }
    let mut keys: HashMap<u64, String> = HashMap::new();
    let mut start = ScanStart {
        offset: FILE_HEADER_LEN as u64,
        last_commit: 0,
        last_seq: 0,
    };
    loop {
        let end = scan_batches(log, start, |batch| {
            carry(&batch, into, key.as_ref(), &mut keys, &mut report)
        })?;
        let from = end.committed_end;
        let why = match end.stopped {
            Some((_, why)) => why,
            None => match log[(from as usize).min(log.len())..]
                .iter()
                .position(|&b| b != 0)
            {
                None => break,
                Some(_) => "bytes behind zero-filled space".to_string(),
            },
        };
        let next = next_verifying_batch(log, from);
        let to = match next {
            Some(s) => s.offset,
            None => data_end(log, from),
        };
        let (lost, commits) = read_lost(log, from, to);
        report.batches_lost += commits.max(1);
        report.damaged.push(DamagedRange {
            start: from,
            end: to,
            why,
            lost,
        });
        match next {
            Some(s) => start = s,
            None => break,
        }
    }
    // Keys of lost tombstones (and of records whose metadata is damaged) are known
    // only by hash; name them where the log names the key elsewhere.
    for r in report.damaged.iter_mut().flat_map(|d| d.lost.iter_mut()) {
        if r.key.is_none() {
            if let Some(rec) = log.get(r.offset as usize..).and_then(header_at) {
                r.key = keys.get(&rec.key_hash.get()).cloned();
            }
        }
    }
    into.flush()?;
    Ok(report)
}

/// Write one kept batch to `into` as one batch.
fn carry(
    batch: &Batch<'_>,
    into: &Store,
    key: Option<&VectorKey>,
    keys: &mut HashMap<u64, String>,
    report: &mut SalvageReport,
) -> Result<()> {
    let mut out = WriteBatch::new();
    let mut carried = 0u64;
    for (offset, rec) in batch.records() {
        let ok = match rec.kind {
            RecordKind::Put => match meta_with_key(rec.meta) {
                Some((key, meta)) => {
                    keys.insert(rec.key_hash(), key.clone());
                    if rec.header.flags.get() & FLAG_KEEP_HISTORY != 0 {
                        out.put_keeping_history(&key, meta, rec.body)?;
                    } else {
                        out.put(&key, meta, rec.body)?;
                    }
                    true
                }
                None => false,
            },
            RecordKind::Tombstone => match keys.get(&rec.key_hash()) {
                Some(key) => {
                    out.delete(key)?;
                    true
                }
                None => false,
            },
            RecordKind::Vector if rec.header.flags.get() & FLAG_SEALED == 0 => {
                match vector_of(rec.meta, rec.body) {
                    Some((key, embedder, v)) => {
                        keys.insert(rec.key_hash(), key.clone());
                        out.put_vector(&key, &embedder, &v)?;
                        true
                    }
                    None => false,
                }
            }
            RecordKind::Vector => match key.and_then(|k| open_sealed(k, &rec, offset)) {
                Some((key, embedder, v)) => {
                    keys.insert(rec.key_hash(), key.clone());
                    out.put_vector(&key, &embedder, &v)?;
                    report.sealed_vectors_kept += 1;
                    true
                }
                None => {
                    report.sealed_vectors_not_carried += 1;
                    false
                }
            },
            RecordKind::Event => match parse_meta(rec.meta) {
                Some(meta) if meta.get("event").and_then(Value::as_str) == Some("sealed") => false,
                Some(meta) => {
                    out.event(meta, rec.body)?;
                    true
                }
                None => false,
            },
            _ => false,
        };
        if ok {
            carried += 1;
        } else {
            report.records_not_carried += 1;
        }
    }
    if !out.is_empty() {
        into.commit(&out)?;
    }
    report.batches_kept += 1;
    report.records_kept += carried;
    Ok(())
}

/// The first commit at or after `from` whose batch starts at or after `from` and
/// verifies where the commit says it is: where scanning resumes past damage.
fn next_verifying_batch(log: &[u8], from: u64) -> Option<ScanStart> {
    let mut off = from as usize;
    while off + RECORD_HEADER_LEN <= log.len() {
        if log[off..].starts_with(&RECORD_MAGIC) {
            if let Some(body) = commit_at(log, off as u64) {
                let batch_start = body.batch_start.get();
                if batch_start >= from && batch_verifies_in_place(log, off as u64, &body) {
                    return Some(ScanStart {
                        offset: batch_start,
                        last_commit: body.prev_commit.get(),
                        // `batch_verifies_in_place` checked it is at least 1.
                        last_seq: body.first_seq.get().saturating_sub(1),
                    });
                }
            }
        }
        off += RECORD_ALIGN;
    }
    None
}

/// The end of the non-zero data from `from` on, rounded up to a record boundary.
fn data_end(log: &[u8], from: u64) -> u64 {
    let rest = &log[(from as usize).min(log.len())..];
    let last = rest.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
    (from + last as u64)
        .next_multiple_of(RECORD_ALIGN as u64)
        .min(log.len() as u64)
}

/// The records readable in `log[from..to]`, and how many commit records are among
/// them. A record whose checksum fails is still read by its header when its lengths
/// fit the range, so a flipped byte in a body still names the key and seq lost.
fn read_lost(log: &[u8], from: u64, to: u64) -> (Vec<LostRecord>, u64) {
    let mut lost = Vec::new();
    let mut commits = 0;
    let mut off = from as usize;
    let to = (to as usize).min(log.len());
    while off + RECORD_HEADER_LEN <= to {
        let (header, checksum_ok, meta, len) = match decode_record(&log[off..to]) {
            Ok(rec) => (*rec.header, true, rec.meta, rec.record_len()),
            Err(_) => match header_at(&log[off..to]) {
                Some(h) if off + h.record_len() <= to => {
                    let meta_end = off + RECORD_HEADER_LEN + h.meta_len.get() as usize;
                    (
                        *h,
                        false,
                        &log[off + RECORD_HEADER_LEN..meta_end],
                        h.record_len(),
                    )
                }
                _ => {
                    off += RECORD_ALIGN;
                    continue;
                }
            },
        };
        let kind = RecordKind::from_u8(header.kind);
        if kind == Some(RecordKind::Commit) {
            commits += 1;
        } else {
            lost.push(LostRecord {
                offset: off as u64,
                seq: header.seq.get(),
                kind: kind.map_or("unknown", RecordKind::name),
                key: meta_key(meta),
                checksum_ok,
            });
        }
        off += len;
    }
    (lost, commits)
}

/// A record header at the start of `buf`, when its magic is right.
fn header_at(buf: &[u8]) -> Option<&RecordHeader> {
    let (h, _) = RecordHeader::ref_from_prefix(buf).ok()?;
    (h.magic == RECORD_MAGIC).then_some(h)
}

fn parse_meta(meta: &[u8]) -> Option<Map<String, Value>> {
    if meta.is_empty() {
        return Some(Map::new());
    }
    serde_json::from_slice(meta).ok()
}

fn meta_key(meta: &[u8]) -> Option<String> {
    parse_meta(meta)?.get("key")?.as_str().map(str::to_string)
}

/// The key and the rest of a put's metadata (the store adds `"key"` back).
fn meta_with_key(meta: &[u8]) -> Option<(String, Map<String, Value>)> {
    let mut m = parse_meta(meta)?;
    match m.remove("key")? {
        Value::String(k) if !k.is_empty() => Some((k, m)),
        _ => None,
    }
}

/// The key, embedder and values of the sealed vector `rec` at `offset`, when `k` is
/// the key it is sealed under and its values authenticate.
fn open_sealed(
    k: &VectorKey,
    rec: &RecordView<'_>,
    offset: u64,
) -> Option<(String, String, Vec<f32>)> {
    let sealed = parse_sealed_meta(rec).ok()?;
    let key = meta_key(rec.meta)?;
    let values = k.open(rec, offset).ok()?;
    Some((key, sealed.embedder, values))
}

fn vector_of(meta: &[u8], body: &[u8]) -> Option<(String, String, Vec<f32>)> {
    let m = parse_meta(meta)?;
    let key = m.get("key")?.as_str()?.to_string();
    let embedder = m.get("embedder")?.as_str()?.to_string();
    if !body.len().is_multiple_of(4) {
        return None;
    }
    let v = body
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Some((key, embedder, v))
}

#[cfg(test)]
mod tests;
