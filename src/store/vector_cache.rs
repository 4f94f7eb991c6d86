//! The vector cache: one memory-mapped file of embeddings per embedder.
//!
//! Owns: creating, opening, validating against caller options, mapping, appending
//! (upsert), tombstoning, growing by atomic rewrite, and dispatching searches.
//! The byte layout lives in `crate::format::vector_file`; scanning lives in
//! `vector_scan`; errors, raw mapping helpers and growing are the `error`, `mapping`
//! and `grow` submodules (`store/vector_cache/`).
//! Must never: be treated as a source of truth (it is derived from the log and may
//! be deleted at any time), panic on anything a file's bytes control, or write a
//! slot's key/live flag or the header `count` before the slot's row is written.

#[cfg(target_endian = "big")]
compile_error!(
    "the vector cache maps little-endian f32/i8 rows directly; big-endian hosts are unsupported"
);

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, Ordering};

use memmap2::MmapOptions;
use zerocopy::little_endian::U64;
use zerocopy::IntoBytes;

use crate::format::vector_file::{
    self, FormatError, VectorFileHeader, VectorFileLayout, COLUMN_BLOCK, FLAG_BITS, FLAG_F32,
    FLAG_I8, FLAG_I8_COLUMNS, HEADER_LEN, MAX_DIM, SLOT_DEAD, SLOT_LIVE,
};
use crate::store::vector_scan::Sections;
pub use crate::store::vector_scan::{
    binary_candidates, i8_candidates, Metric, ScanMode, VectorHit,
};

mod copy;
mod error;
mod grow;
mod mapping;
mod search;
use error::format_error;
pub use error::VectorCacheError;
use mapping::{create_anon, create_mapped, slice_of, write_row_into, CacheMap, CreateError};

/// Caller-supplied identity and shape of a cache file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VectorCacheOptions {
    /// Elements per vector, 1..=65536.
    pub dim: u32,
    /// Identifies the embedder; see [`embedder_id`].
    pub embedder_id: u64,
    /// Also store i8 quantized rows for [`ScanMode::I8Rerank`].
    pub with_i8: bool,
    /// Also store the i8 codes by column (needs `with_i8`): a query whose quantized
    /// form is mostly zeros (a short text under a hashed embedder) then reads only
    /// its non-zero dimensions. Same results, fewer bytes scanned.
    pub with_i8_columns: bool,
    /// Also store one sign bit per dimension (format version 3), for the Hamming
    /// first pass [`ScanMode::Binary`] that [`ScanMode::Auto`] picks for dense
    /// vectors in a large cache.
    pub with_bits: bool,
    /// Slots allocated by [`VectorCache::create`]; ignored by `open`. Minimum 1.
    pub initial_capacity: u64,
}

/// What [`VectorCache::path`] names for a cache in memory.
const MEMORY_PATH: &str = "(in memory)";

fn create_error(e: CreateError) -> VectorCacheError {
    match e {
        CreateError::Io(e) => VectorCacheError::Io(e),
        CreateError::Format(e) => VectorCacheError::InvalidOptions(e.to_string()),
    }
}

/// Stable 64-bit id for an embedder name (FNV-1a). Stable across builds and
/// platforms, unlike `std`'s hasher, because it is persisted in the file.
pub fn embedder_id(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// An open vector cache file.
///
/// Writable handles ([`VectorCache::open`], [`VectorCache::create`]) belong to the
/// store's writer: one per file at a time, since writes go straight to the shared
/// mapping. Any number of read-only handles ([`VectorCache::open_read_only`]) may
/// search meanwhile.
pub struct VectorCache {
    path: PathBuf,
    /// Keeps the backing file open; `None` for a cache in anonymous memory
    /// ([`VectorCache::in_memory`]).
    file: Option<File>,
    map: CacheMap,
    header: VectorFileHeader,
    layout: VectorFileLayout,
    /// key hash → slot of its live row.
    index: HashMap<u64, u64>,
}

impl VectorCache {
    /// Create (or truncate and replace) the cache file at `path`.
    pub fn create(path: &Path, opts: &VectorCacheOptions) -> Result<Self, VectorCacheError> {
        let header = Self::new_header(opts)?;
        let (file, map, layout) = create_mapped(path, &header).map_err(create_error)?;
        Ok(VectorCache {
            path: path.to_path_buf(),
            file: Some(file),
            map: CacheMap::Writable(map),
            header,
            layout,
            index: HashMap::new(),
        })
    }

    /// A cache with the file's layout in anonymous memory, backed by no file: what a
    /// sealed store searches (format-spec/encryption.md), whose vectors must not
    /// reach the disk in the clear. It grows in memory; `flush` does nothing.
    pub fn in_memory(opts: &VectorCacheOptions) -> Result<Self, VectorCacheError> {
        let header = Self::new_header(opts)?;
        let (map, layout) = create_anon(&header).map_err(create_error)?;
        Ok(VectorCache {
            path: PathBuf::from(MEMORY_PATH),
            file: None,
            map: CacheMap::Writable(map),
            header,
            layout,
            index: HashMap::new(),
        })
    }

    /// Whether this cache lives in anonymous memory ([`VectorCache::in_memory`]).
    pub fn is_in_memory(&self) -> bool {
        self.file.is_none()
    }

    fn new_header(opts: &VectorCacheOptions) -> Result<VectorFileHeader, VectorCacheError> {
        if opts.dim == 0 || opts.dim > MAX_DIM {
            return Err(VectorCacheError::InvalidOptions(format!(
                "dim {} is outside 1..={MAX_DIM}",
                opts.dim
            )));
        }
        if opts.with_i8_columns && !opts.with_i8 {
            return Err(VectorCacheError::InvalidOptions(
                "with_i8_columns needs with_i8: the columns hold the i8 codes".into(),
            ));
        }
        let capacity = opts.initial_capacity.max(1);
        let mut flags = FLAG_F32;
        if opts.with_i8 {
            flags |= FLAG_I8;
        }
        if opts.with_i8_columns {
            flags |= FLAG_I8_COLUMNS;
        }
        if opts.with_bits {
            flags |= FLAG_BITS;
        }
        Ok(VectorFileHeader::new(
            opts.dim,
            flags,
            capacity,
            opts.embedder_id,
        ))
    }

    /// Whether this handle still shows what its file holds: the file at its path is
    /// the one it mapped (not replaced by a grow or a rebuild) and the header in the
    /// mapping is the one it validated (no slot appended, no new stamp since). A
    /// search may then reuse the handle instead of opening and indexing the file
    /// again; tombstones the writer sets meanwhile are read from the mapping anyway.
    pub fn is_current(&self) -> bool {
        let Some(file) = &self.file else {
            return true;
        };
        let same_file = match (
            super::stat::file_identity(file),
            super::stat::path_identity(&self.path),
        ) {
            (Ok(mapped), Ok(named)) => mapped == named,
            _ => false,
        };
        same_file && self.map.get(..HEADER_LEN) == Some(self.header.as_bytes())
    }

    /// Open an existing cache for searching only: mapped read-only, never repaired.
    /// A cache that needs a repair (a key live in two slots after a crash) is refused
    /// with [`VectorCacheError::Corrupt`]; the writer repairs it.
    pub fn open_read_only(
        path: &Path,
        opts: &VectorCacheOptions,
    ) -> Result<Self, VectorCacheError> {
        let file = File::open(path)?;
        let file_len = file.metadata()?.len();
        if file_len < HEADER_LEN as u64 {
            return Err(format_error(
                path,
                FormatError::Truncated {
                    len: file_len,
                    expected: HEADER_LEN as u64,
                },
            ));
        }
        // SAFETY: read-only shared mapping. The writer never shrinks a cache file in
        // place (growing rewrites a new file and renames it), and every read of the
        // mapping is bounds-checked against the validated header.
        let map = unsafe { MmapOptions::new().map(&file)? };
        Self::from_mapping(path, file, CacheMap::ReadOnly(map), opts)
    }

    /// Open an existing cache, validating header, CRC, file length and the live
    /// section, and checking it matches `opts` (except `initial_capacity`).
    ///
    /// Repairs one crash artefact in place: if a key is live in two slots (an
    /// upsert appended but did not tombstone the old slot), the later slot wins.
    pub fn open(path: &Path, opts: &VectorCacheOptions) -> Result<Self, VectorCacheError> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        let file_len = file.metadata()?.len();
        let corrupt = |e: FormatError| format_error(path, e);
        if file_len < HEADER_LEN as u64 {
            return Err(corrupt(FormatError::Truncated {
                len: file_len,
                expected: HEADER_LEN as u64,
            }));
        }
        // SAFETY: the mapping is only sound while no other process truncates or
        // rewrites the file. The cache's contract is one writer per file; we never
        // trust mapped bytes beyond what `check_file_len` and bounds checks allow.
        let map = unsafe { MmapOptions::new().map_mut(&file)? };
        Self::from_mapping(path, file, CacheMap::Writable(map), opts)
    }

    fn from_mapping(
        path: &Path,
        file: File,
        map: CacheMap,
        opts: &VectorCacheOptions,
    ) -> Result<Self, VectorCacheError> {
        let corrupt = |e: FormatError| format_error(path, e);
        let (header, layout) =
            vector_file::check_file_len(&map, map.len() as u64).map_err(corrupt)?;
        if header.embedder_id.get() != opts.embedder_id {
            return Err(VectorCacheError::EmbedderMismatch {
                path: path.to_path_buf(),
                found: header.embedder_id.get(),
                expected: opts.embedder_id,
            });
        }
        if header.dim.get() != opts.dim {
            return Err(VectorCacheError::FileDimensionMismatch {
                path: path.to_path_buf(),
                found: header.dim.get(),
                expected: opts.dim,
            });
        }
        if header.has_i8() != opts.with_i8 {
            return Err(VectorCacheError::QuantizationMismatch {
                path: path.to_path_buf(),
                found: header.has_i8(),
                expected: opts.with_i8,
            });
        }
        if header.has_i8_columns() != opts.with_i8_columns {
            return Err(VectorCacheError::ColumnsMismatch {
                path: path.to_path_buf(),
                found: header.has_i8_columns(),
                expected: opts.with_i8_columns,
            });
        }
        if header.has_bits() != opts.with_bits {
            return Err(VectorCacheError::BitsMismatch {
                path: path.to_path_buf(),
                found: header.has_bits(),
                expected: opts.with_bits,
            });
        }
        let mut cache = VectorCache {
            path: path.to_path_buf(),
            file: Some(file),
            map,
            header,
            layout,
            index: HashMap::new(),
        };
        cache.rebuild_index()?;
        Ok(cache)
    }

    /// Whether this handle may write (see [`VectorCache::open_read_only`]).
    pub fn is_writable(&self) -> bool {
        matches!(self.map, CacheMap::Writable(_))
    }

    fn require_writable(&self) -> Result<(), VectorCacheError> {
        if self.is_writable() {
            Ok(())
        } else {
            Err(VectorCacheError::InvalidOptions(format!(
                "vector cache {} is open read-only; only the store's writer changes it",
                self.path.display()
            )))
        }
    }

    fn rebuild_index(&mut self) -> Result<(), VectorCacheError> {
        let count = self.count();
        let (keys, live) = self.keys_and_live(count)?;
        let mut index = HashMap::with_capacity(count);
        let mut stale = Vec::new();
        for (slot, (&key, &flag)) in keys.iter().zip(live).enumerate() {
            match flag {
                SLOT_DEAD => {}
                SLOT_LIVE => {
                    if let Some(old) = index.insert(key, slot as u64) {
                        stale.push(old);
                    }
                }
                other => {
                    return Err(self.corrupt(format!("slot {slot} has live flag {other}")));
                }
            }
        }
        if !stale.is_empty() && !self.is_writable() {
            return Err(self.corrupt(format!(
                "{} keys are live in two slots (a crash mid-update); the store's writer repairs it",
                stale.len()
            )));
        }
        for slot in stale {
            self.set_live(slot, SLOT_DEAD);
        }
        self.index = index;
        Ok(())
    }

    /// Elements per vector.
    pub fn dim(&self) -> u32 {
        self.header.dim.get()
    }

    /// Number of live rows (distinct keys).
    pub fn len(&self) -> u64 {
        self.index.len() as u64
    }

    /// Whether the cache holds no live rows.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Slots allocated in the current file.
    pub fn capacity(&self) -> u64 {
        self.layout.capacity
    }

    /// Log sequence number this cache reflects, as last set by the caller.
    pub fn seq(&self) -> u64 {
        self.header.seq.get()
    }

    /// Record the log sequence number this cache now reflects. Persisted with the
    /// header; durable after [`flush`](Self::flush).
    pub fn set_seq(&mut self, seq: u64) -> Result<(), VectorCacheError> {
        self.require_writable()?;
        self.header.seq = U64::new(seq);
        self.write_header();
        Ok(())
    }

    /// Insert or replace the vector for `key_hash`.
    ///
    /// Appends a new slot; if the key already had one, that slot is tombstoned
    /// *after* the new row is visible, so a crash leaves at worst a duplicate that
    /// `open` resolves, never a lost key.
    pub fn upsert(&mut self, key_hash: u64, vector: &[f32]) -> Result<(), VectorCacheError> {
        self.require_writable()?;
        self.check_vector(vector)?;
        if self.header.count.get() >= self.layout.capacity {
            self.grow()?;
        }
        let slot = self.header.count.get();
        self.write_row(slot, vector);
        self.write_key(slot, key_hash);
        self.set_live(slot, SLOT_LIVE);
        // Readers of the mapping must see the row before the count that covers it.
        fence(Ordering::Release);
        self.header.count = U64::new(slot + 1);
        self.write_header();
        if let Some(old) = self.index.insert(key_hash, slot) {
            self.set_live(old, SLOT_DEAD);
        }
        Ok(())
    }

    /// Tombstone the vector for `key_hash`; returns whether it was present.
    pub fn remove(&mut self, key_hash: u64) -> Result<bool, VectorCacheError> {
        self.require_writable()?;
        match self.index.remove(&key_hash) {
            Some(slot) => {
                self.set_live(slot, SLOT_DEAD);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Whether `key_hash` has a live row.
    pub fn contains(&self, key_hash: u64) -> bool {
        self.index.contains_key(&key_hash)
    }

    /// The stored f32 vector for `key_hash`, if live.
    pub fn get(&self, key_hash: u64) -> Option<Vec<f32>> {
        let slot = *self.index.get(&key_hash)?;
        let sections = self.sections().ok()?;
        let start = usize::try_from(slot)
            .ok()?
            .checked_mul(sections.stride_f32)?;
        let row = sections.f32_rows.get(start..start + sections.dim)?;
        Some(row.to_vec())
    }

    /// Write dirty pages to disk (msync) and wait for completion.
    pub fn flush(&self) -> Result<(), VectorCacheError> {
        if self.is_in_memory() {
            return Ok(());
        }
        Ok(self.map.flush()?)
    }

    /// Drop this process's page mappings of the file. The bytes, written or not yet
    /// written back, stay in the OS page cache, and the next read maps them again.
    /// The writer calls it after each batch it follows: an index writes every row
    /// once and reads none back, so without it the resident set grows with the cache
    /// (about 1.5 KB a chunk at 384 dimensions) for the whole run.
    pub fn release_pages(&self) {
        if self.is_in_memory() {
            // An anonymous map has no file to fault back from: dropping its pages
            // would zero them.
            return;
        }
        self.map.release_file_range(0, self.map.len());
    }

    /// Path of the backing file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    // ---- internals -------------------------------------------------------

    fn count(&self) -> usize {
        // count <= capacity and the layout fits in usize, both checked on open.
        self.header.count.get() as usize
    }

    fn corrupt(&self, reason: String) -> VectorCacheError {
        VectorCacheError::Corrupt {
            path: self.path.clone(),
            reason,
        }
    }

    fn check_vector(&self, v: &[f32]) -> Result<(), VectorCacheError> {
        if v.len() != self.dim() as usize {
            return Err(VectorCacheError::DimensionMismatch {
                expected: self.dim(),
                found: v.len(),
            });
        }
        match v.iter().position(|x| !x.is_finite()) {
            Some(index) => Err(VectorCacheError::NonFinite {
                index,
                value: v[index],
            }),
            None => Ok(()),
        }
    }

    fn keys_and_live(&self, count: usize) -> Result<(&[u64], &[u8]), VectorCacheError> {
        let l = &self.layout;
        let keys = slice_of::<u64>(&self.map, l.key_hashes, count)
            .ok_or_else(|| self.corrupt("key hash section out of bounds".into()))?;
        let live = slice_of::<u8>(&self.map, l.live, count)
            .ok_or_else(|| self.corrupt("live section out of bounds".into()))?;
        Ok((keys, live))
    }

    pub(super) fn sections(&self) -> Result<Sections<'_>, VectorCacheError> {
        let l = &self.layout;
        let count = self.count();
        let (keys, live) = self.keys_and_live(count)?;
        let norms = slice_of::<f32>(&self.map, l.norms, count)
            .ok_or_else(|| self.corrupt("norm section out of bounds".into()))?;
        let stride_f32 = (l.stride_f32 / 4) as usize;
        let stride_i8 = l.stride_i8 as usize;
        let oob = |what: &str| self.corrupt(format!("{what} section out of bounds"));
        let f32_rows = slice_of::<f32>(&self.map, l.f32_rows, count * stride_f32)
            .ok_or_else(|| oob("f32 row"))?;
        let (scales, i8_rows) = match (l.scales, l.i8_rows) {
            (Some(s), Some(r)) => (
                slice_of::<f32>(&self.map, s, count).ok_or_else(|| oob("scale"))?,
                slice_of::<i8>(&self.map, r, count * stride_i8).ok_or_else(|| oob("i8 row"))?,
            ),
            _ => (&[][..], &[][..]),
        };
        // Whole blocks up to the one holding the last used slot.
        let blocks = count.div_ceil(COLUMN_BLOCK as usize);
        let i8_columns = match l.i8_columns {
            Some(c) => slice_of::<i8>(
                &self.map,
                c,
                blocks * self.dim() as usize * COLUMN_BLOCK as usize,
            )
            .ok_or_else(|| oob("i8 column"))?,
            None => &[][..],
        };
        let stride_bits = (l.stride_bits / 8) as usize;
        let bits = match l.bits {
            Some(b) => {
                slice_of::<u64>(&self.map, b, count * stride_bits).ok_or_else(|| oob("sign bit"))?
            }
            None => &[][..],
        };
        Ok(Sections {
            keys,
            live,
            norms,
            scales,
            f32_rows,
            i8_rows,
            i8_columns,
            bits,
            dim: self.dim() as usize,
            stride_f32,
            stride_i8,
            stride_bits,
        })
    }

    /// Write row data for `slot` (f32 row, norm, then i8 codes and scale). Slots are only
    /// ever written once per file, so padding stays zero from file creation.
    fn write_row(&mut self, slot: u64, v: &[f32]) {
        write_row_into(self.map.bytes_mut(), &self.layout, slot, v);
    }

    fn write_key(&mut self, slot: u64, key: u64) {
        let at = (self.layout.key_hashes + slot * 8) as usize;
        if let Some(dst) = self.map.bytes_mut().get_mut(at..at + 8) {
            dst.copy_from_slice(&key.to_le_bytes());
        }
    }

    fn set_live(&mut self, slot: u64, flag: u8) {
        if let Some(b) = self
            .map
            .bytes_mut()
            .get_mut((self.layout.live + slot) as usize)
        {
            *b = flag;
        }
    }

    fn write_header(&mut self) {
        self.header.seal();
        if let Some(dst) = self.map.bytes_mut().get_mut(..HEADER_LEN) {
            dst.copy_from_slice(self.header.as_bytes());
        }
    }
}

impl std::fmt::Debug for VectorCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorCache")
            .field("path", &self.path)
            .field("dim", &self.dim())
            .field("len", &self.len())
            .field("capacity", &self.layout.capacity)
            .field("seq", &self.seq())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
