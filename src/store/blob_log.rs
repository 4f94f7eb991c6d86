//! `BlobLog`: the append-only `blob.dat` file and its memory map.
//!
//! Appends go through `pwrite` at an offset the caller owns (the writer lock makes it
//! the only appender); reads go through a shared read-only map that reserves address
//! space well past the end of the file, so growth does not cost a remap per append.
//! Only bytes below the file's length are ever touched through the map (beyond it a
//! read would fault). This module knows records only as far as decoding them; it never
//! decides what is committed — that is `scan`'s job.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use memmap2::{Mmap, MmapOptions};
use zerocopy::IntoBytes;

use super::error::{Result, StoreError};
use super::io;
use super::stat;
use crate::format::{decode_record, FileHeader, FormatError, RecordView, FILE_HEADER_LEN};

/// Smallest address-space reservation for the map.
const MIN_RESERVE: u64 = 64 << 20;
/// Writes smaller than this go into zero-filled space allocated ahead of them.
const PREALLOC_BELOW: usize = 1 << 20;
/// How far ahead zero-filled space is written.
const PREALLOC_AHEAD: u64 = 4 << 20;

/// The open `blob.dat`.
pub struct BlobLog {
    path: PathBuf,
    file: File,
    writable: bool,
    header: FileHeader,
    map: RwLock<Arc<Mmap>>,
    /// A length known to be present in the file (refreshed from `stat` when a read
    /// asks for more).
    known_len: AtomicU64,
    /// (device, inode) of the open file, to tell whether the path still names it.
    identity: stat::Identity,
}

/// A view of the log's first `len` bytes that stays valid while held, even if the
/// log is remapped or replaced by compaction meanwhile.
#[derive(Clone)]
pub struct LogSnapshot {
    map: Arc<Mmap>,
    len: usize,
    path: Arc<Path>,
}

impl LogSnapshot {
    /// Every record from the first on, in log order, with its offset. Stops after the
    /// first record that does not decode, which it yields as an error.
    pub fn records(&self) -> impl Iterator<Item = Result<(u64, RecordView<'_>)>> + '_ {
        let mut off = FILE_HEADER_LEN as u64;
        let mut done = false;
        std::iter::from_fn(move || {
            if done || off >= self.len as u64 {
                return None;
            }
            match self.record_at(off) {
                Ok(rec) => {
                    let at = off;
                    off += rec.record_len() as u64;
                    Some(Ok((at, rec)))
                }
                Err(StoreError::Corrupt { .. })
                    if self.map[off as usize..self.len.min(off as usize + 4)]
                        .iter()
                        .all(|&b| b == 0) =>
                {
                    // Zero-filled space: the end of the data.
                    done = true;
                    None
                }
                Err(e) => {
                    done = true;
                    Some(Err(e))
                }
            }
        })
    }

    /// The whole file's length covered by this snapshot.
    pub fn len(&self) -> u64 {
        self.len as u64
    }

    /// True when the snapshot covers nothing (never for a valid log: its header).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The log's bytes, file header included.
    pub fn bytes(&self) -> &[u8] {
        &self.map[..self.len]
    }

    /// Drop this process's page mappings of the log's bytes `[start, end)`, page-aligned
    /// inward. The bytes stay in the OS page cache and the next read maps them again.
    /// The writer calls it for each batch once the tracker and the vector caches have
    /// followed it, so a long index, which reads every batch back once, keeps a flat
    /// resident set instead of one that grows with the log.
    pub(crate) fn release(&self, start: u64, end: u64) {
        // SAFETY: sysconf only reads system configuration.
        let page = u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
        let from = start.div_ceil(page) * page;
        let to = end.min(self.len as u64) / page * page;
        if to <= from {
            return;
        }
        let (Ok(at), Ok(n)) = (usize::try_from(from), usize::try_from(to - from)) else {
            return;
        };
        // SAFETY: the map is read-only and shared (see `map_file`), and the log's bytes
        // below its length never change: dropping page table entries loses nothing, and
        // a slice into the range still reads the same bytes, faulted back in from the
        // page cache.
        let released = unsafe {
            self.map
                .unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, at, n)
        };
        if let Err(e) = released {
            tracing::debug!("madvise(DONTNEED) on the log: {e}");
        }
    }

    /// Decode and check the record at `offset`.
    pub fn record_at(&self, offset: u64) -> Result<RecordView<'_>> {
        if offset < FILE_HEADER_LEN as u64 || offset >= self.len as u64 || !offset.is_multiple_of(8)
        {
            return Err(StoreError::Corrupt {
                path: self.path.to_path_buf(),
                offset,
                reason: format!(
                    "offset is outside the log (length {}) or unaligned",
                    self.len
                ),
            });
        }
        decode_record(&self.bytes()[offset as usize..]).map_err(|e| StoreError::Corrupt {
            path: self.path.to_path_buf(),
            offset,
            reason: e.to_string(),
        })
    }
}

/// Whether `head` is a whole, checksummed header of a format newer than this build's
/// (as opposed to a damaged one).
fn newer_version(head: &[u8]) -> bool {
    head.len() >= FILE_HEADER_LEN
        && head[..8] == crate::format::BLOB_MAGIC
        && crc32fast::hash(&head[..60])
            == u32::from_le_bytes([head[60], head[61], head[62], head[63]])
        && matches!(
            FileHeader::decode(head),
            Err(FormatError::VersionTooNew { .. })
        )
}

fn reserve_for(len: u64) -> u64 {
    (len.saturating_mul(2)).next_power_of_two().max(MIN_RESERVE)
}

impl BlobLog {
    /// Write a new, empty log (header only) at `path`, atomically: a crash leaves either
    /// no file or a whole one.
    pub fn create(path: &Path, header: &FileHeader) -> Result<()> {
        let temporary = super::temporary::Temporary::new(path.with_extension("dat.new"));
        let tmp = temporary.path();
        let f = File::create(tmp).map_err(StoreError::io("create", tmp))?;
        io::write_at(&f, tmp, header.as_bytes(), 0).map_err(StoreError::io("write", tmp))?;
        io::sync_all(&f, tmp).map_err(StoreError::io("sync", tmp))?;
        io::rename(tmp, path).map_err(StoreError::io("rename", path))?;
        temporary.keep();
        sync_dir(path)
    }

    /// Open an existing log and check its header: for writing when the file allows
    /// it, else for reading.
    pub fn open(path: &Path) -> Result<BlobLog> {
        Self::open_with(path, false)
    }

    /// Open an existing log for reading only, whatever its permissions.
    pub fn open_read_only(path: &Path) -> Result<BlobLog> {
        Self::open_with(path, true)
    }

    /// Open a log for reading only even when its header is damaged (for salvage):
    /// the handle and, when the header does not decode, why; such a handle carries a
    /// stand-in header of generation 0. A header of a newer format version with a
    /// sound checksum is still refused: its records may not be understood.
    pub fn open_for_salvage(path: &Path) -> Result<(BlobLog, Option<FormatError>)> {
        Self::open_tolerating(path, true, true)
    }

    fn open_with(path: &Path, read_only: bool) -> Result<BlobLog> {
        Ok(Self::open_tolerating(path, read_only, false)?.0)
    }

    fn open_tolerating(
        path: &Path,
        read_only: bool,
        tolerate_header: bool,
    ) -> Result<(BlobLog, Option<FormatError>)> {
        let attempt = if read_only {
            Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied))
        } else {
            OpenOptions::new().read(true).write(true).open(path)
        };
        let (file, writable) = match attempt {
            Ok(f) => (f, true),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
                ) =>
            {
                (
                    File::open(path).map_err(StoreError::io("open", path))?,
                    false,
                )
            }
            Err(e) => return Err(StoreError::io("open", path)(e)),
        };
        let len = stat::file_size(&file).map_err(StoreError::io("stat", path))?;
        let identity = stat::file_identity(&file).map_err(StoreError::io("stat", path))?;
        let mut head = [0u8; FILE_HEADER_LEN];
        let n = file
            .read_at(&mut head, 0)
            .map_err(StoreError::io("read", path))?;
        let (header, damaged) = match FileHeader::decode(&head[..n]) {
            Ok(h) => (h, None),
            Err(source) if tolerate_header && !newer_version(&head[..n]) => {
                (FileHeader::new(0, [0; 16], 0), Some(source))
            }
            Err(source) => {
                return Err(StoreError::Format {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        let map = map_file(&file, path, reserve_for(len))?;
        let log = BlobLog {
            path: path.to_path_buf(),
            file,
            writable,
            header,
            map: RwLock::new(Arc::new(map)),
            known_len: AtomicU64::new(len),
            identity,
        };
        Ok((log, damaged))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn header(&self) -> &FileHeader {
        &self.header
    }

    pub fn is_writable(&self) -> bool {
        self.writable
    }

    /// Block until this handle holds the lock on the log file itself, which writers
    /// take under the one on `LOCK` (see `lock`). Released by [`BlobLog::unlock`],
    /// not by dropping a handle: other handles may share this open file.
    pub fn lock(&self) -> Result<()> {
        self.file.lock().map_err(StoreError::io("lock", &self.path))
    }

    pub fn unlock(&self) {
        let _ = self.file.unlock();
    }

    /// True when the path now names another file than the one this handle has open
    /// (compaction in another handle or process renamed a new log over it).
    pub fn replaced_on_disk(&self) -> Result<bool> {
        match stat::path_identity(&self.path) {
            Ok(on_disk) => Ok(on_disk != self.identity),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
            Err(e) => Err(StoreError::io("stat", &self.path)(e)),
        }
    }

    /// The file's current length, from `statx` (timestamps unread: see `stat`).
    pub fn len(&self) -> Result<u64> {
        let len = stat::file_size(&self.file).map_err(StoreError::io("stat", &self.path))?;
        self.known_len.store(len, Ordering::Release);
        Ok(len)
    }

    /// A snapshot covering `[0, end)`. Fails if the file is shorter than `end`.
    pub fn snapshot(&self, end: u64) -> Result<LogSnapshot> {
        if end > self.known_len.load(Ordering::Acquire) && end > self.len()? {
            return Err(StoreError::Corrupt {
                path: self.path.clone(),
                offset: end,
                reason: format!(
                    "the log is shorter ({} bytes) than the tracker expects",
                    self.known_len.load(Ordering::Acquire)
                ),
            });
        }
        let current = self.map.read().map_err(|_| poisoned(&self.path))?.clone();
        let map = if (current.len() as u64) >= end {
            current
        } else {
            let mut slot = self.map.write().map_err(|_| poisoned(&self.path))?;
            if (slot.len() as u64) < end {
                *slot = Arc::new(map_file(&self.file, &self.path, reserve_for(end))?);
            }
            slot.clone()
        };
        Ok(LogSnapshot {
            map,
            len: end as usize,
            path: Arc::from(self.path.as_path()),
        })
    }

    /// Write `bytes` at `offset`. The caller holds the writer lock and owns the tail.
    ///
    /// Small writes land in zero-filled space written ahead of them: `fdatasync` of a
    /// write that does not grow the file need not commit the file's size and extents
    /// to the filesystem journal, which makes per-batch syncs markedly cheaper. Large
    /// writes simply extend the file. Zero-filled space reads as the end of the data.
    pub fn write_at(&self, offset: u64, bytes: &[u8]) -> Result<()> {
        if !self.writable {
            return Err(StoreError::ReadOnly {
                path: self.path.clone(),
            });
        }
        let end = offset + bytes.len() as u64;
        if bytes.len() < PREALLOC_BELOW
            && end > self.known_len.load(Ordering::Acquire)
            && end > self.len()?
        {
            self.zero_fill(self.len()?, end + PREALLOC_AHEAD)?;
        }
        io::write_at(&self.file, &self.path, bytes, offset)
            .map_err(StoreError::io("write", &self.path))?;
        self.known_len
            .fetch_max(offset + bytes.len() as u64, Ordering::AcqRel);
        Ok(())
    }

    /// Write zeros over `[from, to)` (which lies at or past the end of the data).
    fn zero_fill(&self, from: u64, to: u64) -> Result<()> {
        let zeros = vec![0u8; 1 << 20];
        let mut at = from;
        while at < to {
            let n = ((to - at) as usize).min(zeros.len());
            io::write_at(&self.file, &self.path, &zeros[..n], at)
                .map_err(StoreError::io("preallocate", &self.path))?;
            at += n as u64;
        }
        self.known_len.fetch_max(to, Ordering::AcqRel);
        Ok(())
    }

    /// Read `buf.len()` bytes at `offset` (short at the end of the file).
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        self.file
            .read_at(buf, offset)
            .map_err(StoreError::io("read", &self.path))
    }

    /// Make everything written so far durable.
    pub fn sync(&self) -> Result<()> {
        io::sync_data(&self.file, &self.path).map_err(StoreError::io("sync", &self.path))
    }

    /// Drop the bytes from `from` up to `to` (clamped to the file's length): an
    /// abandoned batch or a torn tail, which lies past the committed data. They become
    /// zero-filled space, which reads as the end of the data,
    /// and make that durable.
    ///
    /// The file is never made shorter: another process may have mapped those bytes
    /// (an open's tail check, `verify`, `dump`), and a read of a mapped page past the
    /// end of a file kills the reader with SIGBUS. Large ranges are punched out
    /// (`FALLOC_FL_PUNCH_HOLE`, which keeps the length and frees the blocks); where the
    /// filesystem cannot, zeros are written.
    pub fn discard(&self, from: u64, to: u64) -> Result<u64> {
        if !self.writable {
            return Err(StoreError::ReadOnly {
                path: self.path.clone(),
            });
        }
        let len = self.len()?.min(to);
        if from >= len {
            return Ok(0);
        }
        let punched = io::punch_hole(&self.file, &self.path, from, len - from)
            .map_err(StoreError::io("discard", &self.path))?;
        if !punched {
            self.zero_fill(from, len)?;
        }
        io::sync_data(&self.file, &self.path).map_err(StoreError::io("sync", &self.path))?;
        Ok(len - from)
    }
}

fn map_file(file: &File, path: &Path, reserve: u64) -> Result<Mmap> {
    // SAFETY: the map is read-only and shared. engram never rewrites bytes below the
    // committed end of a log, and only reads bytes below the length `stat` reported,
    // so the bytes seen through the map do not change under a reader; compaction
    // replaces the file by rename, leaving this mapping on the old inode.
    unsafe { MmapOptions::new().len(reserve as usize).map(file) }
        .map_err(StoreError::io("mmap", path))
}

fn poisoned(path: &Path) -> StoreError {
    StoreError::Invalid(format!(
        "the map of {} was poisoned by a panic in another thread",
        path.display()
    ))
}

/// fsync the directory holding `path`, so a rename or create in it is durable.
pub(crate) fn sync_dir(path: &Path) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    io::sync_dir(dir).map_err(StoreError::io("sync directory", dir))
}

impl From<(PathBuf, FormatError)> for StoreError {
    fn from((path, source): (PathBuf, FormatError)) -> Self {
        StoreError::Format { path, source }
    }
}
