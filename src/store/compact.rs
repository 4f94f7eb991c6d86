//! Compaction: rewrite `blob.dat` keeping only live records, then swap it in.
//!
//! Kept: each key's live Put (and its earlier puts flagged keep-history), its live
//! vectors, every Event (the audit trail is never rewritten away) and every record of
//! a kind this version does not know, copied byte for byte — same sequence numbers,
//! same checksums — into one batch. An event recording the compaction closes it,
//! numbered after the old log's last record, so numbering never goes backwards, even
//! when nothing else was kept. The new file gets the next
//! generation; the swap is a rename, and the tracker is rebuilt in a transaction that
//! commits only after the rename, so a crash at any point leaves a store that opens:
//! either the old log with its tracker, or the new log with a tracker that the next
//! open sees is of another generation and rebuilds.

use std::collections::{HashMap, HashSet};
use std::fs::File;

use zerocopy::IntoBytes;

use super::blob_log::{sync_dir, BlobLog};
use super::error::{Result, StoreError};
use super::scan::{scan_batches, ScanStart};
use super::seal::{self, VectorKey};
use super::temporary::Temporary;
use super::{vectors, Store, BLOB_FILE};
use crate::format::{
    encode_record, BatchCrc, CommitBody, FileHeader, RecordFields, RecordKind, RecordView,
    FILE_HEADER_LEN, FLAG_KEEP_HISTORY, FLAG_SEALED, FORMAT_VERSION_SEALED,
};

/// What compaction did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactReport {
    pub bytes_before: u64,
    pub bytes_after: u64,
    pub records_before: u64,
    pub records_after: u64,
    /// Records whose metadata and body a rewrite replaced.
    pub records_rewritten: u64,
    pub generation: u64,
    /// Embedders whose vectors this compaction dropped (see
    /// [`Store::compact_retiring`]), by name.
    pub retired_embedders: Vec<String>,
}

/// Asked, under the writer lock, whether a superseded embedder's vectors may go (see
/// [`Store::compact_retiring`]).
pub type Retire<'a> = dyn Fn(&rusqlite::Connection, &str) -> Result<bool> + 'a;

/// Embedders every one of whose vectors is matched by a vector of one other embedder
/// for the same key, that other embedder having written the newest vector of the
/// two: its keys lose no vector space by dropping them, and it is no longer the one
/// being written. A full read of `vectors`, as compaction is anyway.
pub(super) fn superseded_embedders(db: &rusqlite::Connection) -> Result<Vec<String>> {
    let mut stmt = db.prepare(
        "SELECT x.name FROM embedders x WHERE x.count > 0 AND EXISTS (
           SELECT 1 FROM embedders y WHERE y.name != x.name AND y.count >= x.count
             AND (SELECT max(seq) FROM vectors WHERE embedder = y.name)
               > (SELECT max(seq) FROM vectors WHERE embedder = x.name)
             AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.embedder = x.name
               AND NOT EXISTS (SELECT 1 FROM vectors w
                 WHERE w.key_hash = v.key_hash AND w.embedder = y.name)))
         ORDER BY x.name",
    )?;
    let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

/// A new metadata and body for a record compaction keeps, or `None` to copy it as it
/// is (see [`Store::compact_rewriting`]).
pub type Rewrite<'a> = dyn FnMut(&RecordView<'_>) -> Option<(Vec<u8>, Vec<u8>)> + 'a;

pub(super) fn compact(
    store: &Store,
    mut rewrite: Option<&mut Rewrite<'_>>,
    seal: Option<&VectorKey>,
    retire: Option<&Retire<'_>>,
) -> Result<CompactReport> {
    let _writer = store.exclusive()?;
    let mut db = store.db()?;
    let meta = store.refresh_locked(&mut db)?;
    // Decided under the lock, so no vector of a retired embedder is written between
    // the decision and the rewrite.
    let mut retired = Vec::new();
    if let Some(retire) = retire {
        for name in superseded_embedders(&db)? {
            if retire(&db, &name)? {
                retired.push(name);
            }
        }
    }
    let blob = store.blob()?;
    let snap = blob.snapshot(meta.applied_end)?;
    // Sealing (or rotating) opens sealed vectors under the current key first: checked
    // before anything is written.
    let mut resealer = match seal {
        Some(new) => Some(Resealer::new(store, &db, new)?),
        None => None,
    };

    let mut live: HashSet<u64> = HashSet::new();
    let mut live_keys: HashSet<u64> = HashSet::new();
    {
        let mut stmt = db.prepare(
            "SELECT offset, key_hash, NULL FROM records UNION ALL SELECT offset, NULL, embedder FROM vectors",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, Option<i64>>(1)?,
                r.get::<_, Option<String>>(2)?,
            ))
        })?;
        for row in rows {
            let (offset, key_hash, embedder) = row?;
            if embedder.is_some_and(|e| retired.contains(&e)) {
                continue;
            }
            live.insert(offset as u64);
            if let Some(h) = key_hash {
                live_keys.insert(h as u64);
            }
        }
    }

    // A put kept for history must come after its key's last tombstone: a key deleted
    // and written again starts a new history, and compaction must not bring back the
    // versions the tombstone removed (the tracker no longer lists them).
    let mut last_tombstone: HashMap<u64, u64> = HashMap::new();
    scan_batches(
        snap.bytes(),
        ScanStart {
            offset: FILE_HEADER_LEN as u64,
            last_commit: 0,
            last_seq: 0,
        },
        |batch| -> Result<()> {
            for (offset, rec) in batch.records() {
                if rec.kind == RecordKind::Tombstone && live_keys.contains(&rec.key_hash()) {
                    last_tombstone.insert(rec.key_hash(), offset);
                }
            }
            Ok(())
        },
    )?;

    // Removed on every way out but the rename: a copy of the log left on a full disk
    // would keep the space every later write needs.
    let temporary = Temporary::new(store.dir.join("blob.dat.compact"));
    let new_path = temporary.path().to_path_buf();
    let old = blob.header();
    let version = if seal.is_some() {
        FORMAT_VERSION_SEALED
    } else {
        old.format_version.get()
    };
    let header = FileHeader::with_version(
        version,
        old.generation.get() + 1,
        old.store_id,
        old.created_ms.get(),
    );
    let out = File::create(&new_path).map_err(StoreError::io("create", &new_path))?;
    let mut writer = Appender {
        file: &out,
        path: &new_path,
        buf: Vec::with_capacity(4 << 20),
        offset: 0,
    };
    writer.push(header.as_bytes())?;

    let mut records_before = 0u64;
    let mut rewritten = 0u64;
    let mut kept = 0u32;
    let mut first_seq = 0u64;
    let mut crc = BatchCrc::new();
    let end = scan_batches(
        snap.bytes(),
        ScanStart {
            offset: FILE_HEADER_LEN as u64,
            last_commit: 0,
            last_seq: 0,
        },
        |batch| -> Result<()> {
            records_before += batch.record_count as u64 + 1;
            for (offset, rec) in batch.records() {
                // A superseded put marked keep-history stays while its key lives,
                // unless the key was deleted after it.
                let history = rec.kind == RecordKind::Put
                    && rec.header.flags.get() & FLAG_KEEP_HISTORY != 0
                    && live_keys.contains(&rec.key_hash())
                    && last_tombstone
                        .get(&rec.key_hash())
                        .is_none_or(|&t| offset > t);
                if history
                    || matches!(rec.kind, RecordKind::Event | RecordKind::Skippable)
                    || live.contains(&offset)
                {
                    let replaced = match (rewrite.as_mut(), resealer.as_mut()) {
                        (_, Some(r)) if rec.kind == RecordKind::Vector => {
                            Some(r.reseal(store, &rec, offset)?)
                        }
                        (Some(f), _) if rec.kind != RecordKind::Skippable => {
                            f(&rec).map(|(meta, body)| (rec.header.flags.get(), meta, body))
                        }
                        _ => None,
                    };
                    match replaced {
                        Some((flags, meta, body)) => {
                            // Same kind, flags, key, sequence number and time: only what
                            // the record says changes, and its checksum with it.
                            let mut encoded = Vec::with_capacity(meta.len() + body.len() + 64);
                            let record_crc = encode_record(
                                &RecordFields {
                                    kind: rec.kind,
                                    flags,
                                    key_hash: rec.key_hash(),
                                    seq: rec.seq(),
                                    timestamp_ms: rec.timestamp_ms(),
                                    meta: &meta,
                                    body: &body,
                                },
                                &mut encoded,
                            )
                            .map_err(|e| StoreError::Invalid(e.to_string()))?;
                            writer.push(&encoded)?;
                            crc.push(record_crc);
                            rewritten += 1;
                        }
                        None => {
                            let raw =
                                &snap.bytes()[offset as usize..offset as usize + rec.record_len()];
                            writer.push(raw)?;
                            crc.push(rec.crc());
                        }
                    }
                    if kept == 0 {
                        first_seq = rec.seq();
                    }
                    kept += 1;
                }
            }
            Ok(())
        },
    )?;
    if end.committed_end != meta.applied_end {
        let (at, why) = end
            .stopped
            .unwrap_or((end.committed_end, "the commit chain ends early".into()));
        return Err(StoreError::Corrupt {
            path: blob.path().to_path_buf(),
            offset: at,
            reason: format!(
                "{why}; compaction would drop the committed batches after it, so it did nothing"
            ),
        });
    }
    // The batch ends with an event recording the compaction. It also carries the
    // sequence numbers on past the old log's last, even when nothing else was kept,
    // so numbering never goes backwards.
    let now = super::now_ms();
    let mut event = serde_json::json!({
        "event": "compacted",
        "generation": header.generation.get(),
        "bytes_before": meta.applied_end,
        "records_kept": kept,
    });
    if !retired.is_empty() {
        event["retired_embedders"] = serde_json::json!(retired);
    }
    let event_meta = serde_json::to_vec(&event).map_err(|e| StoreError::Invalid(e.to_string()))?;
    let mut tail = Vec::new();
    let event_seq = meta.applied_seq + 1;
    let event_crc = encode_record(
        &RecordFields {
            kind: RecordKind::Event,
            flags: 0,
            key_hash: 0,
            seq: event_seq,
            timestamp_ms: now,
            meta: &event_meta,
            body: b"",
        },
        &mut tail,
    )
    .map_err(|e| StoreError::Invalid(e.to_string()))?;
    crc.push(event_crc);
    if kept == 0 {
        first_seq = event_seq;
    }
    kept += 1;
    // Sealing ends the batch with the event naming the new key: the last `sealed`
    // event in the log is the store's key (encryption.md).
    let mut last_seq = event_seq;
    if let Some(key) = seal {
        last_seq += 1;
        let sealed_meta = serde_json::to_vec(&serde_json::json!({
            "event": "sealed",
            "key_id": key.id_hex(),
            "time_ms": now,
        }))
        .map_err(|e| StoreError::Invalid(e.to_string()))?;
        let sealed_crc = encode_record(
            &RecordFields {
                kind: RecordKind::Event,
                flags: 0,
                key_hash: 0,
                seq: last_seq,
                timestamp_ms: now,
                meta: &sealed_meta,
                body: b"",
            },
            &mut tail,
        )
        .map_err(|e| StoreError::Invalid(e.to_string()))?;
        crc.push(sealed_crc);
        kept += 1;
    }
    let commit = CommitBody::new(FILE_HEADER_LEN as u64, 0, kept, crc.finish(), first_seq);
    encode_record(
        &RecordFields {
            kind: RecordKind::Commit,
            flags: 0,
            key_hash: 0,
            seq: last_seq + 1,
            timestamp_ms: now,
            meta: b"",
            body: commit.as_bytes(),
        },
        &mut tail,
    )
    .map_err(|e| StoreError::Invalid(e.to_string()))?;
    writer.push(&tail)?;
    writer.flush()?;
    let bytes_after = writer.offset;
    super::io::sync_all(&out, &new_path).map_err(StoreError::io("sync", &new_path))?;
    drop(out);

    if seal.is_some() {
        // Cache files hold vectors in the clear. They go before the sealed log takes
        // over, so no crash leaves a sealed store beside them (nothing recreates them
        // meanwhile: only a writer does, and this one holds the lock).
        vectors::remove_cache_files(&store.dir)?;
    }
    // Rebuild the tracker from the new file inside a transaction that commits only
    // after the rename (see the module comment for why this order is crash-safe).
    let fresh = std::sync::Arc::new(BlobLog::open(&new_path)?);
    // The new log is locked before it takes the old one's name, like the old one: no
    // writer that found `LOCK` replaced meanwhile may append to it before we finish.
    fresh.lock()?;
    let _new_log = super::lock::LogLock(fresh.clone());
    let old_blob = std::mem::replace(
        &mut *store
            .blob
            .write()
            .map_err(|_| StoreError::Invalid("blob handle poisoned".into()))?,
        fresh,
    );
    let blob_path = store.dir.join(BLOB_FILE);
    let result = store.rebuild_locked_with(&mut db, false, || {
        super::io::rename(&new_path, &blob_path).map_err(StoreError::io("rename", &new_path))?;
        sync_dir(&blob_path)
    });
    if let Err(e) = result {
        if new_path.exists() {
            // The swap did not happen: the old log is still the store's (and the
            // temporary goes on return).
            *store
                .blob
                .write()
                .map_err(|_| StoreError::Invalid("blob handle poisoned".into()))? = old_blob;
        } else {
            temporary.keep();
            // The new log is in place but its tracker did not commit: point at the new
            // file; the next writer or open sees the generation differ and rebuilds.
            store.reload_blob()?;
        }
        return Err(e);
    }
    temporary.keep();
    *store
        .blob
        .write()
        .map_err(|_| StoreError::Invalid("blob handle poisoned".into()))? =
        std::sync::Arc::new(BlobLog::open(&blob_path)?);
    if let Some(key) = seal {
        *store
            .vector_key
            .write()
            .map_err(|_| StoreError::Invalid("vector key poisoned by a panic".into()))? =
            Some(key.clone());
    }
    store.sealed_caches.clear();
    store.plain_caches.clear();
    store.writer_caches.clear();
    for name in &retired {
        // The retired embedders are no longer in the tracker: nothing keeps their
        // cache files up to date, and nothing searches them.
        let path = vectors::cache_path(&store.dir, name);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                tracing::warn!(cache = %path.display(), "left a retired embedder's cache file: {e}");
            }
            _ => {}
        }
    }
    vectors::rebuild_caches(store, &db)?;
    Ok(CompactReport {
        bytes_before: meta.applied_end,
        bytes_after,
        records_before,
        records_after: kept as u64 + 1,
        retired_embedders: retired,
        records_rewritten: rewritten,
        generation: header.generation.get(),
    })
}

/// Rewrites each live vector sealed under a new key (sealing or rotation).
struct Resealer {
    new: VectorKey,
    /// The key the store is sealed under now, when it is sealed.
    old: Option<VectorKey>,
}

impl Resealer {
    fn new(store: &Store, db: &rusqlite::Connection, new: &VectorKey) -> Result<Resealer> {
        let old = match super::tracker::sealed_key_id(db)? {
            Some(id) => Some(store.sealing_key(&id)?),
            None => None,
        };
        Ok(Resealer {
            new: new.clone(),
            old,
        })
    }

    /// The flags, metadata and body of `rec` (a vector at `offset`) sealed under the
    /// new key, with its position unchanged.
    fn reseal(
        &mut self,
        store: &Store,
        rec: &RecordView<'_>,
        offset: u64,
    ) -> Result<(u16, Vec<u8>, Vec<u8>)> {
        let corrupt = |reason: String| StoreError::Corrupt {
            path: store.dir.join(BLOB_FILE),
            offset,
            reason,
        };
        let (mut meta, _) = super::tracker::record_meta(rec).map_err(corrupt)?;
        let values: Vec<f32> = if seal::is_sealed(rec) {
            match &self.old {
                Some(old) => old.open(rec, offset)?,
                None => {
                    return Err(corrupt(
                        "a sealed vector in a store that is not sealed".into(),
                    ))
                }
            }
        } else {
            rec.body
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        };
        let embedder = meta
            .get("embedder")
            .and_then(|v| v.as_str())
            .ok_or_else(|| corrupt("vector record names no embedder".into()))?
            .to_string();
        meta.insert("dim".into(), values.len().into());
        meta.insert("key_id".into(), self.new.id_hex().into());
        let le: Vec<u8> = values.iter().flat_map(|x| x.to_le_bytes()).collect();
        let body = self.new.seal(rec.key_hash(), rec.seq(), &embedder, &le)?;
        let meta = serde_json::to_vec(&meta).map_err(|e| StoreError::Invalid(e.to_string()))?;
        Ok((rec.header.flags.get() | FLAG_SEALED, meta, body))
    }
}

/// Buffered sequential writer for the new log.
struct Appender<'a> {
    file: &'a File,
    path: &'a std::path::Path,
    buf: Vec<u8>,
    offset: u64,
}

impl Appender<'_> {
    fn push(&mut self, bytes: &[u8]) -> Result<()> {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= 4 << 20 {
            self.flush()?;
        }
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        super::io::write_at(self.file, self.path, &self.buf, self.offset)
            .map_err(StoreError::io("write", self.path))?;
        self.offset += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }
}
