//! Preparing changed files for an indexing pass: read, redact, parse, chunk and embed
//! each one without holding any lock, on as many threads as asked, and hand the
//! results to the committing writer in file order ([`prepare_in_parallel`]), so the
//! same tree gives the same records whatever the number of threads. Nothing here
//! writes to the store.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use super::file::{self, Prepared};
use super::pass::Known;
use super::{walk, IndexError, IndexOptions};
use crate::key::hash64;

/// A file ready to commit: its record's fields, and its new content when it changed.
pub(super) struct Pending {
    pub rel: String,
    pub lang: &'static str,
    pub size: u64,
    pub mtime_ms: u64,
    pub hash: String,
    /// Number of lines of the text.
    pub lines: u64,
    pub content: Option<Prepared>,
}

/// What reading and preparing one changed file gave.
pub(super) enum Outcome {
    /// Deleted or made unreadable since the walk: skipped, never fatal.
    Unreadable,
    /// Not UTF-8 text, or holds a NUL byte.
    Binary,
    Ready(Box<Pending>),
}

/// An [`Outcome`] with the secrets its preparation replaced, by rule.
pub(super) struct Prepared1 {
    pub outcome: Outcome,
    pub redactions: BTreeMap<String, u64>,
}

/// What every file's preparation shares; shared by the preparing threads.
pub(super) struct PrepareJob<'a> {
    pub hint: &'a HashMap<String, Known>,
    pub embedder_name: &'a str,
    pub opts: &'a IndexOptions,
    /// Embed each file on the thread that prepares it: the pass already runs one
    /// preparing thread per core it was given (or was asked for one thread).
    pub embed_here: bool,
    /// A keywords-first pass ([`super::pass`]): a file whose content is indexed counts
    /// as unchanged whatever embedder made its vectors.
    pub content_only: bool,
}

/// What the committing writer is handed, in file order.
pub(super) enum Step {
    /// The file at this index of the walk, prepared.
    File(usize, Prepared1),
    /// The next file in order is still being prepared elsewhere, and this thread
    /// would otherwise wait or prepare a file of its own: it may commit what it has
    /// gathered instead. `helpers_left` is about how long the other threads still
    /// need to prepare every file nobody has taken (zero once all are taken).
    /// `accept` answers whether it committed.
    Idle { helpers_left: Duration },
}

impl PrepareJob<'_> {
    /// Read one file and, if its content changed, redact, parse, chunk and embed it.
    pub fn run(&self, f: &walk::WalkedFile) -> Result<Prepared1, IndexError> {
        let mut redactions = BTreeMap::new();
        let done = |outcome| Prepared1 {
            outcome,
            redactions: BTreeMap::new(),
        };
        let bytes = match std::fs::read(&f.abs) {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!("skipping {}: {e}", f.rel);
                return Ok(done(Outcome::Unreadable));
            }
        };
        let text = match std::str::from_utf8(&bytes) {
            Ok(t) if !bytes.contains(&0) => t,
            _ => return Ok(done(Outcome::Binary)),
        };
        let hash = format!("{:016x}", hash64(text));
        let lang = walk::language(&f.rel);
        let old = self.hint.get(&f.rel);
        let same_content = old.is_some_and(|k| {
            k.hash == hash && (self.content_only || k.embedder == self.embedder_name)
        });
        let content = if same_content {
            None
        } else {
            let mut cx = file::Context {
                secret_action: self.opts.secret_action,
                embedder: self.opts.embedder.as_ref(),
                redactions: &mut redactions,
                graph: self.opts.graph,
            };
            let mut prepare = || file::prepare(&f.rel, lang, text, &mut cx);
            Some(if self.embed_here {
                crate::embed::on_this_thread(prepare)?
            } else {
                prepare()?
            })
        };
        Ok(Prepared1 {
            outcome: Outcome::Ready(Box::new(Pending {
                rel: f.rel.clone(),
                lang,
                size: f.size,
                mtime_ms: f.mtime_ms,
                hash,
                lines: text.lines().count() as u64,
                content,
            })),
            redactions,
        })
    }
}

/// Prepared files that may wait for the writer, in the channel and again in the
/// reorder window: enough that the preparing threads keep working while a batch is
/// committed (and synced), few enough to bound memory whatever the tree's size.
const PREPARED_AHEAD: usize = 64;

/// Prepare `todo` on `threads` threads and hand each result to `accept` in order.
///
/// This thread is one of the `threads`: it runs `accept` (the committing writer)
/// whenever the next file in order is ready, and otherwise prepares the next file
/// nobody has taken, so `threads` threads keep `threads` cores busy without the
/// writer falling behind. With a writer beside `threads` preparers, the writer got
/// only its share of the cores while it had batches to apply (the tracker's B-trees
/// and full-text tables, over 40% of a one-thread index) and was left with a backlog
/// to commit alone once the preparers were done. It used to wait, too, when the next
/// file in order was in a helper's hands and later ones were ready: about 50 ms of a
/// 0.45 s two-thread index of 100K lines spent idle. When nothing is ready it first
/// offers `accept` a [`Step::Idle`], with an estimate of what the helpers still have
/// to prepare, so that `accept` may commit what it has gathered rather than leave a
/// backlog to apply alone at the end while the helpers sit idle (about 60 ms of a
/// 0.45 s index). Helpers take the next file from a shared counter, so at most a few
/// results wait out of order. When `accept` or a preparation fails,
/// nobody takes another file and the first error in file order is returned.
pub(super) fn prepare_in_parallel(
    job: &PrepareJob<'_>,
    todo: &[(usize, &walk::WalkedFile)],
    threads: usize,
    accept: &mut dyn FnMut(Step) -> Result<bool, IndexError>,
) -> Result<(), IndexError> {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::mpsc::{self, TryRecvError};

    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (next, stop) = (&next, &stop);
    std::thread::scope(|s| {
        let (tx, rx) = mpsc::sync_channel::<(usize, Result<Prepared1, IndexError>)>(PREPARED_AHEAD);
        for _ in 1..threads {
            let tx = tx.clone();
            s.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    let Some((_, f)) = todo.get(n) else { break };
                    if tx.send((n, job.run(f))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let mut waiting: BTreeMap<usize, Result<Prepared1, IndexError>> = BTreeMap::new();
        let mut want = 0usize;
        let mut helpers_done = false;
        // How long a file takes to prepare, from the ones prepared here.
        let (mut prep_time, mut prepared_here) = (Duration::ZERO, 0u32);
        let result = (|| {
            while want < todo.len() {
                // What the helpers finished, without waiting for more, while the
                // window has room (or the next file to accept may be among them).
                // Draining without that bound let the helpers run ahead of a slow
                // writer without limit: prepared files piled up here, and resident
                // memory grew with the tree.
                while !helpers_done
                    && (waiting.len() < PREPARED_AHEAD || !waiting.contains_key(&want))
                {
                    match rx.try_recv() {
                        Ok((n, r)) => {
                            waiting.insert(n, r);
                        }
                        Err(TryRecvError::Empty) => break,
                        Err(TryRecvError::Disconnected) => helpers_done = true,
                    }
                }
                if let Some(r) = waiting.remove(&want) {
                    accept(Step::File(todo[want].0, r?))?;
                    want += 1;
                    continue;
                }
                // While the window has room, offer to commit what is gathered (only
                // this thread can apply it), with how long the helpers still need for
                // the files nobody has taken, from this thread's own preparations;
                // else prepare the next file nobody has taken. Waiting for the helper
                // that has the next one in hand would leave this core idle; the file
                // in hand here delays the commit by no more than a file's preparation,
                // and the helpers keep working meanwhile (up to `PREPARED_AHEAD`
                // results). A full window waits for the next file instead.
                if waiting.len() < PREPARED_AHEAD {
                    let taken = next.load(Ordering::Relaxed);
                    if prepared_here > 0 && taken < todo.len() {
                        let left = (todo.len() - taken) as u32;
                        let helpers_left = prep_time / prepared_here * left / (threads as u32 - 1);
                        if accept(Step::Idle { helpers_left })? {
                            continue;
                        }
                    }
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if let Some((_, f)) = todo.get(n) {
                        let started = Instant::now();
                        waiting.insert(n, job.run(f));
                        prep_time += started.elapsed();
                        prepared_here += 1;
                        continue;
                    }
                }
                if helpers_done {
                    // Every file was taken and every helper has stopped, yet `want`
                    // never arrived: a helper thread died (a panic, which the scope
                    // re-raises). Nothing more will come.
                    break;
                }
                accept(Step::Idle {
                    helpers_left: Duration::ZERO,
                })?;
                match rx.recv() {
                    Ok((n, r)) => {
                        waiting.insert(n, r);
                    }
                    Err(_) => helpers_done = true,
                }
            }
            Ok(())
        })();
        // Stop the helpers and let them finish the file in hand; dropping the
        // receiver fails their next send.
        stop.store(true, Ordering::Relaxed);
        drop(rx);
        result
    })
}
