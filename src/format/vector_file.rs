//! On-disk layout of the vector cache file (`vector-cache.md` is the normative spec).
//!
//! Owns: the 64-byte header struct, format constants, the arithmetic that places
//! each section, and validation of untrusted bytes against all of that.
//! Must never: open files, map memory, or panic on any input. Everything here is a
//! pure function of byte slices and integers so a fuzz target can drive it directly.

use zerocopy::little_endian::{U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// First 8 bytes of every vector cache file.
pub const MAGIC: [u8; 8] = *b"ENGRVEC\0";
/// The format version this code writes; it also reads version 1 (no i8 columns) and
/// version 2 (no sign bits).
pub const FORMAT_VERSION: u32 = 3;
/// Size of the header in bytes; also the alignment of every section and row.
pub const HEADER_LEN: usize = 64;
/// Alignment of every section start and every row stride.
pub const ALIGN: u64 = 64;
/// Flag bit: f32 rows are present. Always set in version 1.
pub const FLAG_F32: u32 = 1 << 0;
/// Flag bit: i8 quantized rows and per-slot scales are present.
pub const FLAG_I8: u32 = 1 << 1;
/// Flag bit (version 2): the i8 codes are also stored by column, in blocks of
/// [`COLUMN_BLOCK`] slots, so a query with few non-zero codes reads only its own
/// dimensions. Requires [`FLAG_I8`].
pub const FLAG_I8_COLUMNS: u32 = 1 << 2;
/// Flag bit (version 3): one sign bit per dimension of every slot, packed into
/// 64-bit words, for a Hamming-distance first pass over large caches.
pub const FLAG_BITS: u32 = 1 << 3;
/// Slots per block of the i8 column section: each dimension's codes for these slots
/// are contiguous (1 KiB), which a scan reads as one sequential stream.
pub const COLUMN_BLOCK: u64 = 1024;
/// Largest accepted dimension. Far above any real embedder; it exists so a
/// corrupt header cannot make layout arithmetic produce absurd strides.
pub const MAX_DIM: u32 = 1 << 16;
/// Live-section value for a slot that is empty or tombstoned.
pub const SLOT_DEAD: u8 = 0;
/// Live-section value for a slot holding the current vector of its key.
pub const SLOT_LIVE: u8 = 1;

/// The 64-byte file header, read in place from the start of the file.
///
/// Little-endian, unaligned field types so it can be viewed over any byte slice.
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, Debug, PartialEq, Eq,
)]
#[repr(C)]
pub struct VectorFileHeader {
    /// Must equal [`MAGIC`].
    pub magic: [u8; 8],
    /// 1, 2 or 3 ([`FORMAT_VERSION`]).
    pub version: U32,
    /// Number of f32 elements per vector, 1..=[`MAX_DIM`].
    pub dim: U32,
    /// [`FLAG_F32`] (required) | optional [`FLAG_I8`] | optional
    /// [`FLAG_I8_COLUMNS`] (version 2, with `FLAG_I8`) | optional [`FLAG_BITS`]
    /// (version 3); other bits must be zero.
    pub flags: U32,
    /// Must be zero.
    pub reserved0: U32,
    /// Slots allocated in every section.
    pub capacity: U64,
    /// Slots used (append-only); `count <= capacity`.
    pub count: U64,
    /// Log sequence number this cache reflects; opaque to the format.
    pub seq: U64,
    /// Hash of the embedder name; opaque to the format.
    pub embedder_id: U64,
    /// Must be zero.
    pub reserved1: U32,
    /// CRC-32 (IEEE, as computed by crc32fast) of header bytes 0..60.
    pub crc: U32,
}

const _: () = assert!(core::mem::size_of::<VectorFileHeader>() == HEADER_LEN);

/// Byte offset of the CRC field; the CRC covers everything before it.
pub const CRC_OFFSET: usize = 60;

impl VectorFileHeader {
    /// A fresh header for an empty file; the CRC is filled in. `flags` holds
    /// [`FLAG_F32`] and the optional sections wanted.
    pub fn new(dim: u32, flags: u32, capacity: u64, embedder_id: u64) -> Self {
        let mut h = VectorFileHeader {
            magic: MAGIC,
            version: U32::new(FORMAT_VERSION),
            dim: U32::new(dim),
            flags: U32::new(flags),
            reserved0: U32::new(0),
            capacity: U64::new(capacity),
            count: U64::new(0),
            seq: U64::new(0),
            embedder_id: U64::new(embedder_id),
            reserved1: U32::new(0),
            crc: U32::new(0),
        };
        h.seal();
        h
    }

    /// CRC-32 over the bytes that precede the CRC field.
    pub fn compute_crc(&self) -> u32 {
        crc32fast::hash(&self.as_bytes()[..CRC_OFFSET])
    }

    /// Recompute and store the CRC; call after changing any other field.
    pub fn seal(&mut self) {
        self.crc = U32::new(self.compute_crc());
    }

    /// Whether the file carries i8 rows and scales.
    pub fn has_i8(&self) -> bool {
        self.flags.get() & FLAG_I8 != 0
    }

    /// Whether the file carries the i8 codes by column as well.
    pub fn has_i8_columns(&self) -> bool {
        self.flags.get() & FLAG_I8_COLUMNS != 0
    }

    /// Whether the file carries every slot's sign bits.
    pub fn has_bits(&self) -> bool {
        self.flags.get() & FLAG_BITS != 0
    }
}

/// Why a byte slice is not a valid vector cache file (format-level; no path).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    /// Fewer bytes than the header or than the layout the header describes.
    #[error("file is truncated: {len} bytes, expected {expected}")]
    Truncated { len: u64, expected: u64 },
    /// More bytes than the layout the header describes.
    #[error("file has trailing bytes: {len} bytes, expected {expected}")]
    TrailingBytes { len: u64, expected: u64 },
    /// The first 8 bytes are not [`MAGIC`].
    #[error("bad magic {found:02x?}; not a vector cache file")]
    BadMagic { found: [u8; 8] },
    /// Written by a newer engram.
    #[error("format version {found} is newer than supported version {supported}")]
    VersionTooNew { found: u32, supported: u32 },
    /// Version 0 was never written by any engram.
    #[error("format version {found} is invalid")]
    BadVersion { found: u32 },
    /// Header CRC mismatch.
    #[error("header CRC mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    BadCrc { stored: u32, computed: u32 },
    /// A header field holds a value its version never writes.
    #[error("invalid header field {field}: {value}")]
    BadField { field: &'static str, value: u64 },
    /// `count` exceeds `capacity`.
    #[error("count {count} exceeds capacity {capacity}")]
    CountExceedsCapacity { count: u64, capacity: u64 },
    /// The sizes in the header do not fit in a 64-bit address space.
    #[error("layout for dim {dim} and capacity {capacity} overflows")]
    LayoutOverflow { dim: u32, capacity: u64 },
}

/// Byte offsets and sizes of every section for one (dim, flags, capacity).
///
/// All offsets are multiples of [`ALIGN`]; `scales`/`i8_rows` are `None` without i8,
/// `i8_columns` without [`FLAG_I8_COLUMNS`], `bits` without [`FLAG_BITS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VectorFileLayout {
    /// Elements per vector.
    pub dim: u32,
    /// Slots in every section.
    pub capacity: u64,
    /// Offset of `[u64 LE; capacity]` key hashes.
    pub key_hashes: u64,
    /// Offset of `[u8; capacity]` live flags.
    pub live: u64,
    /// Offset of `[f32 LE; capacity]` L2 norms of the f32 rows.
    pub norms: u64,
    /// Offset of `[f32 LE; capacity]` per-slot i8 scales.
    pub scales: Option<u64>,
    /// Offset of the f32 rows.
    pub f32_rows: u64,
    /// Bytes from one f32 row to the next: `align64(dim * 4)`.
    pub stride_f32: u64,
    /// Offset of the i8 rows.
    pub i8_rows: Option<u64>,
    /// Bytes from one i8 row to the next: `align64(dim)`.
    pub stride_i8: u64,
    /// Offset of the i8 column blocks: slot `i`'s code `j` is at
    /// `i8_columns + ((i / COLUMN_BLOCK) * dim + j) * COLUMN_BLOCK + i % COLUMN_BLOCK`.
    pub i8_columns: Option<u64>,
    /// Offset of the sign bits: slot `i`'s row of `stride_bits` bytes at
    /// `bits + i * stride_bits`.
    pub bits: Option<u64>,
    /// Bytes from one slot's sign bits to the next: `8 * ceil(dim / 64)`.
    pub stride_bits: u64,
    /// Exact file length.
    pub total_len: u64,
}

impl VectorFileLayout {
    /// Byte offset of slot `slot`'s code for dimension `j` in the i8 column blocks;
    /// `None` without columns or out of range.
    pub fn column_code(&self, slot: u64, j: u32) -> Option<u64> {
        let columns = self.i8_columns?;
        if slot >= self.capacity || j >= self.dim {
            return None;
        }
        let block = slot / COLUMN_BLOCK;
        let column = block * u64::from(self.dim) + u64::from(j);
        Some(columns + column * COLUMN_BLOCK + slot % COLUMN_BLOCK)
    }
}

/// Round `n` up to a multiple of [`ALIGN`], or `None` on overflow.
pub fn align64(n: u64) -> Option<u64> {
    n.checked_add(ALIGN - 1).map(|v| v & !(ALIGN - 1))
}

impl VectorFileLayout {
    /// Compute the layout, failing (never panicking) if any size overflows `u64`
    /// or the platform's `usize`, so callers may index with the results freely.
    pub fn compute(dim: u32, flags: u32, capacity: u64) -> Result<Self, FormatError> {
        let overflow = FormatError::LayoutOverflow { dim, capacity };
        let with_i8 = flags & FLAG_I8 != 0;
        let with_columns = with_i8 && flags & FLAG_I8_COLUMNS != 0;
        let with_bits = flags & FLAG_BITS != 0;
        let go = || -> Option<Self> {
            let stride_f32 = align64(u64::from(dim).checked_mul(4)?)?;
            let stride_i8 = align64(u64::from(dim))?;
            let stride_bits = u64::from(dim).div_ceil(64) * 8;
            let key_hashes = HEADER_LEN as u64;
            let live = align64(key_hashes.checked_add(capacity.checked_mul(8)?)?)?;
            let norms = align64(live.checked_add(capacity)?)?;
            let mut end = align64(norms.checked_add(capacity.checked_mul(4)?)?)?;
            let scales = if with_i8 {
                let at = end;
                end = align64(at.checked_add(capacity.checked_mul(4)?)?)?;
                Some(at)
            } else {
                None
            };
            let f32_rows = end;
            end = f32_rows.checked_add(capacity.checked_mul(stride_f32)?)?;
            let i8_rows = if with_i8 {
                let at = end;
                end = at.checked_add(capacity.checked_mul(stride_i8)?)?;
                Some(at)
            } else {
                None
            };
            let i8_columns = if with_columns {
                let at = end;
                let blocks = capacity.div_ceil(COLUMN_BLOCK);
                let block_bytes = u64::from(dim).checked_mul(COLUMN_BLOCK)?;
                end = at.checked_add(blocks.checked_mul(block_bytes)?)?;
                Some(at)
            } else {
                None
            };
            let bits = if with_bits {
                let at = align64(end)?;
                end = at.checked_add(capacity.checked_mul(stride_bits)?)?;
                Some(at)
            } else {
                None
            };
            usize::try_from(end).ok()?;
            isize::try_from(end).ok()?;
            Some(VectorFileLayout {
                dim,
                capacity,
                key_hashes,
                live,
                norms,
                scales,
                f32_rows,
                stride_f32,
                i8_rows,
                stride_i8,
                i8_columns,
                bits,
                stride_bits,
                total_len: end,
            })
        };
        go().ok_or(overflow)
    }
}

/// Validate the first [`HEADER_LEN`] bytes of `bytes` as a header and return a copy.
///
/// Checks, in order: length, magic, version, CRC, then field ranges and that the
/// layout is representable. Does not compare against the file length; see
/// [`check_file_bytes`]. Never panics on any input.
pub fn check_header_bytes(bytes: &[u8]) -> Result<VectorFileHeader, FormatError> {
    let Ok((header, _)) = VectorFileHeader::ref_from_prefix(bytes) else {
        return Err(FormatError::Truncated {
            len: bytes.len() as u64,
            expected: HEADER_LEN as u64,
        });
    };
    if header.magic != MAGIC {
        return Err(FormatError::BadMagic {
            found: header.magic,
        });
    }
    // Version before CRC: a future version may checksum differently, and
    // "too new" is the more useful message for a file from a newer engram.
    let version = header.version.get();
    if version > FORMAT_VERSION {
        return Err(FormatError::VersionTooNew {
            found: version,
            supported: FORMAT_VERSION,
        });
    }
    if version == 0 {
        return Err(FormatError::BadVersion { found: version });
    }
    let computed = header.compute_crc();
    if header.crc.get() != computed {
        return Err(FormatError::BadCrc {
            stored: header.crc.get(),
            computed,
        });
    }
    let dim = header.dim.get();
    if dim == 0 || dim > MAX_DIM {
        return Err(FormatError::BadField {
            field: "dim",
            value: dim.into(),
        });
    }
    let flags = header.flags.get();
    let known = match version {
        1 => FLAG_F32 | FLAG_I8,
        2 => FLAG_F32 | FLAG_I8 | FLAG_I8_COLUMNS,
        _ => FLAG_F32 | FLAG_I8 | FLAG_I8_COLUMNS | FLAG_BITS,
    };
    let columns_without_rows = flags & FLAG_I8_COLUMNS != 0 && flags & FLAG_I8 == 0;
    if flags & FLAG_F32 == 0 || flags & !known != 0 || columns_without_rows {
        return Err(FormatError::BadField {
            field: "flags",
            value: flags.into(),
        });
    }
    if header.reserved0.get() != 0 {
        return Err(FormatError::BadField {
            field: "reserved0",
            value: header.reserved0.get().into(),
        });
    }
    if header.reserved1.get() != 0 {
        return Err(FormatError::BadField {
            field: "reserved1",
            value: header.reserved1.get().into(),
        });
    }
    let (count, capacity) = (header.count.get(), header.capacity.get());
    if capacity == 0 {
        return Err(FormatError::BadField {
            field: "capacity",
            value: 0,
        });
    }
    if count > capacity {
        return Err(FormatError::CountExceedsCapacity { count, capacity });
    }
    VectorFileLayout::compute(dim, flags, capacity)?;
    Ok(*header)
}

/// Validate a header plus the total file length it implies.
///
/// `file_len` is the real length of the file whose first bytes are `header_bytes`
/// (for a whole file in memory, pass its `len()`).
pub fn check_file_len(
    header_bytes: &[u8],
    file_len: u64,
) -> Result<(VectorFileHeader, VectorFileLayout), FormatError> {
    let header = check_header_bytes(header_bytes)?;
    let layout =
        VectorFileLayout::compute(header.dim.get(), header.flags.get(), header.capacity.get())?;
    if file_len < layout.total_len {
        return Err(FormatError::Truncated {
            len: file_len,
            expected: layout.total_len,
        });
    }
    if file_len > layout.total_len {
        return Err(FormatError::TrailingBytes {
            len: file_len,
            expected: layout.total_len,
        });
    }
    Ok((header, layout))
}

/// Validate a whole file held in memory: header, CRC, length, and that every used
/// slot's live flag is 0 or 1. Pure; intended for fuzzing and offline checks.
pub fn check_file_bytes(bytes: &[u8]) -> Result<(VectorFileHeader, VectorFileLayout), FormatError> {
    let (header, layout) = check_file_len(bytes, bytes.len() as u64)?;
    let count = header.count.get() as usize;
    let live_at = layout.live as usize;
    let live = bytes
        .get(live_at..live_at + count)
        .ok_or(FormatError::Truncated {
            len: bytes.len() as u64,
            expected: layout.total_len,
        })?;
    if let Some(&bad) = live.iter().find(|&&b| b > SLOT_LIVE) {
        return Err(FormatError::BadField {
            field: "live flag",
            value: bad.into(),
        });
    }
    Ok((header, layout))
}

/// L2 norm of a row as stored in the norms section (accumulated in f64 so the
/// stored value does not depend on summation order or SIMD width).
pub fn l2_norm(x: &[f32]) -> f32 {
    x.iter()
        .map(|&v| f64::from(v) * f64::from(v))
        .sum::<f64>()
        .sqrt() as f32
}

/// Symmetric per-row i8 quantization: `scale = max|x| / 127`, `q = round(x / scale)`
/// clamped to [-127, 127]. A zero vector gets scale 0 and all-zero codes.
///
/// `out` must be at least `x.len()` long; extra elements are left untouched.
pub fn quantize_i8(x: &[f32], out: &mut [i8]) -> f32 {
    let max = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    if max == 0.0 || !max.is_finite() {
        out.iter_mut().take(x.len()).for_each(|q| *q = 0);
        return 0.0;
    }
    let scale = max / 127.0;
    let inv = 127.0 / max;
    for (q, v) in out.iter_mut().zip(x) {
        // `as` saturates, but clamp explicitly so -128 is never produced.
        *q = (v * inv).round().clamp(-127.0, 127.0) as i8;
    }
    scale
}

/// Sign bits of a row: bit `j % 64` of little-endian word `j / 64` is 1 when
/// `x[j] > 0` (so byte `j / 8`, bit `j % 8`). Bits past `x.len()` are left as they
/// are (zero in a fresh slot); `out` should hold `ceil(x.len() / 64)` words.
pub fn sign_bits(x: &[f32], out: &mut [u64]) {
    for (word, chunk) in out.iter_mut().zip(x.chunks(64)) {
        *word = chunk
            .iter()
            .enumerate()
            .fold(0u64, |w, (b, &v)| w | (u64::from(v > 0.0) << b));
    }
}

#[cfg(test)]
mod tests;
