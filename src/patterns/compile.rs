//! Compiling a pattern set with Hyperscan, and caching the compiled database.
//!
//! A set compiles into one block-mode database (pattern id = index in the set) with
//! leftmost start-of-match, so every report carries where its match begins. Compiling
//! costs milliseconds to seconds; the serialised database is cached in the store's
//! `patterns/` directory under a hash of everything that affects it, so it is derived
//! data and may be deleted at any time.

use std::path::{Path, PathBuf};

use hyperscan::prelude::*;
use hyperscan::{BlockMode, Serialized};

use super::set::PatternSet;
use super::PatternError;
use crate::key::hash64;

/// A set ready to scan.
pub struct CompiledSet {
    pub set: PatternSet,
    db: BlockDatabase,
}

impl std::fmt::Debug for CompiledSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledSet")
            .field("set", &self.set.name)
            .finish()
    }
}

/// Compile a set, naming the first bad pattern by index and id with Hyperscan's message.
pub fn compile(set: &PatternSet) -> Result<CompiledSet, PatternError> {
    // Compile each pattern alone first only when the set fails as a whole, so the
    // common case costs one compile.
    match build(set) {
        Ok(db) => Ok(CompiledSet {
            set: set.clone(),
            db,
        }),
        Err(whole) => {
            for (i, p) in set.patterns.iter().enumerate() {
                let one = PatternSet {
                    patterns: vec![p.clone()],
                    ..set.clone()
                };
                if let Err(e) = build(&one) {
                    return Err(PatternError::BadRegex {
                        set: set.slug().to_string(),
                        index: i,
                        id: p.id.clone(),
                        message: e,
                    });
                }
            }
            Err(PatternError::Invalid(format!(
                "set {} does not compile: {whole}",
                set.slug()
            )))
        }
    }
}

fn build(set: &PatternSet) -> Result<BlockDatabase, String> {
    let mut patterns = Vec::with_capacity(set.patterns.len());
    for (i, p) in set.patterns.iter().enumerate() {
        let mut flags = CompileFlags::SOM_LEFTMOST;
        if p.caseless {
            flags |= CompileFlags::CASELESS;
        }
        let mut pat = Pattern::with_flags(p.regex.clone(), flags).map_err(|e| e.to_string())?;
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

/// Compile, or load from `cache_dir` when this exact set was compiled before.
pub fn compile_cached(
    set: &PatternSet,
    cache_dir: Option<&Path>,
) -> Result<CompiledSet, PatternError> {
    let Some(dir) = cache_dir else {
        return compile(set);
    };
    let path = cache_path(dir, set);
    if let Ok(bytes) = std::fs::read(&path) {
        if let Ok(db) = bytes.as_slice().deserialize::<BlockMode>() {
            return Ok(CompiledSet {
                set: set.clone(),
                db,
            });
        }
        // Unreadable (other Hyperscan build, damage): recompile below.
    }
    let compiled = compile(set)?;
    if let Ok(bytes) = compiled.db.serialize() {
        let tmp = path.with_extension("tmp");
        let written = std::fs::create_dir_all(dir)
            .and_then(|_| std::fs::write(&tmp, &*bytes))
            .and_then(|_| std::fs::rename(&tmp, &path));
        if let Err(e) = written {
            // A cache that cannot be written only costs a compile next time.
            tracing::debug!("not caching compiled pattern set {}: {e}", set.slug());
        }
    }
    Ok(compiled)
}

/// Where a set's compiled database is cached: keyed by its patterns and flags and the
/// Hyperscan version, so any change makes a new entry.
fn cache_path(dir: &Path, set: &PatternSet) -> PathBuf {
    let mut ident = format!("hs {};", hyperscan::version_str().to_string_lossy());
    for p in &set.patterns {
        ident.push_str(&format!("{}\u{0}{}\u{0}{}\u{1}", p.id, p.regex, p.caseless));
    }
    dir.join(format!("{}-{:016x}.hsdb", set.slug(), hash64(&ident)))
}

impl CompiledSet {
    /// A scanner for many buffers in a row (it owns Hyperscan's scratch space, which
    /// is too costly to allocate per buffer).
    pub fn scanner(&self) -> Result<Scanner<'_>, PatternError> {
        let scratch = self
            .db
            .alloc_scratch()
            .map_err(|e| PatternError::Invalid(format!("Hyperscan scratch: {e}")))?;
        Ok(Scanner { set: self, scratch })
    }

    /// Scan one buffer; see [`Scanner::scan`].
    pub fn scan(&self, data: &[u8]) -> Result<Vec<(usize, usize, usize)>, PatternError> {
        self.scanner()?.scan(data)
    }

    /// Scratch space for [`CompiledSet::scan_with`], for callers that keep their own
    /// (a pool shared by threads, where a borrowing [`Scanner`] cannot live).
    pub(crate) fn alloc_scratch(&self) -> Result<Scratch, PatternError> {
        self.db
            .alloc_scratch()
            .map_err(|e| PatternError::Invalid(format!("Hyperscan scratch: {e}")))
    }

    /// [`Scanner::scan`] with scratch space the caller owns.
    pub(crate) fn scan_with(
        &self,
        data: &[u8],
        scratch: &Scratch,
    ) -> Result<Vec<(usize, usize, usize)>, PatternError> {
        let mut hits: Vec<(usize, usize, usize)> = Vec::new();
        self.db
            .scan(data, scratch, |id, from, to, _| {
                hits.push((id as usize, from as usize, to as usize));
                Matching::Continue
            })
            .map_err(|e| PatternError::Invalid(format!("Hyperscan scan: {e}")))?;
        // Hyperscan reports each end a pattern matches at; keep one match per start.
        hits.sort_unstable_by(|a, b| (a.0, a.1, b.2).cmp(&(b.0, b.1, a.2)));
        hits.dedup_by(|later, first| later.0 == first.0 && later.1 == first.1);
        hits.sort_unstable_by_key(|h| (h.1, h.0));
        Ok(hits)
    }
}

/// Scans buffers with one compiled set, reusing its scratch space.
pub struct Scanner<'a> {
    set: &'a CompiledSet,
    scratch: Scratch,
}

impl Scanner<'_> {
    /// Report every match in `data` as (pattern index, start, end), the longest match
    /// for each start, in order of start. Never fails on arbitrary bytes.
    pub fn scan(&mut self, data: &[u8]) -> Result<Vec<(usize, usize, usize)>, PatternError> {
        self.set.scan_with(data, &self.scratch)
    }
}
