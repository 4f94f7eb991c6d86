//! Any bytes: decoding never panics, and whatever decodes re-encodes to the same bytes.
#![no_main]
use engram::format::{decode_record, encode_record, RecordFields};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(rec) = decode_record(data) {
        let fields = RecordFields {
            kind: rec.kind,
            flags: rec.header.flags.get(),
            key_hash: rec.key_hash(),
            seq: rec.seq(),
            timestamp_ms: rec.timestamp_ms(),
            meta: rec.meta,
            body: rec.body,
        };
        let mut out = Vec::new();
        if encode_record(&fields, &mut out).is_ok() {
            assert_eq!(&out[..], &data[..rec.record_len()]);
        }
    }
});
