//! `verify`: check a store without changing a byte of it.
//!
//! Checks, in order: the file header; every record's checksum and layout, resyncing
//! past damage so each bad offset is named; the commit chain; that `tracker.db` is
//! structurally sound (SQLite's `quick_check`) and agrees with the log (live record
//! per key, vectors, bookkeeping, and the projections' tables given to
//! [`verify_with`]: see `verify_projections`); that each vector cache agrees with the
//! tracker. Damage is a problem; an uncommitted tail (left by a crash, dropped by the
//! next open) or a tracker that is merely behind is a warning.

use std::collections::HashMap;
use std::path::Path;

use rusqlite::{Connection, OpenFlags};
use serde::Serialize;

use super::blob_log::BlobLog;
use super::error::{Result, StoreError};
use super::lock::WriterLock;
use super::scan::{classify_tail, scan_batches, ScanStart, Tail};
use super::tracker::{self, record_meta, Projection};
use super::vector_cache::embedder_id;
use super::vectors::{cache_path, embedders};
use super::{BLOB_FILE, LOCK_FILE, TRACKER_FILE};
use crate::format::{
    decode_record, vector_file, FormatError, RecordKind, FILE_HEADER_LEN, RECORD_ALIGN,
};

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

/// Verify the store in `dir` (its log and core tables). Never writes to it.
pub fn verify(dir: &Path) -> Result<VerifyReport> {
    verify_with(dir, &[])
}

/// Verify the store in `dir`, and the tables `projections` list (pass the set the
/// store is opened with). Never writes to it.
pub fn verify_with(dir: &Path, projections: &[&dyn Projection]) -> Result<VerifyReport> {
    let mut report = VerifyReport::default();
    let blob_path = dir.join(BLOB_FILE);
    if !blob_path.exists() {
        return Err(super::presence::missing_log(dir));
    }
    // The tracker is read in one read transaction taken before the log is opened:
    // everything it has applied is then in the log we read, and batches a live writer
    // commits meanwhile are past `applied_end`, left out of the comparison. So verify
    // is sound to run beside a server that is writing.
    let tracker_path = dir.join(TRACKER_FILE);
    let (db, meta) = if tracker_path.exists() {
        match tracker::open_checked(&tracker_path) {
            Ok((db, meta)) => (Some(db), meta),
            Err(why) => {
                // Nothing of a damaged tracker is compared; the log is still checked.
                report.problems.push(Problem {
                    file: TRACKER_FILE,
                    offset: None,
                    what: format!(
                        "{why}; run `engram rebuild`, which rebuilds it from {BLOB_FILE} alone"
                    ),
                });
                (None, None)
            }
        }
    } else {
        (None, None)
    };
    let tracker_damaged = tracker_path.exists() && db.is_none();
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
    let comparable = meta
        .as_ref()
        .is_some_and(|m| m.generation == blob.header().generation.get());
    let compare_to = match &meta {
        Some(m) if comparable => m.applied_end,
        _ => u64::MAX,
    };
    let len = blob.len()?;
    report.blob_bytes = len;
    let snap = blob.snapshot(len)?;
    let bytes = snap.bytes();

    // 1. Every record, resyncing past damage. Beside a live writer, the bytes past the
    // tracker's end change while we read them (a batch streaming in, an abandoned one
    // being zeroed), so this walk covers only what the tracker had applied; what lies
    // beyond is judged once, by the chain scan and the tail decision below.
    let stable_end = (compare_to as usize).min(bytes.len());
    let mut off = FILE_HEADER_LEN;
    let mut damage: Vec<(u64, String)> = Vec::new();
    while off < stable_end {
        match decode_record(&bytes[off..]) {
            Ok(rec) => {
                report.records += 1;
                off += rec.record_len();
            }
            Err(FormatError::ZeroFill) if bytes[off..stable_end].iter().all(|&b| b == 0) => break,
            Err(e) => {
                damage.push((off as u64, e.to_string()));
                off = resync(&bytes[..stable_end], off + RECORD_ALIGN);
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
            let compared = b.end <= compare_to;
            for (offset, rec) in b.records() {
                if !compared {
                    if rec.kind == RecordKind::Put || rec.kind == RecordKind::Vector {
                        if let Err(why) = record_meta(&rec) {
                            report.problems.push(Problem {
                                file: BLOB_FILE,
                                offset: Some(offset),
                                what: why,
                            });
                        }
                    }
                    continue;
                }
                match rec.kind {
                    RecordKind::Put => {
                        live.insert(rec.key_hash(), offset);
                        vecs.retain(|(h, _), _| *h != rec.key_hash());
                    }
                    RecordKind::Tombstone => {
                        live.remove(&rec.key_hash());
                        vecs.retain(|(h, _), _| *h != rec.key_hash());
                    }
                    RecordKind::Vector => match record_meta(&rec).and_then(|m| {
                        if super::seal::is_sealed(&rec) {
                            let sealed = super::seal::parse_sealed_meta(&rec)?;
                            crate::format::sealed::SealedBody::parse(rec.body, sealed.dim)
                                .map_err(|e| e.to_string())?;
                        }
                        Ok(m)
                    }) {
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
                    RecordKind::Event | RecordKind::Commit | RecordKind::Skippable => {}
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
    // acknowledged, and the next open drops it. Whether what stopped the chain is such
    // a tail or damage is decided where recovery decides it, so the two agree.
    let mut tail = classify_tail(bytes, &end);
    if let Tail::Damaged { at, why } = &tail {
        // Past the tracker's end, a writer at work (or one that just finished) can make
        // bytes look like damage for a moment; only a quiet store's damage counts.
        let busy = WriterLock::is_held_elsewhere(&dir.join(LOCK_FILE)).unwrap_or(false);
        if *at >= compare_to && (busy || tracker_moved_on(&tracker_path, meta.as_ref())) {
            report.warnings.push(format!(
                "bytes past offset {compare_to} changed while they were verified (a writer at work; {why} at {at}); run verify again on a quiet store to check them"
            ));
            tail = Tail::Clean;
        }
    }
    match &tail {
        Tail::Clean => {}
        Tail::Torn { at, why } => report.warnings.push(format!(
            "{} uncommitted bytes after the last commit (from offset {}; {why} at {at}); the next writable open drops them",
            len - end.committed_end,
            end.committed_end,
        )),
        Tail::Damaged { at, why } => report.problems.push(Problem {
            file: BLOB_FILE,
            offset: Some(*at),
            what: format!(
                "commit chain stops here: {why}; committed batches after it are unreachable"
            ),
        }),
    }
    let torn_tail = !matches!(tail, Tail::Damaged { .. });
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
    let Some(db) = db else {
        if tracker_damaged {
            return Ok(report);
        }
        report.warnings.push(format!(
            "no {TRACKER_FILE}; the next open (or `engram rebuild`) creates it"
        ));
        return Ok(report);
    };
    let Some(meta) = meta else {
        report.warnings.push(format!(
            "{TRACKER_FILE} is not initialised; the next open builds it"
        ));
        return Ok(report);
    };
    if !comparable {
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
            "{TRACKER_FILE} has applied {} of the log's {} sequence numbers (a writer at work, or one that died: the next open replays the rest); compared up to {}",
            meta.applied_seq, end.last_seq, meta.applied_seq
        ));
    }
    compare_tracker(&db, &live, &vecs, &mut report)?;
    super::verify_projections::check(&db, &meta, bytes, &live, projections, &mut report)?;
    // A cache a live writer is updating can disagree with our snapshot for a moment;
    // only a disagreement while the tracker stands still is a problem.
    let moved_on = || tracker_moved_on(&tracker_path, Some(&meta));
    verify_caches(dir, &db, meta.applied_seq, &moved_on, &mut report)?;
    db.execute_batch("COMMIT")?;
    Ok(report)
}

/// Whether the tracker on disk has applied more than `seen` (a writer committed since).
fn tracker_moved_on(tracker_path: &Path, seen: Option<&tracker::TrackerMeta>) -> bool {
    let Some(seen) = seen else { return false };
    Connection::open_with_flags(tracker_path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .ok()
        .and_then(|fresh| tracker::read_meta(&fresh).ok().flatten())
        .is_some_and(|m| m.applied_seq != seen.applied_seq || m.generation != seen.generation)
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
    // `embedders.count` is kept by hand beside each vectors write (tracker.md): check
    // it against the rows it counts.
    let mut stmt = db.prepare(
        "SELECT e.name, e.count, (SELECT count(*) FROM vectors v WHERE v.embedder = e.name)
         FROM embedders e",
    )?;
    let counts = stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, i64>(1)?,
            r.get::<_, i64>(2)?,
        ))
    })?;
    for row in counts {
        let (name, kept, rows) = row?;
        if kept != rows {
            report.problems.push(Problem {
                file: TRACKER_FILE,
                offset: None,
                what: format!("embedder {name}: count says {kept} vectors, the table has {rows}"),
            });
        }
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

/// Check each cache against the tracker (for `verify`). Reads the files as bytes and
/// checks them with the format layer, never opening them for writing.
fn verify_caches(
    dir: &Path,
    db: &Connection,
    applied: u64,
    moved_on: &dyn Fn() -> bool,
    report: &mut VerifyReport,
) -> Result<()> {
    for (embedder, dim) in embedders(db)? {
        let path = cache_path(dir, &embedder);
        let problem = |what: String| Problem {
            file: "vector cache",
            offset: None,
            what: format!("{}: {what}", path.display()),
        };
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                report.warnings.push(format!(
                    "no vector cache for {embedder}; it is rebuilt on first search"
                ));
                continue;
            }
            Err(e) => return Err(StoreError::io("read", &path)(e)),
        };
        let (header, layout) = match vector_file::check_file_bytes(&bytes) {
            Ok(v) => v,
            Err(e) => {
                report.problems.push(problem(format!(
                    "{e}; delete it, it is rebuilt from the log"
                )));
                continue;
            }
        };
        if header.embedder_id.get() != embedder_id(&embedder) || header.dim.get() != dim {
            report.problems.push(problem(format!(
                "is not {embedder}'s cache of dimension {dim}"
            )));
            continue;
        }
        if header.seq.get() != applied {
            report.warnings.push(format!(
                "vector cache for {embedder} is stale; it is rebuilt on first search"
            ));
            continue;
        }
        let mut cached = std::collections::HashSet::new();
        for slot in 0..header.count.get() {
            let live = bytes[(layout.live + slot) as usize];
            if live == vector_file::SLOT_LIVE {
                let at = (layout.key_hashes + slot * 8) as usize;
                let mut h = [0u8; 8];
                h.copy_from_slice(&bytes[at..at + 8]);
                cached.insert(u64::from_le_bytes(h));
            }
        }
        // A cache holds the embedder's vectors of its latest dimension only: ones of
        // another dimension under the same name are not searchable beside them.
        let mut stmt =
            db.prepare("SELECT key_hash FROM vectors WHERE embedder = ?1 AND dim = ?2")?;
        let rows = stmt.query_map(rusqlite::params![&embedder, dim], |r| r.get::<_, i64>(0))?;
        let mut tracked = std::collections::HashSet::new();
        for row in rows {
            tracked.insert(row? as u64);
        }
        if cached != tracked && moved_on() {
            report.warnings.push(format!(
                "vector cache for {embedder} changed while it was verified (a writer at work); not compared"
            ));
        } else if cached != tracked {
            report.problems.push(problem(format!(
                "holds {} live rows, the tracker {}; {} differ",
                cached.len(),
                tracked.len(),
                cached.symmetric_difference(&tracked).count()
            )));
        }
    }
    Ok(())
}
