//! Growing a vector cache: live rows are copied into a new, larger file that is
//! renamed over the old one, so readers see either file whole.
//!
//! Owns: compaction of tombstoned slots and the new capacity's rule.
//! Must never: touch the old file's bytes (readers may still map it) or leave the
//! temporary file behind on failure.

use std::collections::HashMap;
use std::fs::{self, File};

use zerocopy::little_endian::U64;
use zerocopy::IntoBytes;

use super::error::format_error;
use super::mapping::CacheMap;
use super::mapping::{create_anon, create_mapped, tmp_path, write_row_into, CreateError};
use super::{VectorCache, VectorCacheError};
use crate::format::vector_file::{HEADER_LEN, SLOT_LIVE};

/// Rows a grow copies between releases of both files' pages (few under test, so that
/// the tests' grows release pages many times).
const RELEASE_EVERY: u64 = if cfg!(test) { 16 } else { 2048 };

impl VectorCache {
    /// Call `f` with each live row's key hash and vector, in slot order: what a copy
    /// of this cache must hold (a grow, or the store's copy beside a large batch).
    pub(crate) fn for_each_live(
        &self,
        mut f: impl FnMut(u64, &[f32]) -> Result<(), VectorCacheError>,
    ) -> Result<(), VectorCacheError> {
        let sections = self.sections()?;
        let rows = sections.f32_rows.chunks_exact(sections.stride_f32.max(1));
        for ((row, &flag), &key) in rows.zip(sections.live).zip(sections.keys) {
            if flag == SLOT_LIVE {
                f(key, &row[..sections.dim])?;
            }
        }
        Ok(())
    }

    /// Rewrite live rows into a new file and rename it over the old one.
    ///
    /// Tombstoned slots are dropped. The new capacity is `max(capacity, 2 * live)`,
    /// so at least half of the new file is free: amortised O(1) per append.
    pub(super) fn grow(&mut self) -> Result<(), VectorCacheError> {
        let live = self.index.len() as u64;
        let capacity = self.layout.capacity.max(live.saturating_mul(2)).max(1);
        let mut header = self.header;
        header.capacity = U64::new(capacity);
        header.count = U64::new(0);
        let tmp = tmp_path(&self.path);
        let created = if self.is_in_memory() {
            create_anon(&header).map(|(map, layout)| (None, map, layout))
        } else {
            create_mapped(&tmp, &header).map(|(file, map, layout)| (Some(file), map, layout))
        };
        let (file, map, layout) = created.map_err(|e| {
            if !self.is_in_memory() {
                let _ = fs::remove_file(&tmp);
            }
            match e {
                CreateError::Io(e) => VectorCacheError::Io(e),
                CreateError::Format(e) => format_error(&self.path, e),
            }
        })?;
        let mut map = CacheMap::Writable(map);
        let result = (|| {
            let mut index = HashMap::with_capacity(self.index.len());
            let mut next = 0u64;
            self.for_each_live(|key, row| {
                if next >= capacity {
                    return Err(self.corrupt("more live slots than indexed keys".into()));
                }
                let bytes = map.bytes_mut();
                write_row_into(bytes, &layout, next, row);
                let at = (layout.key_hashes + next * 8) as usize;
                bytes[at..at + 8].copy_from_slice(&key.to_le_bytes());
                bytes[(layout.live + next) as usize] = SLOT_LIVE;
                index.insert(key, next);
                next += 1;
                // Both files are read or written whole: let go of their pages as
                // the copy goes, or the two together stay resident (three times the
                // old file at the peak of a long index).
                if file.is_some() && next.is_multiple_of(RELEASE_EVERY) {
                    self.release_pages();
                    map.release_file_range(0, map.len());
                }
                Ok(())
            })?;
            header.count = U64::new(next);
            header.seal();
            map.bytes_mut()[..HEADER_LEN].copy_from_slice(header.as_bytes());
            if let Some(file) = &file {
                map.flush()?;
                crate::store::io::sync_all(file, &tmp)?;
            }
            Ok::<_, VectorCacheError>(index)
        })();
        let index = match result {
            Ok(index) => index,
            Err(e) => {
                if file.is_some() {
                    let _ = fs::remove_file(&tmp);
                }
                return Err(e);
            }
        };
        if file.is_some() {
            crate::store::io::rename(&tmp, &self.path)?;
            if let Some(dir) = self.path.parent().and_then(|d| File::open(d).ok()) {
                // Best effort: makes the rename durable; the cache is rebuildable anyway.
                let _ = dir.sync_all();
            }
        }
        self.file = file;
        self.map = map;
        self.header = header;
        self.layout = layout;
        self.index = index;
        Ok(())
    }
}
