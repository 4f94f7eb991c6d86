//! The body of a commit record: how a batch proves it was written whole.
//!
//! A commit names where its batch starts, the previous commit (so commits form a chain
//! `verify` can walk), how many records the batch has, the first sequence number and a
//! CRC over the batch records' own CRCs. Pure encoding; no I/O.

use zerocopy::little_endian::{U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::FormatError;

/// Size of a commit record's body.
pub const COMMIT_BODY_LEN: usize = 32;

/// The commit body, exactly as stored (little-endian, 32 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct CommitBody {
    /// Offset of the batch's first record.
    pub batch_start: U64,
    /// Offset of the previous commit record; 0 for the first commit (offset 0 is the
    /// file header, never a record).
    pub prev_commit: U64,
    /// Records in the batch, the commit itself not counted. At least 1.
    pub record_count: U32,
    /// CRC-32 of the batch records' CRC fields, each as 4 little-endian bytes, in order.
    pub batch_crc: U32,
    /// Sequence number of the batch's first record.
    pub first_seq: U64,
}

const _: () = assert!(std::mem::size_of::<CommitBody>() == COMMIT_BODY_LEN);

impl CommitBody {
    /// Build a commit body.
    pub fn new(
        batch_start: u64,
        prev_commit: u64,
        record_count: u32,
        batch_crc: u32,
        first_seq: u64,
    ) -> Self {
        CommitBody {
            batch_start: U64::new(batch_start),
            prev_commit: U64::new(prev_commit),
            record_count: U32::new(record_count),
            batch_crc: U32::new(batch_crc),
            first_seq: U64::new(first_seq),
        }
    }

    /// Read a commit body; its length must be exact.
    pub fn decode(body: &[u8]) -> Result<CommitBody, FormatError> {
        if body.len() != COMMIT_BODY_LEN {
            return Err(FormatError::BadRecord("commit body is not 32 bytes"));
        }
        CommitBody::read_from_bytes(body)
            .map_err(|_| FormatError::BadRecord("unreadable commit body"))
    }
}

/// Accumulates the batch CRC from the records' CRCs as they are written or read.
#[derive(Debug, Default, Clone)]
pub struct BatchCrc(crc32fast::Hasher);

impl BatchCrc {
    pub fn new() -> Self {
        BatchCrc(crc32fast::Hasher::new())
    }
    pub fn push(&mut self, record_crc: u32) {
        self.0.update(&record_crc.to_le_bytes());
    }
    pub fn finish(&self) -> u32 {
        self.0.clone().finalize()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_body_round_trips() {
        let c = CommitBody::new(64, 0, 3, 0xdead_beef, 1);
        assert_eq!(CommitBody::decode(c.as_bytes()).unwrap(), c);
        assert!(CommitBody::decode(&c.as_bytes()[..31]).is_err());
    }
}
