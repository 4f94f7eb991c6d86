//! The test-only fault plan behind the I/O seam: counts the operations under one store
//! directory and, at the chosen one, fails it or cuts the power.
//!
//! - [`Mode::Fail`]: that operation returns an error (`ENOSPC` for a write, `EIO`
//!   otherwise) and does nothing; later ones run normally, as after a full disk that
//!   freed up.
//! - [`Mode::Crash`]: that operation and every later one fail and do nothing, as if the
//!   process had been killed there: what it wrote before stays, page cache included.
//! - [`Mode::PowerCut`]: as `Crash`, and what was not yet durable is undone in place:
//!   writes since their file's last sync get their old bytes back (bytes that were past
//!   the end become zeros: the file is never shortened, as a live map of it would fault),
//!   and renames since their directory's last sync are reversed.
//!
//! SQLite's `tracker.db` does not go through the seam: it keeps its own durability, and
//! its commits come only after the log's sync returned. A plan is armed for one
//! directory, so tests running beside each other in one binary do not meet.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::Op;

/// What happens at the chosen operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Fail,
    Crash,
    PowerCut,
}

/// The kind of an operation, for reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Write,
    Sync,
    Rename,
}

/// One operation seen, in order.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub kind: Kind,
    pub path: PathBuf,
}

/// How to undo an operation that was not yet durable.
enum Undo {
    Write {
        path: PathBuf,
        offset: u64,
        old: Vec<u8>,
        len: u64,
    },
    Rename {
        from: PathBuf,
        to: PathBuf,
        old_to: Option<Vec<u8>>,
    },
}

struct Session {
    dir: PathBuf,
    at: u64,
    mode: Mode,
    seen: Vec<Seen>,
    fired: Option<(u64, Seen)>,
    dead: bool,
    pending: Vec<Undo>,
}

static ARMED: AtomicUsize = AtomicUsize::new(0);
static SESSIONS: Mutex<Vec<Arc<Mutex<Session>>>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// An armed plan; dropping it disarms it.
pub(crate) struct Armed(Arc<Mutex<Session>>);

/// Arm a plan for the store in `dir`: operation number `at` (from 0, counting every
/// write, sync and rename under `dir`) meets `mode`. `u64::MAX` only counts.
pub(crate) fn arm(dir: &Path, at: u64, mode: Mode) -> Armed {
    let session = Arc::new(Mutex::new(Session {
        dir: dir.to_path_buf(),
        at,
        mode,
        seen: Vec::new(),
        fired: None,
        dead: false,
        pending: Vec::new(),
    }));
    lock(&SESSIONS).push(Arc::clone(&session));
    ARMED.fetch_add(1, Ordering::SeqCst);
    Armed(session)
}

impl Armed {
    /// Every operation seen so far (the failed ones included).
    pub(crate) fn seen(&self) -> Vec<Seen> {
        lock(&self.0).seen.clone()
    }

    /// The operation the fault hit, with its number, once it has.
    pub(crate) fn fired(&self) -> Option<(u64, Seen)> {
        lock(&self.0).fired.clone()
    }
}

impl Drop for Armed {
    fn drop(&mut self) {
        lock(&SESSIONS).retain(|s| !Arc::ptr_eq(s, &self.0));
        ARMED.fetch_sub(1, Ordering::SeqCst);
    }
}

fn error(kind: Kind) -> io::Error {
    match kind {
        Kind::Write => io::Error::from_raw_os_error(libc::ENOSPC),
        _ => io::Error::from_raw_os_error(libc::EIO),
    }
}

/// Called by the seam before `op` runs: `Err` means it must not.
pub(super) fn before(op: Op<'_>) -> io::Result<()> {
    if ARMED.load(Ordering::Relaxed) == 0 {
        return Ok(());
    }
    let (kind, path) = match op {
        Op::Write { path, .. } => (Kind::Write, path),
        Op::Sync { path } => (Kind::Sync, path),
        Op::SyncDir { dir } => (Kind::Sync, dir),
        Op::Rename { to, .. } => (Kind::Rename, to),
    };
    let session = lock(&SESSIONS)
        .iter()
        .find(|s| path.starts_with(&lock(s).dir))
        .cloned();
    let Some(session) = session else {
        return Ok(());
    };
    let mut s = lock(&session);
    let n = s.seen.len() as u64;
    let seen = Seen {
        kind,
        path: path.to_path_buf(),
    };
    s.seen.push(seen.clone());
    if s.dead {
        return Err(error(kind));
    }
    if n == s.at {
        s.fired = Some((n, seen));
        match s.mode {
            Mode::Fail => {}
            Mode::Crash => s.dead = true,
            Mode::PowerCut => {
                s.dead = true;
                undo_pending(std::mem::take(&mut s.pending));
            }
        }
        return Err(error(kind));
    }
    if s.mode == Mode::PowerCut {
        note_pending(&mut s.pending, op);
    }
    Ok(())
}

/// Remember how to undo `op`, and forget what it makes durable.
fn note_pending(pending: &mut Vec<Undo>, op: Op<'_>) {
    match op {
        Op::Write { path, offset, len } => {
            let old = read_range(path, offset, len);
            pending.push(Undo::Write {
                path: path.to_path_buf(),
                offset,
                old,
                len,
            });
        }
        Op::Sync { path } => {
            pending.retain(|u| !matches!(u, Undo::Write { path: p, .. } if p == path));
        }
        Op::SyncDir { dir } => {
            pending.retain(|u| !matches!(u, Undo::Rename { to, .. } if to.parent() == Some(dir)));
        }
        Op::Rename { from, to } => pending.push(Undo::Rename {
            from: from.to_path_buf(),
            to: to.to_path_buf(),
            old_to: std::fs::read(to).ok(),
        }),
    }
}

/// The bytes of `[offset, offset+len)` of the file at `path` as they are now (short
/// past its end).
fn read_range(path: &Path, offset: u64, len: u64) -> Vec<u8> {
    use std::os::unix::fs::FileExt;
    let Ok(f) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let mut buf = vec![0u8; len as usize];
    let mut got = 0;
    while got < buf.len() {
        match f.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    buf.truncate(got);
    buf
}

/// Undo, newest first, what had not been made durable when the power went.
fn undo_pending(pending: Vec<Undo>) {
    use std::os::unix::fs::FileExt;
    for undo in pending.into_iter().rev() {
        match undo {
            Undo::Write {
                path,
                offset,
                mut old,
                len,
            } => {
                old.resize(len as usize, 0);
                let f = std::fs::OpenOptions::new().write(true).open(&path);
                if let Ok(f) = f {
                    let _ = f.write_all_at(&old, offset);
                }
            }
            Undo::Rename { from, to, old_to } => {
                let _ = std::fs::rename(&to, &from);
                if let Some(bytes) = old_to {
                    let _ = std::fs::write(&to, bytes);
                }
            }
        }
    }
}
