//! `Locked`: a read-modify-write of memories under the store's writer lock.
//!
//! Every change that depends on what is stored (a version number, an error's
//! frequency, "does this id exist?", a note's current entry) reads through a `Locked`
//! and adds its records to the same batch. The lock is taken before the first read and
//! released after the commit, so no other process or thread can write in between:
//! concurrent updates never lose one another. Reads see the state as of the lock,
//! not the records this batch has added.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use rusqlite::OptionalExtension;
use serde_json::{Map, Value};

use super::{Memories, Memory, Result};
use crate::key::hash64;
use crate::store::{BatchWriter, WriteBatch};

/// See the module doc. Made by [`Memories::locked`].
pub(crate) struct Locked<'s> {
    writer: BatchWriter<'s>,
    /// Ids this batch has taken, so two new memories in one batch never share one.
    ids: HashSet<String>,
    /// Vectors embedded before the lock was taken, by the text they embed: an
    /// embedder may be a network call, which must not hold every other writer up.
    pub(super) ahead: HashMap<String, Option<Vec<f32>>>,
}

impl Locked<'_> {
    /// The memory `id` as of the lock.
    pub fn get(&self, id: &str) -> Result<Option<Memory>> {
        Ok(self.writer.get(id)?.as_ref().and_then(Memory::from_record))
    }

    /// Whether any record lives under `key`.
    pub fn exists(&self, key: &str) -> Result<bool> {
        let h = hash64(key) as i64;
        Ok(self.writer.with_tracker(|db| {
            Ok(db
                .prepare_cached("SELECT 1 FROM records WHERE key_hash = ?1")?
                .query_row([h], |_| Ok(()))
                .optional()?
                .is_some())
        })? || self.ids.contains(key))
    }

    /// Which of `keys` have a record as of the lock (this batch's own not counted), in
    /// one query per thousand keys rather than one (and a read transaction) per key.
    pub fn existing<'k>(&self, keys: impl Iterator<Item = &'k str>) -> Result<HashSet<&'k str>> {
        let keys: Vec<&str> = keys.collect();
        let mut found = HashSet::new();
        for part in keys.chunks(1000) {
            let hashes: Vec<i64> = part.iter().map(|k| hash64(k) as i64).collect();
            let json = serde_json::to_string(&hashes)
                .map_err(|e| super::MemoryError::Invalid(e.to_string()))?;
            let live: HashSet<i64> = self.writer.with_tracker(|db| {
                let mut stmt = db.prepare_cached(
                    "SELECT key_hash FROM records WHERE key_hash IN (SELECT value FROM json_each(?1))",
                )?;
                let rows = stmt.query_map([json], |r| r.get(0))?;
                Ok(rows.collect::<rusqlite::Result<HashSet<i64>>>()?)
            })?;
            found.extend(
                part.iter()
                    .zip(&hashes)
                    .filter(|(_, h)| live.contains(h))
                    .map(|(k, _)| *k),
            );
        }
        Ok(found)
    }

    /// Read the tracker as of the lock.
    pub fn with_tracker<T>(
        &self,
        f: impl FnOnce(&rusqlite::Connection) -> crate::store::Result<T>,
    ) -> Result<T> {
        Ok(self.writer.with_tracker(f)?)
    }

    /// Whether this batch already took `id`.
    pub fn taken(&self, id: &str) -> bool {
        self.ids.contains(id)
    }

    /// The most recently updated memory carrying `label` (`errsig:…`, `note:…`).
    pub fn find_by_label(&self, label: &str) -> Result<Option<Memory>> {
        let id = self.writer.with_tracker(|db| id_by_label(db, label))?;
        match id {
            Some(id) => self.get(&id),
            None => Ok(None),
        }
    }

    /// Apply this batch's records to the tracker while they are written, on a thread
    /// of their own (see [`BatchWriter::apply_while_writing`]): for a large batch.
    /// Before the first `add`.
    pub fn apply_while_writing(&mut self) -> Result<()> {
        Ok(self.writer.apply_while_writing()?)
    }

    /// About how many vectors this batch will carry (see
    /// [`BatchWriter::expect_vectors`]).
    pub fn expect_vectors(&mut self, n: u64) {
        self.writer.expect_vectors(n);
    }

    /// Add a batch's records; they commit together when the closure returns `Ok`.
    pub fn add(&mut self, batch: &WriteBatch) -> Result<()> {
        for key in batch.put_keys() {
            self.ids.insert(key.to_string());
        }
        self.writer.extend(batch)?;
        Ok(())
    }
}

/// The id of the most recently updated memory carrying `label`.
pub(super) fn id_by_label(
    db: &rusqlite::Connection,
    label: &str,
) -> crate::store::Result<Option<String>> {
    Ok(db
        .prepare_cached(
            "SELECT m.id FROM memory_labels l JOIN memories m ON m.seq = l.seq
             WHERE l.label = ?1 ORDER BY m.updated_ms DESC LIMIT 1",
        )?
        .query_row([label], |r| r.get(0))
        .optional()?)
}

thread_local! {
    /// An event record to commit in the same batch as this thread's next write.
    static ATTACHED: RefCell<Option<Map<String, Value>>> = const { RefCell::new(None) };
}

/// Commit the event `meta` (an audit record, say) in the same batch as the next write
/// this thread makes through [`Memories`], so the write and its record are durable
/// together or not at all. Replaces an event attached before and not yet used.
pub fn attach_event_to_next_write(meta: Map<String, Value>) {
    ATTACHED.with(|a| *a.borrow_mut() = Some(meta));
}

/// The event attached by [`attach_event_to_next_write`] if no write has taken it (the
/// operation wrote nothing): the caller commits it on its own.
pub fn take_unattached_event() -> Option<Map<String, Value>> {
    ATTACHED.with(|a| a.borrow_mut().take())
}

impl Memories {
    /// Run `f` under the writer lock and commit what it added; nothing is written if
    /// it fails. See the module doc.
    pub(crate) fn locked<T>(&self, f: impl FnOnce(&mut Locked<'_>) -> Result<T>) -> Result<T> {
        self.locked_ahead(&[], f)
    }

    /// [`Memories::locked`], with the vectors of `ahead` (memories as they are about
    /// to be written) embedded first, outside the lock. A memory whose text changes
    /// under the lock (merged tags, …) is embedded there instead.
    pub(crate) fn locked_ahead<T>(
        &self,
        ahead: &[&Memory],
        f: impl FnOnce(&mut Locked<'_>) -> Result<T>,
    ) -> Result<T> {
        let ahead = self.embed_ahead(ahead)?;
        let mut l = Locked {
            writer: self.store().begin_batch()?,
            ids: HashSet::new(),
            ahead,
        };
        let out = f(&mut l)?;
        if !l.writer.is_empty() {
            if let Some(meta) = take_unattached_event() {
                let mut event = WriteBatch::new();
                event.event(meta, Vec::new())?;
                l.writer.extend(&event)?;
            }
            l.writer.finish()?;
        }
        Ok(out)
    }
}
