//! Any bytes as a store's blob.dat (half the time behind a valid file header):
//! verify and open never panic, and an opened store verifies.
#![no_main]
use engram::format::FileHeader;
use engram::store::{verify, Store, StoreOptions};
use libfuzzer_sys::fuzz_target;
use zerocopy::IntoBytes;

fn header_bytes() -> Vec<u8> {
    FileHeader::new(1, [7; 16], 0).as_bytes().to_vec()
}

fuzz_target!(|data: &[u8]| {
    let _ = FileHeader::decode(data);
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(_) => return,
    };
    let mut blob = Vec::new();
    if data.first().is_some_and(|b| b & 1 == 0) {
        blob.extend_from_slice(&header_bytes());
        blob.extend_from_slice(&data[1..]);
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
