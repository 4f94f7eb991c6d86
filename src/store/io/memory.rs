//! Trackers in memory: a store directory registered here keeps its `tracker.db` in
//! SQLite's `memdb` VFS instead of a file.
//!
//! For the fuzzer and tests that open stores by the thousand. The store runs the same
//! SQL on the same SQLite; only the pages live in this process, not in a file with a
//! WAL and a shared-memory index beside it. An image of a tracker, saved once, can be
//! restored per store instead of its schema being made again.
//!
//! Restoring an image is copying a file over the tracker: connections open across it
//! see the new bytes at their next transaction, by SQLite's own check of the file's
//! change counter, which a restore sets above every one this tracker has had (a
//! restored image would otherwise carry a counter some connection already saw).
//!
//! Connections are not kept for reuse between stores, though that would save each
//! connection's parse of the schema: a kept connection's caches make libFuzzer's per
//! input count of mallocs and frees uneven, and every uneven input costs a leak scan
//! (measured: 50 execs/s with reuse against 116 without, benches/RESULTS.md).
//!
//! This module must never decide anything about the store: it says where the tracker's
//! pages are.

use std::os::raw::c_int;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use rusqlite::{ffi, Connection, OpenFlags};

use crate::store::error::{Result, StoreError};

/// Where SQLite's file header keeps the change counter, and its copy "valid for".
const COUNTER_AT: [usize; 2] = [24, 92];

static MOUNTED: AtomicUsize = AtomicUsize::new(0);
static MOUNTS: RwLock<Vec<Arc<Mount>>> = RwLock::new(Vec::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

struct Mount {
    /// The `tracker.db` path this mount stands for.
    tracker: PathBuf,
    /// The memdb database's name (shared by every connection that names it).
    name: String,
    /// Keeps the database alive while no store has it open, and reaches its bytes.
    keeper: Mutex<Connection>,
    exists: AtomicBool,
    /// The highest change counter the database has had.
    highest: Mutex<u32>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn sqlite_error(code: c_int, what: String) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(ffi::Error::new(code), Some(what))
}

/// The store directory `dir`'s tracker, held in memory while this value lives. Its
/// tracker starts absent, as in a directory without `tracker.db`.
pub struct MemoryTracker(Arc<Mount>);

impl MemoryTracker {
    /// Keep `dir`'s `tracker.db` in memory from now on. Fails when it already is.
    pub fn mount(dir: &Path) -> Result<MemoryTracker> {
        let tracker = dir.join(crate::store::TRACKER_FILE);
        let mut mounts = MOUNTS
            .write()
            .map_err(|_| StoreError::Invalid("memory trackers poisoned".into()))?;
        if mounts.iter().any(|m| m.tracker == tracker) {
            return Err(StoreError::Invalid(format!(
                "{} is already held in memory",
                tracker.display()
            )));
        }
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let name = format!("/engram-memory-{}-{id}/tracker.db", std::process::id());
        let keeper = Connection::open_with_flags(uri(&name), OpenFlags::default())?;
        let mount = Arc::new(Mount {
            tracker,
            name,
            keeper: Mutex::new(keeper),
            exists: AtomicBool::new(false),
            highest: Mutex::new(0),
        });
        mounts.push(Arc::clone(&mount));
        MOUNTED.fetch_add(1, Ordering::SeqCst);
        Ok(MemoryTracker(mount))
    }

    /// Whether the tracker exists (was restored, or created by an open).
    pub fn exists(&self) -> bool {
        self.0.exists.load(Ordering::SeqCst)
    }

    /// The tracker's bytes as they are now: a database image for [`Self::restore`].
    pub fn image(&self) -> Result<Vec<u8>> {
        let keeper = lock(&self.0.keeper);
        let file = RawFile::of(&keeper)?;
        let len = usize::try_from(file.size()?)
            .map_err(|_| StoreError::Invalid("memory tracker too large".into()))?;
        let mut bytes = vec![0u8; len];
        file.read(&mut bytes, 0)?;
        Ok(bytes)
    }

    /// Make the tracker `image` (from [`Self::image`]), as if that file were copied
    /// over it.
    pub fn restore(&self, image: &[u8]) -> Result<()> {
        if image.len() < 100 || image[18] == 2 {
            return Err(StoreError::Invalid(
                "not an image of a memory tracker (one from MemoryTracker::image)".into(),
            ));
        }
        let keeper = lock(&self.0.keeper);
        let file = RawFile::of(&keeper)?;
        let mut highest = lock(&self.0.highest);
        let counter = highest.max(file.counter()?).wrapping_add(1);
        *highest = counter;
        let mut bytes = image.to_vec();
        for at in COUNTER_AT {
            bytes[at..at + 4].copy_from_slice(&counter.to_be_bytes());
        }
        file.write(&bytes, 0)?;
        file.truncate(bytes.len() as i64)?;
        self.0.exists.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// Remove the tracker, as deleting `tracker.db` would (close the stores on it
    /// first: SQLite would let their connections read the empty file).
    pub fn remove(&self) -> Result<()> {
        let keeper = lock(&self.0.keeper);
        let file = RawFile::of(&keeper)?;
        let mut highest = lock(&self.0.highest);
        *highest = highest.max(file.counter()?);
        file.truncate(0)?;
        self.0.exists.store(false, Ordering::SeqCst);
        Ok(())
    }
}

impl Drop for MemoryTracker {
    fn drop(&mut self) {
        if let Ok(mut mounts) = MOUNTS.write() {
            mounts.retain(|m| !Arc::ptr_eq(m, &self.0));
        }
        MOUNTED.fetch_sub(1, Ordering::SeqCst);
    }
}

fn uri(name: &str) -> String {
    format!("file:{name}?vfs=memdb")
}

fn lookup(path: &Path) -> Option<Arc<Mount>> {
    if MOUNTED.load(Ordering::Relaxed) == 0 {
        return None;
    }
    MOUNTS
        .read()
        .ok()?
        .iter()
        .find(|m| m.tracker == path)
        .cloned()
}

/// Whether the database at `path` exists.
pub(crate) fn db_exists(path: &Path) -> bool {
    match lookup(path) {
        Some(m) => m.exists.load(Ordering::SeqCst),
        None => path.exists(),
    }
}

/// Open the SQLite database at `path` with `flags`: the file, or the memory tracker
/// standing for it.
pub(crate) fn open_db(path: &Path, flags: OpenFlags) -> rusqlite::Result<Connection> {
    let Some(mount) = lookup(path) else {
        return Connection::open_with_flags(path, flags);
    };
    if !mount.exists.load(Ordering::SeqCst) {
        if !flags.contains(OpenFlags::SQLITE_OPEN_CREATE) {
            return Err(sqlite_error(
                ffi::SQLITE_CANTOPEN,
                format!("{} does not exist", path.display()),
            ));
        }
        mount.exists.store(true, Ordering::SeqCst);
    }
    Connection::open_with_flags(uri(&mount.name), flags | OpenFlags::SQLITE_OPEN_URI)
}

/// The keeper's open file of the database, read and written below SQLite's pager: the
/// memdb store behind it is the one every connection to the name shares.
struct RawFile<'c> {
    file: *mut ffi::sqlite3_file,
    methods: &'c ffi::sqlite3_io_methods,
}

impl<'c> RawFile<'c> {
    fn of(keeper: &'c Connection) -> Result<RawFile<'c>> {
        let mut file: *mut ffi::sqlite3_file = std::ptr::null_mut();
        // SAFETY: FILE_POINTER stores the main database's `sqlite3_file` pointer into
        // `file`; the handle is the keeper's, open for as long as `keeper` is borrowed.
        let rc = unsafe {
            ffi::sqlite3_file_control(
                keeper.handle(),
                c"main".as_ptr(),
                ffi::SQLITE_FCNTL_FILE_POINTER,
                (&mut file as *mut *mut ffi::sqlite3_file).cast(),
            )
        };
        // SAFETY: a non-null file from SQLite is open, with its methods, until closed.
        let methods = (rc == ffi::SQLITE_OK && !file.is_null())
            .then(|| unsafe { (*file).pMethods.as_ref() })
            .flatten()
            .ok_or_else(|| sqlite_error(ffi::SQLITE_MISUSE, "no file behind the keeper".into()))?;
        Ok(RawFile { file, methods })
    }

    fn check(rc: c_int, what: &str) -> Result<()> {
        if rc == ffi::SQLITE_OK {
            Ok(())
        } else {
            Err(sqlite_error(rc, format!("memory tracker: {what}")).into())
        }
    }

    fn size(&self) -> Result<i64> {
        let mut n: ffi::sqlite3_int64 = 0;
        let f = self
            .methods
            .xFileSize
            .ok_or_else(|| StoreError::Invalid("no xFileSize".into()))?;
        // SAFETY: the file is open (see `of`); `n` outlives the call.
        Self::check(unsafe { f(self.file, &mut n) }, "size")?;
        Ok(n)
    }

    fn read(&self, buf: &mut [u8], at: i64) -> Result<()> {
        let f = self
            .methods
            .xRead
            .ok_or_else(|| StoreError::Invalid("no xRead".into()))?;
        let n =
            c_int::try_from(buf.len()).map_err(|_| StoreError::Invalid("read too large".into()))?;
        // SAFETY: `buf` is valid for `n` bytes; the file is open.
        Self::check(
            unsafe { f(self.file, buf.as_mut_ptr().cast(), n, at) },
            "read",
        )
    }

    fn write(&self, buf: &[u8], at: i64) -> Result<()> {
        let f = self
            .methods
            .xWrite
            .ok_or_else(|| StoreError::Invalid("no xWrite".into()))?;
        let n = c_int::try_from(buf.len())
            .map_err(|_| StoreError::Invalid("write too large".into()))?;
        // SAFETY: `buf` is valid for `n` bytes; the file is open.
        Self::check(unsafe { f(self.file, buf.as_ptr().cast(), n, at) }, "write")
    }

    fn truncate(&self, len: i64) -> Result<()> {
        let f = self
            .methods
            .xTruncate
            .ok_or_else(|| StoreError::Invalid("no xTruncate".into()))?;
        // SAFETY: the file is open.
        Self::check(unsafe { f(self.file, len) }, "truncate")
    }

    /// The change counter now (0 for an empty database).
    fn counter(&self) -> Result<u32> {
        if self.size()? < 28 {
            return Ok(0);
        }
        let mut b = [0u8; 4];
        self.read(&mut b, 24)?;
        Ok(u32::from_be_bytes(b))
    }
}

#[cfg(test)]
mod tests;
