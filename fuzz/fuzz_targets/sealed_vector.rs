//! Sealed vector records (format-spec/encryption.md). Any metadata and body framed as
//! a sealed vector: opening never panics and never yields values (nothing can be
//! forged without the key). Any bytes sealed under the key: they open to themselves,
//! and with any one bit of the body flipped they do not open.
#![no_main]
use engram::format::{decode_record, encode_record, RecordFields, RecordKind, FLAG_SEALED};
use engram::store::VectorKey;
use libfuzzer_sys::fuzz_target;

fn framed(meta: &[u8], body: &[u8], seq: u64) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    encode_record(
        &RecordFields {
            kind: RecordKind::Vector,
            flags: FLAG_SEALED,
            key_hash: engram::key::hash64("k"),
            seq,
            timestamp_ms: 1,
            meta,
            body,
        },
        &mut out,
    )
    .ok()?;
    Some(out)
}

fuzz_target!(|data: &[u8]| {
    let key = VectorKey::from_bytes([7; 32]);
    if data.len() < 3 {
        return;
    }
    let split = (data[0] as usize).min(data.len() - 1);
    let (meta, body) = data[1..].split_at(split);
    if let Some(bytes) = framed(meta, body, 1) {
        if let Ok(rec) = decode_record(&bytes) {
            assert!(key.open(&rec, 64).is_err());
        }
    }

    let values = &data[1..1 + (data.len() - 1) / 4 * 4];
    if values.is_empty() {
        return;
    }
    let meta = format!(
        r#"{{"key":"k","embedder":"e","dim":{},"key_id":"{}"}}"#,
        values.len() / 4,
        key.id_hex()
    );
    let Ok(sealed) = key.seal(engram::key::hash64("k"), 9, "e", values) else {
        return;
    };
    let bytes = framed(meta.as_bytes(), &sealed, 9).expect("a sealed vector frames");
    let rec = decode_record(&bytes).expect("a framed vector decodes");
    let opened = key.open(&rec, 64).expect("what was sealed opens");
    let le: Vec<u8> = opened.iter().flat_map(|x| x.to_le_bytes()).collect();
    assert_eq!(le, values);

    let mut flipped = sealed.clone();
    let bit = data[0] as usize % (flipped.len() * 8);
    flipped[bit / 8] ^= 1 << (bit % 8);
    let bytes = framed(meta.as_bytes(), &flipped, 9).expect("frames");
    let rec = decode_record(&bytes).expect("decodes");
    assert!(key.open(&rec, 64).is_err());
});
