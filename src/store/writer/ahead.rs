//! Setting a [`BatchWriter`] up to apply its records while they are written: the
//! tracker's applying thread (`super::super::apply_ahead`) and the thread building
//! new embedders' vector caches beside it (`super::super::cache_ahead`).

use super::super::apply_ahead::ApplyAhead;
use super::super::cache_ahead::{self, CacheAhead};
use super::super::error::{Result, StoreError};
use super::super::Durability;
use super::BatchWriter;

impl BatchWriter<'_> {
    /// Apply records to the tracker on a thread of their own as they are written,
    /// rather than all at once after the sync: a large batch (an import) then spends
    /// its tracker time beside its writing, and `finish` has only the sync and a
    /// commit left. See `store::apply_ahead` for why the tracker still reflects only
    /// committed batches. Only before anything is added; not for writers that roll
    /// back part of what they added.
    pub fn apply_while_writing(&mut self) -> Result<()> {
        if self.ahead.is_some() {
            return Ok(());
        }
        if self.written_to != self.meta.applied_end || !self.buf.is_empty() {
            return Err(StoreError::Invalid(
                "apply_while_writing must come before the first record".into(),
            ));
        }
        self.ahead = Some(ApplyAhead::start(
            self.store.dir.join(super::super::TRACKER_FILE),
            self.store.projections.clone(),
        )?);
        // A sealed store keeps no cache file.
        if self.sealed_under.is_none() {
            let had_vectors = self.store.with_tracker(|db| {
                let mut stmt = db.prepare("SELECT name FROM embedders WHERE count > 0")?;
                let names = stmt.query_map([], |r| r.get::<_, String>(0))?;
                Ok(names.collect::<rusqlite::Result<_>>()?)
            })?;
            self.caches_ahead = Some(CacheAhead::start(cache_ahead::Setup {
                dir: self.store.dir.clone(),
                had_vectors,
                applied_seq: self.meta.applied_seq,
                always: self.store.options.durability == Durability::Always,
            })?);
        }
        Ok(())
    }

    /// Say about how many vectors this batch will carry, so that a vector cache built
    /// beside it (see [`BatchWriter::apply_while_writing`]) is made that large at once:
    /// growing one rewrites it. Only a hint; any number of vectors may follow.
    pub fn expect_vectors(&mut self, n: u64) {
        if let Some(caches) = &self.caches_ahead {
            caches.expect_vectors(n);
        }
    }
}
