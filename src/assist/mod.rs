//! Optional help from a chat model: session summaries, relevance scoring, suggested
//! solutions, knowledge extraction, context compression and error screenshots.
//!
//! This module owns asking and reading answers: it picks what stored text a question
//! needs, puts it through [`Gate::outbound`] (scope checked, secrets replaced, bytes
//! capped) before anything is sent, records each call as an audit event (model, bytes,
//! tokens, cost, outcome — never the text), and parses what comes back without trusting
//! it. It must never send a byte when no model is configured, never send text that did
//! not pass the gate, never store a model's answer as more than `llm_extracted`, and
//! never be a dependency: every feature has a result without a model, and callers fall
//! back to it (with a warning) when a call fails.

mod compress;
mod extract;
pub mod parse;
mod rerank;
mod suggest;
mod summary;
mod vision;

use std::sync::{Arc, Mutex};

use serde::Serialize;

pub use compress::{Level, UnknownLevel};
pub use extract::{parse_items, same_words, Extracted};
pub use rerank::{RerankOptions, Scored};
pub use suggest::{parse_suggestion, past_solution, suggest, Parsed, Suggestion};
pub use vision::{
    is_base64, parse_fields, screenshot_from, sha256_hex, unread_image, Screenshot,
    ScreenshotError, ScreenshotFields,
};

use crate::gate::{AuditEvent, AuditLog, Gate, GateError, LlmCall};
use crate::llm::{ChatProvider, ChatRequest, LlmError, Message, Part, WireRequest};
use crate::memory::MemoryError;

/// The features that call the model unasked (setting `llm_features`). A command that
/// asks for one explicitly (`recall --rerank llm`, `error suggest`) needs only a model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Features {
    /// Summarise a session when it ends.
    pub summary: bool,
    /// Rerank memories in `enrich_prompt`.
    pub rerank: bool,
    /// Extract decisions, pitfalls and preferences when a session ends.
    pub extract: bool,
    /// Compress the project context.
    pub compress: bool,
    /// Read error screenshots.
    pub vision: bool,
}

impl Features {
    /// From a list of names (`summary`, `rerank`, `extract`, `compress`, `vision`,
    /// `all`); unknown names are ignored (the config checks them).
    pub fn from_names<S: AsRef<str>>(names: &[S]) -> Features {
        let on = |n: &str| names.iter().any(|x| x.as_ref() == n || x.as_ref() == "all");
        Features {
            summary: on("summary"),
            rerank: on("rerank"),
            extract: on("extract"),
            compress: on("compress"),
            vision: on("vision"),
        }
    }
}

/// Why a feature gave no model result. The caller warns and uses the result without
/// a model.
#[derive(Debug, thiserror::Error)]
pub enum AssistError {
    /// `--dry-run`: the request was printed, not sent.
    #[error("dry run: the request was not sent")]
    DryRun,
    /// The gate refused what would have been sent.
    #[error("the gate refused the request: {0}")]
    Gate(#[from] GateError),
    /// The call failed.
    #[error(transparent)]
    Llm(#[from] LlmError),
    /// The model's answer had nothing usable.
    #[error("the model's answer could not be used: {0}")]
    Unusable(String),
    /// Reading or writing memories failed.
    #[error(transparent)]
    Memory(#[from] MemoryError),
}

/// A request prepared by a dry run: what it was for and what would have been sent.
#[derive(Debug, Clone, Serialize)]
pub struct Prepared {
    /// What the call is for.
    pub purpose: String,
    /// The request, the API key masked.
    pub request: WireRequest,
}

/// The model, behind the gate, for one repository.
pub struct Assistant {
    provider: Arc<dyn ChatProvider>,
    vision: Arc<dyn ChatProvider>,
    /// Features on unasked.
    pub features: Features,
    /// Most bytes of stored text in one request.
    pub max_request_bytes: usize,
    /// How relevance scoring selects.
    pub rerank: RerankOptions,
    gate: Gate,
    dry_run: bool,
    prepared: Mutex<Vec<Prepared>>,
    /// Where calls are audited when not in the local store given to each call (the
    /// team backend's repository; [`Assistant::set_audit_log`]).
    audit_log: Mutex<Option<Arc<dyn AuditLog>>>,
}

/// One question to the chat model: fixed instructions around stored text.
pub(crate) struct Question<'a> {
    /// What the call is for (audited).
    pub purpose: &'a str,
    /// The system prompt.
    pub system: &'a str,
    /// Instructions before the data.
    pub before: &'a str,
    /// Stored text: put through the gate.
    pub data: &'a str,
    /// Instructions after the data.
    pub after: &'a str,
    pub temperature: f32,
    pub max_tokens: u32,
}

/// A model's answer.
#[derive(Debug, Clone)]
pub(crate) struct Answer {
    pub text: String,
    pub model: String,
}

impl Assistant {
    /// An assistant asking `provider` (and `vision` for images) for the repository
    /// of `gate`.
    pub fn new(
        provider: Arc<dyn ChatProvider>,
        vision: Arc<dyn ChatProvider>,
        features: Features,
        gate: Gate,
    ) -> Assistant {
        Assistant {
            provider,
            vision,
            features,
            max_request_bytes: 32 << 10,
            rerank: RerankOptions::default(),
            gate,
            dry_run: false,
            prepared: Mutex::new(Vec::new()),
            audit_log: Mutex::new(None),
        }
    }

    /// Audit calls into `log` (the team backend's repository) rather than the local
    /// store each call is given.
    pub fn set_audit_log(&self, log: Arc<dyn AuditLog>) {
        *self.audit_log.lock().unwrap_or_else(|p| p.into_inner()) = Some(log);
    }

    /// Prepare requests without sending them ([`Assistant::prepared`] returns them).
    pub fn dry_run(mut self, on: bool) -> Assistant {
        self.dry_run = on;
        self
    }

    /// The same assistant as a dry run of its own (nothing prepared yet): for one
    /// request that asks to see what would be sent, while others go on sending.
    pub fn dry_run_copy(&self) -> Assistant {
        Assistant {
            provider: self.provider.clone(),
            vision: self.vision.clone(),
            features: self.features,
            max_request_bytes: self.max_request_bytes,
            rerank: self.rerank,
            gate: self.gate.clone(),
            dry_run: true,
            prepared: Mutex::new(Vec::new()),
            audit_log: Mutex::new(
                self.audit_log
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone(),
            ),
        }
    }

    /// Whether this is a dry run.
    pub fn is_dry_run(&self) -> bool {
        self.dry_run
    }

    /// The requests a dry run prepared, in order.
    pub fn prepared(&self) -> Vec<Prepared> {
        self.prepared
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The chat model's name.
    pub fn model(&self) -> &str {
        self.provider.model()
    }

    /// Ask the chat model: `q.data` (stored text) goes through the gate, then between
    /// `q.before` and `q.after` (fixed instructions) as one user message.
    pub(crate) fn ask(&self, log: &dyn AuditLog, q: &Question<'_>) -> Result<Answer, AssistError> {
        let out = self
            .gate
            .outbound(&self.gate.repo, q.data, self.max_request_bytes)?;
        let request = ChatRequest::simple(
            q.system,
            format!("{}{}{}", q.before, out.text, q.after),
            q.temperature,
            q.max_tokens,
        );
        self.send(log, q.purpose, &*self.provider, &request, out.redactions)
    }

    /// Ask the vision model about an image: `prompt` is fixed text, never stored text.
    pub(crate) fn ask_image(
        &self,
        log: &dyn AuditLog,
        purpose: &str,
        system: &str,
        prompt: &str,
        media_type: &str,
        base64: String,
    ) -> Result<Answer, AssistError> {
        self.gate.check_repo(&self.gate.repo)?;
        let request = ChatRequest {
            system: Some(system.to_string()),
            messages: vec![Message {
                role: crate::llm::Role::User,
                parts: vec![
                    Part::Text(prompt.to_string()),
                    Part::Image {
                        media_type: media_type.to_string(),
                        base64,
                    },
                ],
            }],
            temperature: 0.1,
            max_tokens: 800,
        };
        self.send(log, purpose, &*self.vision, &request, 0)
    }

    /// Send `request`, auditing the call in the team log when one is set, else in
    /// `log` (the local store's).
    fn send(
        &self,
        log: &dyn AuditLog,
        purpose: &str,
        provider: &dyn ChatProvider,
        request: &ChatRequest,
        redactions: u64,
    ) -> Result<Answer, AssistError> {
        if self.dry_run {
            self.prepared
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(Prepared {
                    purpose: purpose.to_string(),
                    request: provider.prepare(request),
                });
            return Err(AssistError::DryRun);
        }
        let result = provider.chat(request);
        let mut call = LlmCall {
            purpose: purpose.to_string(),
            model: provider.model().to_string(),
            redactions,
            ..LlmCall::default()
        };
        match &result {
            Ok(r) => {
                call.model = r.model.clone();
                call.bytes_sent = r.bytes_sent;
                call.input_tokens = r.usage.input_tokens;
                call.output_tokens = r.usage.output_tokens;
                call.estimated = r.usage.estimated;
                call.cost_usd = r.cost_usd;
                call.attempts = r.attempts;
                call.outcome = "ok".into();
            }
            Err(_) => {
                call.bytes_sent = provider.prepare(request).body.len() as u64;
                call.outcome = "failed".into();
            }
        }
        let event = AuditEvent {
            op: "llm_call".into(),
            repo: self.gate.repo.clone(),
            query: Some(purpose.to_string()),
            results: u64::from(result.is_ok()),
            redactions,
            error: result.as_ref().err().map(|e| e.to_string()),
            llm: Some(call),
            ..AuditEvent::default()
        };
        let team = self
            .audit_log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let log: &dyn AuditLog = match &team {
            Some(l) => &**l,
            None => log,
        };
        let written = event
            .prepared()
            .map_err(MemoryError::from)
            .and_then(|e| log.append_audit(&[e]));
        if let Err(e) = written {
            tracing::error!("audit event of an LLM call not written: {e}");
        }
        let reply = result?;
        Ok(Answer {
            text: reply.text,
            model: reply.model,
        })
    }
}

/// Log a feature's failure as a warning and say it in one line for the caller's
/// output; `None` for a dry run (nothing failed).
pub fn warn(feature: &str, e: &AssistError) -> Option<String> {
    if matches!(e, AssistError::DryRun) {
        return None;
    }
    let w = format!("LLM {feature} unavailable ({e}); showing the result without a model");
    tracing::warn!("{w}");
    Some(w)
}

/// Totals of the LLM calls in an audit trail, for `engram stats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Totals {
    /// Calls made.
    pub calls: u64,
    /// Calls that failed.
    pub failed: u64,
    /// Bytes of request bodies sent.
    pub bytes_sent: u64,
    /// Tokens sent.
    pub input_tokens: u64,
    /// Tokens received.
    pub output_tokens: u64,
    /// US dollars at the configured prices.
    pub cost_usd: f64,
}

/// Add up the LLM calls among `events`.
pub fn totals(events: &[AuditEvent]) -> Totals {
    let mut t = Totals::default();
    for c in events.iter().filter_map(|e| e.llm.as_ref()) {
        t.calls += 1;
        t.failed += u64::from(c.outcome == "failed");
        t.bytes_sent += c.bytes_sent;
        t.input_tokens += c.input_tokens;
        t.output_tokens += c.output_tokens;
        t.cost_usd += c.cost_usd;
    }
    t
}
