//! The store key, and sealing and opening vector bodies under it
//! (format-spec/encryption.md).
//!
//! Owns: reading a key (file or hex), its key id, XChaCha20-Poly1305 over a vector's
//! bytes with the spec's associated data, fresh random nonces. Must never: write a key
//! anywhere but a new key file the user named, log or print key bytes, or return
//! vector values that did not authenticate.

use std::fmt;
use std::path::{Path, PathBuf};

use blake2::digest::{Update, VariableOutput};
use blake2::Blake2bVar;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use zeroize::Zeroizing;

use crate::format::sealed::{
    associated_data, key_id_hex, SealedBody, KEY_ID_PREFIX, KEY_LEN, NONCE_LEN,
};
use crate::format::{RecordView, FLAG_SEALED};

/// Why a key could not be read or a sealed vector not opened.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    #[error("cannot read the key file {path}: {source}")]
    KeyFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{what} is not a store key: it must hold exactly 32 bytes, or 64 hex digits (make one with `engram encrypt --new-key FILE`)")]
    BadKey { what: String },
    #[error("the key file {key} is inside the store directory {store}: a key kept beside the data it protects protects nothing; move it out")]
    KeyInsideStore { key: PathBuf, store: PathBuf },
    #[error("the key file {path} already exists; a new key is never written over an old one")]
    KeyFileExists { path: PathBuf },
    #[error("this store's vectors are sealed under key {expected}; {found}. Set key_file (or ENGRAM_KEY_FILE / ENGRAM_KEY) to that key")]
    WrongKey { expected: String, found: String },
    #[error("sealed vector at offset {offset} does not open under key {key_id}: damaged, or sealed for another position")]
    Damaged { offset: u64, key_id: String },
    #[error("vector record at offset {offset}: {reason}")]
    Malformed { offset: u64, reason: String },
    #[error("no random bytes for a nonce: {0}")]
    Random(String),
}

/// A 256-bit store key. Its bytes are zeroed when it is dropped and never printed.
#[derive(Clone)]
pub struct VectorKey {
    bytes: Zeroizing<[u8; KEY_LEN]>,
    id: u64,
}

impl fmt::Debug for VectorKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "VectorKey({})", self.id_hex())
    }
}

impl VectorKey {
    /// A key of these 32 bytes.
    pub fn from_bytes(bytes: [u8; KEY_LEN]) -> VectorKey {
        let bytes = Zeroizing::new(bytes);
        let id = key_id(&bytes);
        VectorKey { bytes, id }
    }

    /// A fresh random key.
    pub fn generate() -> Result<VectorKey, SealError> {
        let mut bytes = Zeroizing::new([0u8; KEY_LEN]);
        getrandom::getrandom(&mut bytes[..]).map_err(|e| SealError::Random(e.to_string()))?;
        Ok(VectorKey::from_bytes(*bytes))
    }

    /// A key from its 64 hex digits (as `ENGRAM_KEY` holds it).
    pub fn from_hex(text: &str) -> Result<VectorKey, SealError> {
        parse_hex(text.trim().as_bytes()).ok_or_else(|| SealError::BadKey {
            what: "the hex key".into(),
        })
    }

    /// Read a key file: 32 raw bytes, or 64 hex digits with optional whitespace.
    pub fn from_file(path: &Path) -> Result<VectorKey, SealError> {
        let raw = Zeroizing::new(std::fs::read(path).map_err(|source| SealError::KeyFile {
            path: path.to_path_buf(),
            source,
        })?);
        if let Ok(bytes) = <[u8; KEY_LEN]>::try_from(&raw[..]) {
            return Ok(VectorKey::from_bytes(bytes));
        }
        parse_hex(raw.trim_ascii()).ok_or_else(|| SealError::BadKey {
            what: path.display().to_string(),
        })
    }

    /// Write this key to a new file (64 hex digits and a newline, mode 0600). Refuses
    /// to replace an existing file.
    pub fn write_new_file(&self, path: &Path) -> Result<(), SealError> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|source| {
                if source.kind() == std::io::ErrorKind::AlreadyExists {
                    SealError::KeyFileExists {
                        path: path.to_path_buf(),
                    }
                } else {
                    SealError::KeyFile {
                        path: path.to_path_buf(),
                        source,
                    }
                }
            })?;
        let mut text = Zeroizing::new(String::with_capacity(2 * KEY_LEN + 1));
        for b in self.bytes.iter() {
            text.push_str(&format!("{b:02x}"));
        }
        text.push('\n');
        let io = |source| SealError::KeyFile {
            path: path.to_path_buf(),
            source,
        };
        super::io::write_at(&file, path, text.as_bytes(), 0).map_err(io)?;
        super::io::sync_all(&file, path).map_err(io)
    }

    /// The key id (format-spec/encryption.md): names the key, reveals nothing of it.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The key id as records and messages write it.
    pub fn id_hex(&self) -> String {
        key_id_hex(self.id)
    }

    fn cipher(&self) -> XChaCha20Poly1305 {
        XChaCha20Poly1305::new(self.bytes.as_ref().into())
    }

    /// Seal `vector` for the record at `seq` of key hash `key_hash`: the body of a
    /// sealed vector record.
    pub fn seal(
        &self,
        key_hash: u64,
        seq: u64,
        embedder: &str,
        vector_le: &[u8],
    ) -> Result<Vec<u8>, SealError> {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::getrandom(&mut nonce).map_err(|e| SealError::Random(e.to_string()))?;
        self.seal_with_nonce(key_hash, seq, embedder, vector_le, &nonce)
    }

    /// [`VectorKey::seal`] with a given nonce (for test vectors; never reuse one).
    pub fn seal_with_nonce(
        &self,
        key_hash: u64,
        seq: u64,
        embedder: &str,
        vector_le: &[u8],
        nonce: &[u8; NONCE_LEN],
    ) -> Result<Vec<u8>, SealError> {
        let dim = u32::try_from(vector_le.len() / 4).map_err(|_| SealError::Malformed {
            offset: 0,
            reason: "vector too long to seal".into(),
        })?;
        let aad = associated_data(key_hash, seq, dim, embedder);
        let sealed = self
            .cipher()
            .encrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: vector_le,
                    aad: &aad,
                },
            )
            .map_err(|_| SealError::Malformed {
                offset: 0,
                reason: "vector too long to seal".into(),
            })?;
        let mut body = Vec::with_capacity(NONCE_LEN + sealed.len());
        body.extend_from_slice(nonce);
        body.extend_from_slice(&sealed);
        Ok(body)
    }

    /// The `dim` values of a sealed vector record at `offset`, checked against this
    /// key's id and authenticated.
    pub fn open(&self, rec: &RecordView<'_>, offset: u64) -> Result<Vec<f32>, SealError> {
        let malformed = |reason: String| SealError::Malformed { offset, reason };
        let sealed = parse_sealed_meta(rec).map_err(malformed)?;
        if sealed.key_id != self.id_hex() {
            return Err(SealError::WrongKey {
                expected: sealed.key_id,
                found: format!("the key given is {}", self.id_hex()),
            });
        }
        let body = SealedBody::parse(rec.body, sealed.dim).map_err(|e| malformed(e.to_string()))?;
        let aad = associated_data(
            rec.key_hash(),
            rec.seq(),
            sealed.dim as u32,
            &sealed.embedder,
        );
        let plain = Zeroizing::new(
            self.cipher()
                .decrypt(
                    XNonce::from_slice(body.nonce),
                    Payload {
                        msg: body.ciphertext_and_tag,
                        aad: &aad,
                    },
                )
                .map_err(|_| SealError::Damaged {
                    offset,
                    key_id: self.id_hex(),
                })?,
        );
        Ok(plain
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }
}

/// What a sealed vector's metadata says.
pub(super) struct SealedMeta {
    pub embedder: String,
    pub dim: usize,
    pub key_id: String,
}

/// Whether `rec` is a sealed vector.
pub(super) fn is_sealed(rec: &RecordView<'_>) -> bool {
    rec.header.flags.get() & FLAG_SEALED != 0
}

/// The embedder, dimension and key id a sealed vector's metadata names.
pub(super) fn parse_sealed_meta(rec: &RecordView<'_>) -> Result<SealedMeta, String> {
    let meta: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(rec.meta).map_err(|e| format!("metadata is not JSON: {e}"))?;
    let text = |name: &str| {
        meta.get(name)
            .and_then(|v| v.as_str())
            .map(str::to_string)
            .ok_or_else(|| format!("sealed vector names no {name}"))
    };
    let dim = meta
        .get("dim")
        .and_then(|v| v.as_u64())
        .filter(|&d| d > 0 && d <= u32::MAX as u64)
        .ok_or_else(|| "sealed vector has no valid dim".to_string())? as usize;
    Ok(SealedMeta {
        embedder: text("embedder")?,
        dim,
        key_id: text("key_id")?,
    })
}

fn key_id(bytes: &[u8; KEY_LEN]) -> u64 {
    let mut hasher = Blake2bVar::new(8).unwrap_or_else(|_| unreachable!("8 is a valid size"));
    hasher.update(KEY_ID_PREFIX);
    hasher.update(bytes);
    let mut out = [0u8; 8];
    hasher
        .finalize_variable(&mut out)
        .unwrap_or_else(|_| unreachable!("the buffer has the digest's size"));
    u64::from_be_bytes(out)
}

fn parse_hex(text: &[u8]) -> Option<VectorKey> {
    if text.len() != 2 * KEY_LEN {
        return None;
    }
    let mut bytes = Zeroizing::new([0u8; KEY_LEN]);
    for (i, pair) in text.chunks_exact(2).enumerate() {
        let digit = |c: u8| (c as char).to_digit(16);
        bytes[i] = (digit(pair[0])? * 16 + digit(pair[1])?) as u8;
    }
    Some(VectorKey::from_bytes(*bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{decode_record, encode_record, RecordFields, RecordKind};

    fn sealed_record(key: &VectorKey, seq: u64, v: &[f32]) -> Vec<u8> {
        let le: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        let body = key.seal(42, seq, "test", &le).unwrap();
        let meta = format!(
            r#"{{"key":"k","embedder":"test","dim":{},"key_id":"{}"}}"#,
            v.len(),
            key.id_hex()
        );
        let mut out = Vec::new();
        encode_record(
            &RecordFields {
                kind: RecordKind::Vector,
                flags: FLAG_SEALED,
                key_hash: 42,
                seq,
                timestamp_ms: 1,
                meta: meta.as_bytes(),
                body: &body,
            },
            &mut out,
        )
        .unwrap();
        out
    }

    #[test]
    fn a_sealed_vector_opens_only_under_its_key_and_position() {
        let key = VectorKey::generate().unwrap();
        let v = [1.0f32, -0.5, 0.25];
        let bytes = sealed_record(&key, 7, &v);
        let rec = decode_record(&bytes).unwrap();
        assert!(is_sealed(&rec));
        assert_eq!(key.open(&rec, 64).unwrap(), v);
        // The plaintext is nowhere in the record.
        let le: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        assert!(!bytes.windows(le.len()).any(|w| w == le.as_slice()));

        let other = VectorKey::generate().unwrap();
        assert!(matches!(
            other.open(&rec, 64),
            Err(SealError::WrongKey { .. })
        ));

        // The same sealed body claimed at another sequence number (re-encoded, so the
        // record's checksum is right): only the AEAD can object, and does.
        let r = decode_record(&bytes).unwrap();
        let mut reencoded = Vec::new();
        encode_record(
            &RecordFields {
                kind: RecordKind::Vector,
                flags: FLAG_SEALED,
                key_hash: 42,
                seq: 8,
                timestamp_ms: 1,
                meta: r.meta,
                body: r.body,
            },
            &mut reencoded,
        )
        .unwrap();
        let rec = decode_record(&reencoded).unwrap();
        assert!(matches!(key.open(&rec, 64), Err(SealError::Damaged { .. })));
    }

    #[test]
    fn keys_read_from_hex_or_raw_bytes_and_refuse_anything_else() {
        let dir = tempfile::tempdir().unwrap();
        let key = VectorKey::generate().unwrap();
        let hex = dir.path().join("k.hex");
        key.write_new_file(&hex).unwrap();
        assert_eq!(VectorKey::from_file(&hex).unwrap().id(), key.id());
        assert!(matches!(
            key.write_new_file(&hex),
            Err(SealError::KeyFileExists { .. })
        ));
        let raw = dir.path().join("k.raw");
        std::fs::write(&raw, [9u8; 32]).unwrap();
        assert_eq!(
            VectorKey::from_file(&raw).unwrap().id(),
            VectorKey::from_bytes([9u8; 32]).id()
        );
        let bad = dir.path().join("k.bad");
        std::fs::write(&bad, "not a key").unwrap();
        assert!(matches!(
            VectorKey::from_file(&bad),
            Err(SealError::BadKey { .. })
        ));
        assert!(VectorKey::from_hex(&"0".repeat(63)).is_err());
        assert!(format!("{key:?}").contains(&key.id_hex()));
    }
}
