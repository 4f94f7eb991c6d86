//! Tests for the vector cache file layout: header round trips, section placement,
//! validation of bad headers, and quantization.

use super::*;
use proptest::prelude::*;

#[test]
fn header_roundtrip_and_layout_alignment() {
    let h = VectorFileHeader::new(384, FLAG_F32 | FLAG_I8, 10, 0xfeed);
    let bytes = h.as_bytes().to_vec();
    assert_eq!(&bytes[..8], b"ENGRVEC\0");
    assert_eq!(check_header_bytes(&bytes), Ok(h));
    let l = VectorFileLayout::compute(384, FLAG_F32 | FLAG_I8, 10).unwrap();
    for off in [
        l.live,
        l.norms,
        l.scales.unwrap(),
        l.f32_rows,
        l.i8_rows.unwrap(),
    ] {
        assert_eq!(off % ALIGN, 0);
    }
    assert_eq!(l.stride_f32, 1536);
    assert_eq!(l.stride_i8, 384);
    assert_eq!(l.total_len, l.i8_rows.unwrap() + 10 * 384);
    assert_eq!(l.i8_columns, None);
    let l3 = VectorFileLayout::compute(3, FLAG_F32, 1).unwrap();
    assert_eq!((l3.stride_f32, l3.stride_i8, l3.scales), (64, 64, None));
}

#[test]
fn column_blocks_follow_the_i8_rows() {
    let all = FLAG_F32 | FLAG_I8 | FLAG_I8_COLUMNS;
    // 2,500 slots make three blocks of 1,024; the last one is partly unused.
    let l = VectorFileLayout::compute(384, all, 2500).unwrap();
    let columns = l.i8_columns.unwrap();
    assert_eq!(columns, l.i8_rows.unwrap() + 2500 * 384);
    assert_eq!(columns % ALIGN, 0);
    assert_eq!(l.total_len, columns + 3 * 384 * 1024);
    assert_eq!(l.column_code(0, 0), Some(columns));
    assert_eq!(l.column_code(1, 0), Some(columns + 1));
    assert_eq!(l.column_code(0, 1), Some(columns + 1024));
    assert_eq!(l.column_code(1030, 2), Some(columns + (384 + 2) * 1024 + 6));
    assert_eq!(l.column_code(2500, 0), None);
    assert_eq!(l.column_code(0, 384), None);
    // Columns without rows are not a layout any version writes.
    let h = VectorFileHeader::new(8, FLAG_F32 | FLAG_I8_COLUMNS, 4, 1);
    assert!(matches!(
        check_header_bytes(h.as_bytes()),
        Err(FormatError::BadField { field: "flags", .. })
    ));
    // Version 1 knew no columns; its files are read as they are.
    let mut h = VectorFileHeader::new(8, all, 4, 1);
    h.version = U32::new(1);
    h.seal();
    assert!(matches!(
        check_header_bytes(h.as_bytes()),
        Err(FormatError::BadField { field: "flags", .. })
    ));
    let mut h = VectorFileHeader::new(8, FLAG_F32 | FLAG_I8, 4, 1);
    h.version = U32::new(1);
    h.seal();
    assert_eq!(check_header_bytes(h.as_bytes()), Ok(h));
}

#[test]
fn sign_bits_follow_the_last_section() {
    let all = FLAG_F32 | FLAG_I8 | FLAG_I8_COLUMNS | FLAG_BITS;
    // 384 dimensions pack into six words; 2,500 slots end the columns in a partial block.
    let l = VectorFileLayout::compute(384, all, 2500).unwrap();
    let bits = l.bits.unwrap();
    assert_eq!(l.stride_bits, 48);
    assert_eq!(bits, l.i8_columns.unwrap() + 3 * 384 * 1024);
    assert_eq!(bits % ALIGN, 0);
    assert_eq!(l.total_len, bits + 2500 * 48);
    // Without i8 the bits follow the f32 rows; 65 dimensions take two words.
    let l = VectorFileLayout::compute(65, FLAG_F32 | FLAG_BITS, 3).unwrap();
    assert_eq!((l.stride_bits, l.bits), (16, Some(l.f32_rows + 3 * 320)));
    assert_eq!(l.total_len, l.f32_rows + 3 * 320 + 3 * 16);
    assert_eq!(
        VectorFileLayout::compute(8, FLAG_F32, 3).unwrap().bits,
        None
    );
    // Version 2 knew no bits.
    let mut h = VectorFileHeader::new(8, FLAG_F32 | FLAG_BITS, 4, 1);
    assert!(check_header_bytes(h.as_bytes()).unwrap().has_bits());
    h.version = U32::new(2);
    h.seal();
    assert!(matches!(
        check_header_bytes(h.as_bytes()),
        Err(FormatError::BadField { field: "flags", .. })
    ));
    // Bit j of word j / 64 is the sign of x[j]; zero counts as not positive.
    let mut x = vec![0.0f32; 70];
    x[0] = 1.0;
    x[1] = -1.0;
    x[63] = 0.5;
    x[64] = 2.0;
    x[69] = 1e-30;
    let mut out = [0u64; 2];
    sign_bits(&x, &mut out);
    assert_eq!(out, [1 | 1 << 63, 1 | 1 << 5]);
}

#[test]
fn rejects_bad_headers() {
    let good = VectorFileHeader::new(8, FLAG_F32, 4, 1);
    assert!(matches!(
        check_header_bytes(&good.as_bytes()[..63]),
        Err(FormatError::Truncated { .. })
    ));
    let mut h = good;
    h.magic[0] = b'X';
    assert!(matches!(
        check_header_bytes(h.as_bytes()),
        Err(FormatError::BadMagic { .. })
    ));
    let mut h = good;
    h.version = U32::new(4);
    h.seal();
    assert!(matches!(
        check_header_bytes(h.as_bytes()),
        Err(FormatError::VersionTooNew {
            found: 4,
            supported: 3
        })
    ));
    let mut h = good;
    h.seq = U64::new(5);
    assert!(matches!(
        check_header_bytes(h.as_bytes()),
        Err(FormatError::BadCrc { .. })
    ));
    let mut h = good;
    h.count = U64::new(5);
    h.seal();
    assert!(matches!(
        check_header_bytes(h.as_bytes()),
        Err(FormatError::CountExceedsCapacity { .. })
    ));
    let mut h = good;
    h.capacity = U64::new(u64::MAX / 2);
    h.seal();
    assert!(matches!(
        check_header_bytes(h.as_bytes()),
        Err(FormatError::LayoutOverflow { .. })
    ));
}

#[test]
fn quantize_matches_definition() {
    let mut q = [0i8; 4];
    let s = quantize_i8(&[1.0, -0.5, 0.25, -1.0], &mut q);
    assert!((s - 1.0 / 127.0).abs() < 1e-9);
    assert_eq!(q, [127, -64, 32, -127]);
    assert_eq!(quantize_i8(&[0.0; 4], &mut q), 0.0);
    assert_eq!(q, [0; 4]);
}

proptest! {
    #[test]
    fn check_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = check_header_bytes(&bytes);
        let _ = check_file_bytes(&bytes);
    }

    #[test]
    fn sealed_random_headers_never_panic(
        dim in any::<u32>(), cap in any::<u64>(), count in any::<u64>(), flags in any::<u32>()
    ) {
        let mut h = VectorFileHeader::new(1, FLAG_F32, 1, 0);
        h.dim = U32::new(dim);
        h.capacity = U64::new(cap);
        h.count = U64::new(count);
        h.flags = U32::new(flags);
        h.seal();
        let mut bytes = h.as_bytes().to_vec();
        bytes.resize(256, 0);
        let _ = check_file_bytes(&bytes);
    }
}
