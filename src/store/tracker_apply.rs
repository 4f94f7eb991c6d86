//! Applying committed batches to `tracker.db`: the core tables (`records`, `vectors`,
//! `embedders`) and each projection, record by record in log order, inside the
//! batch's transaction. It only reads the batch it is given; it must never write
//! anything the batch does not say (see [`super::tracker`] and `format-spec/tracker.md`).

use rusqlite::{params, Connection, OptionalExtension, Transaction};
use serde_json::{Map, Value};

use super::error::{Result, StoreError};
use super::scan::Batch;
use super::tracker::{record_meta, Change, Projection, TrackerMeta};
use crate::format::{RecordKind, RecordView};

/// Apply one committed batch inside `tx` and advance the bookkeeping.
pub fn apply_batch(
    tx: &Transaction<'_>,
    batch: &Batch<'_>,
    projections: &[&dyn Projection],
    meta: &mut TrackerMeta,
) -> Result<()> {
    let mut applier = RecordApplier::default();
    for (offset, rec) in batch.records() {
        applier.apply(tx, offset, &rec, projections)?;
    }
    applier.finish(tx)?;
    note_applied(batch, meta);
    Ok(())
}

/// Advance the bookkeeping past `batch`, whose records are applied.
pub fn note_applied(batch: &Batch<'_>, meta: &mut TrackerMeta) {
    meta.applied_seq = batch.commit_seq;
    meta.applied_end = batch.end;
    meta.last_commit = batch.commit_offset;
}

/// Applies one batch's records one at a time, as [`apply_batch`] does, for a writer
/// that applies them while the batch is still being written (before its commit
/// record exists); see `super::writer`. Everything it does must stay inside one
/// transaction that commits only once the batch is committed and durable.
#[derive(Default)]
pub struct RecordApplier {
    counts: EmbedderCounts,
}

impl RecordApplier {
    /// Apply the record at `offset` (not a commit record).
    pub fn apply(
        &mut self,
        db: &Connection,
        offset: u64,
        rec: &RecordView<'_>,
        projections: &[&dyn Projection],
    ) -> Result<()> {
        apply_record(db, offset, rec, projections, &mut self.counts)
    }

    /// Write what is summed over the batch (the embedders' counts): after its last
    /// record, before the transaction commits.
    pub fn finish(self, db: &Connection) -> Result<()> {
        self.counts.write(db)
    }
}

/// The `embedders` changes of one batch, written once at its end: two statements per
/// vector record (the dimension upsert and the count) were a sixth of the statements
/// an imported memory cost. Nothing reads `embedders` while a batch is applied, and
/// the rows are written before the batch's transaction commits, so `count` is still
/// exact after every transaction.
#[derive(Default)]
struct EmbedderCounts {
    /// (embedder, its latest dimension in this batch if it wrote a vector, how many
    /// `vectors` rows it gained less those it lost), in order of first appearance.
    /// A batch names one or two embedders, so a list beats a map.
    by_name: Vec<(String, Option<i64>, i64)>,
}

impl EmbedderCounts {
    fn entry(&mut self, name: &str) -> &mut (String, Option<i64>, i64) {
        let i = match self.by_name.iter().position(|(n, ..)| n == name) {
            Some(i) => i,
            None => {
                self.by_name.push((name.to_string(), None, 0));
                self.by_name.len() - 1
            }
        };
        &mut self.by_name[i]
    }

    fn write(self, tx: &Connection) -> Result<()> {
        for (name, dim, delta) in self.by_name {
            // The row exists before its count moves: a vector upserts it, and a
            // deleted row's embedder has had one since its vector was applied.
            if let Some(dim) = dim {
                tx.prepare_cached("INSERT INTO embedders (name, dim) VALUES (?1, ?2) ON CONFLICT (name) DO UPDATE SET dim = excluded.dim")?
                    .execute(params![name, dim])?;
            }
            if delta != 0 {
                tx.prepare_cached("UPDATE embedders SET count = count + ?2 WHERE name = ?1")?
                    .execute(params![name, delta])?;
            }
        }
        Ok(())
    }
}

/// Delete the key's `vectors` rows (those older than `before_seq` when given) and
/// take them off their embedders' counts. Most puts are of keys with no vector yet,
/// so the lookup usually ends it.
fn delete_vectors(
    tx: &Connection,
    key_hash: u64,
    before_seq: Option<u64>,
    counts: &mut EmbedderCounts,
) -> Result<()> {
    let h = key_hash as i64;
    let bound = before_seq.map_or(i64::MAX, |s| s as i64);
    let gone: Vec<String> = tx
        .prepare_cached("SELECT embedder FROM vectors WHERE key_hash = ?1 AND seq < ?2")?
        .query_map(params![h, bound], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    if gone.is_empty() {
        return Ok(());
    }
    tx.prepare_cached("DELETE FROM vectors WHERE key_hash = ?1 AND seq < ?2")?
        .execute(params![h, bound])?;
    for embedder in &gone {
        counts.entry(embedder).2 -= 1;
    }
    Ok(())
}

fn apply_record(
    tx: &Connection,
    offset: u64,
    rec: &RecordView<'_>,
    projections: &[&dyn Projection],
    counts: &mut EmbedderCounts,
) -> Result<()> {
    let corrupt = |reason: String| StoreError::Corrupt {
        path: "blob.dat".into(),
        offset,
        reason,
    };
    let key_hash = rec.key_hash();
    match rec.kind {
        RecordKind::Put => {
            let (meta, key) = record_meta(rec).map_err(corrupt)?;
            let values = params![
                key_hash as i64,
                key,
                offset as i64,
                rec.record_len() as i64,
                rec.seq() as i64,
                rec.timestamp_ms() as i64
            ];
            // Inserted, or else the key was live: then its row is read (the sequence
            // number it had is how projections find what they derived from it, and a
            // different key under the hash is a collision) and updated.
            let replaces = tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO records (key_hash, key, offset, length, seq, timestamp_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )?
                .execute(values)?
                == 0;
            let previous_seq = if replaces {
                let (was, existing): (i64, String) = tx
                    .prepare_cached("SELECT seq, key FROM records WHERE key_hash = ?1")?
                    .query_row([key_hash as i64], |r| Ok((r.get(0)?, r.get(1)?)))?;
                if existing != key {
                    return Err(StoreError::KeyHashCollision { new: key, existing });
                }
                tx.prepare_cached(
                    "UPDATE records SET offset = ?3, length = ?4, seq = ?5, timestamp_ms = ?6
                     WHERE key_hash = ?1",
                )?
                .execute(values)?;
                Some(was as u64)
            } else {
                None
            };
            // A new value makes embeddings of the old one stale.
            delete_vectors(tx, key_hash, Some(rec.seq()), counts)?;
            let change = Change::Put {
                key: &key,
                key_hash,
                seq: rec.seq(),
                timestamp_ms: rec.timestamp_ms(),
                offset,
                meta: &meta,
                body: rec.body,
                replaces,
                previous_seq,
            };
            for p in projections {
                p.apply(tx, &change)?;
            }
        }
        RecordKind::Tombstone => {
            // Read, then deleted: `DELETE … RETURNING` runs as a trigger, and a
            // trigger's statement journal flushes the full-text tables (CORE_VERSION 5).
            let gone: Option<(i64, String)> = tx
                .prepare_cached("SELECT seq, key FROM records WHERE key_hash = ?1")?
                .query_row([key_hash as i64], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?;
            if gone.is_some() {
                tx.prepare_cached("DELETE FROM records WHERE key_hash = ?1")?
                    .execute([key_hash as i64])?;
            }
            delete_vectors(tx, key_hash, None, counts)?;
            let change = Change::Delete {
                key_hash,
                seq: rec.seq(),
                timestamp_ms: rec.timestamp_ms(),
                previous_seq: gone.as_ref().map(|g| g.0 as u64),
                key: gone.as_ref().map(|g| g.1.as_str()),
            };
            for p in projections {
                p.apply(tx, &change)?;
            }
        }
        RecordKind::Vector => {
            let (meta, _key) = record_meta(rec).map_err(corrupt)?;
            let embedder = meta
                .get("embedder")
                .and_then(Value::as_str)
                .ok_or_else(|| corrupt("vector record names no embedder".into()))?;
            let dim = if super::seal::is_sealed(rec) {
                let sealed = super::seal::parse_sealed_meta(rec).map_err(corrupt)?;
                crate::format::sealed::SealedBody::parse(rec.body, sealed.dim)
                    .map_err(|e| corrupt(e.to_string()))?;
                sealed.dim
            } else {
                if !rec.body.len().is_multiple_of(4) || rec.body.is_empty() {
                    return Err(corrupt("vector body is not a whole number of f32".into()));
                }
                rec.body.len() / 4
            };
            // The embedder's latest dimension is the one its cache holds.
            counts.entry(embedder).1 = Some(dim as i64);
            let (h, off, d, seq) = (key_hash as i64, offset as i64, dim as i64, rec.seq() as i64);
            // Insert, or else replace in place; only a new row adds to the count
            // (see CORE_VERSION for why this is not a trigger).
            let added = tx
                .prepare_cached(
                    "INSERT INTO vectors (key_hash, embedder, offset, dim, seq) VALUES (?1, ?2, ?3, ?4, ?5)
                     ON CONFLICT (key_hash, embedder) DO NOTHING",
                )?
                .execute(params![h, embedder, off, d, seq])?;
            if added == 1 {
                counts.entry(embedder).2 += 1;
            } else {
                tx.prepare_cached(
                    "UPDATE vectors SET offset = ?3, dim = ?4, seq = ?5 WHERE key_hash = ?1 AND embedder = ?2",
                )?
                .execute(params![h, embedder, off, d, seq])?;
            }
        }
        RecordKind::Event => {
            let meta: Map<String, Value> = serde_json::from_slice(rec.meta).unwrap_or_default();
            // The store's sealing is the last `sealed` event's key (encryption.md).
            if meta.get("event").and_then(Value::as_str) == Some("sealed") {
                let key_id = meta
                    .get("key_id")
                    .and_then(Value::as_str)
                    .filter(|k| crate::format::sealed::parse_key_id(k).is_some())
                    .ok_or_else(|| corrupt("sealed event names no valid key_id".into()))?;
                tx.prepare_cached("INSERT INTO meta (name, value) VALUES ('sealed', ?1) ON CONFLICT (name) DO UPDATE SET value = excluded.value")?
                    .execute([key_id])?;
            }
            let change = Change::Event {
                seq: rec.seq(),
                timestamp_ms: rec.timestamp_ms(),
                meta: &meta,
                body: rec.body,
            };
            for p in projections {
                p.apply(tx, &change)?;
            }
        }
        RecordKind::Commit | RecordKind::Skippable => {}
    }
    Ok(())
}
