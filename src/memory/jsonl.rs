//! JSON Lines import and export of memories.
//!
//! One memory per line: a JSON object with the fields of [`Memory`] (`text` required;
//! `id`, `task`, `insights`, `contexts`, `tags`, `symbols`, `provenance`, `trust`,
//! `session`, `version`, `metadata`, `created_ms`, `updated_ms` optional). An unknown
//! field is refused, so a misspelt one is not silently dropped. The seeds' spellings
//! (Galaxybrain's `context`, `symbol_keys`, `created_at`, `key_hash`; memory_lib's
//! UUID ids, `timestamp` and non-code entries) are read too: see `jsonl_compat`.
//! Export writes engram's spelling.
//! Import reads the file in blocks, on every core, validating every line (reporting
//! each bad one by number) and preparing what parsed (secrets redacted; see
//! `jsonl_read`), and writes the memories as one batch while later blocks are still
//! read and embedded (see `jsonl_import`): a file is imported whole or not at all.

use std::io::Write;

use super::jsonl_compat;
use super::model::Memory;
use super::{Memories, MemoryError, Result};

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ImportReport {
    pub imported: u64,
    /// Lines whose id already existed, now replaced.
    pub replaced: u64,
    pub skipped_blank: u64,
    /// Secrets replaced before anything was written.
    pub redacted: u64,
}

impl Memories {
    /// Write every memory as one JSON line, oldest first. Returns how many.
    pub fn export(&self, out: &mut dyn Write) -> Result<u64> {
        let mut n = 0u64;
        let page = 1000usize;
        let mut after: (i64, i64) = (i64::MIN, i64::MIN);
        loop {
            let rows: Vec<(String, i64, i64)> = self.store().with_tracker(|db| {
                let mut stmt = db.prepare_cached(
                    "SELECT id, created_ms, seq FROM memories WHERE (created_ms, seq) > (?1, ?2)
                     ORDER BY created_ms, seq LIMIT ?3",
                )?;
                let rows = stmt
                    .query_map(rusqlite::params![after.0, after.1, page as i64], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                    })?;
                Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
            })?;
            let Some(last) = rows.last() else { break };
            after = (last.1, last.2);
            for (id, _, _) in &rows {
                if let Some(m) = self.get(id)? {
                    let line = serde_json::to_string(&m)
                        .map_err(|e| MemoryError::Invalid(e.to_string()))?;
                    writeln!(out, "{line}").map_err(|source| MemoryError::Io {
                        path: "export".into(),
                        source,
                    })?;
                    n += 1;
                }
            }
        }
        out.flush().map_err(|source| MemoryError::Io {
            path: "export".into(),
            source,
        })?;
        Ok(n)
    }
}

/// A JSONL file read and checked, ready to write.
pub(crate) struct Prepared {
    /// Each memory (secrets redacted, times defaulted) with the legacy id its id is
    /// to be derived from, if its line had one.
    pub memories: Vec<(Memory, Option<String>)>,
    /// What reading found (blank lines, secrets redacted); nothing imported yet.
    pub report: ImportReport,
}

/// The id a legacy (non-`mem:`) id maps to; `round` > 0 re-rolls after a collision.
pub(crate) fn derived_id(legacy: &str, round: u32) -> String {
    jsonl_compat::derived_id(legacy, round)
}

/// The legacy id a memory was imported under, if any.
pub(crate) fn legacy_id(m: &Memory) -> Option<&str> {
    jsonl_compat::legacy_id(m)
}
