//! PatternSets: named sets of regexes compiled with Hyperscan and run directly over the
//! bodies stored in `blob.dat`.
//!
//! Sets are the built-ins (`pat:secrets`, `pat:security-smells`, `pat:debug-leftovers`)
//! and those loaded, whose definitions a [`PatternSetStore`] keeps: the store itself
//! (a put under `pat:{name}` whose body is the set's JSON) or, with the team backend,
//! the repository's rows in PostgreSQL (`memory_pg`). Scanning is always local. Scans read record bodies in place from the log's memory map — no copy — and
//! report key, path and line where the record has them, the pattern, and the matched
//! text (masked for secret sets). This layer sits on the store; it never writes
//! anything but its own records and the derived compiled-database cache.

pub mod builtin;
mod compile;
mod redact_path;
mod redactor;
mod scan;
pub mod secret_text;
mod set;
pub mod stored;

use std::path::PathBuf;

use serde_json::{Map, Value};

pub use compile::{compile, compile_cached, CompiledSet, Scanner};
pub use engram_secrets::{secret_rules, secret_value, secret_words, SecretsError};
pub use engram_secrets::{Finding, Redacted};
pub use redact_path::redact_path;
pub use redactor::Redactor;
pub use scan::{mask, Match, ScanTarget, TextScanner};
pub use secret_text::{redact_json, redact_secrets, redact_string, RedactedText};
pub use set::{PatternDef, PatternSet};
pub use stored::{find_stored_secrets, redact_stored_secrets, RedactReport, StoredSecret};

use crate::store::{Store, StoreError, WriteBatch};

/// Record type tag of stored pattern sets.
pub const PATTERN_SET_TYPE: &str = "pattern_set";

/// What can go wrong with pattern sets.
#[derive(Debug, thiserror::Error)]
pub enum PatternError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The secret detector's rules failed to compile or scan.
    #[error(transparent)]
    Secrets(#[from] SecretsError),
    #[error("pattern {index} ({id}) of set {set} does not compile: {message}")]
    BadRegex {
        set: String,
        index: usize,
        id: String,
        message: String,
    },
    #[error("{0}")]
    Invalid(String),
    #[error("no pattern set {0}; `engram pattern list` shows the available ones")]
    UnknownSet(String),
    /// Where the definitions are kept (the team database) failed.
    #[error("{0}")]
    Definitions(Box<dyn std::error::Error + Send + Sync>),
}

/// Where a repository's loaded pattern-set definitions are kept: the local store, or
/// the team database (through the memory layer's `PatternSetBackend`). [`Patterns`]
/// checks and compiles; this only keeps.
pub trait PatternSetStore: Send + Sync {
    /// Store `set` (checked) under its slug, replacing a set of that name; durable
    /// when it returns.
    fn put_pattern_set(&self, set: &PatternSet) -> Result<(), PatternError>;
    /// The stored set whose slug is `slug`.
    fn get_pattern_set(&self, slug: &str) -> Result<Option<PatternSet>, PatternError>;
    /// Every stored set, by slug.
    fn list_pattern_sets(&self) -> Result<Vec<PatternSet>, PatternError>;
    /// Delete the set whose slug is `slug`; false when there was none.
    fn delete_pattern_set(&self, slug: &str) -> Result<bool, PatternError>;
}

impl PatternSetStore for Store {
    fn put_pattern_set(&self, set: &PatternSet) -> Result<(), PatternError> {
        let mut meta = Map::new();
        meta.insert("type".into(), Value::String(PATTERN_SET_TYPE.into()));
        let body = serde_json::to_vec(set).map_err(|e| PatternError::Invalid(e.to_string()))?;
        let mut batch = WriteBatch::new();
        batch.put(&set.key(), meta, body)?;
        self.commit(&batch)?;
        Ok(())
    }

    fn get_pattern_set(&self, slug: &str) -> Result<Option<PatternSet>, PatternError> {
        let key = format!("pat:{slug}");
        let Some(rec) = self.get(&key)? else {
            return Ok(None);
        };
        if rec.meta.get("type").and_then(Value::as_str) != Some(PATTERN_SET_TYPE) {
            return Ok(None);
        }
        serde_json::from_slice(&rec.body)
            .map(Some)
            .map_err(|e| PatternError::Invalid(format!("stored set {key} is unreadable: {e}")))
    }

    fn list_pattern_sets(&self) -> Result<Vec<PatternSet>, PatternError> {
        let keys: Vec<String> = self.with_tracker(|db| {
            let mut stmt =
                db.prepare("SELECT key FROM records WHERE key LIKE 'pat:%' ORDER BY key")?;
            let rows = stmt.query_map([], |r| r.get(0))?;
            Ok(rows.collect::<rusqlite::Result<Vec<String>>>()?)
        })?;
        let mut out = Vec::new();
        for key in keys {
            if let Some(set) = self.get_pattern_set(key.strip_prefix("pat:").unwrap_or(&key))? {
                out.push(set);
            }
        }
        Ok(out)
    }

    fn delete_pattern_set(&self, slug: &str) -> Result<bool, PatternError> {
        if self.get_pattern_set(slug)?.is_none() {
            return Ok(false);
        }
        let mut batch = WriteBatch::new();
        batch.delete(&format!("pat:{slug}"))?;
        self.commit(&batch)?;
        Ok(true)
    }
}

/// Pattern sets of one store: definitions from its [`PatternSetStore`], compiled
/// (and cached) and scanned over the local store.
pub struct Patterns<'s> {
    store: &'s Store,
    defs: &'s dyn PatternSetStore,
}

impl<'s> Patterns<'s> {
    /// The pattern sets of `store`, their definitions kept in it too.
    pub fn new(store: &'s Store) -> Patterns<'s> {
        Patterns { store, defs: store }
    }

    /// The pattern sets scanning `store`, their definitions kept in `defs` (the team
    /// backend's repository).
    pub fn with_definitions(store: &'s Store, defs: &'s dyn PatternSetStore) -> Patterns<'s> {
        Patterns { store, defs }
    }

    fn cache_dir(&self) -> PathBuf {
        self.store.dir().join("patterns")
    }

    /// Check, compile and store a set. A built-in name is refused; see
    /// [`Patterns::load_replacing`].
    pub fn load(&self, set: PatternSet) -> Result<PatternSet, PatternError> {
        self.load_replacing(set, false)
    }

    /// [`Patterns::load`], and with `replace` a set named like a built-in one
    /// (`pat:security-smells`, say) is stored too and shadows the built-in in
    /// [`Patterns::get`], [`Patterns::list`] and [`Patterns::scan`]. `pat:secrets` is
    /// never replaced: redaction always uses the built-in rules, and a scan by that name
    /// must report what redaction would remove.
    pub fn load_replacing(
        &self,
        set: PatternSet,
        replace: bool,
    ) -> Result<PatternSet, PatternError> {
        set.check()?;
        if builtin::all().iter().any(|b| b.slug() == set.slug()) {
            if set.slug() == "secrets" {
                return Err(PatternError::Invalid(
                    "pat:secrets is the built-in redaction set and cannot be replaced; choose another name".into(),
                ));
            }
            if !replace {
                return Err(PatternError::Invalid(format!(
                    "{} is a built-in set; choose another name, or pass --replace (replace: true) to shadow the built-in with this one",
                    set.key()
                )));
            }
        }
        compile_cached(&set, Some(&self.cache_dir()))?;
        self.defs.put_pattern_set(&set)?;
        Ok(set)
    }

    /// Delete a loaded set (`name` or `pat:name`); false when none was loaded. A
    /// built-in it shadowed is back.
    pub fn delete(&self, name: &str) -> Result<bool, PatternError> {
        let slug = name.strip_prefix("pat:").unwrap_or(name);
        if !set::valid_slug(slug) {
            return Err(PatternError::Invalid(format!(
                "no set is named {:?}: a set's name is 1-64 of a-z, 0-9, '-', '_'",
                name.chars().take(80).collect::<String>()
            )));
        }
        self.defs.delete_pattern_set(slug)
    }

    /// Every set with whether it is built-in: the built-ins first (a stored set that
    /// replaced one takes its place, not built-in), then the other stored ones by name.
    pub fn list(&self) -> Result<Vec<(PatternSet, bool)>, PatternError> {
        let mut out: Vec<(PatternSet, bool)> =
            builtin::all().into_iter().map(|s| (s, true)).collect();
        for set in self.defs.list_pattern_sets()? {
            match out
                .iter_mut()
                .find(|(b, builtin)| *builtin && b.slug() == set.slug())
            {
                Some(slot) if set.slug() != "secrets" => *slot = (set, false),
                Some(_) => {}
                None => out.push((set, false)),
            }
        }
        Ok(out)
    }

    /// A set by name (`secrets` or `pat:secrets`), compiled: a stored set, else the
    /// built-in of that name (the built-in `secrets` always).
    pub fn get(&self, name: &str) -> Result<CompiledSet, PatternError> {
        let slug = name.strip_prefix("pat:").unwrap_or(name);
        let builtin = builtin::all().into_iter().find(|s| s.slug() == slug);
        let set = match builtin {
            Some(s) if slug == "secrets" => s,
            b => match self.defs.get_pattern_set(slug)? {
                Some(s) => s,
                None => b.ok_or_else(|| PatternError::UnknownSet(format!("pat:{slug}")))?,
            },
        };
        compile_cached(&set, Some(&self.cache_dir()))
    }

    /// Scan `target` with the set named `name`.
    pub fn scan(&self, name: &str, target: &ScanTarget) -> Result<Vec<Match>, PatternError> {
        let compiled = self.get(name)?;
        scan::scan(self.store, &compiled, target)
    }
}

#[cfg(test)]
mod secret_rules_probe;
