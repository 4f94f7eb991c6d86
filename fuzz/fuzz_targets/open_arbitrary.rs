//! Any bytes as a store's blob.dat (half the time behind a valid file header):
//! verify and open never panic, and an opened store verifies.
//!
//! Behind a valid header, every other input also gets the tracker of a store whose
//! log held only that header (made once per process): open then replays the input
//! over a tracker that expects more, instead of building one from nothing.
//!
//! The store's tracker lives in memory (`MemoryTracker`: SQLite's memory VFS, the
//! same SQL), restored or removed per input, and its log in `/dev/shm` where there is
//! one; one directory serves every input of a process.
#![no_main]
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use engram::format::FileHeader;
use engram::store::{verify, MemoryTracker, Store, StoreOptions, LOCK_FILE};
use libfuzzer_sys::fuzz_target;
use zerocopy::IntoBytes;

fn header_bytes() -> Vec<u8> {
    FileHeader::new(1, [7; 16], 0).as_bytes().to_vec()
}

fn tempdir() -> Option<tempfile::TempDir> {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(d) = tempfile::tempdir_in(shm) {
            return Some(d);
        }
    }
    tempfile::tempdir().ok()
}

struct Place {
    _dir: tempfile::TempDir,
    path: PathBuf,
    tracker: MemoryTracker,
    /// The tracker of a store whose log is the header alone.
    template: Vec<u8>,
}

fn place() -> Option<&'static Place> {
    static PLACE: OnceLock<Option<Place>> = OnceLock::new();
    PLACE
        .get_or_init(|| {
            let dir = tempdir()?;
            let path = dir.path().to_path_buf();
            let tracker = MemoryTracker::mount(&path).ok()?;
            std::fs::write(path.join("blob.dat"), header_bytes()).ok()?;
            let store = Store::open(&path, StoreOptions::default(), engram::projections()).ok()?;
            drop(store);
            let template = tracker.image().ok()?;
            Some(Place {
                _dir: dir,
                path,
                tracker,
                template,
            })
        })
        .as_ref()
}

fuzz_target!(|data: &[u8]| {
    let _ = FileHeader::decode(data);
    let Some(place) = place() else {
        return;
    };
    let dir = place.path.as_path();
    // Each input starts from a directory holding blob.dat alone (and its tracker).
    let _ = std::fs::remove_file(dir.join(LOCK_FILE));
    let mut blob = Vec::new();
    let first = data.first().copied().unwrap_or(1);
    let tracker = if first & 1 == 0 {
        blob.extend_from_slice(&header_bytes());
        blob.extend_from_slice(&data[1..]);
        first & 2 == 0
    } else {
        blob.extend_from_slice(data);
        false
    };
    let reset = if tracker {
        place.tracker.restore(&place.template)
    } else {
        place.tracker.remove()
    };
    if reset.is_err() || std::fs::write(dir.join("blob.dat"), &blob).is_err() {
        return;
    }
    let _ = verify(dir);
    if let Ok(store) = Store::open(dir, StoreOptions::default(), engram::projections()) {
        drop(store);
        let report = verify(dir).expect("a store that opened can be verified");
        assert!(report.is_sound(), "a store that opened does not verify: {report:?}");
    }
});
