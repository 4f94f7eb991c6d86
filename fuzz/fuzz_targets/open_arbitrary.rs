//! Any bytes as a store's blob.dat (half the time behind a valid file header):
//! verify and open never panic, and an opened store verifies.
//!
//! Behind a valid header, every other input also gets the tracker of a store whose
//! log held only that header (made once per process): open then replays the input
//! over a tracker that expects more, instead of building one from nothing. Creating the
//! tracker's schema is most of an exec's time, so this also runs them faster. The
//! store's directory lives in memory (`/dev/shm`) where there is one.
#![no_main]
use std::path::Path;
use std::sync::OnceLock;

use engram::format::FileHeader;
use engram::store::{verify, Store, StoreOptions};
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

/// tracker.db of a store whose log is the header alone.
fn template_tracker() -> Option<&'static [u8]> {
    static TEMPLATE: OnceLock<Option<Vec<u8>>> = OnceLock::new();
    TEMPLATE
        .get_or_init(|| {
            let dir = tempdir()?;
            std::fs::write(dir.path().join("blob.dat"), header_bytes()).ok()?;
            let store =
                Store::open(dir.path(), StoreOptions::default(), engram::projections()).ok()?;
            drop(store);
            std::fs::read(dir.path().join("tracker.db")).ok()
        })
        .as_deref()
}

fuzz_target!(|data: &[u8]| {
    let _ = FileHeader::decode(data);
    let Some(dir) = tempdir() else {
        return;
    };
    let mut blob = Vec::new();
    let first = data.first().copied().unwrap_or(1);
    if first & 1 == 0 {
        blob.extend_from_slice(&header_bytes());
        blob.extend_from_slice(&data[1..]);
        if first & 2 == 0 {
            if let Some(tracker) = template_tracker() {
                if std::fs::write(dir.path().join("tracker.db"), tracker).is_err() {
                    return;
                }
            }
        }
    } else {
        blob.extend_from_slice(data);
    }
    if std::fs::write(dir.path().join("blob.dat"), &blob).is_err() {
        return;
    }
    let _ = verify(dir.path());
    if let Ok(store) = Store::open(dir.path(), StoreOptions::default(), engram::projections()) {
        drop(store);
        let report = verify(dir.path()).expect("a store that opened can be verified");
        assert!(report.is_sound(), "a store that opened does not verify: {report:?}");
    }
});
