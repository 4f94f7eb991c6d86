//! The audit trail: one event record per call through the gate, kept by an
//! [`AuditLog`]: the local store's own append-only log (compaction keeps events), read
//! back by scanning it, or, with the team backend (`database_url`), the repository's
//! rows in the PostgreSQL database (`memory_pg`), acknowledged after COMMIT.
//!
//! How each event reaches the disk, and what a crash can lose (the same for both):
//! - A write's event is committed in the same batch as the write
//!   ([`crate::memory::attach_event_to_next_write`]; on the team backend, in the same
//!   transaction): both are durable, or neither.
//!   An event that cannot be written fails the call.
//! - Read events are group-committed by an [`AuditQueue`]: at most [`GROUP_EVENTS`]
//!   events or [`GROUP_MILLIS`] milliseconds wait for one batch (one fsync). A crash
//!   loses at most the read events of that window, never a write's.

use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Duration;

use crate::memory::{AuditEvent, AuditLog, MemoryError};

/// Read events committed together at most.
pub const GROUP_EVENTS: usize = 64;
/// How long a read event waits for its batch at most.
pub const GROUP_MILLIS: u64 = 200;

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
    /// A queue committing into `log`: the local store's
    /// [`Memories`](crate::memory::Memories), or the team backend's repository.
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

    /// The last `limit` events at or after `since_ms`, oldest first, and how many
    /// there are in all (queued ones committed first).
    pub fn read_last(
        &self,
        since_ms: u64,
        limit: usize,
    ) -> Result<(Vec<AuditEvent>, u64), MemoryError> {
        self.flush()?;
        self.shared.log()?.read_audit_last(since_ms, limit)
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
