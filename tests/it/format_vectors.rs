//! engram against format-spec/test-vectors.json, which tools/gen_test_vectors.py makes
//! from the spec alone (Python's hashlib and zlib, no engram code).

use engram::format::{decode_record, encode_record, FileHeader, RecordFields, RecordKind};
use serde_json::Value;

fn vectors() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/format-spec/test-vectors.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn hash64_matches_the_spec_vectors() {
    let v = vectors();
    let rows = v["hash64"].as_array().unwrap();
    assert!(rows.len() >= 7);
    for row in rows {
        let key = row["key"].as_str().unwrap();
        let want: u64 = row["hash64"].as_str().unwrap().parse().unwrap();
        assert_eq!(engram::key::hash64(key), want, "{key:?}");
    }
}

#[test]
fn records_encode_and_decode_exactly_as_specified() {
    let v = vectors();
    let rows = v["records"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    for row in rows {
        let name = row["name"].as_str().unwrap();
        let bytes = unhex(row["hex"].as_str().unwrap());
        let meta = row["meta"].as_str().unwrap().as_bytes().to_vec();
        let body = unhex(row["body_hex"].as_str().unwrap());
        let kind = RecordKind::from_u8(row["kind"].as_u64().unwrap() as u8).unwrap();
        let fields = RecordFields {
            kind,
            flags: 0,
            key_hash: row["key_hash"].as_str().unwrap().parse().unwrap(),
            seq: row["seq"].as_u64().unwrap(),
            timestamp_ms: row["timestamp_ms"].as_u64().unwrap(),
            meta: &meta,
            body: &body,
        };
        let mut out = Vec::new();
        let crc = encode_record(&fields, &mut out).unwrap();
        assert_eq!(out, bytes, "{name}: encoding differs from the spec vector");
        assert_eq!(crc as u64, row["crc"].as_u64().unwrap(), "{name}");
        let rec = decode_record(&bytes).unwrap();
        assert_eq!(
            (rec.kind, rec.meta, rec.body),
            (kind, &meta[..], &body[..]),
            "{name}"
        );
    }
}

#[test]
fn spec_files_open_as_stores_with_the_stated_contents() {
    let v = vectors();
    let header = unhex(v["file_header"]["hex"].as_str().unwrap());
    let h = FileHeader::decode(&header).unwrap();
    assert_eq!(h.generation.get(), 1);
    assert_eq!(h.created_ms.get(), 1_700_000_000_000);
    for file in v["files"].as_array().unwrap() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("blob.dat"),
            unhex(file["hex"].as_str().unwrap()),
        )
        .unwrap();
        let report = engram::store::verify(dir.path()).unwrap();
        assert!(report.is_sound(), "{}: {report:?}", file["name"]);
        let store =
            engram::store::Store::open(dir.path(), Default::default(), engram::projections())
                .unwrap();
        let live = file["live"].as_object().unwrap();
        assert_eq!(store.live_records().unwrap(), live.len() as u64);
        for (key, body) in live {
            assert_eq!(
                store.get(key).unwrap().unwrap().body,
                body.as_str().unwrap().as_bytes()
            );
        }
        assert_eq!(
            store.get("mem:a1b2c3d4").unwrap().is_some(),
            !live.is_empty()
        );
    }
}

#[test]
fn the_sealed_vector_matches_the_spec_vector() {
    use engram::format::sealed::{associated_data, SealedBody};
    use engram::store::VectorKey;
    let v = vectors();
    let s = &v["sealed_vector"];
    let key = VectorKey::from_hex(s["store_key_hex"].as_str().unwrap()).unwrap();
    assert_eq!(key.id_hex(), s["key_id"].as_str().unwrap());
    let key_hash: u64 = s["key_hash"].as_str().unwrap().parse().unwrap();
    let seq = s["seq"].as_u64().unwrap();
    let embedder = s["embedder"].as_str().unwrap();
    let values: Vec<f32> = s["vector"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect();
    assert_eq!(
        associated_data(key_hash, seq, values.len() as u32, embedder),
        unhex(s["aad_hex"].as_str().unwrap())
    );
    let le: Vec<u8> = values.iter().flat_map(|x| x.to_le_bytes()).collect();
    let nonce: [u8; 24] = unhex(s["nonce_hex"].as_str().unwrap()).try_into().unwrap();
    let body = key
        .seal_with_nonce(key_hash, seq, embedder, &le, &nonce)
        .unwrap();
    assert_eq!(body, unhex(s["body_hex"].as_str().unwrap()));

    // The whole record, both ways.
    let mut encoded = Vec::new();
    let crc = encode_record(
        &RecordFields {
            kind: RecordKind::Vector,
            flags: s["flags"].as_u64().unwrap() as u16,
            key_hash,
            seq,
            timestamp_ms: s["timestamp_ms"].as_u64().unwrap(),
            meta: s["meta"].as_str().unwrap().as_bytes(),
            body: &body,
        },
        &mut encoded,
    )
    .unwrap();
    assert_eq!(crc as u64, s["crc"].as_u64().unwrap());
    let hex = unhex(s["hex"].as_str().unwrap());
    assert_eq!(encoded, hex);
    let rec = decode_record(&hex).unwrap();
    assert_eq!(key.open(&rec, 64).unwrap(), values);
    assert!(SealedBody::parse(rec.body, values.len()).is_ok());
}
