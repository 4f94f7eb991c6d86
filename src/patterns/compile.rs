//! Compiling a pattern set with Hyperscan, and caching the compiled database.
//!
//! A set compiles into one block-mode database (pattern id = index in the set) with
//! leftmost start-of-match, so every report carries where its match begins. Compiling
//! costs milliseconds to seconds; the serialised database is cached in the store's
//! `patterns/` directory under a hash of everything that affects it, so it is derived
//! data and may be deleted at any time.

use std::path::Path;

use engram_secrets::hs::{cache_file, Database, Regex, Scratch};
use engram_secrets::SecretsError;

use super::set::PatternSet;
use super::PatternError;

/// A set ready to scan.
pub struct CompiledSet {
    pub set: PatternSet,
    db: Database,
}

impl std::fmt::Debug for CompiledSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledSet")
            .field("set", &self.set.name)
            .finish()
    }
}

fn regexes(set: &PatternSet) -> Vec<Regex<'_>> {
    set.patterns
        .iter()
        .map(|p| Regex {
            id: &p.id,
            regex: &p.regex,
            caseless: p.caseless,
        })
        .collect()
}

/// The compiler's error for `set`: a bad pattern named by index and id with
/// Hyperscan's message.
fn set_error(set: &PatternSet, e: SecretsError) -> PatternError {
    match e {
        SecretsError::BadRegex { index, message } => PatternError::BadRegex {
            set: set.slug().to_string(),
            index,
            id: set
                .patterns
                .get(index)
                .map_or_else(String::new, |p| p.id.clone()),
            message,
        },
        SecretsError::Compile(whole) => {
            PatternError::Invalid(format!("set {} does not compile: {whole}", set.slug()))
        }
        other => PatternError::Secrets(other),
    }
}

/// Compile a set, naming the first bad pattern by index and id with Hyperscan's message.
pub fn compile(set: &PatternSet) -> Result<CompiledSet, PatternError> {
    compile_cached(set, None)
}

/// Compile, or load from `cache_dir` when this exact set was compiled before (the
/// cache file is named by the set and a hash of its patterns and Hyperscan's version).
pub fn compile_cached(
    set: &PatternSet,
    cache_dir: Option<&Path>,
) -> Result<CompiledSet, PatternError> {
    let regexes = regexes(set);
    let path = cache_dir.map(|dir| cache_file(dir, set.slug(), &regexes));
    let db = Database::compile_cached(&regexes, path.as_deref()).map_err(|e| set_error(set, e))?;
    Ok(CompiledSet {
        set: set.clone(),
        db,
    })
}

impl CompiledSet {
    /// A scanner for many buffers in a row (it owns Hyperscan's scratch space, which
    /// is too costly to allocate per buffer).
    pub fn scanner(&self) -> Result<Scanner<'_>, PatternError> {
        let scratch = self.alloc_scratch()?;
        Ok(Scanner { set: self, scratch })
    }

    /// Scan one buffer; see [`Scanner::scan`].
    pub fn scan(&self, data: &[u8]) -> Result<Vec<(usize, usize, usize)>, PatternError> {
        self.scanner()?.scan(data)
    }

    /// Scratch space for [`CompiledSet::scan_with`], for callers that keep their own
    /// (a pool shared by threads, where a borrowing [`Scanner`] cannot live).
    pub(crate) fn alloc_scratch(&self) -> Result<Scratch, PatternError> {
        Ok(self.db.alloc_scratch()?)
    }

    /// [`Scanner::scan`] with scratch space the caller owns.
    pub(crate) fn scan_with(
        &self,
        data: &[u8],
        scratch: &Scratch,
    ) -> Result<Vec<(usize, usize, usize)>, PatternError> {
        Ok(self.db.scan_with(data, scratch)?)
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
