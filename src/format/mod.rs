//! The format layer: the exact bytes of engram's files, as `format-spec/` states them.
//!
//! Everything here is pure: it encodes and checks byte slices and never opens a file,
//! maps memory or talks to SQLite, so it builds with no optional dependency and is what
//! the fuzz targets exercise. When this code and `format-spec/` disagree, one of them
//! is a bug.

pub mod commit;
pub mod file_header;
pub mod record;
pub mod sealed;
pub mod vector_file;

pub use commit::{BatchCrc, CommitBody, COMMIT_BODY_LEN};
pub use file_header::{
    FileHeader, BLOB_MAGIC, FILE_HEADER_LEN, FORMAT_VERSION, FORMAT_VERSION_PLAIN,
    FORMAT_VERSION_SEALED,
};
pub use record::{
    decode_record, encode_record, padded_len, RecordFields, RecordHeader, RecordKind, RecordView,
    FLAG_KEEP_HISTORY, FLAG_SEALED, MAX_PAYLOAD_LEN, RECORD_ALIGN, RECORD_HEADER_LEN,
};

/// What is wrong with a run of bytes that should hold engram's format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("not an engram blob log (bad magic)")]
    NotABlobLog,
    #[error("blob log header is cut short ({len} of 64 bytes)")]
    TruncatedFileHeader { len: usize },
    #[error("the store was written by a newer engram (format version {found}; this build reads up to {supported}); upgrade engram to open it")]
    VersionTooNew { found: u32, supported: u32 },
    #[error("blob log header is damaged: {0}")]
    BadFileHeader(&'static str),
    #[error("zero-filled space: the end of the log's data")]
    ZeroFill,
    #[error("record is cut short: needs {need} bytes, {have} present")]
    Truncated { need: usize, have: usize },
    #[error("record is damaged: {0}")]
    BadRecord(&'static str),
    #[error("record kind {0:#04x} is unknown to this version")]
    UnknownKind(u8),
    #[error("payload of {len} bytes is over the 1 GiB record limit")]
    PayloadTooLarge { len: u64 },
}
