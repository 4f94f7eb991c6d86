//! Relevance scoring, after the seed's `MemoryRetrieval`: the model rates each memory
//! against a context from 0 to 1 with a reason, in batches; memories under the
//! threshold are dropped and the best `max_memories` kept, best first.
//!
//! It never invents a memory (only candidates it was given come back), never keeps a
//! score outside 0 to 1, and fails as a whole (so the caller keeps its own ranking)
//! when no batch could be scored.

use serde::Serialize;

use super::parse::parse_scores;
use super::{AssistError, Assistant, Question};
use crate::memory::{AuditLog, Memory};

/// How scoring selects (the seed's defaults).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RerankOptions {
    /// Least score kept.
    pub threshold: f64,
    /// Most memories kept.
    pub max_memories: usize,
    /// Memories per call.
    pub batch_size: usize,
    /// Tries per batch when the answer has no scores.
    pub retries: u32,
}

impl Default for RerankOptions {
    fn default() -> Self {
        RerankOptions {
            threshold: 0.7,
            max_memories: 10,
            batch_size: 10,
            retries: 2,
        }
    }
}

/// A memory with the model's score and reason.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scored {
    /// The memory's id.
    pub id: String,
    /// 0 to 1.
    pub score: f64,
    /// Why, as the model put it.
    pub reason: String,
}

const SYSTEM: &str = "You rate how relevant stored memories are to a context. \
Be strict: 1 means the memory directly answers or constrains the context, 0 means unrelated.";

const AFTER: &str = "

Is each memory relevant to the context? Rate each one's relevance from 0 to 1.
Answer with one line per memory and nothing else, exactly in this form:
Memory <n>: Score: <number 0-1> Reason: <brief explanation>";

fn describe(n: usize, m: &Memory) -> String {
    let text: String = m.text.chars().take(1200).collect();
    let mut meta = vec![format!("kind={}", m.kind)];
    if !m.tags.is_empty() {
        meta.push(format!("tags={}", m.tags.join(",")));
    }
    if let Some(t) = &m.task {
        meta.push(format!("task={t}"));
    }
    if !m.insights.is_empty() {
        meta.push(format!("insights={}", m.insights.join(",")));
    }
    format!("Memory {n}:\n{text}\nMetadata: {}\n\n", meta.join(", "))
}

impl Assistant {
    /// Score `candidates` against `context` and keep the relevant ones, best first;
    /// the calls are audited in the assistant's team log, else in `log`.
    pub fn rerank(
        &self,
        log: &dyn AuditLog,
        context: &str,
        candidates: &[Memory],
    ) -> Result<Vec<Scored>, AssistError> {
        let opts = self.rerank;
        let batches: Vec<&[Memory]> = candidates.chunks(opts.batch_size.max(1)).collect();
        let results: Vec<Result<Vec<Scored>, AssistError>> = std::thread::scope(|s| {
            let handles: Vec<_> = batches
                .iter()
                .map(|batch| s.spawn(|| self.score_batch(log, context, batch)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(AssistError::Unusable("a scoring thread panicked".into()))
                    })
                })
                .collect()
        });
        let mut scored = Vec::new();
        let mut first_error = None;
        let mut any_ok = false;
        for r in results {
            match r {
                Ok(s) => {
                    any_ok = true;
                    scored.extend(s);
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        if !any_ok {
            return Err(first_error.unwrap_or(AssistError::Unusable("nothing to score".into())));
        }
        if let Some(e) = first_error {
            tracing::warn!("some memories were not scored by the model: {e}");
        }
        scored.retain(|s| s.score >= opts.threshold);
        scored.sort_by(|a, b| b.score.total_cmp(&a.score));
        scored.truncate(opts.max_memories);
        Ok(scored)
    }

    fn score_batch(
        &self,
        log: &dyn AuditLog,
        context: &str,
        batch: &[Memory],
    ) -> Result<Vec<Scored>, AssistError> {
        let mut data = format!("Context: {context}\n\n");
        for (i, m) in batch.iter().enumerate() {
            data.push_str(&describe(i + 1, m));
        }
        let mut last = AssistError::Unusable("no scores in the answer".into());
        for _ in 0..self.rerank.retries.max(1) {
            let answer = self.ask(
                log,
                &Question {
                    purpose: "rerank",
                    system: SYSTEM,
                    before: "",
                    data: &data,
                    after: AFTER,
                    temperature: 0.0,
                    max_tokens: u32::try_from(batch.len().saturating_mul(40))
                        .unwrap_or(u32::MAX)
                        .clamp(100, 8192),
                },
            );
            // A failed call was already retried by the client; a dry run stops.
            let answer = answer?;
            let scores = parse_scores(&answer.text, batch.len());
            if scores.iter().any(Option::is_some) {
                return Ok(batch
                    .iter()
                    .zip(scores)
                    .filter_map(|(m, s)| {
                        s.map(|(score, reason)| Scored {
                            id: m.id.clone(),
                            score,
                            reason,
                        })
                    })
                    .collect());
            }
            last = AssistError::Unusable("no scores in the answer".into());
        }
        Err(last)
    }
}
