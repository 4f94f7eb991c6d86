//! Namespaced keys and their 64-bit hash.
//!
//! Every stored thing is named by a canonical key string (`file:src/main.py`,
//! `mem:a1b2c3d4`, …) and located by `hash64(key)`. The string formats and the hash
//! are part of the on-disk format (see `format-spec/keys.md`): changing either makes
//! every existing store unreadable, so this module must never change a format it
//! already accepts. It knows nothing of records, files or SQLite.

use std::fmt;

use blake2::digest::block_buffer::{BlockBuffer, Lazy};
use blake2::digest::consts::U128;
use blake2::digest::core_api::{Block, UpdateCore, VariableOutputCore};
use blake2::Blake2bVarCore;

/// The BLAKE2b personalisation used by [`hash64`], zero-padded to 16 bytes by BLAKE2b.
pub const HASH_PERSONAL: &[u8] = b"galaxybrain";

/// Hash a key string to the 64-bit value every index in a store is keyed by.
///
/// BLAKE2b with an 8-byte digest and personalisation `b"galaxybrain"` (zero-padded to
/// 16 bytes), read as a little-endian `u64`. It is total: any string hashes, valid key
/// or not, so callers can hash keys of namespaces this version does not know.
///
/// ```
/// assert_eq!(engram::key::hash64("file:src/main.py"), 9629542200085099360);
/// ```
pub fn hash64(key: &str) -> u64 {
    // The parameter-block API is the only one in `blake2` 0.10 that sets a
    // personalisation without switching to keyed (MAC) mode, which hashes differently.
    let mut core = Blake2bVarCore::new_with_params(&[], HASH_PERSONAL, 0, 8);
    // BLAKE2 must hold back the last block to flag it final, hence the lazy buffer.
    let mut buffer = BlockBuffer::<U128, Lazy>::default();
    buffer.digest_blocks(key.as_bytes(), |blocks: &[Block<Blake2bVarCore>]| {
        core.update_blocks(blocks)
    });
    let mut full = Default::default();
    core.finalize_variable_core(&mut buffer, &mut full);
    let mut digest = [0u8; 8];
    digest.copy_from_slice(&full[..8]);
    u64::from_le_bytes(digest)
}

/// The same 64 bits as [`hash64`], as SQLite stores them (a signed integer).
pub fn hash64_i64(key: &str) -> i64 {
    hash64(key) as i64
}

/// Why a key string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("key {key:?} has no known namespace prefix; expected one of file:, sym:, chunk:, refs:, mem:, task:, insight:, context:, pat:, q:")]
    UnknownNamespace { key: String },
    #[error("key {key:?} is malformed: {reason}")]
    Malformed { key: String, reason: &'static str },
}

/// A parsed, canonical key. `Key::parse(k.to_string()) == k` for every valid key and
/// `Key::parse(s).to_string() == s` for every string `parse` accepts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Key {
    /// `file:{repo_rel_path}`
    File { path: String },
    /// `sym:{path}#{name}:{kind}:{start}:{end}` (lines 1-based, inclusive)
    Symbol {
        path: String,
        name: String,
        kind: String,
        start: u32,
        end: u32,
    },
    /// `chunk:{path}:{chunk_id}`
    Chunk { path: String, chunk_id: u32 },
    /// `refs:{repo_rel_path}`: a file's calls and imports (the code graph)
    Refs { path: String },
    /// `mem:{uuid8}`: eight lowercase hex digits
    Memory { id: String },
    /// `task:{slug}`
    Task { slug: String },
    /// `insight:{slug}`
    Insight { slug: String },
    /// `context:{slug}`
    Context { slug: String },
    /// `pat:{slug}`
    Pattern { slug: String },
    /// `q:{mode}:{corpus}:{query}`
    Query {
        mode: String,
        corpus: String,
        query: String,
    },
}

impl Key {
    /// Parse a canonical key string.
    ///
    /// ```
    /// use engram::key::Key;
    /// let k = Key::parse("sym:src/main.py#foo:function:10:20").unwrap();
    /// assert_eq!(k, Key::Symbol { path: "src/main.py".into(), name: "foo".into(),
    ///     kind: "function".into(), start: 10, end: 20 });
    /// assert_eq!(k.to_string(), "sym:src/main.py#foo:function:10:20");
    /// ```
    pub fn parse(s: &str) -> Result<Key, KeyError> {
        let bad = |reason| KeyError::Malformed {
            key: s.to_string(),
            reason,
        };
        let (ns, rest) = s
            .split_once(':')
            .ok_or_else(|| KeyError::UnknownNamespace { key: s.to_string() })?;
        match ns {
            "file" => {
                if rest.is_empty() {
                    return Err(bad("the path is empty"));
                }
                Ok(Key::File { path: rest.into() })
            }
            "refs" => {
                if rest.is_empty() {
                    return Err(bad("the path is empty"));
                }
                Ok(Key::Refs { path: rest.into() })
            }
            "sym" => {
                // Parse from the right: kind and line numbers never contain ':', while a
                // name may (`Client::get`); a path may contain '#', a name may not.
                let mut parts = rest.rsplitn(4, ':');
                let end = parts.next().ok_or_else(|| bad("missing end line"))?;
                let start = parts.next().ok_or_else(|| bad("missing start line"))?;
                let kind = parts.next().ok_or_else(|| bad("missing kind"))?;
                let path_name = parts.next().ok_or_else(|| bad("missing path#name"))?;
                let (path, name) = path_name
                    .rsplit_once('#')
                    .ok_or_else(|| bad("missing '#' between path and name"))?;
                if path.is_empty() || name.is_empty() || kind.is_empty() {
                    return Err(bad("path, name and kind must not be empty"));
                }
                Ok(Key::Symbol {
                    path: path.into(),
                    name: name.into(),
                    kind: kind.into(),
                    start: parse_canonical_u32(start).ok_or_else(|| bad("bad start line"))?,
                    end: parse_canonical_u32(end).ok_or_else(|| bad("bad end line"))?,
                })
            }
            "chunk" => {
                let (path, id) = rest
                    .rsplit_once(':')
                    .ok_or_else(|| bad("expected chunk:{path}:{chunk_id}"))?;
                if path.is_empty() {
                    return Err(bad("the path is empty"));
                }
                Ok(Key::Chunk {
                    path: path.into(),
                    chunk_id: parse_canonical_u32(id).ok_or_else(|| bad("bad chunk id"))?,
                })
            }
            "mem" => {
                if rest.len() != 8
                    || !rest
                        .bytes()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                {
                    return Err(bad("a memory id is eight lowercase hex digits"));
                }
                Ok(Key::Memory { id: rest.into() })
            }
            "task" | "insight" | "context" | "pat" => {
                if !is_slug(rest) {
                    return Err(bad("a slug is one or more of a-z, 0-9, '_', '-', '.'"));
                }
                let slug = rest.to_string();
                Ok(match ns {
                    "task" => Key::Task { slug },
                    "insight" => Key::Insight { slug },
                    "context" => Key::Context { slug },
                    _ => Key::Pattern { slug },
                })
            }
            "q" => {
                let mut parts = rest.splitn(3, ':');
                let mode = parts.next().unwrap_or("");
                let corpus = parts
                    .next()
                    .ok_or_else(|| bad("expected q:{mode}:{corpus}:{query}"))?;
                let query = parts
                    .next()
                    .ok_or_else(|| bad("expected q:{mode}:{corpus}:{query}"))?;
                if mode.is_empty() || corpus.is_empty() {
                    return Err(bad("mode and corpus must not be empty"));
                }
                Ok(Key::Query {
                    mode: mode.into(),
                    corpus: corpus.into(),
                    query: query.into(),
                })
            }
            _ => Err(KeyError::UnknownNamespace { key: s.into() }),
        }
    }

    /// The namespace prefix without its colon (`"file"`, `"mem"`, …).
    pub fn namespace(&self) -> &'static str {
        match self {
            Key::File { .. } => "file",
            Key::Symbol { .. } => "sym",
            Key::Chunk { .. } => "chunk",
            Key::Refs { .. } => "refs",
            Key::Memory { .. } => "mem",
            Key::Task { .. } => "task",
            Key::Insight { .. } => "insight",
            Key::Context { .. } => "context",
            Key::Pattern { .. } => "pat",
            Key::Query { .. } => "q",
        }
    }

    /// `hash64` of the canonical string.
    pub fn hash64(&self) -> u64 {
        hash64(&self.to_string())
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Key::File { path } => write!(f, "file:{path}"),
            Key::Symbol {
                path,
                name,
                kind,
                start,
                end,
            } => write!(f, "sym:{path}#{name}:{kind}:{start}:{end}"),
            Key::Chunk { path, chunk_id } => write!(f, "chunk:{path}:{chunk_id}"),
            Key::Refs { path } => write!(f, "refs:{path}"),
            Key::Memory { id } => write!(f, "mem:{id}"),
            Key::Task { slug } => write!(f, "task:{slug}"),
            Key::Insight { slug } => write!(f, "insight:{slug}"),
            Key::Context { slug } => write!(f, "context:{slug}"),
            Key::Pattern { slug } => write!(f, "pat:{slug}"),
            Key::Query {
                mode,
                corpus,
                query,
            } => write!(f, "q:{mode}:{corpus}:{query}"),
        }
    }
}

impl std::str::FromStr for Key {
    type Err = KeyError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Key::parse(s)
    }
}

fn is_slug(s: &str) -> bool {
    !s.is_empty()
        && s.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-' | b'.')
        })
}

/// Decimal without sign or leading zeros, so that parse∘format is the identity.
fn parse_canonical_u32(s: &str) -> Option<u32> {
    if s.is_empty() || (s.len() > 1 && s.starts_with('0')) || !s.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vectors of DESIGN.md and format-spec/keys.md.
    pub(crate) const VECTORS: &[(&str, u64)] = &[
        ("file:src/main.py", 9629542200085099360),
        ("sym:src/main.py#foo:function:10:20", 17142573496431822264),
        ("chunk:src/main.py:0", 13980229551213782405),
        ("mem:a1b2c3d4", 8511729762976802365),
        ("task:debug", 15221118374782413835),
        ("pat:security-smells", 2193398467379759289),
        ("", 6179782471744631559),
        ("mem:ffffffff", 8004309845250149716),
    ];

    #[test]
    fn hash64_matches_the_test_vectors() {
        for (key, want) in VECTORS {
            assert_eq!(hash64(key), *want, "hash64({key:?})");
            assert_eq!(hash64_i64(key), *want as i64);
        }
        // Longer than one 128-byte BLAKE2b block.
        assert_eq!(
            hash64(&format!("file:{}", "a".repeat(300))),
            11440511754312576709
        );
    }

    #[test]
    fn every_example_key_parses_and_formats_back() {
        for (key, _) in VECTORS.iter().filter(|(k, _)| !k.is_empty()) {
            let parsed = Key::parse(key).unwrap();
            assert_eq!(parsed.to_string(), *key);
        }
        let q = Key::parse("q:semantic:code:auth flow: the login path").unwrap();
        assert_eq!(
            q,
            Key::Query {
                mode: "semantic".into(),
                corpus: "code".into(),
                query: "auth flow: the login path".into()
            }
        );
        assert_eq!(
            Key::parse("refs:src/main.py").unwrap(),
            Key::Refs {
                path: "src/main.py".into()
            }
        );
        // A path may hold '#', a name may hold ':'.
        let s = Key::parse("sym:src/a#b.rs#Client::get:method:3:9").unwrap();
        assert_eq!(
            s,
            Key::Symbol {
                path: "src/a#b.rs".into(),
                name: "Client::get".into(),
                kind: "method".into(),
                start: 3,
                end: 9
            }
        );
    }

    #[test]
    fn malformed_keys_are_refused_with_a_reason() {
        for bad in [
            "nothing",
            "blob:x",
            "file:",
            "mem:A1B2C3D4",
            "mem:a1b2c3",
            "sym:src/x.rs:foo:function:1:2",
            "sym:src/x.rs#foo:function:01:2",
            "chunk:src/x.rs",
            "chunk:src/x.rs:-1",
            "refs:",
            "task:Debug",
            "q:semantic",
        ] {
            assert!(Key::parse(bad).is_err(), "{bad:?} should be refused");
        }
        let e = Key::parse("mem:zz").unwrap_err().to_string();
        assert!(e.contains("eight lowercase hex"), "{e}");
    }
}
