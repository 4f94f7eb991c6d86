//! Any string: parsing never panics, and a parsed key formats back to the same string.
#![no_main]
use engram::key::{hash64, Key};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = hash64(s);
        if let Ok(k) = Key::parse(s) {
            assert_eq!(k.to_string(), s);
            assert_eq!(Key::parse(&k.to_string()).ok(), Some(k));
        }
    }
});
