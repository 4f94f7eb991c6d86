//! The transactions of the PostgreSQL backend: each attempt on a pooled connection,
//! scoped to the repository by `engram.repo`, retried after a conflict or a dead
//! connection, with the entry's vectors made ahead of it.
//!
//! A write carries the audit event its caller attached
//! ([`memory::attach_event_to_next_write`], as for the local store): the first write
//! transaction of the call inserts it before COMMIT, so the write and its event are
//! committed together or not at all. A call that committed no write gives the event
//! back to its thread, where the caller finds it unused and appends it on its own.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use deadpool_postgres::{Object, Transaction};
use serde_json::{Map, Value};

use crate::embed::is_zero;
use crate::memory::{self, AuditEvent, Memory, MemoryError, Result};
use crate::memory_pg::{PgMemories, Progress, RETRIES};

type Slot = Arc<Mutex<Option<Map<String, Value>>>>;

tokio::task_local! {
    /// The event carried by the write attempt running in this task.
    static CARRIED: Slot;
}

/// The event the calling thread attached to its next write, carried into the write
/// attempts of one call ([`Carried::scope`]); given back to the thread on drop if no
/// attempt committed it.
pub(super) struct Carried(Slot);

impl Carried {
    /// Take this thread's attached event, if any.
    pub(super) fn take() -> Carried {
        Carried(Arc::new(Mutex::new(memory::take_unattached_event())))
    }

    /// `fut` with the event within its reach ([`PgMemories::commit`] inserts it).
    pub(super) fn scope<F: Future>(&self, fut: F) -> impl Future<Output = F::Output> {
        CARRIED.scope(self.0.clone(), fut)
    }
}

impl Drop for Carried {
    fn drop(&mut self) {
        let left = self.0.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(meta) = left {
            memory::attach_event_to_next_write(meta);
        }
    }
}

/// Vectors made ahead of a transaction, by the text they embed (`None`: nothing to
/// embed, or the embedder failed and the entry is stored without one).
pub(super) type Ahead = HashMap<String, Option<Vec<f32>>>;

/// How a transaction attempt ended without a result.
pub(super) enum TxError {
    /// A concurrent transaction got in the way (serialization failure, deadlock, an id
    /// taken meanwhile): run it again.
    Retry,
    /// The pooled connection was dead before anything was sent: run it again on
    /// another one.
    Stale(MemoryError),
    /// The entry to write embeds this text, which was not embedded ahead.
    NeedVector(String),
    /// A real failure.
    Fail(MemoryError),
}

impl From<MemoryError> for TxError {
    fn from(e: MemoryError) -> Self {
        TxError::Fail(e)
    }
}

pub(super) type TxResult<T> = std::result::Result<T, TxError>;

pub(super) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

pub(super) fn i64_of(v: u64) -> i64 {
    v.min(i64::MAX as u64) as i64
}

pub(super) fn limit_of(v: usize) -> i64 {
    v.min(i64::MAX as usize) as i64
}

impl PgMemories {
    pub(super) fn pg(&self, e: tokio_postgres::Error) -> TxError {
        if crate::memory_pg::is_retryable(&e) {
            TxError::Retry
        } else {
            TxError::Fail(self.db.error(e))
        }
    }

    /// Vectors of `texts`; an embedder failure stores the entries without one (as
    /// the local store does), and keyword recall still finds them.
    pub(super) fn embed_texts(&self, texts: &[String]) -> Vec<Option<Vec<f32>>> {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        match self.embedder.embed(&refs) {
            Ok(v) if v.len() == texts.len() => v
                .into_iter()
                .map(|v| (!v.is_empty() && !is_zero(&v)).then_some(v))
                .collect(),
            Ok(v) => {
                tracing::warn!(
                    "embedder {} returned {} vectors for {} texts; stored without vectors",
                    self.embedder.name(),
                    v.len(),
                    texts.len()
                );
                vec![None; texts.len()]
            }
            Err(e) => {
                tracing::warn!("stored without a vector ({e}); keyword recall finds it");
                vec![None; texts.len()]
            }
        }
    }

    pub(super) fn ahead(&self, memories: &[&Memory]) -> Ahead {
        let texts: Vec<String> = memories.iter().map(|m| memory::embedding_text(m)).collect();
        let vectors = self.embed_texts(&texts);
        texts.into_iter().zip(vectors).collect()
    }

    /// Run write transaction attempts `f` until one ends: retries conflicts (with a
    /// short backoff), dead pooled connections, and entries whose vector was not made
    /// ahead. The attempts carry the caller's attached audit event (module doc).
    pub(super) fn run<T, F, Fut>(&self, ahead: Ahead, f: F) -> Result<T>
    where
        F: Fn(Arc<Ahead>) -> Fut,
        Fut: Future<Output = TxResult<T>> + Send,
        T: Send,
    {
        self.attempts(ahead, true, self.db.deadline(), f)
    }

    /// [`PgMemories::run`] for an attempt that writes many entries (an import) and
    /// marks `progress` after each: it is abandoned only when no entry is written
    /// within the usual deadline (the server stopped answering), however long the
    /// whole takes — a large file, a distant server, a loaded machine. Each
    /// statement still has the server's statement timeout.
    pub(super) fn run_bulk<T, F, Fut>(&self, ahead: Ahead, progress: &Progress, f: F) -> Result<T>
    where
        F: Fn(Arc<Ahead>) -> Fut,
        Fut: Future<Output = TxResult<T>> + Send,
        T: Send,
    {
        self.attempts_watched(ahead, true, self.db.deadline(), Some(progress), f)
    }

    /// [`PgMemories::run`], carrying the caller's attached audit event or not.
    pub(super) fn attempts<T, F, Fut>(
        &self,
        ahead: Ahead,
        carry: bool,
        deadline: Duration,
        f: F,
    ) -> Result<T>
    where
        F: Fn(Arc<Ahead>) -> Fut,
        Fut: Future<Output = TxResult<T>> + Send,
        T: Send,
    {
        self.attempts_watched(ahead, carry, deadline, None, f)
    }

    /// [`PgMemories::attempts`]; with `progress`, `deadline` bounds the time between
    /// two marks of it instead of the whole attempt.
    fn attempts_watched<T, F, Fut>(
        &self,
        mut ahead: Ahead,
        carry: bool,
        deadline: Duration,
        progress: Option<&Progress>,
        f: F,
    ) -> Result<T>
    where
        F: Fn(Arc<Ahead>) -> Fut,
        Fut: Future<Output = TxResult<T>> + Send,
        T: Send,
    {
        let carried = carry.then(Carried::take);
        let mut conflicts = 0usize;
        let mut rounds = 0usize;
        loop {
            rounds += 1;
            let snapshot = Arc::new(std::mem::take(&mut ahead));
            let attempt = f(snapshot.clone());
            let outcome = match (&carried, progress) {
                (Some(c), Some(p)) => {
                    self.db
                        .block_on_while_progressing(deadline, p, c.scope(attempt))?
                }
                (None, Some(p)) => self.db.block_on_while_progressing(deadline, p, attempt)?,
                (Some(c), None) => self.db.block_on_within(deadline, c.scope(attempt))?,
                (None, None) => self.db.block_on_within(deadline, attempt)?,
            };
            ahead = Arc::try_unwrap(snapshot).unwrap_or_else(|a| (*a).clone());
            match outcome {
                Ok(v) => return Ok(v),
                Err(TxError::Fail(e)) => return Err(e),
                Err(TxError::Stale(e)) => {
                    if rounds > 2 {
                        return Err(e);
                    }
                }
                Err(TxError::NeedVector(text)) => {
                    if rounds > RETRIES {
                        return Err(MemoryError::Invalid(
                            "the entry kept changing while it was embedded".into(),
                        ));
                    }
                    let v = self
                        .embed_texts(std::slice::from_ref(&text))
                        .pop()
                        .flatten();
                    ahead.insert(text, v);
                }
                Err(TxError::Retry) => {
                    conflicts += 1;
                    if conflicts > RETRIES {
                        return Err(MemoryError::Backend {
                            server: self.db.server.clone(),
                            reason: format!(
                                "gave up after {RETRIES} attempts conflicting with other writers"
                            ),
                        });
                    }
                    std::thread::sleep(Duration::from_millis(2 << conflicts.min(8)));
                }
            }
        }
    }

    /// A connection and a transaction on it scoped to this repository. A connection
    /// that fails here has sent nothing: the attempt may be retried.
    pub(super) async fn client(&self) -> TxResult<Object> {
        self.db.client().await.map_err(TxError::Fail)
    }

    pub(super) async fn begin<'c>(&self, client: &'c mut Object) -> TxResult<Transaction<'c>> {
        let tx = client
            .transaction()
            .await
            .map_err(|e| TxError::Stale(self.db.error(e)))?;
        tx.execute("SELECT set_config('engram.repo', $1, true)", &[&self.repo])
            .await
            .map_err(|e| TxError::Stale(self.db.error(e)))?;
        Ok(tx)
    }

    /// Commit `tx`, with the audit event its call carries inserted first (if the
    /// attempt runs in a [`Carried::scope`] and no earlier transaction committed it).
    pub(super) async fn commit(&self, tx: Transaction<'_>) -> TxResult<()> {
        let slot = CARRIED.try_with(Slot::clone).ok();
        let event = slot
            .as_ref()
            .and_then(|s| s.lock().unwrap_or_else(|p| p.into_inner()).clone());
        if let Some(meta) = &event {
            let e: AuditEvent = serde_json::from_value(Value::Object(meta.clone()))
                .map_err(|err| MemoryError::Invalid(format!("audit event: {err}")))?;
            self.insert_audit(&tx, std::slice::from_ref(&e)).await?;
        }
        tx.commit().await.map_err(|e| self.pg(e))?;
        if let (Some(s), Some(_)) = (slot, event) {
            *s.lock().unwrap_or_else(|p| p.into_inner()) = None;
        }
        Ok(())
    }

    /// Run read-only transaction attempts `f` until one ends (see [`PgMemories::run`]);
    /// they carry no audit event.
    pub(super) fn read<T, F, Fut>(&self, f: F) -> Result<T>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = TxResult<T>> + Send,
        T: Send,
    {
        self.attempts(Ahead::new(), false, self.db.deadline(), |_| f())
    }
}
