//! The tools over what engram keeps about a repository besides its memories: the
//! audit trail (`audit_read`) and loaded pattern sets (`pattern_delete`). Both go
//! where the engine's audit log and pattern-set definitions are — the local store, or
//! the team backend under this repository — so a caller reads and changes only its
//! own repository's.

use serde_json::{json, Map, Value};

use super::args::{arg_str, bounded_count, err, required_str};
use super::handlers::{Engine, ToolResult};
use super::shape;
use crate::memory::parse_since;

impl Engine {
    /// `audit_read`: the newest `limit` events since `since`, newest first, each
    /// string sanitised and inside the caps; `total` counts every event since then.
    pub(super) fn audit_read(&self, a: &Map<String, Value>) -> ToolResult {
        let since_ms = arg_str(a, "since")
            .map(|t| parse_since(t, crate::store::now_ms()))
            .transpose()
            .map_err(err)?
            .unwrap_or(0);
        let limit = bounded_count(a, "limit", 20, 500) as usize;
        let (events, total) = self.audit.read_last(since_ms, limit).map_err(err)?;
        let values = events
            .iter()
            .rev()
            .map(|e| serde_json::to_value(e).map_err(err))
            .collect::<Result<Vec<_>, _>>()?;
        let mut budget = self.gate.budget();
        let shown = shape::records(values, &mut budget);
        let mut v = shape::listed("events", shown, &budget);
        v["total"] = json!(total);
        Ok(v)
    }

    /// `pattern_delete`: the loaded set named `set` deleted from where definitions
    /// are kept.
    pub(super) fn pattern_delete(&self, a: &Map<String, Value>) -> ToolResult {
        let name = required_str(a, "set")?;
        let deleted = self.patterns().delete(name).map_err(err)?;
        let id = format!("pat:{}", name.strip_prefix("pat:").unwrap_or(name));
        Ok(json!({"id": id, "deleted": deleted}))
    }
}
