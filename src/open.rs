//! Opening a store with every tracker projection of this build: the one module that
//! knows them all (memory's and, with the `index` feature, the code index's and
//! staleness's), and hands `Memories` the anchorer that resolves what a memory
//! references (`stale::CodeAnchorer`).
//!
//! The tracker's schema fingerprint is made from the set of projections, and a store
//! opened with another set rebuilds its tracker, so every opener must pass the same
//! set: this one. It sits above memory and index so that neither has to know the
//! other exists; [`projections`] is what callers that open a store themselves (the
//! CLI, library users) pass to [`Store::open`]. It must never hold logic of its own.

use std::path::Path;

use crate::memory::{Memories, MemoryProjection, Result};
#[cfg(doc)]
use crate::store::Store;
use crate::store::{Projection, StoreOptions};

/// Every tracker projection of this build. Open stores with exactly this set: the
/// tracker's schema fingerprint is made from it, and a store opened with another set
/// rebuilds its tracker.
pub fn projections() -> Vec<Box<dyn Projection>> {
    #[allow(unused_mut)]
    let mut all: Vec<Box<dyn Projection>> = vec![Box::new(MemoryProjection)];
    #[cfg(feature = "index")]
    {
        all.push(Box::new(crate::index::CodeProjection));
        all.push(Box::new(crate::stale::StaleProjection));
    }
    all
}

impl Memories {
    /// Open (or create) the store in `dir` with default options and every projection
    /// of this build ([`projections`]).
    pub fn open(dir: impl AsRef<Path>) -> Result<Memories> {
        Memories::open_with(dir, StoreOptions::default())
    }

    /// Open with explicit store options and every projection of this build
    /// ([`projections`]); see [`Memories::open_with_projections`]. With the `index`
    /// feature, written memories are anchored to the code they reference.
    pub fn open_with(dir: impl AsRef<Path>, options: StoreOptions) -> Result<Memories> {
        let m = Memories::open_with_projections(dir, options, projections())?;
        #[cfg(feature = "index")]
        let m = m.with_anchorer(std::sync::Arc::new(crate::stale::CodeAnchorer));
        Ok(m)
    }
}
