//! Group commit: concurrent [`Store::commit`] calls in one process share a sync.
//!
//! A durable commit costs one `fdatasync` of the log, and the device takes about as
//! long for one small batch as for fifty. So committers queue here; the first to
//! find no leader becomes the leader, takes everything queued, writes each batch as
//! its own committed batch of the log under one hold of the writer lock, syncs once,
//! applies all of them to the tracker in one transaction, and hands every committer
//! its own result. Across processes the writer lock does the same job one group at a
//! time. The protocol is in `format-spec/blob-log.md` ("Group commit").
//!
//! What a committer sees does not change: when `commit` returns `Ok` its batch is
//! durable (per [`super::Durability`]) and visible, and its [`CommitInfo`] names its
//! own batch. A batch that cannot be encoded fails alone. If the group as a whole
//! fails (a sync error, a batch the tracker refuses), nothing of it was acknowledged
//! and each batch is committed again alone, so each caller gets its own answer.
//!
//! This module must never hold its queue lock while it writes: the queue is only a
//! meeting point, and the writer lock orders the log.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use super::batch::{Op, WriteBatch};
use super::error::{Result, StoreError};
use super::writer::BatchWriter;
use super::{CommitInfo, Store};

/// Batches larger than this are committed alone: they would not share a sync
/// usefully, and cloning them into the queue would cost more than it saves.
const GROUP_BATCH_MAX_BYTES: usize = 256 << 10;

/// A group stops taking batches at this many bytes (the writer flushes at 4 MiB, so
/// a group is written in one go) or this many batches.
const GROUP_MAX_BYTES: usize = 3 << 20;
const GROUP_MAX_BATCHES: usize = 1024;

/// The meeting point of one store's committers.
#[derive(Default)]
pub(super) struct CommitQueue {
    state: Mutex<QueueState>,
    changed: Condvar,
}

#[derive(Default)]
struct QueueState {
    waiting: VecDeque<(u64, Arc<WriteBatch>, usize)>,
    results: HashMap<u64, Result<CommitInfo>>,
    leader: bool,
    next_ticket: u64,
}

/// Approximate bytes a batch adds to the log.
fn batch_bytes(batch: &WriteBatch) -> usize {
    batch
        .ops
        .iter()
        .map(|op| {
            64 + match op {
                Op::Put {
                    key, meta, body, ..
                } => key.len() + meta.len() + body.len(),
                Op::Delete { key } => key.len(),
                Op::Vector { key, meta, body } => key.len() + meta.len() + body.len(),
                Op::Event { meta, body } => meta.len() + body.len(),
            }
        })
        .sum()
}

impl CommitQueue {
    fn lock(&self) -> Result<MutexGuard<'_, QueueState>> {
        self.state
            .lock()
            .map_err(|_| StoreError::Invalid("commit queue poisoned by a panic".into()))
    }
}

/// Clears the leader flag and wakes the queue however the leader leaves, and if it
/// leaves without answering (a panic), answers its group with an error, so no
/// committer is left waiting for a leader that is gone.
struct Leading<'q> {
    queue: &'q CommitQueue,
    tickets: Vec<u64>,
}

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        let mut st = match self.queue.state.lock() {
            Ok(st) => st,
            Err(poisoned) => poisoned.into_inner(),
        };
        st.leader = false;
        for t in self.tickets.drain(..) {
            st.results.entry(t).or_insert_with(|| {
                Err(StoreError::Invalid(
                    "the thread committing this batch's group panicked; the batch may or may not be committed".into(),
                ))
            });
        }
        drop(st);
        self.queue.changed.notify_all();
    }
}

/// [`Store::commit`]: the batch rides in a group with whatever else is queued.
pub(super) fn commit(store: &Store, batch: &WriteBatch) -> Result<CommitInfo> {
    let bytes = batch_bytes(batch);
    if bytes > GROUP_BATCH_MAX_BYTES {
        return commit_alone(store, batch);
    }
    let queue = &store.commit_queue;
    let mut st = queue.lock()?;
    let ticket = st.next_ticket;
    st.next_ticket += 1;
    st.waiting
        .push_back((ticket, Arc::new(batch.clone()), bytes));
    loop {
        if let Some(result) = st.results.remove(&ticket) {
            return result;
        }
        if !st.leader {
            st.leader = true;
            let mut group = Vec::new();
            let mut group_bytes = 0;
            while let Some((_, _, b)) = st.waiting.front() {
                if !group.is_empty()
                    && (group.len() >= GROUP_MAX_BATCHES || group_bytes + b > GROUP_MAX_BYTES)
                {
                    break;
                }
                group_bytes += b;
                if let Some((t, batch, _)) = st.waiting.pop_front() {
                    group.push((t, batch));
                }
            }
            drop(st);
            let leading = Leading {
                queue,
                tickets: group.iter().map(|(t, _)| *t).collect(),
            };
            let results = commit_group(store, &group);
            {
                let mut st = queue.lock()?;
                st.results.extend(results);
            }
            drop(leading);
            st = queue.lock()?;
            continue;
        }
        st = queue
            .changed
            .wait(st)
            .map_err(|_| StoreError::Invalid("commit queue poisoned by a panic".into()))?;
    }
}

/// One batch, one writer, one sync: the path of large batches and of retries.
fn commit_alone(store: &Store, batch: &WriteBatch) -> Result<CommitInfo> {
    let mut writer = BatchWriter::begin(store)?;
    writer.extend(batch)?;
    writer.finish()
}

/// Commit `group` under one hold of the writer lock and one sync; every ticket gets
/// its own result.
fn commit_group(store: &Store, group: &[(u64, Arc<WriteBatch>)]) -> Vec<(u64, Result<CommitInfo>)> {
    if let [(ticket, batch)] = group {
        return vec![(*ticket, commit_alone(store, batch))];
    }
    let mut results = Vec::with_capacity(group.len());
    let mut writer = match BatchWriter::begin(store) {
        Ok(w) => w,
        // Could not even start (read-only, lock or tracker error): each tries alone
        // and gets its own error (or succeeds if the trouble has passed).
        Err(_) => return retry_alone(store, group),
    };
    let mut sealed = Vec::with_capacity(group.len());
    for (ticket, batch) in group {
        let mark = writer.mark();
        match writer.extend(batch).and_then(|()| writer.seal_batch()) {
            Ok(info) => sealed.push((*ticket, batch, info)),
            Err(e) => {
                if writer.rollback(mark).is_err() {
                    // The writer's state is unknown: abandon it (Drop discards what
                    // it wrote) and commit each batch alone.
                    drop(writer);
                    return retry_alone(store, group);
                }
                results.push((*ticket, Err(e)));
            }
        }
    }
    if sealed.is_empty() {
        return results;
    }
    match writer.finish_sealed() {
        Ok(_) => {
            results.extend(sealed.into_iter().map(|(t, _, info)| (t, Ok(info))));
            results
        }
        Err(e) => {
            tracing::debug!(
                "group commit of {} batches failed ({e}); committing each alone",
                sealed.len()
            );
            results.extend(
                sealed
                    .into_iter()
                    .map(|(t, batch, _)| (t, commit_alone(store, batch))),
            );
            results
        }
    }
}

fn retry_alone(store: &Store, group: &[(u64, Arc<WriteBatch>)]) -> Vec<(u64, Result<CommitInfo>)> {
    group
        .iter()
        .map(|(t, batch)| (*t, commit_alone(store, batch)))
        .collect()
}
