//! The audit trail: one event record per call through the gate, kept by an
//! [`AuditLog`]: the local store's own append-only log (compaction keeps events), read
//! back by scanning it, or, with the team backend (`database_url`), the repository's
//! rows in the PostgreSQL database (`memory_pg`), acknowledged after COMMIT.
//!
//! How each event reaches the disk of the local store, and what a crash can lose (the
//! team backend is the same, except that a write's event is committed in its own
//! transaction right after the write's, before the call returns):
//! - A write's event is committed in the same batch as the write
//!   ([`crate::memory::attach_event_to_next_write`]): both are durable, or neither.
//!   An event that cannot be written fails the call.
//! - Read events are group-committed by an [`AuditQueue`]: at most [`GROUP_EVENTS`]
//!   events or [`GROUP_MILLIS`] milliseconds wait for one batch (one fsync). A crash
//!   loses at most the read events of that window, never a write's.

use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::memory::{Memories, MemoryError};
use crate::store::{meta_object, RecordKind, Store, StoreError, WriteBatch};

/// Where a repository's audit events are kept: the local store ([`Memories`]) or the
/// team database. Callers append and read through this and never ask which.
pub trait AuditLog: Send + Sync {
    /// Append `events` (each already [`AuditEvent::prepared`]) durably, in order:
    /// returns only once they are committed.
    fn append_audit(&self, events: &[AuditEvent]) -> Result<(), MemoryError>;
    /// The events at or after `since_ms`, oldest first.
    fn read_audit(&self, since_ms: u64) -> Result<Vec<AuditEvent>, MemoryError>;
    /// Whether a write's event can ride in the write's own batch
    /// ([`crate::memory::attach_event_to_next_write`]): only the local store's.
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
            batch.event(e.meta_of_prepared()?, Vec::new())?;
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

/// Read events committed together at most.
pub const GROUP_EVENTS: usize = 64;
/// How long a read event waits for its batch at most.
pub const GROUP_MILLIS: u64 = 200;

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

/// Read events waiting for their group commit; see the module doc. A background
/// thread commits them; dropping the queue commits what is left. Also appends an
/// event on its own, durably ([`AuditQueue::append`]), into the same log.
pub struct AuditQueue {
    shared: Arc<Shared>,
}

struct Shared {
    pending: Mutex<Vec<AuditEvent>>,
    wake: Condvar,
    /// Weak, so the queue never keeps a store open on its own.
    log: Weak<dyn AuditLog>,
    /// Whether the log takes a write's event in the write's batch.
    rides_with_writes: bool,
}

impl AuditQueue {
    /// A queue committing into `log` (the local store's [`Memories`], or the team
    /// backend's repository).
    pub fn new(log: Weak<dyn AuditLog>) -> AuditQueue {
        let rides_with_writes = log.upgrade().is_some_and(|l| l.rides_with_writes());
        let shared = Arc::new(Shared {
            pending: Mutex::new(Vec::new()),
            wake: Condvar::new(),
            log,
            rides_with_writes,
        });
        let worker = Arc::downgrade(&shared);
        std::thread::Builder::new()
            .name("engram-audit".into())
            .spawn(move || flusher(worker))
            .map(|_| ())
            .unwrap_or_else(|e| {
                tracing::error!(
                    "audit flusher not started ({e}); read events are committed one by one"
                )
            });
        AuditQueue { shared }
    }

    /// Queue a read event. Fails only when the event cannot be encoded.
    pub fn push(&self, event: &AuditEvent) -> Result<(), MemoryError> {
        let meta = event.prepared()?;
        let full = {
            let mut pending = self
                .shared
                .pending
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            pending.push(meta);
            pending.len() >= GROUP_EVENTS
        };
        if full {
            self.shared.wake.notify_one();
        }
        Ok(())
    }

    /// Commit every queued event now.
    pub fn flush(&self) -> Result<(), MemoryError> {
        self.shared.commit()
    }

    /// Append `event` on its own, durably: returns once it is committed.
    pub fn append(&self, event: &AuditEvent) -> Result<(), MemoryError> {
        let e = event.prepared()?;
        self.shared.log()?.append_audit(std::slice::from_ref(&e))
    }

    /// Whether a write's event may ride in the write's own batch
    /// ([`crate::memory::attach_event_to_next_write`]); when not, it is appended
    /// after the write.
    pub fn rides_with_writes(&self) -> bool {
        self.shared.rides_with_writes
    }

    /// The events at or after `since_ms`, oldest first (queued ones committed first).
    pub fn read(&self, since_ms: u64) -> Result<Vec<AuditEvent>, MemoryError> {
        self.flush()?;
        self.shared.log()?.read_audit(since_ms)
    }
}

impl Drop for AuditQueue {
    fn drop(&mut self) {
        if let Err(e) = self.shared.commit() {
            tracing::error!("audit events lost at shutdown: {e}");
        }
    }
}

impl Shared {
    fn log(&self) -> Result<Arc<dyn AuditLog>, MemoryError> {
        self.log
            .upgrade()
            .ok_or_else(|| MemoryError::Invalid("the audit log was closed".into()))
    }

    fn commit(&self) -> Result<(), MemoryError> {
        let events = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|p| p.into_inner()));
        if events.is_empty() {
            return Ok(());
        }
        let Some(log) = self.log.upgrade() else {
            return Err(MemoryError::Invalid(format!(
                "{} audit events lost: the store was closed",
                events.len()
            )));
        };
        log.append_audit(&events)
    }
}

fn flusher(shared: Weak<Shared>) {
    loop {
        let Some(s) = shared.upgrade() else { return };
        {
            let pending = s.pending.lock().unwrap_or_else(|p| p.into_inner());
            let _ = s
                .wake
                .wait_timeout(pending, Duration::from_millis(GROUP_MILLIS))
                .map_err(|_| ());
        }
        if let Err(e) = s.commit() {
            tracing::error!("audit events not written: {e}");
        }
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
