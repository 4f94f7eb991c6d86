//! Walking the relationships between entries, files and symbols (the `memory_edges`
//! projection): session includes change/error/decision, error resolved_by change,
//! change affects file, decision relates_to file, memory mentions symbol.

use std::collections::{HashSet, VecDeque};

use serde::Serialize;

use super::{Memories, MemoryError, Result};

/// One node reached from the start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Related {
    /// An entry id (`mem:…`) or a file, chunk or symbol key.
    pub key: String,
    /// Hops from the start (1 to 3).
    pub hops: u32,
    /// The relationship of the last hop, as `rel` (outgoing) or `rel⁻¹` (incoming).
    pub via: String,
    /// The node the last hop came from.
    pub from: String,
}

impl Memories {
    /// Everything within `hops` (1 to 3) of `start`, nearest first.
    pub fn related(&self, start: &str, hops: u32) -> Result<Vec<Related>> {
        if !(1..=3).contains(&hops) {
            return Err(MemoryError::Invalid(format!(
                "hops must be 1 to 3, not {hops}"
            )));
        }
        let start = if start.len() == 8 && !start.contains(':') {
            format!("mem:{start}")
        } else {
            start.to_string()
        };
        let mut seen: HashSet<String> = HashSet::from([start.clone()]);
        let mut queue = VecDeque::from([(start, 0u32)]);
        let mut out = Vec::new();
        while let Some((node, depth)) = queue.pop_front() {
            if depth == hops {
                continue;
            }
            let neighbours: Vec<(String, String)> = self.store().with_tracker(|db| {
                let mut stmt = db.prepare_cached(
                    "SELECT dst, rel FROM memory_edges WHERE src = ?1
                     UNION SELECT src, rel || '⁻¹' FROM memory_edges WHERE dst = ?1 ORDER BY 1",
                )?;
                let rows = stmt.query_map([&node], |r| Ok((r.get(0)?, r.get(1)?)))?;
                Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
            })?;
            for (next, via) in neighbours {
                if seen.insert(next.clone()) {
                    out.push(Related {
                        key: next.clone(),
                        hops: depth + 1,
                        via,
                        from: node.clone(),
                    });
                    queue.push_back((next, depth + 1));
                }
            }
        }
        Ok(out)
    }
}
