//! Small files replaced whole, atomically, one writer at a time: the HTTP tokens file
//! and the like, which are read-modify-written by separate `engram` processes.
//!
//! The update runs under an exclusive `flock` on `<file>.lock`; the new content goes
//! to a temporary file in the same directory, is fsynced, renamed over the old one,
//! and the directory is fsynced. A crash leaves the old file or the new one, never a
//! truncated one, and two concurrent updates both land.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use super::error::{Result, StoreError};
use super::io;

/// Replace `path` with `update(current contents)` (`None` when it does not exist yet);
/// see the module doc. The directory is created when missing.
pub fn update_small_file(
    path: &Path,
    update: impl FnOnce(Option<String>) -> Result<String>,
) -> Result<()> {
    let dir = match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(d) => d.to_path_buf(),
        None => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(StoreError::io("create directory", &dir))?;
    let lock_path = with_suffix(path, ".lock");
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&lock_path)
        .map_err(StoreError::io("open", &lock_path))?;
    lock.lock().map_err(StoreError::io("lock", &lock_path))?;
    let current = match std::fs::read_to_string(path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(StoreError::io("read", path)(e)),
    };
    let text = update(current)?;
    let tmp = with_suffix(path, &format!(".tmp-{}", std::process::id()));
    let written = (|| {
        let f = File::create(&tmp)?;
        io::write_at(&f, &tmp, text.as_bytes(), 0)?;
        io::sync_all(&f, &tmp)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(StoreError::io("write", &tmp)(e));
    }
    if let Err(e) = io::rename(&tmp, path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(StoreError::io("rename", path)(e));
    }
    io::sync_dir(&dir).map_err(StoreError::io("sync directory", &dir))?;
    drop(lock);
    Ok(())
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrent_updates_all_land_and_no_temporary_file_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/list.txt");
        std::thread::scope(|s| {
            for t in 0..8 {
                let path = &path;
                s.spawn(move || {
                    for i in 0..10 {
                        update_small_file(path, |old| {
                            Ok(format!("{}{t}-{i}\n", old.unwrap_or_default()))
                        })
                        .unwrap();
                    }
                });
            }
        });
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 80);
        let names: Vec<String> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.contains(".tmp-")), "{names:?}");
    }
}
