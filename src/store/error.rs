//! The store's typed errors. Each message says what was wrong and, where there is
//! one, what to do about it.

use std::io;
use std::path::PathBuf;

use crate::format::FormatError;

/// Everything that can go wrong in the store layer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path} is not an engram store: {reason}")]
    NotAStore { path: PathBuf, reason: String },
    /// A store directory whose log is gone while other files of the store remain:
    /// refused by every open, since a new empty log there would wipe the tracker.
    #[error("{path} holds {found} but no blob.dat: the store's log is missing, and nothing was changed; restore blob.dat from a backup, or run `engram init` in an empty directory to start a new store")]
    LogMissing { path: PathBuf, found: String },
    #[error("{path}: {source}")]
    Format {
        path: PathBuf,
        #[source]
        source: FormatError,
    },
    #[error("record at offset {offset} of {path} is damaged: {reason}; run `engram verify`, then `engram rebuild` or restore from a backup")]
    Corrupt {
        path: PathBuf,
        offset: u64,
        reason: String,
    },
    #[error("tracker.db: {0}")]
    Sqlite(#[source] rusqlite::Error),
    /// SQLite found `tracker.db` damaged (malformed, or not a database at all).
    #[error("tracker.db is damaged ({0}); run `engram rebuild`, which rebuilds it from blob.dat alone without reading it")]
    TrackerDamaged(#[source] rusqlite::Error),
    #[error("vector cache: {0}")]
    VectorCache(#[from] crate::store::vector_cache::VectorCacheError),
    #[error("invalid input: {0}")]
    Invalid(String),
    /// Two different keys with the same 64-bit hash: refused rather than letting one
    /// silently replace the other.
    #[error("key {new:?} has the same 64-bit hash as the stored key {existing:?}; the write was refused (rename one of them)")]
    KeyHashCollision { new: String, existing: String },
    #[error(transparent)]
    Seal(#[from] crate::store::SealError),
    #[error("this store's vectors are sealed under key {key_id}, and no key was given; set key_file (or ENGRAM_KEY_FILE / ENGRAM_KEY) to that key")]
    KeyRequired { key_id: String },
    #[error("a key for sealed vectors was given, but this store's vectors are not sealed; run `engram encrypt --key-file FILE` to seal them, or give no key")]
    NotSealed,
    #[error("the store at {path} was opened read-only; it cannot be written")]
    ReadOnly { path: PathBuf },
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> StoreError {
        use rusqlite::ErrorCode::{DatabaseCorrupt, NotADatabase};
        match e.sqlite_error_code() {
            Some(DatabaseCorrupt | NotADatabase) => StoreError::TrackerDamaged(e),
            _ => StoreError::Sqlite(e),
        }
    }
}

impl StoreError {
    pub(crate) fn io(
        op: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(io::Error) -> StoreError {
        let path = path.into();
        move |source| StoreError::Io { op, path, source }
    }
}

/// Shorthand for the store's results.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;
