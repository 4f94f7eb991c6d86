//! `salvage` on damaged logs: flipped bytes, damaged commits, a damaged file header,
//! sealed vectors.

use super::super::StoreOptions;
use super::*;

fn open(dir: &Path) -> Store {
    Store::open(dir, StoreOptions::default(), Vec::new()).expect("open store")
}

fn file_bytes(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| {
            let e = e.expect("entry");
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read(e.path()).expect("read"))
        })
        .collect();
    v.sort();
    v
}

#[test]
fn a_flipped_byte_loses_one_batch_and_keeps_every_other() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let src = tmp.path().join("src");
    {
        let store = open(&src);
        for i in 0..10 {
            let mut b = WriteBatch::new();
            b.put(&format!("k{i}"), Map::new(), format!("value number {i}"))
                .expect("put");
            b.put(&format!("j{i}"), Map::new(), format!("second {i}"))
                .expect("put");
            store.commit(&b).expect("commit");
        }
        let mut b = WriteBatch::new();
        b.delete("k9").expect("delete");
        store.commit(&b).expect("commit");
    }
    let blob = src.join(BLOB_FILE);
    let mut bytes = std::fs::read(&blob).expect("read log");
    let at = bytes
        .windows(14)
        .position(|w| w == b"value number 5")
        .expect("body in log");
    bytes[at + 3] ^= 0x20;
    std::fs::write(&blob, &bytes).expect("write log");
    let before = file_bytes(&src);

    let dst = tmp.path().join("dst");
    let into = open(&dst);
    let report = salvage(&src, &into).expect("salvage");

    assert_eq!(report.batches_kept, 10, "{report:?}");
    assert_eq!(report.batches_lost, 1);
    assert_eq!(report.damaged.len(), 1);
    let d = &report.damaged[0];
    assert!(d.start < at as u64 && (at as u64) < d.end, "{d:?}");
    assert_eq!(report.lost_keys(), vec!["k5", "j5"]);
    let k5 = &d.lost[0];
    assert!(!k5.checksum_ok);
    assert_eq!(k5.seq, 5 * 3 + 1);
    for i in (0..9).filter(|&i| i != 5) {
        let r = into.get(&format!("k{i}")).expect("get").expect("kept");
        assert_eq!(r.body, format!("value number {i}").as_bytes());
        assert!(into.get(&format!("j{i}")).expect("get").is_some());
    }
    assert!(into.get("k5").expect("get").is_none());
    assert!(
        into.get("k9").expect("get").is_none(),
        "later delete applied"
    );
    drop(into);
    assert!(super::super::verify(&dst).expect("verify").is_sound());
    assert_eq!(file_bytes(&src), before, "source untouched");
}

#[test]
fn a_damaged_commit_and_a_damaged_last_batch_lose_only_their_own_batches() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let src = tmp.path().join("src");
    let mut commits = Vec::new();
    {
        let store = open(&src);
        for i in 0..4 {
            let mut b = WriteBatch::new();
            b.put(&format!("k{i}"), Map::new(), format!("v{i}"))
                .expect("put");
            commits.push(store.commit(&b).expect("commit").commit_offset);
        }
    }
    let blob = src.join(BLOB_FILE);
    let mut bytes = std::fs::read(&blob).expect("read log");
    // Inside batch 1's commit body, and inside batch 3's commit header.
    bytes[commits[1] as usize + RECORD_HEADER_LEN + 2] ^= 1;
    bytes[commits[3] as usize + 17] ^= 1;
    std::fs::write(&blob, &bytes).expect("write log");

    let into = open(&tmp.path().join("dst"));
    let report = salvage(&src, &into).expect("salvage");
    assert_eq!(report.batches_kept, 2, "{report:?}");
    assert_eq!(report.damaged.len(), 2, "{report:?}");
    assert_eq!(report.lost_keys(), vec!["k1", "k3"]);
    assert!(report.damaged.iter().all(|d| d.lost[0].checksum_ok));
    assert_eq!(report.damaged[1].end, commits[3] + 48 + 32);
    for k in ["k0", "k2"] {
        assert!(into.get(k).expect("get").is_some(), "{k} kept");
    }
    for k in ["k1", "k3"] {
        assert!(into.get(k).expect("get").is_none(), "{k} lost");
    }
}

#[test]
fn a_sound_log_is_copied_whole() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let src = tmp.path().join("src");
    {
        let store = open(&src);
        let mut b = WriteBatch::new();
        b.put("a", Map::new(), "x").expect("put");
        store.commit(&b).expect("commit");
    }
    let into = open(&tmp.path().join("dst"));
    let report = salvage(&src, &into).expect("salvage");
    assert_eq!(report.batches_kept, 1);
    assert!(report.damaged.is_empty());
    assert_eq!(into.get("a").expect("get").expect("kept").body, b"x");
}

/// A store in `dir` opened with `key`: sealed, as a new store given a key is.
fn keyed(dir: &Path, key: &VectorKey) -> Store {
    let options = StoreOptions {
        vector_key: Some(key.clone()),
        ..StoreOptions::default()
    };
    Store::open(dir, options, Vec::new()).expect("open sealed store")
}

fn three_batches(src: &Path) {
    let store = open(src);
    for i in 0..3 {
        let mut b = WriteBatch::new();
        b.put(&format!("k{i}"), Map::new(), format!("value {i}"))
            .expect("put");
        store.commit(&b).expect("commit");
    }
}

#[test]
fn a_damaged_file_header_is_passed_over_and_the_report_says_so() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let src = tmp.path().join("src");
    three_batches(&src);
    let blob = src.join(BLOB_FILE);
    let sound = std::fs::read(&blob).expect("read log");
    let damages: [fn(&mut Vec<u8>); 2] = [|b| b[20] ^= 0xff, |b| b[..FILE_HEADER_LEN].fill(0)];
    for (n, damage) in damages.iter().enumerate() {
        let mut bytes = sound.clone();
        damage(&mut bytes);
        std::fs::write(&blob, &bytes).expect("write log");
        let into = open(&tmp.path().join(format!("dst{n}")));
        let report = salvage(&src, &into).expect("salvage past the header");
        assert_eq!(report.batches_kept, 3, "{report:?}");
        assert!(report.damaged.is_empty(), "{report:?}");
        let said = report.header.clone().unwrap_or_default();
        assert!(said.contains("file header is damaged"), "{said}");
        for i in 0..3 {
            let r = into.get(&format!("k{i}")).expect("get").expect("kept");
            assert_eq!(r.body, format!("value {i}").as_bytes());
        }
        assert_eq!(std::fs::read(&blob).expect("read log"), bytes, "untouched");
    }

    // A sound header of a newer format is refused, not passed over.
    let mut newer = sound.clone();
    newer[8..12].copy_from_slice(&99u32.to_le_bytes());
    let crc = crc32fast::hash(&newer[..60]);
    newer[60..64].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&blob, &newer).expect("write log");
    let err = salvage(&src, &open(&tmp.path().join("dst-newer")))
        .expect_err("a newer format is not salvaged")
        .to_string();
    assert!(err.contains("99"), "{err}");

    // A damaged header with nothing verifying after it: refused, saying why.
    let junk = tmp.path().join("junk");
    std::fs::create_dir(&junk).expect("mkdir");
    std::fs::write(junk.join(BLOB_FILE), vec![0x5a; 4096]).expect("write junk");
    let err = salvage(&junk, &open(&tmp.path().join("dst-junk")))
        .expect_err("junk is not salvaged")
        .to_string();
    assert!(
        err.contains("header is damaged") && err.contains("nothing was written"),
        "{err}"
    );
}

#[test]
fn sealed_vectors_are_carried_under_their_key_and_counted_when_there_is_none() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let src = tmp.path().join("src");
    let key = VectorKey::from_bytes([7; 32]);
    let unit =
        |hot: usize| -> Vec<f32> { (0..16).map(|i| if i == hot { 1.0 } else { 0.01 }).collect() };
    {
        let store = keyed(&src, &key);
        for i in 0..4 {
            let mut b = WriteBatch::new();
            b.put(&format!("doc:{i}"), Map::new(), format!("doc {i}"))
                .expect("put");
            b.put_vector(&format!("doc:{i}"), "e", &unit(i))
                .expect("vector");
            store.commit(&b).expect("commit");
        }
    }
    let blob = src.join(BLOB_FILE);
    let mut bytes = std::fs::read(&blob).expect("read log");
    let at = bytes
        .windows(5)
        .position(|w| w == b"doc 2")
        .expect("body in log");
    bytes[at + 1] ^= 0x20;
    std::fs::write(&blob, &bytes).expect("write log");

    let into = keyed(&tmp.path().join("dst"), &key);
    let report = salvage(&src, &into).expect("salvage");
    assert_eq!(report.sealed_vectors_kept, 3, "{report:?}");
    assert_eq!(report.sealed_vectors_not_carried, 0, "{report:?}");
    assert_eq!(report.lost_keys(), vec!["doc:2"]);
    assert_eq!(into.sealed_key_id().expect("key id"), Some(key.id_hex()));
    for i in [0, 1, 3] {
        let top = into.vector_search("e", &unit(i), 1).expect("search");
        assert_eq!(top[0].key, format!("doc:{i}"));
        assert!(top[0].score > 0.99, "{:?}", top[0]);
    }
    drop(into);
    let dst = tmp.path().join("dst");
    let verified = super::super::verify(&dst).expect("verify");
    assert!(verified.is_sound(), "{verified:?}");
    // The new store's log holds its vectors sealed, never in the clear.
    let new_log = std::fs::read(dst.join(BLOB_FILE)).expect("read new log");
    let plain: Vec<u8> = unit(3).iter().flat_map(|f| f.to_le_bytes()).collect();
    assert!(!new_log.windows(plain.len()).any(|w| w == plain.as_slice()));

    // Without the key the vectors cannot be opened: counted, the rest kept.
    let plain_into = open(&tmp.path().join("dst-nokey"));
    let report = salvage(&src, &plain_into).expect("salvage without a key");
    assert_eq!(report.sealed_vectors_kept, 0, "{report:?}");
    assert_eq!(report.sealed_vectors_not_carried, 3, "{report:?}");
    assert!(plain_into.get("doc:3").expect("get").is_some());
    assert_eq!(plain_into.sealed_key_id().expect("key id"), None);
}
