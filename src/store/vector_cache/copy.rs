//! Copying a cache's slots whole into a new, empty cache: the store's copy of a cache
//! beside a large batch, where computing every row's norm, i8 codes and column codes
//! again (as [`VectorCache::upsert`] does) took most of that copy's time.
//!
//! Owns: the section-by-section copy, and the one case it may be used in. Must
//! never: give a result other than the row-by-row copy, byte for byte, nor write to
//! the cache it copies.

use zerocopy::little_endian::U64;

use super::{VectorCache, VectorCacheError};
use crate::format::vector_file::COLUMN_BLOCK;

/// Bytes copied between releases of both files' pages (small under test, so that the
/// tests' caches go through many pieces and releases).
const COPY_PIECE: usize = if cfg!(test) { 4096 } else { 8 << 20 };

impl VectorCache {
    /// Copy every slot of `old` into this empty cache, section by section, leaving
    /// it as `upsert` of `old`'s live rows in slot order would: byte for byte the
    /// same file. Only when `old` has no tombstoned slot, so that its slot `i` is
    /// this cache's slot `i`, and when both have the same dimension and sections and
    /// this cache has room. Returns false, having written nothing, otherwise.
    pub(crate) fn copy_slots_from(&mut self, old: &VectorCache) -> Result<bool, VectorCacheError> {
        self.require_writable()?;
        let n = old.header.count.get();
        let (to, from) = (self.layout, old.layout);
        let same_shape = to.dim == from.dim
            && to.stride_f32 == from.stride_f32
            && to.stride_i8 == from.stride_i8
            && to.scales.is_some() == from.scales.is_some()
            && to.i8_rows.is_some() == from.i8_rows.is_some()
            && to.i8_columns.is_some() == from.i8_columns.is_some()
            && to.bits.is_some() == from.bits.is_some()
            && to.stride_bits == from.stride_bits;
        if !same_shape || !self.index.is_empty() || self.header.count.get() != 0 {
            return Ok(false);
        }
        if n != old.len() || n > to.capacity {
            return Ok(false);
        }
        let src: &[u8] = &old.map;
        // (source offset, destination offset, bytes) of each slot-indexed section.
        let mut runs: Vec<(u64, u64, u64)> = vec![
            (from.key_hashes, to.key_hashes, n * 8),
            (from.live, to.live, n),
            (from.norms, to.norms, n * 4),
            (from.f32_rows, to.f32_rows, n * from.stride_f32),
        ];
        if let (Some(f), Some(t)) = (from.scales, to.scales) {
            runs.push((f, t, n * 4));
        }
        if let (Some(f), Some(t)) = (from.i8_rows, to.i8_rows) {
            runs.push((f, t, n * from.stride_i8));
        }
        if let (Some(f), Some(t)) = (from.bits, to.bits) {
            runs.push((f, t, n * from.stride_bits));
        }
        // Column blocks sit at the same offsets from the section's start whatever
        // the capacity; within the last block only the slots below `n` are copied.
        if let (Some(f), Some(t)) = (from.i8_columns, to.i8_columns) {
            let dim = u64::from(from.dim);
            for block in 0..n.div_ceil(COLUMN_BLOCK) {
                let slots = (n - block * COLUMN_BLOCK).min(COLUMN_BLOCK);
                for j in 0..dim {
                    let at = (block * dim + j) * COLUMN_BLOCK;
                    runs.push((f + at, t + at, slots));
                }
            }
        }
        // In pieces, each one's pages let go of once copied (file-backed maps only),
        // so that a copy of a large cache does not hold both files resident.
        let release = !self.is_in_memory() && !old.is_in_memory();
        for &(f, t, len) in &runs {
            let (mut f, mut t, mut len) = (f as usize, t as usize, len as usize);
            while len > 0 {
                let piece = len.min(COPY_PIECE);
                let dst = self.map.bytes_mut();
                match (src.get(f..f + piece), dst.get_mut(t..t + piece)) {
                    (Some(s), Some(d)) => d.copy_from_slice(s),
                    _ => {
                        return Err(VectorCacheError::InvalidOptions(
                            "a cache's sections lie outside its file".into(),
                        ))
                    }
                }
                if release && piece == COPY_PIECE {
                    old.map.release_file_range(f, piece);
                    self.map.release_file_range(t, piece);
                }
                (f, t, len) = (f + piece, t + piece, len - piece);
            }
        }
        self.index = old.index.clone();
        self.header.count = U64::new(n);
        self.write_header();
        Ok(true)
    }
}
