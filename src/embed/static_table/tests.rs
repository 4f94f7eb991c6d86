//! Unit tests of the static token table: its file format, word pieces and vectors.

use super::{StaticEmbedder, StaticTable, Vocab};
use crate::embed::Embedder;

fn table() -> StaticTable {
    let pieces = ["[PAD]", "parse", "http", "request", "read", "file", "##s"];
    let vocab = Vocab::new(pieces.iter().map(|s| s.to_string()).collect()).unwrap();
    #[rustfmt::skip]
    let rows = [
        0.0, 0.0, 0.0,
        1.0, 0.0, 0.0,
        0.0, 1.0, 0.0,
        0.0, 0.5, 0.5,
        0.0, 0.0, 1.0,
        0.2, 0.0, 0.9,
        0.0, 0.0, 0.0,
    ];
    StaticTable::quantize("static-test-3", vocab, 3, &rows).unwrap()
}

#[test]
fn deterministic_and_unit_length() {
    let e = StaticEmbedder::new(table());
    let a = e.embed(&["parseHttpRequest"]).unwrap();
    let b = e.embed(&["parseHttpRequest"]).unwrap();
    assert_eq!(a, b);
    let norm: f32 = a[0].iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-5);
    assert_eq!(e.name(), "static-test-3");
    assert_eq!(e.dimensions(), 3);
}

#[test]
fn identifiers_match_their_words() {
    let e = StaticEmbedder::new(table());
    let v = e
        .embed(&["parse_http_request", "parse http request", "readFiles"])
        .unwrap();
    assert_eq!(v[0], v[1]);
    assert!(v[2][2] > 0.9);
}

#[test]
fn nothing_known_gives_zeros_not_a_panic() {
    let e = StaticEmbedder::new(table());
    let huge = "parse ".repeat(400_000);
    let v = e
        .embed(&["", "{}();", "zzz", "\u{0}\u{ffff}", &huge])
        .unwrap();
    for z in &v[..4] {
        assert!(crate::embed::is_zero(z));
    }
    assert!(!crate::embed::is_zero(&v[4]));
}

#[test]
fn the_file_round_trips_and_bad_files_are_refused() {
    let t = table();
    let bytes = t.to_bytes();
    let back = StaticTable::from_bytes(&bytes).unwrap();
    assert_eq!(back.to_bytes(), bytes);
    assert_eq!(
        StaticEmbedder::new(back).embed(&["read file"]).unwrap(),
        StaticEmbedder::new(t).embed(&["read file"]).unwrap()
    );
    for cut in [0, 7, 12, 30, bytes.len() - 1] {
        assert!(
            StaticTable::from_bytes(&bytes[..cut]).is_err(),
            "cut at {cut}"
        );
    }
    let mut extra = bytes.clone();
    extra.push(0);
    assert!(StaticTable::from_bytes(&extra).is_err());
    let mut bad = bytes;
    bad[0] = b'X';
    assert!(StaticTable::from_bytes(&bad).is_err());
}

#[test]
fn a_renamed_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("static-other.bin"), table().to_bytes()).unwrap();
    assert!(StaticEmbedder::load("static-other", dir.path()).is_err());
    std::fs::write(dir.path().join("static-test-3.bin"), table().to_bytes()).unwrap();
    assert!(StaticEmbedder::load("static-test-3", dir.path()).is_ok());
    assert!(StaticEmbedder::load("static-missing", dir.path()).is_err());
}
