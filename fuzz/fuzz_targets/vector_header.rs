//! Any bytes as a vector cache file: the format layer's checks never panic, and a
//! header it accepts describes a layout that fits the bytes.
#![no_main]
use engram::format::vector_file::{check_file_bytes, check_header_bytes};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = check_header_bytes(data);
    if let Ok((header, layout)) = check_file_bytes(data) {
        assert!(layout.total_len <= data.len() as u64);
        assert!(header.count.get() <= header.capacity.get());
    }
});
