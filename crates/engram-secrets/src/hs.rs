//! Hyperscan for the detector and for engram's pattern sets: compiling a list of
//! regexes into one block-mode database (pattern id = index in the list, leftmost
//! start-of-match), caching the serialised database on disk, and scanning.
//!
//! Owns the one way regexes become a Hyperscan database in engram. Compiling costs
//! milliseconds to seconds, so a cached database is keyed by everything that affects
//! it (ids, regexes, flags, Hyperscan's version): derived data, deletable at any time.
//! It never decides what a match means.

use std::path::{Path, PathBuf};

use hyperscan::prelude::*;
use hyperscan::{BlockMode, Serialized};

pub use hyperscan::Scratch;

use crate::SecretsError;

/// One regex to compile: an id (part of the cache key only), the regex in Hyperscan
/// syntax, and whether it matches regardless of case.
#[derive(Debug, Clone, Copy)]
pub struct Regex<'a> {
    pub id: &'a str,
    pub regex: &'a str,
    pub caseless: bool,
}

/// A list of regexes compiled into one database.
pub struct Database {
    db: BlockDatabase,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database").finish_non_exhaustive()
    }
}

impl Database {
    /// Compile `regexes`; on failure the first regex that does not compile alone is
    /// named by index (compiled one by one only then, so the common case costs one
    /// compile), or, when each compiles alone, the whole list's message.
    pub fn compile(regexes: &[Regex<'_>]) -> Result<Database, SecretsError> {
        match build(regexes) {
            Ok(db) => Ok(Database { db }),
            Err(whole) => {
                for (index, r) in regexes.iter().enumerate() {
                    if let Err(message) = build(std::slice::from_ref(r)) {
                        return Err(SecretsError::BadRegex { index, message });
                    }
                }
                Err(SecretsError::Compile(whole))
            }
        }
    }

    /// [`Database::compile`], or the database cached at `path` when it was compiled
    /// before (see [`cache_file`]); a freshly compiled one is written there. An
    /// unreadable cache (another Hyperscan build, damage) is recompiled; a cache that
    /// cannot be written only costs a compile next time.
    pub fn compile_cached(
        regexes: &[Regex<'_>],
        path: Option<&Path>,
    ) -> Result<Database, SecretsError> {
        let Some(path) = path else {
            return Database::compile(regexes);
        };
        if let Ok(bytes) = std::fs::read(path) {
            if let Ok(db) = bytes.as_slice().deserialize::<BlockMode>() {
                return Ok(Database { db });
            }
        }
        let compiled = Database::compile(regexes)?;
        if let Ok(bytes) = compiled.db.serialize() {
            let tmp = path.with_extension("tmp");
            let written = path
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|_| std::fs::write(&tmp, &*bytes))
                .and_then(|_| std::fs::rename(&tmp, path));
            if let Err(e) = written {
                tracing::debug!("not caching compiled patterns at {}: {e}", path.display());
            }
        }
        Ok(compiled)
    }

    /// Scratch space for [`Database::scan_with`]: costly to allocate, so callers that
    /// scan many buffers keep one (or a pool shared by threads).
    pub fn alloc_scratch(&self) -> Result<Scratch, SecretsError> {
        self.db
            .alloc_scratch()
            .map_err(|e| SecretsError::Hyperscan(format!("Hyperscan scratch: {e}")))
    }

    /// Every match in `data` as (pattern index, start, end), the longest match for
    /// each start, in order of start. Never fails on arbitrary bytes.
    pub fn scan_with(
        &self,
        data: &[u8],
        scratch: &Scratch,
    ) -> Result<Vec<(usize, usize, usize)>, SecretsError> {
        let mut hits: Vec<(usize, usize, usize)> = Vec::new();
        self.db
            .scan(data, scratch, |id, from, to, _| {
                hits.push((id as usize, from as usize, to as usize));
                Matching::Continue
            })
            .map_err(|e| SecretsError::Hyperscan(format!("Hyperscan scan: {e}")))?;
        // Hyperscan reports each end a pattern matches at; keep one match per start.
        hits.sort_unstable_by(|a, b| (a.0, a.1, b.2).cmp(&(b.0, b.1, a.2)));
        hits.dedup_by(|later, first| later.0 == first.0 && later.1 == first.1);
        hits.sort_unstable_by_key(|h| (h.1, h.0));
        Ok(hits)
    }
}

fn build(regexes: &[Regex<'_>]) -> Result<BlockDatabase, String> {
    let mut patterns = Vec::with_capacity(regexes.len());
    for (i, r) in regexes.iter().enumerate() {
        let mut flags = CompileFlags::SOM_LEFTMOST;
        if r.caseless {
            flags |= CompileFlags::CASELESS;
        }
        let mut pat = Pattern::with_flags(r.regex, flags).map_err(|e| e.to_string())?;
        pat.id = Some(i);
        patterns.push(pat);
    }
    Patterns(patterns)
        .build::<BlockMode>()
        .map_err(|e| match e {
            hyperscan::Error::Hyperscan(hyperscan::HsError::CompileError(c)) => {
                c.message().to_string()
            }
            other => other.to_string(),
        })
}

/// Where the database of `regexes` named `name` is cached in `dir`: keyed by every id,
/// regex and flag and by the Hyperscan version, so any change makes a new entry.
pub fn cache_file(dir: &Path, name: &str, regexes: &[Regex<'_>]) -> PathBuf {
    let mut ident = format!("hs {};", hyperscan::version_str().to_string_lossy());
    for r in regexes {
        ident.push_str(&format!("{}\u{0}{}\u{0}{}\u{1}", r.id, r.regex, r.caseless));
    }
    dir.join(format!("{name}-{:016x}.hsdb", fnv1a64(ident.as_bytes())))
}

/// FNV-1a: a cache key needs a stable hash, not a cryptographic one.
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_regex_is_named_by_index_and_matches_report_their_start() {
        let ok = Regex {
            id: "a",
            regex: "abc",
            caseless: false,
        };
        let bad = Regex {
            id: "b",
            regex: "(",
            caseless: false,
        };
        match Database::compile(&[ok, bad]) {
            Err(SecretsError::BadRegex { index: 1, .. }) => {}
            other => panic!("expected BadRegex at 1, got {other:?}"),
        }
        let db = Database::compile(&[Regex {
            caseless: true,
            ..ok
        }])
        .expect("compiles");
        let scratch = db.alloc_scratch().expect("scratch");
        assert_eq!(db.scan_with(b"xxABC", &scratch).unwrap(), vec![(0, 2, 5)]);
    }

    #[test]
    fn the_cache_key_changes_with_any_regex_or_flag() {
        let dir = Path::new("cache");
        let a = Regex {
            id: "a",
            regex: "abc",
            caseless: false,
        };
        let one = cache_file(dir, "s", &[a]);
        assert_eq!(one, cache_file(dir, "s", &[a]));
        assert_ne!(
            one,
            cache_file(
                dir,
                "s",
                &[Regex {
                    caseless: true,
                    ..a
                }]
            )
        );
        assert_ne!(one, cache_file(dir, "s", &[Regex { regex: "abd", ..a }]));
    }
}
