//! Pattern-set definitions as a memory backend keeps them, for
//! [`Patterns`](crate::patterns::Patterns) (which checks, compiles and scans locally):
//! [`Memories`] keeps them in its store, as `pat:` records; another backend (the team
//! database) implements [`PatternSetBackend`], keeping each set's JSON (engram's
//! spelling) by slug, and is a [`PatternSetStore`] through it. The JSON is built and
//! read back here, so such a backend stores what this layer gives it.

use serde_json::Value;

use super::{Memories, MemoryError, Result};
use crate::patterns::{PatternError, PatternSet, PatternSetStore};

/// Where a backend keeps loaded pattern sets' definitions, one JSON document per
/// slug; every call durable (committed) when it returns.
pub trait PatternSetBackend: Send + Sync {
    /// Store `definition` under `slug`, replacing what was there.
    fn put_pattern_definition(&self, slug: &str, definition: &Value) -> Result<()>;
    /// The definition under `slug`.
    fn get_pattern_definition(&self, slug: &str) -> Result<Option<Value>>;
    /// Every definition with its slug, by slug.
    fn list_pattern_definitions(&self) -> Result<Vec<(String, Value)>>;
    /// Delete the definition under `slug`; false when there was none.
    fn delete_pattern_definition(&self, slug: &str) -> Result<bool>;
}

fn kept(e: MemoryError) -> PatternError {
    PatternError::Definitions(Box::new(e))
}

fn decode(slug: &str, definition: Value) -> std::result::Result<PatternSet, PatternError> {
    serde_json::from_value(definition)
        .map_err(|e| PatternError::Invalid(format!("stored set pat:{slug} is unreadable: {e}")))
}

impl<T: PatternSetBackend + ?Sized> PatternSetStore for T {
    fn put_pattern_set(&self, set: &PatternSet) -> std::result::Result<(), PatternError> {
        let definition = serde_json::to_value(set)
            .map_err(|e| PatternError::Invalid(format!("pattern set: {e}")))?;
        self.put_pattern_definition(set.slug(), &definition)
            .map_err(kept)
    }

    fn get_pattern_set(&self, slug: &str) -> std::result::Result<Option<PatternSet>, PatternError> {
        self.get_pattern_definition(slug)
            .map_err(kept)?
            .map(|d| decode(slug, d))
            .transpose()
    }

    fn list_pattern_sets(&self) -> std::result::Result<Vec<PatternSet>, PatternError> {
        self.list_pattern_definitions()
            .map_err(kept)?
            .into_iter()
            .map(|(slug, d)| decode(&slug, d))
            .collect()
    }

    fn delete_pattern_set(&self, slug: &str) -> std::result::Result<bool, PatternError> {
        self.delete_pattern_definition(slug).map_err(kept)
    }
}

impl PatternSetStore for Memories {
    fn put_pattern_set(&self, set: &PatternSet) -> std::result::Result<(), PatternError> {
        self.store().put_pattern_set(set)
    }

    fn get_pattern_set(&self, slug: &str) -> std::result::Result<Option<PatternSet>, PatternError> {
        self.store().get_pattern_set(slug)
    }

    fn list_pattern_sets(&self) -> std::result::Result<Vec<PatternSet>, PatternError> {
        self.store().list_pattern_sets()
    }

    fn delete_pattern_set(&self, slug: &str) -> std::result::Result<bool, PatternError> {
        self.store().delete_pattern_set(slug)
    }
}
