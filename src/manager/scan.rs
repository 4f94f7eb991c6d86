//! Pattern scans over the memories of a [`MemoryBackend`]: the set compiled (and its
//! definition found) by [`Patterns`], the texts paged from the backend by id — so a
//! scan on the team backend reads that repository's memories on the server, never
//! the local store's.

use crate::memory::{MemoryBackend, MemoryFilter};
use crate::patterns::{Match, Patterns};

use super::ManagerError;

/// Memory texts read from the backend per round trip.
const PAGE: usize = 500;

/// Scan the memories of `backend` matching `filter` with the set named `set`;
/// matches by memory id, then by position in its text.
pub fn scan_memories(
    patterns: &Patterns<'_>,
    backend: &dyn MemoryBackend,
    set: &str,
    filter: &MemoryFilter,
) -> Result<Vec<Match>, ManagerError> {
    let compiled = patterns.get(set)?;
    let mut scanner = compiled.text_scanner()?;
    let mut out = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = backend.texts_after(filter, after.as_deref(), PAGE)?;
        for m in &page {
            scanner.scan(&m.id, &m.text, &mut out)?;
        }
        match page.last() {
            Some(last) if page.len() == PAGE => after = Some(last.id.clone()),
            _ => return Ok(out),
        }
    }
}

/// Scan the one memory `id` of `backend` with the set named `set`; no matches when
/// there is no such memory.
pub fn scan_memory(
    patterns: &Patterns<'_>,
    backend: &dyn MemoryBackend,
    set: &str,
    id: &str,
) -> Result<Vec<Match>, ManagerError> {
    let compiled = patterns.get(set)?;
    let mut out = Vec::new();
    if let Some(m) = backend.get(id)? {
        compiled.text_scanner()?.scan(&m.id, &m.text, &mut out)?;
    }
    Ok(out)
}
