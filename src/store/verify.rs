//! `verify`: check a store without changing a byte of it.
//!
//! Checks, in order: the file header; every record's checksum and layout, resyncing
//! past damage so each bad offset is named; the commit chain; that `tracker.db` agrees
//! with the log (live record per key, vectors, bookkeeping); that each vector cache
//! agrees with the tracker. Damage is a problem; an uncommitted tail (left by a crash,
//! dropped by the next open) or a tracker that is merely behind is a warning.

use std::collections::HashMap;
use std::path::Path;

use rusqlite::{Connection, OpenFlags};
use serde::Serialize;

use super::blob_log::BlobLog;
use super::error::{Result, StoreError};
use super::scan::{scan_batches, ScanStart};
use super::tracker::{self, record_meta};
use super::{vectors, BLOB_FILE, TRACKER_FILE};
use crate::format::{decode_record, FormatError, RecordKind, FILE_HEADER_LEN, RECORD_ALIGN};

/// One thing wrong, at an offset of `blob.dat` when it has one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub file: &'static str,
    pub offset: Option<u64>,
    pub what: String,
}

/// What `verify` found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct VerifyReport {
    pub problems: Vec<Problem>,
    pub warnings: Vec<String>,
    pub blob_bytes: u64,
    pub records: u64,
    pub batches: u64,
    pub live_keys: u64,
}

impl VerifyReport {
    /// True when nothing is damaged or inconsistent.
    pub fn is_sound(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Verify the store in `dir`. Never writes to it.
pub fn verify(dir: &Path) -> Result<VerifyReport> {
    let mut report = VerifyReport::default();
    let blob_path = dir.join(BLOB_FILE);
    if !blob_path.exists() {
        return Err(StoreError::NotAStore {
            path: dir.into(),
            reason: format!("it has no {BLOB_FILE}"),
        });
    }
    let blob = match BlobLog::open(&blob_path) {
        Ok(b) => b,
        Err(StoreError::Format { source, .. }) => {
            report.problems.push(Problem {
                file: BLOB_FILE,
                offset: Some(0),
                what: source.to_string(),
            });
            return Ok(report);
        }
        Err(e) => return Err(e),
    };
    let len = blob.len()?;
    report.blob_bytes = len;
    let snap = blob.snapshot(len)?;
    let bytes = snap.bytes();

    // 1. Every record, resyncing past damage.
    let mut off = FILE_HEADER_LEN;
    let mut damage: Vec<(u64, String)> = Vec::new();
    let mut commits: Vec<u64> = Vec::new();
    while off < bytes.len() {
        match decode_record(&bytes[off..]) {
            Ok(rec) => {
                report.records += 1;
                if rec.kind == RecordKind::Commit {
                    commits.push(off as u64);
                }
                off += rec.record_len();
            }
            Err(FormatError::ZeroFill) if bytes[off..].iter().all(|&b| b == 0) => break,
            Err(e) => {
                damage.push((off as u64, e.to_string()));
                off = resync(bytes, off + RECORD_ALIGN);
            }
        }
    }

    // 2. The commit chain.
    let mut live: HashMap<u64, u64> = HashMap::new();
    let mut vecs: HashMap<(u64, String), u64> = HashMap::new();
    let end = scan_batches(
        bytes,
        ScanStart {
            offset: FILE_HEADER_LEN as u64,
            last_commit: 0,
            last_seq: 0,
        },
        |b| -> Result<()> {
            report.batches += 1;
            for (offset, rec) in b.records() {
                match rec.kind {
                    RecordKind::Put => {
                        live.insert(rec.key_hash(), offset);
                        vecs.retain(|(h, _), _| *h != rec.key_hash());
                    }
                    RecordKind::Tombstone => {
                        live.remove(&rec.key_hash());
                        vecs.retain(|(h, _), _| *h != rec.key_hash());
                    }
                    RecordKind::Vector => match record_meta(&rec) {
                        Ok((meta, _)) => {
                            let emb = meta
                                .get("embedder")
                                .and_then(|v| v.as_str())
                                .unwrap_or("")
                                .to_string();
                            vecs.insert((rec.key_hash(), emb), offset);
                        }
                        Err(why) => report.problems.push(Problem {
                            file: BLOB_FILE,
                            offset: Some(offset),
                            what: why,
                        }),
                    },
                    RecordKind::Event | RecordKind::Commit | RecordKind::Ignorable => {}
                }
                if rec.kind == RecordKind::Put {
                    if let Err(why) = record_meta(&rec) {
                        report.problems.push(Problem {
                            file: BLOB_FILE,
                            offset: Some(offset),
                            what: why,
                        });
                    }
                }
            }
            Ok(())
        },
    )?;
    report.live_keys = live.len() as u64;
    // The log's data, without the zero-filled space written ahead of it.
    report.blob_bytes = end
        .committed_end
        .max(end.stopped.as_ref().map_or(0, |_| len));
    // After the last valid commit, a crash can leave records without a commit, a
    // record cut short, or pages that never reached the disk. None of that was ever
    // acknowledged, and the next open drops it. Only a valid commit past that point
    // means committed batches have become unreachable: damage.
    let torn_tail = !commits.iter().any(|&c| c >= end.committed_end);
    if let Some((at, why)) = &end.stopped {
        if torn_tail {
            report.warnings.push(format!(
                "{} uncommitted bytes after the last commit (from offset {}; {why} at {at}); the next open drops them",
                len - end.committed_end,
                end.committed_end,
            ));
        } else {
            report.problems.push(Problem {
                file: BLOB_FILE,
                offset: Some(*at),
                what: format!(
                    "commit chain stops here: {why}; committed batches after it are unreachable"
                ),
            });
        }
    }
    for (offset, why) in damage {
        if !(torn_tail && offset >= end.committed_end) {
            report.problems.push(Problem {
                file: BLOB_FILE,
                offset: Some(offset),
                what: why,
            });
        }
    }

    // 3. The tracker against the log.
    let tracker_path = dir.join(TRACKER_FILE);
    if !tracker_path.exists() {
        report.warnings.push(format!(
            "no {TRACKER_FILE}; the next open (or `engram rebuild`) creates it"
        ));
        return Ok(report);
    }
    let db = Connection::open_with_flags(&tracker_path, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let Some(meta) = tracker::read_meta(&db)? else {
        report.warnings.push(format!(
            "{TRACKER_FILE} is not initialised; the next open builds it"
        ));
        return Ok(report);
    };
    if meta.generation != blob.header().generation.get() {
        report.warnings.push(format!(
            "{TRACKER_FILE} is of another log generation; the next open rebuilds it"
        ));
        return Ok(report);
    }
    if meta.applied_seq > end.last_seq || meta.applied_end > end.committed_end {
        report.problems.push(Problem {
            file: TRACKER_FILE,
            offset: None,
            what: format!(
                "tracker has applied up to sequence {} but the log's last commit is {}; run `engram rebuild`",
                meta.applied_seq, end.last_seq
            ),
        });
        return Ok(report);
    }
    if meta.applied_seq < end.last_seq {
        report.warnings.push(format!(
            "{TRACKER_FILE} is behind the log (applied {} of {}); the next open replays the rest",
            meta.applied_seq, end.last_seq
        ));
        return Ok(report);
    }
    compare_tracker(&db, &live, &vecs, &mut report)?;
    vectors::verify_caches(dir, &db, &mut report)?;
    Ok(report)
}

fn compare_tracker(
    db: &Connection,
    live: &HashMap<u64, u64>,
    vecs: &HashMap<(u64, String), u64>,
    report: &mut VerifyReport,
) -> Result<()> {
    let mut seen = 0usize;
    for (h, key, offset) in hash_name_offset(db, "SELECT key_hash, key, offset FROM records")? {
        match live.get(&h) {
            Some(&o) if o == offset => seen += 1,
            Some(&o) => report.problems.push(Problem {
                file: TRACKER_FILE,
                offset: Some(offset),
                what: format!(
                    "{key}: tracker points at offset {offset}, the log's live record is at {o}"
                ),
            }),
            None => report.problems.push(Problem {
                file: TRACKER_FILE,
                offset: Some(offset),
                what: format!("{key}: tracker holds a key the log has deleted or never had"),
            }),
        }
    }
    if seen < live.len() {
        report.problems.push(Problem {
            file: TRACKER_FILE,
            offset: None,
            what: format!(
                "{} live keys of the log are missing from the tracker",
                live.len() - seen
            ),
        });
    }
    let count: i64 = db.query_row("SELECT count(*) FROM vectors", [], |r| r.get(0))?;
    let mut agree = 0usize;
    for (h, emb, offset) in hash_name_offset(db, "SELECT key_hash, embedder, offset FROM vectors")?
    {
        if vecs.get(&(h, emb)) == Some(&offset) {
            agree += 1;
        }
    }
    if agree != vecs.len() || count as usize != vecs.len() {
        report.problems.push(Problem {
            file: TRACKER_FILE,
            offset: None,
            what: format!(
                "vectors table has {count} rows, {agree} of which match the log's {} live vectors",
                vecs.len()
            ),
        });
    }
    Ok(())
}

/// Rows of (hash, text, offset) from a tracker query.
fn hash_name_offset(db: &Connection, sql: &str) -> Result<Vec<(u64, String, u64)>> {
    let mut stmt = db.prepare(sql)?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, i64>(0)? as u64,
            r.get::<_, String>(1)?,
            r.get::<_, i64>(2)? as u64,
        ))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Next offset at or after `from` where a whole record decodes.
fn resync(bytes: &[u8], from: usize) -> usize {
    let mut off = from;
    while off < bytes.len() {
        if bytes[off..].starts_with(b"EREC") && decode_record(&bytes[off..]).is_ok() {
            return off;
        }
        off += RECORD_ALIGN;
    }
    bytes.len()
}
