//! File sizes and identities without reading timestamps.
//!
//! Linux 6.13 brought multigrain timestamps (ext4, XFS, btrfs, tmpfs): once anything
//! has read a file's mtime or ctime, the next write stamps a fine-grained time instead
//! of reusing the coarse clock tick. On ext4 a new timestamp dirties the inode table
//! block, which holds the inodes of about 16 neighbouring files, and the next
//! `fdatasync` of *any* of those files writes that block too. A commit path that ran
//! `fstat` on `blob.dat` (or on `tracker.db-wal`, its neighbour) between appends thus
//! cost three device writes per durable commit instead of two, and a third of the
//! batch-1 throughput.
//!
//! So the store's hot paths ask `statx` for the size or the inode number alone, which
//! leaves timestamps unread. Elsewhere (not Linux, or a libc without `statx`) these
//! fall back to the standard `metadata` call, which costs nothing extra there.
//!
//! This module must never be used to read timestamps; use `std::fs::metadata` for
//! that, outside any commit path.

use std::fs::File;
use std::io;
use std::path::Path;

/// What names a file on its device: (device, inode).
pub(crate) type Identity = (u64, u64);

/// The length of the open `file`.
pub(crate) fn file_size(file: &File) -> io::Result<u64> {
    imp::file_size(file)
}

/// The length of the file at `path`.
pub(crate) fn path_size(path: &Path) -> io::Result<u64> {
    imp::path_size(path)
}

/// The (device, inode) of the open `file`.
pub(crate) fn file_identity(file: &File) -> io::Result<Identity> {
    imp::file_identity(file)
}

/// The (device, inode) of the file at `path` (following symlinks).
pub(crate) fn path_identity(path: &Path) -> io::Result<Identity> {
    imp::path_identity(path)
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod imp {
    use super::Identity;
    use std::ffi::CString;
    use std::fs::File;
    use std::io;
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;

    /// `statx` of `fd` (with `path` relative to it) asking for `mask` only.
    fn statx(
        fd: libc::c_int,
        path: &CString,
        flags: libc::c_int,
        mask: u32,
    ) -> io::Result<libc::statx> {
        // SAFETY: `statx` writes into the zeroed buffer we own; `path` is a valid C string.
        let mut buf: libc::statx = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::statx(fd, path.as_ptr(), flags, mask, &mut buf) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(buf)
    }

    fn of_file(file: &File, mask: u32) -> io::Result<libc::statx> {
        let empty = CString::default();
        statx(file.as_raw_fd(), &empty, libc::AT_EMPTY_PATH, mask)
    }

    fn of_path(path: &Path, mask: u32) -> io::Result<libc::statx> {
        let c = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path with a NUL byte"))?;
        statx(libc::AT_FDCWD, &c, 0, mask)
    }

    fn identity(s: &libc::statx) -> Identity {
        (libc::makedev(s.stx_dev_major, s.stx_dev_minor), s.stx_ino)
    }

    pub(super) fn file_size(file: &File) -> io::Result<u64> {
        Ok(of_file(file, libc::STATX_SIZE)?.stx_size)
    }

    pub(super) fn path_size(path: &Path) -> io::Result<u64> {
        Ok(of_path(path, libc::STATX_SIZE)?.stx_size)
    }

    pub(super) fn file_identity(file: &File) -> io::Result<Identity> {
        Ok(identity(&of_file(file, libc::STATX_INO)?))
    }

    pub(super) fn path_identity(path: &Path) -> io::Result<Identity> {
        Ok(identity(&of_path(path, libc::STATX_INO)?))
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
mod imp {
    use super::Identity;
    use std::fs::File;
    use std::io;
    use std::os::unix::fs::MetadataExt;
    use std::path::Path;

    pub(super) fn file_size(file: &File) -> io::Result<u64> {
        Ok(file.metadata()?.len())
    }

    pub(super) fn path_size(path: &Path) -> io::Result<u64> {
        Ok(std::fs::metadata(path)?.len())
    }

    pub(super) fn file_identity(file: &File) -> io::Result<Identity> {
        let m = file.metadata()?;
        Ok((m.dev(), m.ino()))
    }

    pub(super) fn path_identity(path: &Path) -> io::Result<Identity> {
        let m = std::fs::metadata(path)?;
        Ok((m.dev(), m.ino()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn sizes_and_identities_agree_with_metadata() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        let mut f = File::create(&path).expect("create");
        f.write_all(&[7u8; 1234]).expect("write");
        let m = std::fs::metadata(&path).expect("metadata");
        assert_eq!(file_size(&f).expect("size"), 1234);
        assert_eq!(path_size(&path).expect("size"), 1234);
        assert_eq!(file_identity(&f).expect("id"), (m.dev(), m.ino()));
        assert_eq!(path_identity(&path).expect("id"), (m.dev(), m.ino()));
        let other = dir.path().join("g");
        std::fs::write(&other, b"x").expect("write");
        assert_ne!(
            path_identity(&other).expect("id"),
            file_identity(&f).expect("id")
        );
        assert_eq!(
            path_size(&dir.path().join("missing")).map_err(|e| e.kind()),
            Err(io::ErrorKind::NotFound)
        );
    }
}
