//! The audit trail: one event record per read and write through the gate, in the
//! store's own append-only log (compaction keeps events), read back by scanning it.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::format::RecordKind;
use crate::store::{Store, StoreError, WriteBatch};

/// One audited operation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AuditEvent {
    /// Unix milliseconds.
    pub time_ms: u64,
    /// The operation (`code_search`, `memory_write` …).
    pub op: String,
    pub repo: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The query or the written key, truncated to 200 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    pub results: u64,
    #[serde(default)]
    pub redactions: u64,
    /// Injection phrasings flagged in what was returned or written.
    #[serde(default)]
    pub flagged: Vec<String>,
    /// Set when the operation was refused or failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl AuditEvent {
    /// Append this event to the store's log.
    pub fn append(&self, store: &Store) -> Result<(), StoreError> {
        let mut e = self.clone();
        if e.time_ms == 0 {
            e.time_ms = crate::store::now_ms();
        }
        e.query = e.query.map(|q| q.chars().take(200).collect());
        let mut meta = match serde_json::to_value(&e) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        };
        meta.insert("event".into(), Value::String("audit".into()));
        let mut batch = WriteBatch::new();
        batch.event(meta, Vec::new())?;
        store.commit(&batch)?;
        Ok(())
    }
}

/// Audit events in the log, oldest first, at or after `since_ms`.
pub fn read_audit(store: &Store, since_ms: u64) -> Result<Vec<AuditEvent>, StoreError> {
    let snap = store.snapshot()?;
    let mut out = Vec::new();
    for item in snap.records() {
        let (_, rec) = item?;
        if rec.kind != RecordKind::Event {
            continue;
        }
        let Ok(meta) = serde_json::from_slice::<Map<String, Value>>(rec.meta) else {
            continue;
        };
        if meta.get("event").and_then(Value::as_str) != Some("audit") {
            continue;
        }
        if let Ok(e) = serde_json::from_value::<AuditEvent>(Value::Object(meta)) {
            if e.time_ms >= since_ms {
                out.push(e);
            }
        }
    }
    Ok(out)
}
