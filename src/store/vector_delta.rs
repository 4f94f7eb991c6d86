//! The committed batches a vector cache has not seen yet, read from the log.
//!
//! The writer applies each batch to the caches right after the tracker commits it, so
//! a search that lands in between finds a cache one batch (rarely a few) behind. It
//! must not wait for the writer lock to repair that: the lock may belong to another
//! process indexing for minutes. Instead the search walks the commit chain back from
//! the tracker's last commit to the first batch the cache missed, and replays those
//! batches' vector changes in memory, exactly as the writer would apply them to the
//! cache. The answer is the one an up-to-date cache would give.
//!
//! Owns: walking the commit chain and replaying it. Must never write anything, and
//! gives up (returns `None`) rather than read far: a cache more than a few batches
//! behind is rebuilt by the writer path instead.

use std::collections::HashMap;

use super::blob_log::LogSnapshot;
use super::error::Result;
use super::tracker;
use super::Store;
use crate::format::commit::CommitBody;
use crate::format::RecordKind;

/// Most batches replayed on a search; beyond it the cache is rebuilt.
const MAX_BATCHES: usize = 64;
/// Most log bytes replayed on a search.
const MAX_BYTES: u64 = 64 << 20;

/// Changes to one embedder's vectors since a cache's stamp, last change per key.
#[derive(Debug, Default)]
pub(super) struct VectorDelta {
    /// `Some(vector)`: the key's vector is now this; `None`: it has none.
    pub changes: HashMap<u64, Option<Vec<f32>>>,
}

impl VectorDelta {
    /// Replay the batches after sequence number `cache_seq` up to the commit at
    /// `last_commit` (whose batch ends the tracker's applied state), or `None` when
    /// the chain does not lead back to `cache_seq` within the limits.
    pub(super) fn since(
        store: &Store,
        snap: &LogSnapshot,
        last_commit: u64,
        cache_seq: u64,
        embedder: &str,
        dim: usize,
    ) -> Result<Option<VectorDelta>> {
        let mut batches = Vec::new();
        let mut bytes = 0u64;
        let mut at = last_commit;
        loop {
            if at == 0 || batches.len() >= MAX_BATCHES {
                return Ok(None);
            }
            let rec = snap.record_at(at)?;
            if rec.kind != RecordKind::Commit {
                return Ok(None);
            }
            let Ok(body) = CommitBody::decode(rec.body) else {
                return Ok(None);
            };
            let first_seq = body.first_seq.get();
            let start = body.batch_start.get();
            bytes += at.saturating_sub(start);
            if first_seq <= cache_seq || bytes > MAX_BYTES || start >= at {
                // The cache was stamped inside a batch, or the replay is too long.
                return Ok(None);
            }
            batches.push((start, at));
            if first_seq == cache_seq + 1 {
                break;
            }
            at = body.prev_commit.get();
        }
        let mut delta = VectorDelta::default();
        for &(start, end) in batches.iter().rev() {
            let mut off = start;
            while off < end {
                let rec = snap.record_at(off)?;
                match rec.kind {
                    RecordKind::Put | RecordKind::Tombstone => {
                        delta.changes.insert(rec.key_hash(), None);
                    }
                    RecordKind::Vector => {
                        let Ok((meta, _)) = tracker::record_meta(&rec) else {
                            return Ok(None);
                        };
                        let ours = meta.get("embedder").and_then(|v| v.as_str()) == Some(embedder);
                        if ours {
                            if let Some(v) = store.vector_values(&rec, off, dim)? {
                                delta.changes.insert(rec.key_hash(), Some(v));
                            }
                        }
                    }
                    _ => {}
                }
                off += rec.record_len() as u64;
            }
        }
        Ok(Some(delta))
    }
}
