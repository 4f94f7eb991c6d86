//! Error type of the vector cache.
//!
//! Owns: every way a cache operation can fail and the operator-facing message
//! for it (what was wrong, what to do). Must never: carry non-`Send` state or
//! hide an I/O error's kind.

use std::path::{Path, PathBuf};

use crate::format::vector_file::FormatError;

/// Errors from the vector cache. Every file-content error tells the operator
/// what to do; deleting the file is always safe.
#[derive(Debug, thiserror::Error)]
pub enum VectorCacheError {
    /// The operating system failed a file or mapping operation.
    #[error("vector cache I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// The file is not a valid vector cache (truncated, bad magic/CRC/fields).
    #[error(
        "vector cache {path:?} is corrupt: {reason}; delete the file; it is rebuilt from the log"
    )]
    Corrupt {
        /// File that failed validation.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// The file was written by a newer engram.
    #[error("vector cache {path:?} has format version {found}, this engram supports {supported}; upgrade engram, or delete the file; it is rebuilt from the log")]
    VersionTooNew {
        /// File that failed validation.
        path: PathBuf,
        /// Version in the file.
        found: u32,
        /// Highest version this code reads.
        supported: u32,
    },
    /// The file belongs to a different embedder.
    #[error("vector cache {path:?} was built by embedder {found:#018x}, expected {expected:#018x}; delete the file; it is rebuilt from the log")]
    EmbedderMismatch {
        /// File that failed validation.
        path: PathBuf,
        /// Embedder id in the file.
        found: u64,
        /// Embedder id the caller asked for.
        expected: u64,
    },
    /// The file's dimension differs from the caller's.
    #[error("vector cache {path:?} has dimension {found}, expected {expected}; delete the file; it is rebuilt from the log")]
    FileDimensionMismatch {
        /// File that failed validation.
        path: PathBuf,
        /// Dimension in the file.
        found: u32,
        /// Dimension the caller asked for.
        expected: u32,
    },
    /// The file's i8 section presence differs from the caller's `with_i8`.
    #[error("vector cache {path:?} has i8 rows = {found}, expected {expected}; delete the file; it is rebuilt from the log")]
    QuantizationMismatch {
        /// File that failed validation.
        path: PathBuf,
        /// Whether the file has i8 rows.
        found: bool,
        /// Whether the caller asked for i8 rows.
        expected: bool,
    },
    /// The file's i8 column section presence differs from the caller's
    /// `with_i8_columns` (a file from an engram before format version 2 has none).
    #[error("vector cache {path:?} has i8 columns = {found}, expected {expected}; delete the file; it is rebuilt from the log")]
    ColumnsMismatch {
        /// File that failed validation.
        path: PathBuf,
        /// Whether the file has i8 columns.
        found: bool,
        /// Whether the caller asked for them.
        expected: bool,
    },
    /// The file's sign-bit section presence differs from the caller's `with_bits`
    /// (a file from an engram before format version 3 has none).
    #[error("vector cache {path:?} has sign bits = {found}, expected {expected}; delete the file; it is rebuilt from the log")]
    BitsMismatch {
        /// File that failed validation.
        path: PathBuf,
        /// Whether the file has sign bits.
        found: bool,
        /// Whether the caller asked for them.
        expected: bool,
    },
    /// A vector or query has the wrong number of elements.
    #[error("vector has {found} elements but the cache dimension is {expected}")]
    DimensionMismatch {
        /// Cache dimension.
        expected: u32,
        /// Elements supplied.
        found: usize,
    },
    /// A vector or query contains NaN or infinity.
    #[error("vector element {index} is {value}; embeddings must be finite")]
    NonFinite {
        /// Position of the first bad element.
        index: usize,
        /// The bad value.
        value: f32,
    },
    /// A cosine query with zero norm has no direction to compare against.
    #[error("cosine query vector is all zeros; it has no direction")]
    ZeroQuery,
    /// `ScanMode::I8Rerank` on a cache created without i8 rows.
    #[error("i8 scan requested but this cache has no i8 rows; create it with with_i8 = true or use ScanMode::F32")]
    NoI8Rows,
    /// `ScanMode::Binary` on a cache created without sign bits.
    #[error("binary scan requested but this cache has no sign bits; create it with with_bits = true or use ScanMode::Auto")]
    NoBits,
    /// Options that can never describe a valid cache.
    #[error("invalid vector cache options: {0}")]
    InvalidOptions(String),
}

pub(crate) fn format_error(path: &Path, e: FormatError) -> VectorCacheError {
    match e {
        FormatError::VersionTooNew { found, supported } => VectorCacheError::VersionTooNew {
            path: path.to_path_buf(),
            found,
            supported,
        },
        other => VectorCacheError::Corrupt {
            path: path.to_path_buf(),
            reason: other.to_string(),
        },
    }
}
