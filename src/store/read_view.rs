//! Reading many records by offset, checked.
//!
//! Offsets come from the tracker; the bytes from the log the tracker describes. After
//! another process compacts, the tracker names a new log generation while this
//! process may still map the old file: an offset read from one and looked up in the
//! other would return some other record. [`Store::read_with`] therefore runs the
//! tracker query and reads the bookkeeping in one read transaction, pairs them with
//! the log of the same generation (re-mapping it, or running the query again when the
//! log moved on meanwhile), and [`ReadView::record`] checks each record's key.

use rusqlite::Connection;
use serde_json::{Map, Value};

use super::blob_log::LogSnapshot;
use super::error::{Result, StoreError};
use super::tracker::{self, record_meta};
use super::Store;
use crate::format::{RecordKind, RecordView};
use crate::key::hash64;

/// The log as the tracker described it when a query ran; see the module doc.
pub struct ReadView {
    snap: LogSnapshot,
}

impl ReadView {
    /// The record at `offset`, which must be a put, vector or tombstone of `key`.
    pub fn record(&self, offset: u64, key: &str) -> Result<RecordView<'_>> {
        let rec = self.snap.record_at(offset)?;
        let wrong = |reason: String| StoreError::Corrupt {
            path: "blob.dat".into(),
            offset,
            reason,
        };
        if rec.key_hash() != hash64(key) {
            return Err(wrong(format!(
                "the tracker says a record of {key:?} is here, the log holds another key; run `engram rebuild`"
            )));
        }
        if matches!(rec.kind, RecordKind::Put | RecordKind::Vector) {
            let (_, found) = record_meta(&rec).map_err(wrong)?;
            if found != key {
                return Err(StoreError::KeyHashCollision {
                    new: key.to_string(),
                    existing: found,
                });
            }
        }
        Ok(rec)
    }

    /// The record at `offset`, checked as [`ReadView::record`] checks it, with its
    /// metadata as a JSON object (empty when the record has none).
    pub fn record_with_meta(
        &self,
        offset: u64,
        key: &str,
    ) -> Result<(RecordView<'_>, Map<String, Value>)> {
        let rec = self.record(offset, key)?;
        let meta = meta_object(offset, &rec)?;
        Ok((rec, meta))
    }

    /// Every record in log order, up to what the tracker had applied (for scans that
    /// read everything: audit events, statistics).
    pub fn snapshot(&self) -> &LogSnapshot {
        &self.snap
    }
}

/// A record's metadata as a JSON object (empty when it has none), or
/// [`StoreError::Corrupt`] naming the record's offset.
pub fn meta_object(offset: u64, rec: &RecordView<'_>) -> Result<Map<String, Value>> {
    if rec.meta.is_empty() {
        return Ok(Map::new());
    }
    serde_json::from_slice(rec.meta).map_err(|e| StoreError::Corrupt {
        path: "blob.dat".into(),
        offset,
        reason: format!("metadata is not a JSON object: {e}"),
    })
}

impl Store {
    /// Run `query` on the tracker and return its answer with the log it refers to.
    pub fn read_with<T>(
        &self,
        mut query: impl FnMut(&Connection) -> Result<T>,
    ) -> Result<(T, ReadView)> {
        for _ in 0..3 {
            let (answer, meta) = {
                let db = self.db()?;
                db.execute_batch("BEGIN")?;
                let run = (|| {
                    let meta = tracker::read_meta(&db)?.ok_or_else(|| {
                        StoreError::Invalid("tracker.db is not initialised".into())
                    })?;
                    Ok::<_, StoreError>((query(&db)?, meta))
                })();
                db.execute_batch("COMMIT")?;
                run?
            };
            let mut blob = self.blob()?;
            if blob.header().generation.get() != meta.generation {
                self.reload_blob()?;
                blob = self.blob()?;
            }
            if blob.header().generation.get() == meta.generation {
                let snap = blob.snapshot(meta.applied_end)?;
                return Ok((answer, ReadView { snap }));
            }
            // The log was compacted again between the query and the reload: the
            // offsets belong to neither file. Ask again.
        }
        Err(StoreError::Invalid(
            "the log was compacted three times during one read; retry".into(),
        ))
    }
}
