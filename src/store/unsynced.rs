//! The mark beside a vector cache whose latest rows may not have reached the disk.
//!
//! A durable commit used to `msync` every vector cache it changed before stamping it,
//! so that after a power loss a cache is either current or visibly stale (an older
//! stamp). That is a device flush of its own per commit, beside the log's: a single
//! save with a vector took 698-705 µs with it and 377-383 µs without (2,000 saves of
//! a 1 KiB record and a 256-dim vector, on the 2-core VM measured).
//!
//! Instead, before its first unflushed write a writer leaves a mark beside the cache
//! file, `<cache file>.unsynced`, holding this boot's id (Linux's
//! `/proc/sys/kernel/random/boot_id`), and makes the mark durable (file and directory
//! synced). Written pages outlive any process; only the machine going down loses
//! them. So a cache marked by this boot is as good as flushed, and one marked by an
//! earlier boot may have lost rows in any order and is rebuilt from the log. A clean
//! close that can take the writer lock without waiting flushes the marked caches and
//! removes their marks (`format-spec/vector-cache.md`, "Durability in a store").
//!
//! Where the boot id cannot be read, writers flush every commit as before. This
//! module must never remove a mark before its cache is flushed, nor report a cache
//! as safe to write unflushed before its mark is durable.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::blob_log::sync_dir;
use super::error::{Result, StoreError};

/// What the mark beside a cache file says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mark {
    /// No mark: every row written was flushed before its stamp.
    Clean,
    /// Unflushed rows of this boot: still in the page cache, as good as on disk.
    ThisBoot,
    /// Unflushed rows of an earlier boot (or a mark that cannot be read): the cache
    /// may have lost any of them and must be rebuilt.
    EarlierBoot,
}

/// This boot's id, if the system gives one.
fn boot_id() -> Option<&'static str> {
    static BOOT: OnceLock<Option<String>> = OnceLock::new();
    BOOT.get_or_init(|| {
        let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
        let id = id.trim();
        (!id.is_empty()).then(|| id.to_string())
    })
    .as_deref()
}

/// Where the mark of the cache file `cache` is.
pub(super) fn mark_path(cache: &Path) -> PathBuf {
    let mut name = cache.as_os_str().to_owned();
    name.push(".unsynced");
    PathBuf::from(name)
}

/// What the mark beside `cache` says.
pub(super) fn read(cache: &Path) -> Mark {
    match std::fs::read_to_string(mark_path(cache)) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Mark::Clean,
        Ok(id) if Some(id.trim()) == boot_id() => Mark::ThisBoot,
        _ => Mark::EarlierBoot,
    }
}

/// Make sure `cache` carries this boot's mark, durably, so its rows may be written
/// without a flush; `false` when this system has no boot id (flush instead). `found`
/// is what [`read`] said of it under the writer lock, which the caller holds; a cache
/// marked by an earlier boot it has rebuilt instead.
pub(super) fn ensure(cache: &Path, found: Mark) -> Result<bool> {
    let Some(id) = boot_id() else {
        return Ok(false);
    };
    if found == Mark::ThisBoot {
        return Ok(true);
    }
    let mark = mark_path(cache);
    let mut tmp = mark.clone().into_os_string();
    tmp.push(".new");
    let tmp = PathBuf::from(tmp);
    let write = || -> std::io::Result<()> {
        let f = std::fs::File::create(&tmp)?;
        super::io::write_at(&f, &tmp, id.as_bytes(), 0)?;
        super::io::sync_all(&f, &tmp)
    };
    write().map_err(StoreError::io("write", &tmp))?;
    super::io::rename(&tmp, &mark).map_err(StoreError::io("rename", &tmp))?;
    sync_dir(&mark)?;
    Ok(true)
}

/// Remove the mark of `cache`, whose rows are all on disk now (flushed, or the file
/// was replaced by a flushed one whose rename is durable). A mark that cannot be
/// removed only costs a rebuild after the next boot.
pub(super) fn clear(cache: &Path) {
    let mark = mark_path(cache);
    match std::fs::remove_file(&mark) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => tracing::debug!(mark = %mark.display(), "vector cache mark left: {e}"),
    }
}

/// Flush every cache in `dir` marked by this boot and remove its marks (the caller
/// holds the writer lock). Best effort: what fails keeps its mark.
pub(super) fn flush_marked(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(cache) = name.to_str().and_then(|n| n.strip_suffix(".unsynced")) else {
            continue;
        };
        let cache = dir.join(cache);
        if read(&cache) != Mark::ThisBoot {
            continue; // an earlier boot's: the next writer rebuilds that cache
        }
        // The cache's pages are the page cache's: syncing the file writes what any
        // process wrote through its mapping.
        match std::fs::File::open(&cache).and_then(|f| super::io::sync_data(&f, &cache)) {
            Ok(()) => clear(&cache),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => clear(&cache),
            Err(e) => {
                tracing::debug!(cache = %cache.display(), "vector cache not flushed at close: {e}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_is_this_boots_until_its_id_changes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = dir.path().join("vectors-x-0000000000000001.vec");
        assert_eq!(read(&cache), Mark::Clean);
        assert!(mark_path(&cache)
            .to_string_lossy()
            .ends_with("vectors-x-0000000000000001.vec.unsynced"));
        if ensure(&cache, read(&cache)).expect("ensure") {
            assert_eq!(read(&cache), Mark::ThisBoot);
            // Idempotent.
            assert!(ensure(&cache, read(&cache)).expect("ensure again"));
        }
        std::fs::write(mark_path(&cache), "another-boot").expect("write");
        assert_eq!(read(&cache), Mark::EarlierBoot);
        clear(&cache);
        assert_eq!(read(&cache), Mark::Clean);
        clear(&cache); // a missing mark is fine
    }
}
