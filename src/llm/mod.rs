//! A chat-model client: one [`ChatProvider`] trait, the OpenAI-compatible and the
//! Anthropic Messages wire formats, retries with backoff, a concurrency limit, and the
//! token and cost count of every call. Beside it, [`RemoteEmbedder`]: embedding APIs
//! (OpenAI-compatible, Voyage, Ollama) behind the `embed` layer's trait, on the same
//! retrying transport.
//!
//! This module owns the bytes on the wire and nothing else. It must never read a store,
//! a memory or a file, and never decide what is sent: its callers (the `assist` layer)
//! put every text through the gate first. It never logs a request body or an API key.
//! With no model configured nothing here is ever constructed, so no byte leaves the
//! machine.

pub mod embeddings;
mod http;
mod settings;
mod wire;

pub use embeddings::{RemoteEmbedder, RemoteOptions};
pub use http::HttpProvider;
pub use settings::{Api, LlmSettings, SettingsError, API_KEY_ENV};
pub use wire::{parse_reply, WireRequest};

use serde::Serialize;

/// Who says a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The person or program asking.
    User,
    /// The model (for few-shot examples).
    Assistant,
}

/// One part of a message: text, or an image for a vision model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Plain text.
    Text(String),
    /// An image, base64-encoded, with its media type (`image/png`, …).
    Image {
        /// The media type, e.g. `image/png`.
        media_type: String,
        /// The image's bytes, base64 (standard alphabet, padded).
        base64: String,
    },
}

/// A message of a conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub parts: Vec<Part>,
}

impl Message {
    /// A user message of text alone.
    pub fn user(text: impl Into<String>) -> Message {
        Message {
            role: Role::User,
            parts: vec![Part::Text(text.into())],
        }
    }
}

/// What to ask a model: provider-independent.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// The system prompt (the model's role), if any.
    pub system: Option<String>,
    /// The conversation, oldest first.
    pub messages: Vec<Message>,
    /// Sampling temperature (0 = as deterministic as the model allows).
    pub temperature: f32,
    /// Most tokens the reply may have.
    pub max_tokens: u32,
}

impl ChatRequest {
    /// A request of one user message under a system prompt.
    pub fn simple(
        system: &str,
        user: impl Into<String>,
        temperature: f32,
        max_tokens: u32,
    ) -> Self {
        ChatRequest {
            system: Some(system.to_string()).filter(|s| !s.is_empty()),
            messages: vec![Message::user(user)],
            temperature,
            max_tokens,
        }
    }
}

/// Tokens one call used, as the provider reported them (else estimated from bytes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    /// Tokens sent (prompt).
    pub input_tokens: u64,
    /// Tokens received (completion).
    pub output_tokens: u64,
    /// True when the provider reported no usage and the counts are bytes / 4.
    pub estimated: bool,
}

/// A model's answer to one [`ChatRequest`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatReply {
    /// The reply's text (the parts concatenated).
    pub text: String,
    /// The model that answered (as the provider named it, else the configured one).
    pub model: String,
    /// Tokens used.
    pub usage: Usage,
    /// What the call cost in US dollars at the configured prices (0 when unpriced).
    pub cost_usd: f64,
    /// Bytes of the request body sent.
    pub bytes_sent: u64,
    /// HTTP attempts made (1 when no retry was needed).
    pub attempts: u32,
}

/// Why a call to a model failed. Every variant is soft for callers: they warn and fall
/// back to the result without a model.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// No model is configured.
    #[error("no LLM is configured (set llm_model)")]
    NotConfigured,
    /// The request could not be sent or its reply not read.
    #[error("LLM request to {url} failed: {reason}")]
    Transport {
        /// The endpoint.
        url: String,
        /// What went wrong (connection refused, reset, …).
        reason: String,
    },
    /// The call took longer than the configured timeout.
    #[error("LLM request to {url} timed out after {secs} s")]
    Timeout {
        /// The endpoint.
        url: String,
        /// The timeout.
        secs: u64,
    },
    /// The provider answered with an error status (after any retries).
    #[error("LLM provider answered HTTP {status}: {excerpt}")]
    Status {
        /// The HTTP status.
        status: u16,
        /// The start of the error body.
        excerpt: String,
    },
    /// The provider's answer is not the wire format's shape.
    #[error("LLM reply could not be read: {0}")]
    Malformed(String),
}

impl LlmError {
    /// Whether trying again may help (rate limits, server errors, timeouts).
    pub fn is_transient(&self) -> bool {
        match self {
            LlmError::Status { status, .. } => *status == 429 || *status >= 500,
            LlmError::Timeout { .. } => true,
            _ => false,
        }
    }
}

/// A chat model: turns a request into a reply.
///
/// Implementations are blocking; never call [`ChatProvider::chat`] on an async
/// runtime's thread (use `spawn_blocking`).
pub trait ChatProvider: Send + Sync {
    /// The configured model's name.
    fn model(&self) -> &str;
    /// The exact HTTP request [`ChatProvider::chat`] would send, with the API key
    /// masked: what `--dry-run` prints.
    fn prepare(&self, request: &ChatRequest) -> WireRequest;
    /// Send the request (with retries) and read the reply.
    fn chat(&self, request: &ChatRequest) -> Result<ChatReply, LlmError>;
}
