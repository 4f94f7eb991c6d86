//! `WriteBatch`: the changes one commit makes, all or nothing.
//!
//! A batch is built and validated in memory without any lock; sequence numbers,
//! timestamps and offsets are assigned only when it is committed. It never touches a
//! file itself.

use serde_json::{Map, Value};

use super::error::{Result, StoreError};
use crate::format::MAX_PAYLOAD_LEN;

#[derive(Debug, Clone)]
pub(crate) enum Op {
    Put {
        key: String,
        meta: Vec<u8>,
        body: Vec<u8>,
        flags: u16,
    },
    Delete {
        key: String,
    },
    Vector {
        key: String,
        meta: Vec<u8>,
        body: Vec<u8>,
    },
    Event {
        meta: Vec<u8>,
        body: Vec<u8>,
    },
}

/// One change of a [`WriteBatch`], read back ([`WriteBatch::ops`]); `meta` is the
/// encoded JSON metadata, with the `"key"` the store adds.
///
/// ```
/// use engram::store::{BatchOp, WriteBatch};
/// let mut batch = WriteBatch::new();
/// batch.put("note:db", serde_json::Map::new(), "use WAL").unwrap();
/// batch.delete("note:old").unwrap();
/// let ops: Vec<BatchOp<'_>> = batch.ops().collect();
/// assert!(matches!(ops[0], BatchOp::Put { key: "note:db", body: b"use WAL", .. }));
/// assert_eq!(ops[1], BatchOp::Delete { key: "note:old" });
/// // Keys, the encoded metadata ({"key":"note:db"}) and the body.
/// assert_eq!(batch.payload_bytes(), 7 + 17 + 7 + 8);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchOp<'a> {
    /// A value for `key`.
    Put {
        key: &'a str,
        meta: &'a [u8],
        body: &'a [u8],
    },
    /// `key` and its vectors deleted.
    Delete { key: &'a str },
    /// An embedding of `key`'s value; `body` is the vector as little-endian `f32`s.
    Vector {
        key: &'a str,
        meta: &'a [u8],
        body: &'a [u8],
    },
    /// An event.
    Event { meta: &'a [u8], body: &'a [u8] },
}

impl BatchOp<'_> {
    /// The key the change is to; empty for an event.
    pub fn key(&self) -> &str {
        match self {
            BatchOp::Put { key, .. } | BatchOp::Delete { key } | BatchOp::Vector { key, .. } => key,
            BatchOp::Event { .. } => "",
        }
    }

    fn payload_bytes(&self) -> usize {
        match self {
            BatchOp::Put { key, meta, body } | BatchOp::Vector { key, meta, body } => {
                key.len() + meta.len() + body.len()
            }
            BatchOp::Delete { key } => key.len(),
            BatchOp::Event { meta, body } => meta.len() + body.len(),
        }
    }
}

/// A set of changes committed atomically by [`Store::commit`](super::Store::commit).
///
/// ```
/// use engram::store::WriteBatch;
/// let mut batch = WriteBatch::new();
/// batch.put("mem:a1b2c3d4", serde_json::Map::new(), "use WAL").unwrap();
/// batch.delete("mem:00000000").unwrap();
/// assert_eq!(batch.len(), 2);
/// ```
#[derive(Debug, Clone, Default)]
pub struct WriteBatch {
    pub(crate) ops: Vec<Op>,
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> WriteBatch {
        WriteBatch::default()
    }

    /// Number of changes in the batch.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// True when the batch holds no change.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Set `key`'s value: JSON metadata (the store adds `"key"`) and a raw body.
    pub fn put(
        &mut self,
        key: &str,
        meta: Map<String, Value>,
        body: impl Into<Vec<u8>>,
    ) -> Result<&mut Self> {
        self.put_flagged(key, meta, body.into(), 0)
    }

    /// Like [`WriteBatch::put`], and compaction keeps this value even after it is
    /// superseded, for as long as the key lives: for values with a version history.
    pub fn put_keeping_history(
        &mut self,
        key: &str,
        meta: Map<String, Value>,
        body: impl Into<Vec<u8>>,
    ) -> Result<&mut Self> {
        self.put_flagged(key, meta, body.into(), crate::format::FLAG_KEEP_HISTORY)
    }

    fn put_flagged(
        &mut self,
        key: &str,
        mut meta: Map<String, Value>,
        body: Vec<u8>,
        flags: u16,
    ) -> Result<&mut Self> {
        check_key(key)?;
        meta.insert("key".into(), Value::String(key.into()));
        let meta = encode_meta(&meta)?;
        check_size(meta.len() + body.len())?;
        self.ops.push(Op::Put {
            key: key.into(),
            meta,
            body,
            flags,
        });
        Ok(self)
    }

    /// Bytes of keys, metadata and bodies the batch holds: about what it will append
    /// to the log, less the records' fixed headers.
    pub fn payload_bytes(&self) -> usize {
        self.ops().map(|op| op.payload_bytes()).sum()
    }

    /// The changes, in order, as they will be written (metadata encoded).
    pub fn ops(&self) -> impl Iterator<Item = BatchOp<'_>> + '_ {
        self.ops.iter().map(|op| match op {
            Op::Put {
                key, meta, body, ..
            } => BatchOp::Put { key, meta, body },
            Op::Delete { key } => BatchOp::Delete { key },
            Op::Vector { key, meta, body } => BatchOp::Vector { key, meta, body },
            Op::Event { meta, body } => BatchOp::Event { meta, body },
        })
    }

    /// The keys this batch puts a value under, in order.
    pub fn put_keys(&self) -> impl Iterator<Item = &str> + '_ {
        self.ops.iter().filter_map(|op| match op {
            Op::Put { key, .. } => Some(key.as_str()),
            _ => None,
        })
    }

    /// Delete `key` and its vectors. Deleting a missing key is not an error.
    pub fn delete(&mut self, key: &str) -> Result<&mut Self> {
        check_key(key)?;
        self.ops.push(Op::Delete { key: key.into() });
        Ok(self)
    }

    /// Store an embedding of `key`'s live value made by `embedder`.
    pub fn put_vector(&mut self, key: &str, embedder: &str, vector: &[f32]) -> Result<&mut Self> {
        check_key(key)?;
        if embedder.is_empty() {
            return Err(StoreError::Invalid(
                "an embedder name must not be empty".into(),
            ));
        }
        if vector.is_empty() || vector.iter().any(|x| !x.is_finite()) {
            return Err(StoreError::Invalid(format!(
                "the vector for {key} is empty or holds NaN/infinity"
            )));
        }
        let mut meta = Map::new();
        meta.insert("key".into(), Value::String(key.into()));
        meta.insert("embedder".into(), Value::String(embedder.into()));
        meta.insert("dim".into(), Value::from(vector.len()));
        let body: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
        check_size(body.len())?;
        self.ops.push(Op::Vector {
            key: key.into(),
            meta: encode_meta(&meta)?,
            body,
        });
        Ok(self)
    }

    /// Append an event (audit trail); it changes no key.
    pub fn event(
        &mut self,
        meta: Map<String, Value>,
        body: impl Into<Vec<u8>>,
    ) -> Result<&mut Self> {
        let meta = encode_meta(&meta)?;
        let body = body.into();
        check_size(meta.len() + body.len())?;
        self.ops.push(Op::Event { meta, body });
        Ok(self)
    }
}

fn check_key(key: &str) -> Result<()> {
    if key.is_empty() {
        return Err(StoreError::Invalid("a key must not be empty".into()));
    }
    Ok(())
}

fn check_size(n: usize) -> Result<()> {
    if n as u64 > MAX_PAYLOAD_LEN as u64 {
        return Err(StoreError::Invalid(format!(
            "a record of {n} bytes is over the 1 GiB limit; split it"
        )));
    }
    Ok(())
}

fn encode_meta(meta: &Map<String, Value>) -> Result<Vec<u8>> {
    serde_json::to_vec(meta)
        .map_err(|e| StoreError::Invalid(format!("metadata cannot be encoded: {e}")))
}
