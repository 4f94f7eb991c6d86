//! The 64-byte header at offset 0 of `blob.dat`.
//!
//! It names the file as a blob log, carries the format version readers check before
//! anything else, the store's identity and the compaction generation. It is written
//! once when the file is created and never changed in place. This module only encodes
//! and validates bytes; it never touches a file.

use zerocopy::little_endian::{U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::FormatError;

/// The first eight bytes of every `blob.dat`.
pub const BLOB_MAGIC: [u8; 8] = *b"ENGRBLOB";
/// The newest format version this code reads.
pub const FORMAT_VERSION: u32 = FORMAT_VERSION_SEALED;
/// The format version of a plain store's log (what [`FileHeader::new`] writes).
pub const FORMAT_VERSION_PLAIN: u32 = 1;
/// The format version of a log that may hold sealed vector records
/// (format-spec/encryption.md): readers that know only version 1 refuse it by name.
pub const FORMAT_VERSION_SEALED: u32 = 2;
/// Size of the file header; the first record starts here.
pub const FILE_HEADER_LEN: usize = 64;

/// The file header, exactly as stored (little-endian, 64 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct FileHeader {
    pub magic: [u8; 8],
    pub format_version: U32,
    pub header_len: U32,
    /// Starts at 1; `compact` writes a new file with the next generation.
    pub generation: U64,
    /// Random at creation, kept by compaction: ties derived files to their log.
    pub store_id: [u8; 16],
    pub created_ms: U64,
    pub reserved: [u8; 12],
    /// CRC-32 (IEEE) of bytes 0..60.
    pub crc: U32,
}

const _: () = assert!(std::mem::size_of::<FileHeader>() == FILE_HEADER_LEN);

impl FileHeader {
    /// A header for a new plain file (format version 1).
    pub fn new(generation: u64, store_id: [u8; 16], created_ms: u64) -> FileHeader {
        Self::with_version(FORMAT_VERSION_PLAIN, generation, store_id, created_ms)
    }

    /// A header for a new file of the given format version
    /// ([`FORMAT_VERSION_SEALED`] for a sealed store).
    pub fn with_version(
        format_version: u32,
        generation: u64,
        store_id: [u8; 16],
        created_ms: u64,
    ) -> FileHeader {
        let mut h = FileHeader {
            magic: BLOB_MAGIC,
            format_version: U32::new(format_version),
            header_len: U32::new(FILE_HEADER_LEN as u32),
            generation: U64::new(generation),
            store_id,
            created_ms: U64::new(created_ms),
            reserved: [0; 12],
            crc: U32::new(0),
        };
        h.crc = U32::new(crc32fast::hash(&h.as_bytes()[..60]));
        h
    }

    /// Validate the first bytes of a file as a blob log header.
    ///
    /// Checks in an order that gives the most useful message: not a blob log at all,
    /// then a newer format, then damage.
    pub fn decode(bytes: &[u8]) -> Result<FileHeader, FormatError> {
        if bytes.len() < FILE_HEADER_LEN {
            if bytes.len() >= 8 && bytes[..8] != BLOB_MAGIC {
                return Err(FormatError::NotABlobLog);
            }
            return Err(FormatError::TruncatedFileHeader { len: bytes.len() });
        }
        let (h, _) = FileHeader::read_from_prefix(bytes).map_err(|_| FormatError::NotABlobLog)?;
        if h.magic != BLOB_MAGIC {
            return Err(FormatError::NotABlobLog);
        }
        if h.format_version.get() > FORMAT_VERSION {
            return Err(FormatError::VersionTooNew {
                found: h.format_version.get(),
                supported: FORMAT_VERSION,
            });
        }
        if h.format_version.get() == 0 || h.header_len.get() as usize != FILE_HEADER_LEN {
            return Err(FormatError::BadFileHeader(
                "format version 0 or wrong header length",
            ));
        }
        if crc32fast::hash(&bytes[..60]) != h.crc.get() {
            return Err(FormatError::BadFileHeader("header checksum mismatch"));
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_rejects_damage() {
        let h = FileHeader::new(3, [7; 16], 1_700_000_000_000);
        let bytes = h.as_bytes().to_vec();
        assert_eq!(FileHeader::decode(&bytes).unwrap(), h);
        for i in 0..FILE_HEADER_LEN {
            let mut b = bytes.clone();
            b[i] ^= 0x01;
            assert!(FileHeader::decode(&b).is_err(), "flip at byte {i} accepted");
        }
        assert!(matches!(
            FileHeader::decode(&bytes[..10]),
            Err(FormatError::TruncatedFileHeader { .. })
        ));
        assert!(matches!(
            FileHeader::decode(
                b"hello world, not a store at all.................................."
            ),
            Err(FormatError::NotABlobLog)
        ));
    }

    #[test]
    fn plain_logs_are_version_1_and_sealed_ones_version_2_both_read() {
        let plain = FileHeader::new(1, [0; 16], 0);
        assert_eq!(plain.format_version.get(), FORMAT_VERSION_PLAIN);
        let sealed = FileHeader::with_version(FORMAT_VERSION_SEALED, 1, [0; 16], 0);
        assert_eq!(FileHeader::decode(sealed.as_bytes()).unwrap(), sealed);
        assert_eq!(FileHeader::decode(plain.as_bytes()).unwrap(), plain);
    }

    #[test]
    fn a_newer_version_is_refused_by_name() {
        let mut h = FileHeader::new(1, [0; 16], 0);
        h.format_version = U32::new(FORMAT_VERSION + 1);
        h.crc = U32::new(crc32fast::hash(&h.as_bytes()[..60]));
        let e = FileHeader::decode(h.as_bytes()).unwrap_err();
        assert!(
            matches!(
                e,
                FormatError::VersionTooNew {
                    found: 3,
                    supported: 2
                }
            ),
            "{e}"
        );
    }
}
