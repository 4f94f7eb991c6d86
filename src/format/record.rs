//! One record of `blob.dat`: a 48-byte header, a JSON metadata part, a raw body, and
//! zero padding to the next multiple of 8.
//!
//! Headers are read in place from the memory map (zerocopy, little-endian fields), and
//! a record is only trusted after its CRC-32 matches. This module encodes and decodes
//! bytes; it never does I/O and never interprets what a payload means beyond its kind.

use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::FormatError;

/// The first four bytes of every record header.
pub const RECORD_MAGIC: [u8; 4] = *b"EREC";
/// The record layout version this code writes.
pub const RECORD_VERSION: u8 = 1;
/// Size of a record header.
pub const RECORD_HEADER_LEN: usize = 48;
/// Records start and end on multiples of this.
pub const RECORD_ALIGN: usize = 8;
/// Largest `meta_len + body_len` a writer may produce or a reader accept.
pub const MAX_PAYLOAD_LEN: u32 = 1 << 30;
/// Flag bit 0 (advisory), on a put: compaction keeps the record after a later put of
/// the same key supersedes it, for as long as the key is live (version history).
pub const FLAG_KEEP_HISTORY: u16 = 0x0001;
/// Flag bits 8..16: a reader that does not know a set bit must refuse the record.
pub const FLAGS_MUST_UNDERSTAND: u16 = 0xff00;
/// Flag bit 8 (must-understand), on a vector: the body is sealed
/// (format-spec/encryption.md). Valid on vector records only.
pub const FLAG_SEALED: u16 = 0x0100;

/// What a record is. Kinds below 0x80 must be understood; unknown kinds from 0x81 up
/// are skipped (see format-spec/blob-log.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum RecordKind {
    /// The live value of a key: JSON metadata (with `"key"`) and a body.
    Put = 1,
    /// The key is deleted, along with its vectors.
    Tombstone = 2,
    /// Ends a batch; a batch without a valid commit never happened.
    Commit = 3,
    /// An embedding of a key's live value; metadata names the embedder.
    Vector = 4,
    /// An append-only event (audit trail); never changes a key's value.
    Event = 0x80,
    /// A kind from 0x81 up that this version does not know: readers skip it (the
    /// byte itself is in the header). Never written by this version.
    Skippable = 0xff,
}

impl RecordKind {
    /// Decode the kind byte.
    pub fn from_u8(b: u8) -> Option<RecordKind> {
        Some(match b {
            1 => RecordKind::Put,
            2 => RecordKind::Tombstone,
            3 => RecordKind::Commit,
            4 => RecordKind::Vector,
            0x80 => RecordKind::Event,
            0x81..=0xff => RecordKind::Skippable,
            _ => return None,
        })
    }

    /// The lowercase name used by `engram dump --kind` and JSON output.
    pub fn name(self) -> &'static str {
        match self {
            RecordKind::Put => "put",
            RecordKind::Tombstone => "tombstone",
            RecordKind::Commit => "commit",
            RecordKind::Vector => "vector",
            RecordKind::Event => "event",
            RecordKind::Skippable => "skippable",
        }
    }

    /// Inverse of [`RecordKind::name`].
    pub fn from_name(s: &str) -> Option<RecordKind> {
        [
            RecordKind::Put,
            RecordKind::Tombstone,
            RecordKind::Commit,
            RecordKind::Vector,
            RecordKind::Event,
        ]
        .into_iter()
        .find(|k| k.name() == s)
    }
}

/// The record header, exactly as stored (little-endian, 48 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct RecordHeader {
    pub magic: [u8; 4],
    pub version: u8,
    pub kind: u8,
    pub flags: U16,
    pub key_hash: U64,
    pub seq: U64,
    pub timestamp_ms: U64,
    pub meta_len: U32,
    pub body_len: U32,
    pub reserved: U32,
    /// CRC-32 (IEEE) of header bytes 0..44, then the metadata, then the body.
    pub crc: U32,
}

const _: () = assert!(std::mem::size_of::<RecordHeader>() == RECORD_HEADER_LEN);

impl RecordHeader {
    /// `meta_len + body_len`.
    pub fn payload_len(&self) -> usize {
        self.meta_len.get() as usize + self.body_len.get() as usize
    }

    /// Bytes the whole record occupies in the log, padding included.
    pub fn record_len(&self) -> usize {
        padded_len(RECORD_HEADER_LEN + self.payload_len())
    }
}

/// Round up to the record alignment.
pub const fn padded_len(n: usize) -> usize {
    (n + RECORD_ALIGN - 1) & !(RECORD_ALIGN - 1)
}

/// The fields a writer chooses for a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordFields<'a> {
    pub kind: RecordKind,
    pub flags: u16,
    pub key_hash: u64,
    pub seq: u64,
    pub timestamp_ms: u64,
    pub meta: &'a [u8],
    pub body: &'a [u8],
}

/// Append the encoded record to `out` and return its CRC.
pub fn encode_record(fields: &RecordFields<'_>, out: &mut Vec<u8>) -> Result<u32, FormatError> {
    if fields.kind == RecordKind::Skippable {
        return Err(FormatError::UnknownKind(0xff));
    }
    let payload = fields.meta.len() as u64 + fields.body.len() as u64;
    if payload > MAX_PAYLOAD_LEN as u64 {
        return Err(FormatError::PayloadTooLarge { len: payload });
    }
    let mut h = RecordHeader {
        magic: RECORD_MAGIC,
        version: RECORD_VERSION,
        kind: fields.kind as u8,
        flags: U16::new(fields.flags),
        key_hash: U64::new(fields.key_hash),
        seq: U64::new(fields.seq),
        timestamp_ms: U64::new(fields.timestamp_ms),
        meta_len: U32::new(fields.meta.len() as u32),
        body_len: U32::new(fields.body.len() as u32),
        reserved: U32::new(0),
        crc: U32::new(0),
    };
    let crc = record_crc(&h.as_bytes()[..44], fields.meta, fields.body);
    h.crc = U32::new(crc);
    let start = out.len();
    out.extend_from_slice(h.as_bytes());
    out.extend_from_slice(fields.meta);
    out.extend_from_slice(fields.body);
    out.resize(start + h.record_len(), 0);
    Ok(crc)
}

fn record_crc(header_prefix: &[u8], meta: &[u8], body: &[u8]) -> u32 {
    let mut c = crc32fast::Hasher::new();
    c.update(header_prefix);
    c.update(meta);
    c.update(body);
    c.finalize()
}

/// A checked record borrowed from a buffer (usually the memory map).
#[derive(Debug, Clone, Copy)]
pub struct RecordView<'a> {
    pub header: &'a RecordHeader,
    pub kind: RecordKind,
    pub meta: &'a [u8],
    pub body: &'a [u8],
}

impl<'a> RecordView<'a> {
    /// Total bytes in the log, padding included.
    pub fn record_len(&self) -> usize {
        self.header.record_len()
    }
    pub fn key_hash(&self) -> u64 {
        self.header.key_hash.get()
    }
    pub fn seq(&self) -> u64 {
        self.header.seq.get()
    }
    pub fn timestamp_ms(&self) -> u64 {
        self.header.timestamp_ms.get()
    }
    pub fn crc(&self) -> u32 {
        self.header.crc.get()
    }
}

/// Decode and fully check the record at the start of `buf`.
///
/// `buf` may extend past the record. Errors distinguish the zero-filled space after
/// the last record ([`FormatError::ZeroFill`]: the end of the data), a record cut
/// short by the end of `buf` ([`FormatError::Truncated`], a torn tail), and damage.
pub fn decode_record(buf: &[u8]) -> Result<RecordView<'_>, FormatError> {
    // Zero-filled space: four zero bytes where a magic would be, or fewer at the very
    // end of the file (a dropped tail is zeroed, never cut, so it may be that short).
    if !buf.is_empty() && buf[..buf.len().min(4)].iter().all(|&b| b == 0) {
        return Err(FormatError::ZeroFill);
    }
    if buf.len() < RECORD_HEADER_LEN {
        return Err(FormatError::Truncated {
            need: RECORD_HEADER_LEN,
            have: buf.len(),
        });
    }
    let (header, _) = RecordHeader::ref_from_prefix(buf)
        .map_err(|_| FormatError::BadRecord("unreadable header"))?;
    if header.magic != RECORD_MAGIC {
        return Err(FormatError::BadRecord("bad magic"));
    }
    if header.version == 0 || header.version > RECORD_VERSION {
        return Err(FormatError::BadRecord("unknown record version"));
    }
    if header.reserved.get() != 0 {
        return Err(FormatError::BadRecord("reserved field is not zero"));
    }
    let payload = header.meta_len.get() as u64 + header.body_len.get() as u64;
    if payload > MAX_PAYLOAD_LEN as u64 {
        return Err(FormatError::BadRecord(
            "payload length over the 1 GiB limit",
        ));
    }
    let len = header.record_len();
    if buf.len() < len {
        return Err(FormatError::Truncated {
            need: len,
            have: buf.len(),
        });
    }
    let meta_end = RECORD_HEADER_LEN + header.meta_len.get() as usize;
    let body_end = meta_end + header.body_len.get() as usize;
    let (meta, body) = (&buf[RECORD_HEADER_LEN..meta_end], &buf[meta_end..body_end]);
    if record_crc(&header.as_bytes()[..44], meta, body) != header.crc.get() {
        return Err(FormatError::BadRecord("checksum mismatch"));
    }
    if buf[body_end..len].iter().any(|&b| b != 0) {
        return Err(FormatError::BadRecord("padding is not zero"));
    }
    let kind = RecordKind::from_u8(header.kind).ok_or(FormatError::UnknownKind(header.kind))?;
    let must_understand = header.flags.get() & FLAGS_MUST_UNDERSTAND;
    if must_understand & !FLAG_SEALED != 0 {
        return Err(FormatError::BadRecord("unknown must-understand flag"));
    }
    if must_understand == FLAG_SEALED && kind != RecordKind::Vector {
        return Err(FormatError::BadRecord(
            "sealed flag on a record that is not a vector",
        ));
    }
    Ok(RecordView {
        header,
        kind,
        meta,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn kinds() -> impl Strategy<Value = RecordKind> {
        prop_oneof![
            Just(RecordKind::Put),
            Just(RecordKind::Tombstone),
            Just(RecordKind::Commit),
            Just(RecordKind::Vector),
            Just(RecordKind::Event),
        ]
    }

    proptest! {
        #[test]
        fn encode_decode_round_trips(kind in kinds(), flags in 0u16..0x100, key_hash: u64, seq: u64,
                                     ts: u64, meta in proptest::collection::vec(any::<u8>(), 0..64),
                                     body in proptest::collection::vec(any::<u8>(), 0..300)) {
            let f = RecordFields { kind, flags, key_hash, seq, timestamp_ms: ts, meta: &meta, body: &body };
            let mut out = vec![];
            let crc = encode_record(&f, &mut out).unwrap();
            prop_assert_eq!(out.len() % RECORD_ALIGN, 0);
            // Trailing bytes after the record must not matter.
            out.extend_from_slice(&[0xAB; 11]);
            let v = decode_record(&out).unwrap();
            prop_assert_eq!(v.kind, kind);
            prop_assert_eq!(v.header.flags.get(), flags);
            prop_assert_eq!(v.key_hash(), key_hash);
            prop_assert_eq!(v.seq(), seq);
            prop_assert_eq!(v.timestamp_ms(), ts);
            prop_assert_eq!(v.meta, &meta[..]);
            prop_assert_eq!(v.body, &body[..]);
            prop_assert_eq!(v.crc(), crc);
            prop_assert_eq!(v.record_len(), out.len() - 11);
        }

        #[test]
        fn any_single_bit_flip_is_detected(body in proptest::collection::vec(any::<u8>(), 1..100), bit in 0usize..8) {
            let f = RecordFields { kind: RecordKind::Put, flags: 0, key_hash: 1, seq: 2, timestamp_ms: 3, meta: b"{}", body: &body };
            let mut out = vec![];
            encode_record(&f, &mut out).unwrap();
            for i in 0..out.len() {
                let mut b = out.clone();
                b[i] ^= 1 << bit;
                prop_assert!(decode_record(&b).is_err(), "flip of bit {} at byte {} accepted", bit, i);
            }
        }

        #[test]
        fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode_record(&bytes);
        }
    }

    #[test]
    fn every_prefix_of_a_record_is_truncated_not_damaged() {
        let f = RecordFields {
            kind: RecordKind::Put,
            flags: 0,
            key_hash: 9,
            seq: 1,
            timestamp_ms: 0,
            meta: b"{\"key\":\"mem:a1b2c3d4\"}",
            body: b"hello",
        };
        let mut out = vec![];
        encode_record(&f, &mut out).unwrap();
        for cut in 0..out.len() {
            match decode_record(&out[..cut]) {
                Err(FormatError::Truncated { .. }) => {}
                other => panic!("prefix of {cut} bytes gave {other:?}"),
            }
        }
    }

    #[test]
    fn kind_names_round_trip() {
        for b in 0..=255u8 {
            if let Some(k) = RecordKind::from_u8(b) {
                if k == RecordKind::Skippable {
                    assert!(b > 0x80);
                    continue;
                }
                assert_eq!(k as u8, b);
                assert_eq!(RecordKind::from_name(k.name()), Some(k));
            }
        }
    }
}
