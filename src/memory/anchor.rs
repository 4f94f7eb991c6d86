//! Anchors: what code a memory referenced, and a hash of that code when the memory
//! was written; callee anchors: what the functions an anchored symbol called were
//! then (`format-spec/staleness.md`).
//!
//! This layer stores anchors as opaque data in the memory record and checks only
//! their shape. It never resolves a reference or reads a code table: whoever opens the
//! store may hand it an [`Anchorer`] that does (the layer above memory and index),
//! called under the writer lock in the same read-modify-write as the record
//! ([`Memories::with_anchorer`]; [`Memories::reanchor`] writes a memory again to
//! anchor it to the code as it is now).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{normalise_id, Locked, Memories, Memory, MemoryError, Result};
use crate::key::Key;

/// Most anchors one memory may hold.
pub const MAX_ANCHORS: usize = 64;

/// One referenced piece of code as it was when the memory was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Anchor {
    /// The `sym:` or `file:` key referenced, as it was at write time.
    pub key: String,
    /// The content hash of what `key` named then (opaque here).
    pub hash: String,
    /// The symbol's signature then, for a change summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// Its length in lines then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<u64>,
}

/// Most callee anchors one memory may hold.
pub const MAX_CALLEE_ANCHORS: usize = 64;

/// A definition an anchored symbol called when the memory was written, with what it
/// was then: the memory may be affected when it changes. Opaque here like [`Anchor`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalleeAnchor {
    /// The `sym:` key of the anchored symbol (an [`Anchor`]'s key) that calls it.
    pub of: String,
    /// The callee's `sym:` key, as it was at write time.
    pub key: String,
    /// The content hash of the callee then.
    pub hash: String,
    /// Calls from `of` to reach it: 1 for a direct call.
    pub depth: u32,
    /// How sure the call graph was that the call reaches it (`resolved`,
    /// `imported`): the weakest step on the way.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub confidence: String,
}

/// An anchor of the wrong shape (each names the anchor by its key).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnchorError {
    #[error("anchor key {key:?} is not a symbol or file key")]
    NotASymbolOrFile { key: String },
    #[error("anchor hash of {key} must be 1 to 64 characters")]
    HashLength { key: String },
    #[error("anchor signature of {key} is over 1024 bytes")]
    SignatureTooLong { key: String },
    #[error("a memory holds at most {MAX_ANCHORS} anchors, this one has {count}")]
    TooMany { count: usize },
    #[error("callee anchor {key:?} of {of:?}: `of` and `key` must be symbol keys, `hash` 1 to 64 characters, `depth` 1 to 3")]
    BadCallee { of: String, key: String },
    #[error("a memory holds at most {MAX_CALLEE_ANCHORS} callee anchors, this one has {count}")]
    TooManyCallees { count: usize },
}

impl Anchor {
    /// Check the shape: a `sym:` or `file:` key and a hash of 1 to 64 characters.
    pub fn validate(&self) -> Result<(), AnchorError> {
        let key = || self.key.clone();
        match Key::parse(&self.key) {
            Ok(Key::Symbol { .. } | Key::File { .. }) => {}
            _ => return Err(AnchorError::NotASymbolOrFile { key: key() }),
        }
        if self.hash.is_empty() || self.hash.len() > 64 {
            return Err(AnchorError::HashLength { key: key() });
        }
        if self.signature.as_ref().is_some_and(|s| s.len() > 1024) {
            return Err(AnchorError::SignatureTooLong { key: key() });
        }
        Ok(())
    }
}

/// Check every anchor of a memory and how many there are.
pub(super) fn validate_all(anchors: &[Anchor]) -> Result<(), AnchorError> {
    if anchors.len() > MAX_ANCHORS {
        return Err(AnchorError::TooMany {
            count: anchors.len(),
        });
    }
    anchors.iter().try_for_each(Anchor::validate)
}

impl CalleeAnchor {
    /// Check the shape: symbol keys, a hash of 1 to 64 characters, a depth of 1 to 3.
    pub fn validate(&self) -> Result<(), AnchorError> {
        let sym = |k: &str| matches!(Key::parse(k), Ok(Key::Symbol { .. }));
        let ok = sym(&self.of)
            && sym(&self.key)
            && !self.hash.is_empty()
            && self.hash.len() <= 64
            && (1..=3).contains(&self.depth)
            && self.confidence.len() <= 16;
        if ok {
            Ok(())
        } else {
            Err(AnchorError::BadCallee {
                of: self.of.clone(),
                key: self.key.clone(),
            })
        }
    }
}

/// Check every callee anchor of a memory and how many there are.
pub(super) fn validate_callees(callees: &[CalleeAnchor]) -> Result<(), AnchorError> {
    if callees.len() > MAX_CALLEE_ANCHORS {
        return Err(AnchorError::TooManyCallees {
            count: callees.len(),
        });
    }
    callees.iter().try_for_each(CalleeAnchor::validate)
}

/// Computes a memory's anchors against the code the store holds. Called under the
/// writer lock with the tracker as of the lock, for every memory written or updated.
pub trait Anchorer: Send + Sync {
    /// The anchors of `memory` (its `symbols` and what its text references), each with
    /// the current content hash of what it names.
    fn anchors(
        &self,
        db: &rusqlite::Connection,
        memory: &Memory,
    ) -> crate::store::Result<Vec<Anchor>>;

    /// The key that `key`, a `sym:` key a memory references, names now: itself while
    /// it is in the index; else the same symbol after its lines moved, or renamed or
    /// moved to another file with the same body (`hash`, its anchor's), or found by
    /// name and kind alone when exactly one symbol has them. `None` when none is found.
    /// The default knows no code: every key is as given.
    fn current_key(
        &self,
        db: &rusqlite::Connection,
        key: &str,
        hash: Option<&str>,
    ) -> crate::store::Result<Option<String>> {
        let _ = (db, hash);
        Ok(Some(key.to_string()))
    }

    /// The callee anchors of a memory with `anchors` (what its `sym:` anchors call),
    /// each with the current content hash of the callee; `None` when there is nothing
    /// to record them for, or no call graph. The default knows no code: `None`.
    fn callees(
        &self,
        db: &rusqlite::Connection,
        anchors: &[Anchor],
    ) -> crate::store::Result<Option<Vec<CalleeAnchor>>> {
        let _ = (db, anchors);
        Ok(None)
    }
}

/// Computes a memory's anchors for a backend that holds no code of its own (the
/// team backend: a repository's code index stays in its local store, so whoever
/// opens the backend beside that store hands it a source reading the store).
pub trait AnchorSource: Send + Sync {
    /// The anchors of `memory`, each with the current content hash of what it names.
    fn anchors(&self, memory: &Memory) -> Result<Vec<Anchor>>;

    /// The callee anchors of a memory with `anchors`, as [`Anchorer::callees`] gives
    /// them. The default knows no code: `None`.
    fn callees(&self, anchors: &[Anchor]) -> Result<Option<Vec<CalleeAnchor>>> {
        let _ = anchors;
        Ok(None)
    }
}

impl Memories {
    /// Compute every written memory's anchors with `anchorer` (under the writer lock).
    /// Without one, a memory keeps the anchors it is given.
    pub fn with_anchorer(mut self, anchorer: Arc<dyn Anchorer>) -> Memories {
        self.anchorer = Some(anchorer);
        self
    }

    /// Re-anchor a memory to the code as it is now: a new version with the same
    /// content and anchors computed afresh (what `engram confirm` does).
    pub fn reanchor(&self, id: &str) -> Result<Memory> {
        self.locked(|l| {
            let id = normalise_id(id)?;
            let mut old = l
                .get(&id)?
                .ok_or_else(|| MemoryError::NotFound(id.clone()))?;
            // A symbol whose lines moved (or that was renamed, or moved with its body)
            // has another key now: follow it rather than refuse the old one.
            if let Some(a) = &self.anchorer {
                let anchors = std::mem::take(&mut old.anchors);
                let symbols = l.with_tracker(|db| {
                    old.symbols
                        .iter()
                        .map(|s| {
                            if !s.starts_with("sym:") {
                                return Ok(s.clone());
                            }
                            let hash = anchors
                                .iter()
                                .find(|x| &x.key == s)
                                .map(|x| x.hash.as_str());
                            Ok(a.current_key(db, s, hash)?.unwrap_or_else(|| s.clone()))
                        })
                        .collect::<crate::store::Result<Vec<String>>>()
                })?;
                old.symbols = symbols;
                old.anchors = anchors;
            }
            self.update_locked(l, &id, old)
        })
    }

    /// Fill `memory.anchors` and `memory.callees` from the anchorer, as of the lock.
    pub(super) fn anchor_locked(&self, l: &Locked<'_>, memory: &mut Memory) -> Result<()> {
        if let Some(a) = &self.anchorer {
            let (anchors, callees) = l.with_tracker(|db| {
                let anchors = a.anchors(db, memory)?;
                let callees = a.callees(db, &anchors)?;
                Ok((anchors, callees))
            })?;
            memory.anchors = anchors;
            memory.callees = callees;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::InvalidMemory;

    fn anchor(key: &str) -> Anchor {
        Anchor {
            key: key.into(),
            hash: "0123456789abcdef".into(),
            signature: Some("def request(self)".into()),
            lines: Some(12),
        }
    }

    #[test]
    fn anchors_round_trip_through_the_record_metadata() {
        let mut m = Memory::new("Session.request retries twice");
        m.id = "mem:0000abcd".into();
        m.anchors = vec![
            anchor("sym:src/net.py#Session.request:method:4:15"),
            Anchor {
                signature: None,
                lines: None,
                ..anchor("file:src/net.py")
            },
        ];
        m.validate().unwrap();
        let meta = m.to_meta();
        assert_eq!(
            meta["anchors"][0]["key"],
            "sym:src/net.py#Session.request:method:4:15"
        );
        assert!(meta["anchors"][1].get("signature").is_none());
        let back = Memory::from_parts(&m.id, &meta, m.text.as_bytes()).unwrap();
        assert_eq!(back.anchors, m.anchors);
        assert!(back.extra.is_empty());
    }

    #[test]
    fn callee_anchors_round_trip_and_bad_ones_are_refused() {
        let callee = CalleeAnchor {
            of: "sym:app.py#total:function:4:6".into(),
            key: "sym:util.py#rate:function:5:7".into(),
            hash: "0123456789abcdef".into(),
            depth: 1,
            confidence: "imported".into(),
        };
        let mut m = Memory::new("`total` rounds after the rate");
        m.id = "mem:0000abcd".into();
        m.callees = Some(vec![callee.clone()]);
        m.validate().unwrap();
        let meta = m.to_meta();
        assert_eq!(meta["callees"][0]["depth"], 1);
        let back = Memory::from_parts(&m.id, &meta, m.text.as_bytes()).unwrap();
        assert_eq!(back.callees, m.callees);
        // Checked but empty is stored as such; never checked is absent.
        m.callees = Some(Vec::new());
        assert_eq!(m.to_meta()["callees"], serde_json::json!([]));
        assert!(Memory::new("x").to_meta().get("callees").is_none());

        for bad in [
            CalleeAnchor {
                of: "file:app.py".into(),
                ..callee.clone()
            },
            CalleeAnchor {
                key: "mem:0000abcd".into(),
                ..callee.clone()
            },
            CalleeAnchor {
                hash: String::new(),
                ..callee.clone()
            },
            CalleeAnchor {
                depth: 0,
                ..callee.clone()
            },
            CalleeAnchor {
                depth: 4,
                ..callee.clone()
            },
        ] {
            m.callees = Some(vec![bad]);
            let e = m.validate().unwrap_err();
            assert!(e.to_string().contains("callee anchor"), "{e}");
        }
        m.callees = Some(vec![callee; MAX_CALLEE_ANCHORS + 1]);
        assert!(m.validate().unwrap_err().to_string().contains("at most"));
    }

    #[test]
    fn a_memory_without_anchors_stores_none() {
        let m = Memory::new("plain");
        assert!(m.to_meta().get("anchors").is_none());
    }

    #[test]
    fn bad_anchors_are_refused() {
        let mut m = Memory::new("x");
        m.anchors = vec![anchor("mem:0000abcd")];
        let e = m.validate().unwrap_err();
        assert_eq!(
            e,
            InvalidMemory::Anchor(AnchorError::NotASymbolOrFile {
                key: "mem:0000abcd".into()
            })
        );
        assert!(e.to_string().contains("not a symbol or file key"), "{e}");
        m.anchors = vec![Anchor {
            hash: String::new(),
            ..anchor("file:a.py")
        }];
        assert!(m.validate().unwrap_err().to_string().contains("1 to 64"));
        m.anchors = vec![anchor("file:a.py"); MAX_ANCHORS + 1];
        assert!(matches!(
            m.validate(),
            Err(InvalidMemory::Anchor(AnchorError::TooMany { count })) if count == MAX_ANCHORS + 1
        ));
    }
}
