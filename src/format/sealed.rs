//! The bytes of a sealed vector record's body and its associated data
//! (format-spec/encryption.md).
//!
//! Owns: the body layout (nonce ‖ ciphertext ‖ tag) and the associated-data string that
//! binds a sealed body to its record. Must never: encrypt or decrypt (the store does,
//! with its key); this layer stays free of cryptography and I/O.

use super::FormatError;

/// Bytes of the XChaCha20-Poly1305 nonce at the start of a sealed body.
pub const NONCE_LEN: usize = 24;
/// Bytes of the Poly1305 tag at the end of a sealed body.
pub const TAG_LEN: usize = 16;
/// What sealing adds to a vector's `4·dim` bytes.
pub const SEALED_OVERHEAD: usize = NONCE_LEN + TAG_LEN;
/// The associated data's fixed prefix (24 bytes, NUL-terminated).
pub const AAD_PREFIX: &[u8; 24] = b"engram sealed vector v1\0";
/// Bytes of key material a store key has.
pub const KEY_LEN: usize = 32;
/// What the key id hashes before the key (format-spec/encryption.md).
pub const KEY_ID_PREFIX: &[u8; 24] = b"engram vector key id v1\0";

/// A sealed body split into its parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SealedBody<'a> {
    pub nonce: &'a [u8; NONCE_LEN],
    /// The ciphertext followed by the tag (what an AEAD's `decrypt` takes).
    pub ciphertext_and_tag: &'a [u8],
}

impl<'a> SealedBody<'a> {
    /// Split `body` for a vector of `dim` elements; its length must be `4·dim + 40`.
    pub fn parse(body: &'a [u8], dim: usize) -> Result<SealedBody<'a>, FormatError> {
        let expected = dim
            .checked_mul(4)
            .and_then(|n| n.checked_add(SEALED_OVERHEAD))
            .ok_or(FormatError::BadRecord("sealed vector dimension overflows"))?;
        if dim == 0 || body.len() != expected {
            return Err(FormatError::BadRecord(
                "sealed vector body is not 4·dim + 40 bytes",
            ));
        }
        let (nonce, rest) = body.split_at(NONCE_LEN);
        let nonce = nonce
            .try_into()
            .map_err(|_| FormatError::BadRecord("sealed vector nonce"))?;
        Ok(SealedBody {
            nonce,
            ciphertext_and_tag: rest,
        })
    }
}

/// The associated data of a sealed vector: the prefix, `key_hash`, `seq`, `dim` (all
/// little-endian) and the embedder's name.
pub fn associated_data(key_hash: u64, seq: u64, dim: u32, embedder: &str) -> Vec<u8> {
    let mut aad = Vec::with_capacity(AAD_PREFIX.len() + 20 + embedder.len());
    aad.extend_from_slice(AAD_PREFIX);
    aad.extend_from_slice(&key_hash.to_le_bytes());
    aad.extend_from_slice(&seq.to_le_bytes());
    aad.extend_from_slice(&dim.to_le_bytes());
    aad.extend_from_slice(embedder.as_bytes());
    aad
}

/// A key id as records and events write it: 16 lower-case hex digits.
pub fn key_id_hex(id: u64) -> String {
    format!("{id:016x}")
}

/// Parse a key id written by [`key_id_hex`].
pub fn parse_key_id(s: &str) -> Option<u64> {
    if s.len() != 16 {
        return None;
    }
    u64::from_str_radix(s, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_splits_only_at_its_exact_length() {
        let body = vec![7u8; 3 * 4 + SEALED_OVERHEAD];
        let s = SealedBody::parse(&body, 3).unwrap();
        assert_eq!(s.nonce, &[7u8; 24]);
        assert_eq!(s.ciphertext_and_tag.len(), 12 + TAG_LEN);
        assert!(SealedBody::parse(&body, 2).is_err());
        assert!(SealedBody::parse(&body[1..], 3).is_err());
        assert!(SealedBody::parse(&[], 0).is_err());
        assert!(SealedBody::parse(&body, usize::MAX / 2).is_err());
    }

    #[test]
    fn associated_data_is_laid_out_as_specified() {
        let aad = associated_data(0x0102030405060708, 9, 3, "hash-v2-256");
        assert_eq!(&aad[..24], AAD_PREFIX);
        assert_eq!(&aad[24..32], &[8, 7, 6, 5, 4, 3, 2, 1]);
        assert_eq!(&aad[32..40], &9u64.to_le_bytes());
        assert_eq!(&aad[40..44], &3u32.to_le_bytes());
        assert_eq!(&aad[44..], b"hash-v2-256");
    }

    #[test]
    fn key_ids_round_trip_and_reject_other_text() {
        assert_eq!(key_id_hex(0xab), "00000000000000ab");
        assert_eq!(parse_key_id("00000000000000ab"), Some(0xab));
        assert_eq!(parse_key_id("ab"), None);
        assert_eq!(parse_key_id("zz000000000000ab"), None);
    }
}
