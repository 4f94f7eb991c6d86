//! Tests for `VectorCache`: round trips, replacement, growth, i8 recall, and
//! typed errors (never panics) on corrupt files.

use super::mapping::tmp_path;
use super::*;
use crate::format::vector_file::VectorFileHeader;
use proptest::prelude::*;
use std::fs;
use zerocopy::little_endian::U32;
use zerocopy::FromBytes;

/// Deterministic SplitMix64 so tests need no RNG crate.
struct Rng(u64);
impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }
    fn vec(&mut self, dim: usize) -> Vec<f32> {
        (0..dim).map(|_| self.f32()).collect()
    }
}

fn opts(dim: u32, with_i8: bool, cap: u64) -> VectorCacheOptions {
    VectorCacheOptions {
        dim,
        embedder_id: embedder_id("test-embedder"),
        with_i8,
        with_i8_columns: with_i8,
        with_bits: with_i8,
        initial_capacity: cap,
    }
}

fn ids(hits: &[VectorHit]) -> Vec<u64> {
    hits.iter().map(|h| h.key_hash).collect()
}

#[test]
fn roundtrip_reopen_search_and_get() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v.cache");
    let o = opts(16, true, 8);
    let mut rng = Rng(1);
    let vecs: Vec<Vec<f32>> = (0..300).map(|_| rng.vec(16)).collect();
    {
        let mut c = VectorCache::create(&path, &o).unwrap();
        for (i, v) in vecs.iter().enumerate() {
            c.upsert(1000 + i as u64, v).unwrap();
        }
        c.set_seq(42).unwrap();
        c.flush().unwrap();
    }
    let c = VectorCache::open(&path, &o).unwrap();
    assert_eq!((c.len(), c.seq(), c.dim()), (300, 42, 16));
    for i in [0usize, 17, 299] {
        assert_eq!(c.get(1000 + i as u64).as_deref(), Some(&vecs[i][..]));
        for mode in [ScanMode::F32, ScanMode::i8_rerank_default(5)] {
            let hits = c.search(&vecs[i], 5, Metric::Cosine, mode).unwrap();
            assert_eq!(hits.len(), 5);
            assert_eq!(hits[0].key_hash, 1000 + i as u64);
            assert!((hits[0].score - 1.0).abs() < 1e-5, "{hits:?}");
            assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
        }
    }
    assert_eq!(c.get(7), None);
}

#[test]
fn upsert_replaces_and_remove_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v.cache");
    let o = opts(4, false, 16);
    let mut c = VectorCache::create(&path, &o).unwrap();
    c.upsert(1, &[1.0, 0.0, 0.0, 0.0]).unwrap();
    c.upsert(2, &[0.0, 1.0, 0.0, 0.0]).unwrap();
    c.upsert(1, &[0.0, 0.0, 1.0, 0.0]).unwrap();
    assert_eq!(c.len(), 2);
    assert_eq!(c.get(1), Some(vec![0.0, 0.0, 1.0, 0.0]));
    let hits = c
        .search(&[1.0, 1.0, 1.0, 1.0], 10, Metric::Dot, ScanMode::F32)
        .unwrap();
    assert_eq!(ids(&hits), vec![1, 2], "one hit per key, ties by key hash");
    assert!(c.remove(2).unwrap());
    assert!(!c.remove(2).unwrap());
    drop(c);
    let c = VectorCache::open(&path, &o).unwrap();
    assert_eq!(c.len(), 1);
    assert_eq!(c.get(2), None);
    let hits = c
        .search(&[0.0, 1.0, 0.0, 0.0], 10, Metric::Cosine, ScanMode::F32)
        .unwrap();
    assert_eq!(ids(&hits), vec![1]);
}

#[test]
fn ties_are_ordered_by_key_hash() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = VectorCache::create(&dir.path().join("v"), &opts(2, true, 4)).unwrap();
    for key in [9, 3, 5, 7] {
        c.upsert(key, &[0.6, 0.8]).unwrap();
    }
    for mode in [
        ScanMode::F32,
        ScanMode::I8Rerank {
            candidates: 1,
            threads: 0,
        },
    ] {
        let hits = c.search(&[0.6, 0.8], 3, Metric::Cosine, mode).unwrap();
        assert_eq!(ids(&hits), vec![3, 5, 7]);
    }
}

#[test]
fn growth_past_capacity_keeps_all_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v.cache");
    let o = opts(8, true, 4);
    let mut rng = Rng(2);
    let vecs: Vec<Vec<f32>> = (0..100).map(|_| rng.vec(8)).collect();
    let mut c = VectorCache::create(&path, &o).unwrap();
    for (i, v) in vecs.iter().enumerate() {
        c.upsert(i as u64, v).unwrap();
        if i % 10 == 0 {
            // Re-upserting leaves tombstones that growth must compact away.
            c.upsert(i as u64, v).unwrap();
        }
    }
    assert_eq!(c.len(), 100);
    assert!(
        c.capacity() >= 100 && c.capacity() <= 256,
        "{}",
        c.capacity()
    );
    assert!(!tmp_path(&path).exists());
    drop(c);
    let c = VectorCache::open(&path, &o).unwrap();
    assert_eq!(c.len(), 100);
    for (i, v) in vecs.iter().enumerate() {
        assert_eq!(c.get(i as u64).as_deref(), Some(&v[..]));
    }
    let all = c
        .search(&vecs[0], 1000, Metric::Dot, ScanMode::F32)
        .unwrap();
    assert_eq!(all.len(), 100);
}

fn recall_at(exact: &[VectorHit], approx: &[VectorHit]) -> f64 {
    let e: std::collections::HashSet<u64> = exact.iter().map(|h| h.key_hash).collect();
    approx.iter().filter(|h| e.contains(&h.key_hash)).count() as f64 / exact.len() as f64
}

#[test]
fn i8_rerank_recall_at_10() {
    let dir = tempfile::tempdir().unwrap();
    let o = opts(384, true, 5000);
    let mut c = VectorCache::create(&dir.path().join("v"), &o).unwrap();
    let mut rng = Rng(3);
    for i in 0..5000u64 {
        c.upsert(i.wrapping_mul(0x9e37_79b9), &rng.vec(384))
            .unwrap();
    }
    for metric in [Metric::Cosine, Metric::Dot] {
        let mut total = 0.0;
        for _ in 0..20 {
            let q = rng.vec(384);
            let exact = c.search(&q, 10, metric, ScanMode::F32).unwrap();
            let approx = c
                .search(&q, 10, metric, ScanMode::i8_rerank_default(10))
                .unwrap();
            total += recall_at(&exact, &approx);
        }
        let recall = total / 20.0;
        assert!(recall >= 0.99, "{metric:?} recall@10 = {recall}");
    }
}

/// A vector with `nonzero` random dimensions set, like a short text's hashed embedding.
fn sparse_vec(rng: &mut Rng, dim: usize, nonzero: usize) -> Vec<f32> {
    let mut v = vec![0.0f32; dim];
    for _ in 0..nonzero {
        v[(rng.next_u64() % dim as u64) as usize] = rng.f32();
    }
    v
}

#[test]
fn sparse_queries_read_the_columns_and_find_what_the_rows_find() {
    // Two caches fed the same upserts, removals and growths (each growth rewrites the
    // columns): one with i8 columns, one with rows only. Sparse queries go through
    // the columns in the first, the rows in the second; the hits must be identical.
    let dir = tempfile::tempdir().unwrap();
    let with_columns = opts(96, true, 700);
    let rows_only = VectorCacheOptions {
        with_i8_columns: false,
        ..with_columns.clone()
    };
    let mut a = VectorCache::create(&dir.path().join("a"), &with_columns).unwrap();
    let mut b = VectorCache::create(&dir.path().join("b"), &rows_only).unwrap();
    let mut rng = Rng(11);
    for i in 0..3000u64 {
        // Mostly dense rows (chunks of code) with some sparse ones, some replaced.
        let key = (i % 2600).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let v = if i % 7 == 0 {
            sparse_vec(&mut rng, 96, 5)
        } else {
            rng.vec(96)
        };
        a.upsert(key, &v).unwrap();
        b.upsert(key, &v).unwrap();
        if i % 13 == 0 {
            let gone = (i / 2).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            assert_eq!(a.remove(gone).unwrap(), b.remove(gone).unwrap());
        }
    }
    assert!(a.capacity() > 700, "the caches grew");
    let a = VectorCache::open_read_only(&dir.path().join("a"), &with_columns).unwrap();
    for metric in [Metric::Cosine, Metric::Dot] {
        for _ in 0..20 {
            let q = sparse_vec(&mut rng, 96, 8);
            if q.iter().all(|&x| x == 0.0) {
                continue;
            }
            let mode = ScanMode::i8_rerank_default(10);
            let by_columns = a.search(&q, 10, metric, mode).unwrap();
            assert_eq!(by_columns, b.search(&q, 10, metric, mode).unwrap());
            assert_eq!(by_columns.len(), 10);
            let exact = a.search(&q, 10, metric, ScanMode::F32).unwrap();
            assert!(recall_at(&exact, &by_columns) >= 0.9, "{metric:?}");
        }
    }
}

#[test]
fn rejects_bad_vectors_and_queries() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = VectorCache::create(&dir.path().join("v"), &opts(3, false, 4)).unwrap();
    assert!(matches!(
        c.upsert(1, &[1.0, 2.0]),
        Err(VectorCacheError::DimensionMismatch {
            expected: 3,
            found: 2
        })
    ));
    assert!(matches!(
        c.upsert(1, &[1.0, f32::NAN, 0.0]),
        Err(VectorCacheError::NonFinite { index: 1, .. })
    ));
    assert!(matches!(
        c.upsert(1, &[1.0, 0.0, f32::INFINITY]),
        Err(VectorCacheError::NonFinite { index: 2, .. })
    ));
    c.upsert(1, &[1.0, 0.0, 0.0]).unwrap();
    assert!(matches!(
        c.search(&[0.0; 3], 1, Metric::Cosine, ScanMode::F32),
        Err(VectorCacheError::ZeroQuery)
    ));
    assert!(matches!(
        c.search(&[1.0; 3], 1, Metric::Cosine, ScanMode::i8_rerank_default(1)),
        Err(VectorCacheError::NoI8Rows)
    ));
    assert!(c
        .search(&[1.0; 3], 0, Metric::Dot, ScanMode::F32)
        .unwrap()
        .is_empty());
    assert!(matches!(
        VectorCache::create(&dir.path().join("w"), &opts(0, false, 4)),
        Err(VectorCacheError::InvalidOptions(_))
    ));
}

/// A valid file with a few rows; returns its bytes.
fn valid_file(path: &Path, o: &VectorCacheOptions) -> Vec<u8> {
    let mut c = VectorCache::create(path, o).unwrap();
    let mut rng = Rng(4);
    for i in 0..5 {
        c.upsert(i, &rng.vec(o.dim as usize)).unwrap();
    }
    c.remove(3).unwrap();
    c.flush().unwrap();
    drop(c);
    fs::read(path).unwrap()
}

fn edit_header(bytes: &mut [u8], f: impl FnOnce(&mut VectorFileHeader), reseal: bool) {
    let (h, _) = VectorFileHeader::mut_from_prefix(bytes).unwrap();
    f(h);
    if reseal {
        h.seal();
    }
}

#[test]
fn corrupt_files_give_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v");
    let o = opts(8, true, 8);
    let good = valid_file(&path, &o);
    let open_with = |bytes: &[u8], o: &VectorCacheOptions| {
        fs::write(&path, bytes).unwrap();
        VectorCache::open(&path, o)
    };
    let corrupt = |r: Result<VectorCache, VectorCacheError>, needle: &str| match r {
        Err(VectorCacheError::Corrupt { reason, .. }) => {
            assert!(reason.contains(needle), "{reason} lacks {needle}")
        }
        other => panic!("expected Corrupt({needle}), got {other:?}"),
    };
    corrupt(open_with(&good[..good.len() - 1], &o), "truncated");
    corrupt(open_with(&good[..10], &o), "truncated");
    corrupt(open_with(&[], &o), "truncated");
    let mut longer = good.clone();
    longer.push(0);
    corrupt(open_with(&longer, &o), "trailing");

    let mut b = good.clone();
    b[0] = b'X';
    corrupt(open_with(&b, &o), "magic");

    let mut b = good.clone();
    edit_header(&mut b, |h| h.seq = U64::new(99), false);
    corrupt(open_with(&b, &o), "CRC");

    let mut b = good.clone();
    edit_header(&mut b, |h| h.version = U32::new(4), true);
    assert!(matches!(
        open_with(&b, &o),
        Err(VectorCacheError::VersionTooNew {
            found: 4,
            supported: 3,
            ..
        })
    ));

    let mut b = good.clone();
    edit_header(&mut b, |h| h.count = U64::new(9), true);
    corrupt(open_with(&b, &o), "exceeds capacity");

    let l = VectorFileLayout::compute(8, FLAG_F32 | FLAG_I8 | FLAG_I8_COLUMNS, 8).unwrap();
    let mut b = good.clone();
    b[l.live as usize + 1] = 7;
    corrupt(open_with(&b, &o), "live flag");

    let other_embedder = VectorCacheOptions {
        embedder_id: embedder_id("other"),
        ..o.clone()
    };
    assert!(matches!(
        open_with(&good, &other_embedder),
        Err(VectorCacheError::EmbedderMismatch { .. })
    ));
    assert!(matches!(
        open_with(&good, &opts(9, true, 8)),
        Err(VectorCacheError::FileDimensionMismatch {
            found: 8,
            expected: 9,
            ..
        })
    ));
    assert!(matches!(
        open_with(&good, &opts(8, false, 8)),
        Err(VectorCacheError::QuantizationMismatch { found: true, .. })
    ));
    // A file written before the columns existed: rebuilt, not searched.
    let rows_only = VectorCacheOptions {
        with_i8_columns: false,
        ..o.clone()
    };
    assert!(matches!(
        open_with(&good, &rows_only),
        Err(VectorCacheError::ColumnsMismatch {
            found: true,
            expected: false,
            ..
        })
    ));
    // A file written before the sign bits existed: rebuilt, not searched.
    let no_bits = VectorCacheOptions {
        with_bits: false,
        ..o.clone()
    };
    assert!(matches!(
        open_with(&good, &no_bits),
        Err(VectorCacheError::BitsMismatch {
            found: true,
            expected: false,
            ..
        })
    ));
    let err = open_with(&good[..good.len() - 1], &o)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("delete the file; it is rebuilt from the log"),
        "{err}"
    );
    let c = open_with(&good, &o).unwrap();
    assert_eq!(c.len(), 4);
}

#[test]
fn open_repairs_duplicate_live_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v");
    let o = opts(2, false, 8);
    let mut c = VectorCache::create(&path, &o).unwrap();
    c.upsert(5, &[1.0, 0.0]).unwrap();
    c.upsert(5, &[0.0, 1.0]).unwrap();
    drop(c);
    // Simulate a crash between appending slot 1 and tombstoning slot 0.
    let mut b = fs::read(&path).unwrap();
    let l = VectorFileLayout::compute(2, FLAG_F32, 8).unwrap();
    b[l.live as usize] = SLOT_LIVE;
    fs::write(&path, &b).unwrap();
    let c = VectorCache::open(&path, &o).unwrap();
    assert_eq!(c.len(), 1);
    assert_eq!(c.get(5), Some(vec![0.0, 1.0]));
    let hits = c
        .search(&[1.0, 1.0], 5, Metric::Dot, ScanMode::F32)
        .unwrap();
    assert_eq!(hits.len(), 1);
}

/// Exercise every read path on a cache that opened, to prove none can panic.
fn poke(c: &VectorCache) {
    let dim = c.dim() as usize;
    let q = vec![0.5f32; dim];
    for metric in [Metric::Cosine, Metric::Dot] {
        let _ = c.search(&q, 3, metric, ScanMode::F32);
        let _ = c.search(&q, 3, metric, ScanMode::i8_rerank_default(3));
    }
    for key in 0..6 {
        let _ = c.get(key);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn open_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v");
        fs::write(&path, &bytes).unwrap();
        if let Ok(c) = VectorCache::open(&path, &opts(8, true, 8)) {
            poke(&c);
        }
    }

    #[test]
    fn open_flipped_valid_file_never_panics(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..8),
        reseal in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v");
        let o = opts(8, true, 8);
        let mut b = valid_file(&path, &o);
        for (at, x) in flips {
            let i = at.index(b.len());
            b[i] ^= x;
        }
        if reseal {
            // Also reach the post-CRC checks with arbitrary header fields.
            edit_header(&mut b, |_| {}, true);
        }
        fs::write(&path, &b).unwrap();
        if let Ok(mut c) = VectorCache::open(&path, &o) {
            poke(&c);
            let _ = c.upsert(77, &[0.25; 8]);
            poke(&c);
        }
    }
}

/// The section-by-section copy makes the very file the row-by-row copy makes, over
/// several column blocks and a partial last one; it declines a cache with a
/// tombstoned slot, and one of another dimension, writing nothing.
#[test]
fn a_copy_of_whole_sections_is_the_row_by_row_copy_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(7);
    let o = opts(24, true, 4096);
    let mut old = VectorCache::create(&dir.path().join("old"), &o).unwrap();
    let rows = 2 * COLUMN_BLOCK as usize + 333;
    for i in 0..rows {
        old.upsert(5000 + i as u64, &rng.vec(24)).unwrap();
    }
    let by_rows = dir.path().join("rows");
    let mut a = VectorCache::create(&by_rows, &opts(24, true, 6000)).unwrap();
    old.for_each_live(|key, row| a.upsert(key, row)).unwrap();
    let by_sections = dir.path().join("sections");
    let mut b = VectorCache::create(&by_sections, &opts(24, true, 6000)).unwrap();
    assert!(b.copy_slots_from(&old).unwrap());
    // Both go on taking rows alike.
    let more = rng.vec(24);
    a.upsert(1, &more).unwrap();
    b.upsert(1, &more).unwrap();
    assert_eq!(b.len(), rows as u64 + 1);
    a.flush().unwrap();
    b.flush().unwrap();
    assert!(fs::read(&by_rows).unwrap() == fs::read(&by_sections).unwrap());
    let q = rng.vec(24);
    assert_eq!(
        ids(&b
            .search(&q, 10, Metric::Cosine, ScanMode::i8_rerank_default(10))
            .unwrap()),
        ids(&a
            .search(&q, 10, Metric::Cosine, ScanMode::i8_rerank_default(10))
            .unwrap())
    );

    // Not into a cache that holds rows already, nor from one with a tombstone, nor
    // across dimensions.
    assert!(!b.copy_slots_from(&old).unwrap());
    old.remove(5003).unwrap();
    let mut c = VectorCache::create(&dir.path().join("c"), &opts(24, true, 6000)).unwrap();
    assert!(!c.copy_slots_from(&old).unwrap());
    let mut d = VectorCache::create(&dir.path().join("d"), &opts(16, true, 6000)).unwrap();
    assert!(!d.copy_slots_from(&old).unwrap());
    assert!(c.is_empty() && d.is_empty());
}

mod binary;

/// The resident KiB of this process's mappings of `path`, from `/proc/self/smaps`.
fn resident_kib_of(path: &std::path::Path) -> u64 {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let name = path.to_str().unwrap();
    let mut inside = false;
    let mut kib = 0;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if first.contains('-') && first.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            inside = line.ends_with(name);
        } else if inside && first == "Rss:" {
            kib += line
                .split_whitespace()
                .nth(1)
                .unwrap()
                .parse::<u64>()
                .unwrap();
        }
    }
    kib
}

/// Released pages leave the resident set and lose nothing: the rows read back, search,
/// and survive a reopen without a flush (they were in the page cache all along).
#[test]
fn released_pages_leave_the_resident_set_and_keep_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v.cache");
    let o = opts(64, false, 4096);
    let mut c = VectorCache::create(&path, &o).unwrap();
    // Each row its own direction: its number in the first dimension.
    let row = |i: u64| -> Vec<f32> {
        (0..64)
            .map(|d| {
                if d == 0 {
                    i as f32 + 1.0
                } else {
                    ((i * 31 + d) % 17) as f32 - 8.0
                }
            })
            .collect()
    };
    for i in 0..3000u64 {
        c.upsert(i + 1, &row(i)).unwrap();
    }
    let before = resident_kib_of(&path);
    assert!(before >= 512, "the rows written are resident: {before} KiB");
    c.release_pages();
    let after = resident_kib_of(&path);
    assert!(
        after < before / 8,
        "{before} KiB resident before, {after} after"
    );
    assert_eq!(c.get(1234), Some(row(1233)));
    let hits = c
        .search(&row(77), 1, Metric::Cosine, ScanMode::F32)
        .unwrap();
    assert_eq!(ids(&hits), vec![78]);
    c.set_seq(9).unwrap();
    drop(c);
    let c = VectorCache::open(&path, &o).unwrap();
    assert_eq!((c.len(), c.seq()), (3000, 9));
    assert_eq!(c.get(3000), Some(row(2999)));

    // A cache in memory has no file behind it: releasing is a no-op, not a wipe.
    let mut m = VectorCache::in_memory(&o).unwrap();
    m.upsert(5, &row(4)).unwrap();
    m.release_pages();
    assert_eq!(m.get(5), Some(row(4)));
}
