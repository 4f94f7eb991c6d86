//! File and mapping helpers for the vector cache: sizing and mapping a new file,
//! writing one slot's row data, and typed views of mapped sections.
//!
//! Owns: the byte-level writes of a slot's row, norm, sign bits, i8 codes (by row
//! and by column) and scale.
//! Must never: decide slot order or publish a slot (key, live flag, count); the
//! caller does that after these writes, which is what keeps readers safe.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use memmap2::{Mmap, MmapMut, MmapOptions};
use zerocopy::{FromBytes, IntoBytes};

use crate::format::vector_file::{
    self, FormatError, VectorFileHeader, VectorFileLayout, HEADER_LEN,
};

pub(crate) enum CreateError {
    Io(std::io::Error),
    Format(FormatError),
}

/// Create `path` sized for `header`, map it and write the header.
pub(crate) fn create_mapped(
    path: &Path,
    header: &VectorFileHeader,
) -> Result<(File, MmapMut, VectorFileLayout), CreateError> {
    let layout =
        VectorFileLayout::compute(header.dim.get(), header.flags.get(), header.capacity.get())
            .map_err(CreateError::Format)?;
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(CreateError::Io)?;
    file.set_len(layout.total_len).map_err(CreateError::Io)?;
    // SAFETY: we just created and sized this file; see `VectorCache::open`.
    let mut map = unsafe { MmapOptions::new().map_mut(&file) }.map_err(CreateError::Io)?;
    let mut h = *header;
    h.seal();
    map[..HEADER_LEN].copy_from_slice(h.as_bytes());
    Ok((file, map, layout))
}

/// Map anonymous memory sized for `header` and write the header (a cache backed by
/// no file).
pub(crate) fn create_anon(
    header: &VectorFileHeader,
) -> Result<(MmapMut, VectorFileLayout), CreateError> {
    let layout =
        VectorFileLayout::compute(header.dim.get(), header.flags.get(), header.capacity.get())
            .map_err(CreateError::Format)?;
    let len = usize::try_from(layout.total_len)
        .map_err(|_| CreateError::Io(std::io::Error::other("vector cache too large for memory")))?;
    let mut map = MmapOptions::new()
        .len(len)
        .map_anon()
        .map_err(CreateError::Io)?;
    let mut h = *header;
    h.seal();
    map[..HEADER_LEN].copy_from_slice(h.as_bytes());
    Ok((map, layout))
}

pub(crate) fn write_row_into(map: &mut [u8], layout: &VectorFileLayout, slot: u64, v: &[f32]) {
    let at = (layout.f32_rows + slot * layout.stride_f32) as usize;
    if let Some(dst) = map.get_mut(at..at + v.len() * 4) {
        dst.copy_from_slice(v.as_bytes());
    }
    let at = (layout.norms + slot * 4) as usize;
    if let Some(dst) = map.get_mut(at..at + 4) {
        dst.copy_from_slice(&vector_file::l2_norm(v).to_le_bytes());
    }
    if let Some(bits) = layout.bits {
        let at = (bits + slot * layout.stride_bits) as usize;
        let words = map
            .get_mut(at..at + layout.stride_bits as usize)
            .and_then(|dst| <[u64]>::mut_from_bytes(dst).ok());
        if let Some(words) = words {
            vector_file::sign_bits(v, words);
        }
    }
    if let (Some(scales), Some(rows)) = (layout.scales, layout.i8_rows) {
        let row_at = (rows + slot * layout.stride_i8) as usize;
        let scale = match map.get_mut(row_at..row_at + v.len()) {
            Some(dst) => {
                vector_file::quantize_i8(v, <[i8]>::mut_from_bytes(dst).unwrap_or(&mut []))
            }
            None => return,
        };
        let at = (scales + slot * 4) as usize;
        if let Some(dst) = map.get_mut(at..at + 4) {
            dst.copy_from_slice(&scale.to_le_bytes());
        }
        write_columns(map, layout, slot, row_at, v.len());
    }
}

/// Copy slot `slot`'s i8 codes (`dim` bytes at `row_at`) into the column blocks, one
/// byte per dimension, `COLUMN_BLOCK` bytes apart.
fn write_columns(map: &mut [u8], layout: &VectorFileLayout, slot: u64, row_at: usize, dim: usize) {
    let (Some(start), Some(first)) = (layout.i8_columns, layout.column_code(slot, 0)) else {
        return;
    };
    // The column section follows the rows, so one split gives both without a copy.
    let Some((rows, columns)) = map.split_at_mut_checked(start as usize) else {
        return;
    };
    let Some(row) = rows.get(row_at..row_at + dim) else {
        return;
    };
    let first = (first - start) as usize;
    let step = vector_file::COLUMN_BLOCK as usize;
    for (j, &code) in row.iter().enumerate() {
        if let Some(b) = columns.get_mut(first + j * step) {
            *b = code;
        }
    }
}

/// A typed view of `len` elements at byte `offset`, or `None` if out of bounds
/// or misaligned (neither happens for a validated layout on a mapped file).
pub(crate) fn slice_of<T: FromBytes + zerocopy::Immutable>(
    map: &[u8],
    offset: u64,
    len: usize,
) -> Option<&[T]> {
    let start = usize::try_from(offset).ok()?;
    let bytes = len.checked_mul(std::mem::size_of::<T>())?;
    let raw = map.get(start..start.checked_add(bytes)?)?;
    <[T]>::ref_from_bytes(raw).ok()
}

pub(crate) fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".grow-tmp");
    PathBuf::from(name)
}

/// A cache's mapping: writable for the one writer (who holds the store's writer
/// lock), read-only for searches, which must never write a byte of a file another
/// process may be updating.
pub(crate) enum CacheMap {
    Writable(MmapMut),
    ReadOnly(Mmap),
}

impl std::ops::Deref for CacheMap {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            CacheMap::Writable(m) => m,
            CacheMap::ReadOnly(m) => m,
        }
    }
}

impl CacheMap {
    /// Drop this process's page table entries for `len` bytes at `at` (memmap2 widens
    /// the range to whole pages). The bytes stay in the page cache, dirty ones
    /// included, and any later access faults them back in: what a long write through
    /// the map needs so that its resident set does not grow with the file. Only for a
    /// map of a file: an anonymous map's pages would be zeroed.
    pub(crate) fn release_file_range(&self, at: usize, len: usize) {
        let len = len.min(self.len().saturating_sub(at));
        if len == 0 {
            return;
        }
        let dont_need = memmap2::UncheckedAdvice::DontNeed;
        // SAFETY: callers pass maps of regular files, which memmap2 maps shared:
        // dropping their page table entries moves dirty bits to the page cache, so no
        // byte is lost, and a later read faults the same bytes back in.
        let released = unsafe {
            match self {
                CacheMap::Writable(m) => m.unchecked_advise_range(dont_need, at, len),
                CacheMap::ReadOnly(m) => m.unchecked_advise_range(dont_need, at, len),
            }
        };
        if let Err(e) = released {
            tracing::debug!("madvise(DONTNEED) on a vector cache: {e}");
        }
    }

    /// Write dirty pages to the file (msync) and wait; nothing for a read-only map.
    pub(crate) fn flush(&self) -> std::io::Result<()> {
        match self {
            CacheMap::Writable(m) => m.flush(),
            CacheMap::ReadOnly(_) => Ok(()),
        }
    }

    /// The bytes to write; empty for a read-only map (mutating entry points check
    /// `VectorCache::require_writable` first, so nothing is silently skipped).
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        match self {
            CacheMap::Writable(m) => m,
            CacheMap::ReadOnly(_) => &mut [],
        }
    }
}
