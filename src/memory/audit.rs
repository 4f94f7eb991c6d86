//! What an audit event is and where a repository's events are kept ([`AuditLog`]):
//! the local store's append-only log (here, for [`Memories`]) or the team backend's
//! rows (`memory_pg`). Which calls are audited, and when events are committed, is the
//! gate's (`gate::AuditQueue`); this layer only builds, keeps and reads them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Memories, MemoryError};
use crate::store::{meta_object, RecordKind, Store, StoreError, WriteBatch};

/// Where a repository's audit events are kept: the local store ([`Memories`]) or the
/// team database. Callers append and read through this and never ask which.
pub trait AuditLog: Send + Sync {
    /// Append `events` durably, in order, each [`AuditEvent::prepared`] (stamped, its
    /// query cut and redacted; again, for events that were): returns only once they
    /// are committed.
    fn append_audit(&self, events: &[AuditEvent]) -> Result<(), MemoryError>;
    /// The events at or after `since_ms`, oldest first.
    fn read_audit(&self, since_ms: u64) -> Result<Vec<AuditEvent>, MemoryError>;
    /// The last `limit` events at or after `since_ms`, oldest first, and how many
    /// events there are at or after `since_ms` in all.
    fn read_audit_last(
        &self,
        since_ms: u64,
        limit: usize,
    ) -> Result<(Vec<AuditEvent>, u64), MemoryError> {
        let mut events = self.read_audit(since_ms)?;
        // Read events are group-committed after writes' own: the log is only nearly
        // in time order.
        events.sort_by_key(|e| e.time_ms);
        let total = events.len() as u64;
        let older = events.len().saturating_sub(limit);
        events.drain(..older);
        Ok((events, total))
    }
    /// Whether a write's event rides in the write's own batch or transaction
    /// ([`super::attach_event_to_next_write`]); when not, it is appended after the
    /// write.
    fn rides_with_writes(&self) -> bool {
        false
    }
}

impl AuditLog for Memories {
    fn append_audit(&self, events: &[AuditEvent]) -> Result<(), MemoryError> {
        if events.is_empty() {
            return Ok(());
        }
        let mut batch = WriteBatch::new();
        for e in events {
            batch.event(e.to_meta()?, Vec::new())?;
        }
        self.store().commit(&batch)?;
        Ok(())
    }

    fn read_audit(&self, since_ms: u64) -> Result<Vec<AuditEvent>, MemoryError> {
        Ok(read_audit(self.store(), since_ms)?)
    }

    fn rides_with_writes(&self) -> bool {
        true
    }
}

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
    /// Who the caller said they were (a seed's `user_id`); not checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
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
    /// For a call to a chat model: what was sent and what it cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmCall>,
}

/// One call to a chat model, as the audit trail records it (never what was said).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LlmCall {
    /// What the call was for (`session_summary`, `rerank`, …).
    pub purpose: String,
    /// The model asked.
    pub model: String,
    /// Bytes of the request body.
    pub bytes_sent: u64,
    /// Tokens sent.
    pub input_tokens: u64,
    /// Tokens received.
    pub output_tokens: u64,
    /// True when the provider reported no usage and the counts are estimates.
    #[serde(default)]
    pub estimated: bool,
    /// US dollars at the configured prices.
    pub cost_usd: f64,
    /// HTTP attempts.
    pub attempts: u32,
    /// Secrets replaced in what was sent.
    #[serde(default)]
    pub redactions: u64,
    /// `ok`, `failed`, or `dry_run` (nothing was sent).
    pub outcome: String,
}

impl AuditEvent {
    /// The event as it is kept: stamped, the query cut to 200 characters and its
    /// secrets redacted.
    pub fn prepared(&self) -> Result<AuditEvent, StoreError> {
        let mut e = self.clone();
        if e.time_ms == 0 {
            e.time_ms = crate::store::now_ms();
        }
        if let Some(q) = e.query.as_mut() {
            *q = q.chars().take(200).collect();
            crate::patterns::redact_string(q)
                .map_err(|err| StoreError::Invalid(format!("secret scanner: {err}")))?;
        }
        Ok(e)
    }

    /// The event record's metadata: stamped, the query cut to 200 characters and its
    /// secrets redacted.
    pub fn to_meta(&self) -> Result<Map<String, Value>, StoreError> {
        self.prepared()?.meta_of_prepared()
    }

    /// The record metadata of an event already [`AuditEvent::prepared`].
    fn meta_of_prepared(&self) -> Result<Map<String, Value>, StoreError> {
        let mut meta = match serde_json::to_value(self) {
            Ok(Value::Object(m)) => m,
            Ok(_) | Err(_) => {
                return Err(StoreError::Invalid(
                    "an audit event did not serialise to an object".into(),
                ))
            }
        };
        meta.insert("event".into(), Value::String("audit".into()));
        Ok(meta)
    }

    /// Append this event to a local store's log on its own, durably.
    pub fn append(&self, store: &Store) -> Result<(), StoreError> {
        let mut batch = WriteBatch::new();
        batch.event(self.to_meta()?, Vec::new())?;
        store.commit(&batch)?;
        Ok(())
    }
}

/// Audit events in the log, oldest first, at or after `since_ms`.
pub fn read_audit(store: &Store, since_ms: u64) -> Result<Vec<AuditEvent>, StoreError> {
    let snap = store.snapshot()?;
    let mut out = Vec::new();
    for item in snap.records() {
        let (offset, rec) = item?;
        if rec.kind != RecordKind::Event {
            continue;
        }
        let meta = meta_object(offset, &rec)?;
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
