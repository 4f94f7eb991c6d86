//! [`RemoteEmbedder`]: an [`Embedder`] reached over HTTP — the OpenAI-compatible
//! embeddings API (OpenAI, Ollama's `/v1`, LM Studio, vLLM, TEI), Voyage AI, and
//! Ollama's native `/api/embed`.
//!
//! Texts go out in batches of `batch`, one request at a time per call, each with the
//! chat client's timeout and retry rules (429, 5xx and timeouts, `Retry-After` wins).
//! Every reply is checked (one finite vector per text, all of one length) before a
//! vector is returned, so a misbehaving server is an error, never a stored wrong
//! vector. Callers pass only redacted text (the index and the memory layer redact
//! before embedding); this module sends exactly what it is given and never logs a body
//! or the API key.

use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{json, Value};

use super::http::Transport;
use super::LlmError;
use crate::embed::{EmbedError, Embedder, RemoteApi, RemoteName};

/// Longest text sent, in bytes (cut at a character boundary): a code chunk is far
/// shorter; this keeps one odd text from failing a whole batch on a token limit.
const MAX_TEXT_BYTES: usize = 16 * 1024;

/// The environment variable read first for an embedding API key.
pub const EMBED_API_KEY_ENV: &str = "ENGRAM_EMBED_API_KEY";

/// How a [`RemoteEmbedder`] reaches its API.
#[derive(Clone)]
pub struct RemoteOptions {
    /// The endpoint base; `None` is the API's public one (Ollama: 127.0.0.1:11434).
    pub base_url: Option<String>,
    /// A bearer token, if the API needs one.
    pub api_key: Option<String>,
    /// Texts per request.
    pub batch: usize,
    /// Longest one attempt may take.
    pub timeout: Duration,
    /// Retries after a 429, a 5xx or a timeout.
    pub max_retries: u32,
    /// First backoff delay, doubled per retry.
    pub backoff: Duration,
    /// Longest `Retry-After` honoured before giving up instead.
    pub max_wait: Duration,
}

impl Default for RemoteOptions {
    fn default() -> Self {
        RemoteOptions {
            base_url: None,
            api_key: None,
            batch: 64,
            timeout: Duration::from_secs(30),
            max_retries: 3,
            backoff: Duration::from_millis(500),
            max_wait: Duration::from_secs(30),
        }
    }
}

impl std::fmt::Debug for RemoteOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteOptions")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .field("batch", &self.batch)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// The API key for `api` from the environment (`lookup` reads a variable):
/// `ENGRAM_EMBED_API_KEY`, else the provider's usual variable (`OPENAI_API_KEY`,
/// `VOYAGE_API_KEY`). Ollama needs none but sends one if `ENGRAM_EMBED_API_KEY` is set.
pub fn api_key_from_env(api: RemoteApi, lookup: impl Fn(&str) -> Option<String>) -> Option<String> {
    let usual = match api {
        RemoteApi::OpenAi => Some("OPENAI_API_KEY"),
        RemoteApi::Voyage => Some("VOYAGE_API_KEY"),
        RemoteApi::Ollama => None,
    };
    std::iter::once(EMBED_API_KEY_ENV)
        .chain(usual)
        .find_map(|var| lookup(var).filter(|v| !v.trim().is_empty()))
}

/// `embedder = "auto"`, which the user opts into: Voyage when `VOYAGE_API_KEY` is
/// set, else OpenAI when `OPENAI_API_KEY` is, else Ollama when `OLLAMA_HOST` is;
/// `None` (the built-in embedder) otherwise. Nothing is probed over the network.
pub fn detect_remote(lookup: impl Fn(&str) -> Option<String>) -> Option<RemoteName> {
    let set = |var: &str| lookup(var).is_some_and(|v| !v.trim().is_empty());
    let api = if set("VOYAGE_API_KEY") {
        RemoteApi::Voyage
    } else if set("OPENAI_API_KEY") {
        RemoteApi::OpenAi
    } else if set("OLLAMA_HOST") {
        RemoteApi::Ollama
    } else {
        return None;
    };
    Some(RemoteName {
        api,
        model: api.default_model().to_string(),
    })
}

/// An embedder behind an HTTP API. Its [`Embedder::name`] is `api:model`
/// (`voyage:voyage-code-3`): the endpoint may change, the vector space may not.
pub struct RemoteEmbedder {
    name: String,
    api: RemoteApi,
    model: String,
    url: String,
    api_key: Option<String>,
    batch: usize,
    transport: Transport,
    /// Learnt from the first reply.
    dims: OnceLock<usize>,
}

impl RemoteEmbedder {
    /// An embedder for `remote` (nothing is sent until the first [`Embedder::embed`]).
    pub fn new(remote: &RemoteName, options: RemoteOptions) -> Result<RemoteEmbedder, LlmError> {
        let base = options
            .base_url
            .filter(|b| !b.trim().is_empty())
            .unwrap_or_else(|| remote.api.default_base_url().to_string());
        let base = base.trim().trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(LlmError::Malformed(format!(
                "embed_base_url {base:?} is not an http:// or https:// URL"
            )));
        }
        let url = match remote.api {
            RemoteApi::OpenAi | RemoteApi::Voyage => format!("{base}/embeddings"),
            RemoteApi::Ollama => format!("{base}/api/embed"),
        };
        Ok(RemoteEmbedder {
            name: remote.canonical(),
            api: remote.api,
            model: remote.model.clone(),
            url,
            api_key: options.api_key,
            batch: options.batch.max(1),
            transport: Transport {
                timeout: options.timeout,
                max_retries: options.max_retries,
                backoff: options.backoff,
                max_wait: options.max_wait,
            },
            dims: OnceLock::new(),
        })
    }

    /// The endpoint requests go to.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn failed(&self, reason: impl std::fmt::Display) -> EmbedError {
        EmbedError::Failed {
            embedder: self.name.clone(),
            reason: reason.to_string(),
        }
    }

    fn request_body(&self, texts: &[&str]) -> Vec<u8> {
        let input: Vec<&str> = texts.iter().map(|t| cut(t, MAX_TEXT_BYTES)).collect();
        let body = match self.api {
            RemoteApi::OpenAi => json!({"model": self.model, "input": input}),
            RemoteApi::Voyage => json!({"model": self.model, "input": input, "truncation": true}),
            RemoteApi::Ollama => json!({"model": self.model, "input": input, "truncate": true}),
        };
        body.to_string().into_bytes()
    }

    /// One request's vectors, in the order of `texts`.
    fn embed_batch(
        &self,
        client: &reqwest::blocking::Client,
        texts: &[&str],
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
        if let Some(key) = &self.api_key {
            headers.push(("authorization".to_string(), format!("Bearer {key}")));
        }
        let (reply, _) = self
            .transport
            .post(
                client,
                &self.url,
                &headers,
                &self.request_body(texts),
                "embedding request",
            )
            .map_err(|e| self.failed(e))?;
        let reply: Value = serde_json::from_str(&reply)
            .map_err(|e| self.failed(format!("the reply is not JSON: {e}")))?;
        let vectors = parse_vectors(self.api, &reply).map_err(|e| self.failed(e))?;
        if vectors.len() != texts.len() {
            return Err(self.failed(format!(
                "{} vectors for {} texts",
                vectors.len(),
                texts.len()
            )));
        }
        Ok(vectors)
    }
}

impl std::fmt::Debug for RemoteEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteEmbedder")
            .field("name", &self.name)
            .field("url", &self.url)
            .field("batch", &self.batch)
            .finish()
    }
}

impl Embedder for RemoteEmbedder {
    fn name(&self) -> &str {
        &self.name
    }

    /// The vectors' length once a reply has been seen; 0 before.
    fn dimensions(&self) -> usize {
        self.dims.get().copied().unwrap_or(0)
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        // Texts without a letter or digit are not sent (APIs refuse empty input); they
        // get the all-zero vector the trait asks for.
        let sendable: Vec<usize> = (0..texts.len())
            .filter(|&i| texts[i].chars().any(char::is_alphanumeric))
            .collect();
        let mut out: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        if !sendable.is_empty() {
            let client = self
                .transport
                .client(&self.url)
                .map_err(|e| self.failed(e))?;
            for group in sendable.chunks(self.batch) {
                let batch: Vec<&str> = group.iter().map(|&i| texts[i]).collect();
                for (&i, v) in group.iter().zip(self.embed_batch(&client, &batch)?) {
                    let dims = *self.dims.get_or_init(|| v.len());
                    if v.len() != dims {
                        return Err(self.failed(format!(
                            "a vector of {} dimensions where earlier ones had {dims}",
                            v.len()
                        )));
                    }
                    out[i] = Some(v);
                }
            }
        }
        let dims = self.dimensions();
        Ok(out
            .into_iter()
            .map(|v| v.unwrap_or_else(|| vec![0.0; dims]))
            .collect())
    }
}

/// What is wrong with an embedding provider's reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum ReplyError {
    #[error("the reply has no data array")]
    NoData,
    #[error("a data item has no embedding")]
    NoEmbedding,
    #[error("the data items' indexes are not 0..n")]
    Indexes,
    #[error("the reply has no embeddings array")]
    NoEmbeddings,
    #[error("an embedding is not an array")]
    NotAnArray,
    #[error("an embedding holds a non-number")]
    NotANumber,
    #[error("an embedding holds a number out of range")]
    OutOfRange,
    #[error("an embedding is empty")]
    Empty,
    #[error("the embeddings differ in length")]
    Lengths,
}

/// The vectors of a reply, in input order: `data[].embedding` ordered by `index`
/// (OpenAI, Voyage) or `embeddings[]` (Ollama). Every number must be finite and
/// every vector non-empty and of one length.
fn parse_vectors(api: RemoteApi, reply: &Value) -> Result<Vec<Vec<f32>>, ReplyError> {
    let rows: Vec<&Value> = match api {
        RemoteApi::OpenAi | RemoteApi::Voyage => {
            let data = reply
                .get("data")
                .and_then(Value::as_array)
                .ok_or(ReplyError::NoData)?;
            let mut indexed = Vec::with_capacity(data.len());
            for (n, item) in data.iter().enumerate() {
                let index = item
                    .get("index")
                    .and_then(Value::as_u64)
                    .map_or(n, |i| i as usize);
                let v = item.get("embedding").ok_or(ReplyError::NoEmbedding)?;
                indexed.push((index, v));
            }
            indexed.sort_by_key(|(i, _)| *i);
            if indexed.iter().enumerate().any(|(n, (i, _))| n != *i) {
                return Err(ReplyError::Indexes);
            }
            indexed.into_iter().map(|(_, v)| v).collect()
        }
        RemoteApi::Ollama => reply
            .get("embeddings")
            .and_then(Value::as_array)
            .ok_or(ReplyError::NoEmbeddings)?
            .iter()
            .collect(),
    };
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let numbers = row.as_array().ok_or(ReplyError::NotAnArray)?;
        let mut v = Vec::with_capacity(numbers.len());
        for x in numbers {
            let x = x.as_f64().ok_or(ReplyError::NotANumber)? as f32;
            if !x.is_finite() {
                return Err(ReplyError::OutOfRange);
            }
            v.push(x);
        }
        if v.is_empty() {
            return Err(ReplyError::Empty);
        }
        if out.first().is_some_and(|f: &Vec<f32>| f.len() != v.len()) {
            return Err(ReplyError::Lengths);
        }
        out.push(v);
    }
    Ok(out)
}

/// `text` cut to at most `max` bytes at a character boundary.
fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_of_each_api_parse_in_input_order() {
        let openai = json!({"data": [
            {"index": 1, "embedding": [0.0, 1.0]},
            {"index": 0, "embedding": [1.0, 0.0]}
        ]});
        assert_eq!(
            parse_vectors(RemoteApi::OpenAi, &openai).unwrap(),
            vec![vec![1.0, 0.0], vec![0.0, 1.0]]
        );
        let ollama = json!({"embeddings": [[0.5, 0.5], [0.25, 0.75]]});
        assert_eq!(parse_vectors(RemoteApi::Ollama, &ollama).unwrap().len(), 2);
    }

    #[test]
    fn malformed_replies_are_errors() {
        for (api, reply) in [
            (RemoteApi::OpenAi, json!({})),
            (RemoteApi::OpenAi, json!({"data": [{"index": 0}]})),
            (
                RemoteApi::OpenAi,
                json!({"data": [{"index": 3, "embedding": [1.0]}]}),
            ),
            (RemoteApi::Voyage, json!({"data": [{"embedding": ["x"]}]})),
            (
                RemoteApi::Ollama,
                json!({"embeddings": [[1.0], [1.0, 2.0]]}),
            ),
            (RemoteApi::Ollama, json!({"embeddings": [[]]})),
            (RemoteApi::Ollama, json!({"embeddings": [[1e300]]})),
        ] {
            assert!(parse_vectors(api, &reply).is_err(), "{reply}");
        }
        assert_eq!(
            parse_vectors(
                RemoteApi::Ollama,
                &json!({"embeddings": [[1.0], [1.0, 2.0]]})
            ),
            Err(ReplyError::Lengths)
        );
        assert_eq!(
            parse_vectors(RemoteApi::OpenAi, &json!({"embeddings": []})),
            Err(ReplyError::NoData)
        );
    }

    #[test]
    fn keys_and_auto_detection_come_from_the_environment() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            api_key_from_env(
                RemoteApi::OpenAi,
                env(&[("OPENAI_API_KEY", "a"), (EMBED_API_KEY_ENV, "b")])
            ),
            Some("b".into())
        );
        assert_eq!(
            api_key_from_env(RemoteApi::Voyage, env(&[("OPENAI_API_KEY", "a")])),
            None
        );
        assert_eq!(
            api_key_from_env(RemoteApi::Ollama, env(&[("OPENAI_API_KEY", "a")])),
            None
        );
        let voyage = detect_remote(env(&[("OPENAI_API_KEY", "a"), ("VOYAGE_API_KEY", "v")]));
        assert_eq!(voyage.unwrap().canonical(), "voyage:voyage-code-3");
        assert_eq!(
            detect_remote(env(&[("OLLAMA_HOST", "x")])).unwrap().api,
            RemoteApi::Ollama
        );
        assert_eq!(detect_remote(env(&[("OPENAI_API_KEY", " ")])), None);
    }

    #[test]
    fn bad_base_urls_are_refused_and_texts_are_cut_at_characters() {
        let name = crate::embed::parse_remote("openai").unwrap();
        let opts = RemoteOptions {
            base_url: Some("localhost:8080".into()),
            ..RemoteOptions::default()
        };
        assert!(RemoteEmbedder::new(&name, opts).is_err());
        let e = RemoteEmbedder::new(&name, RemoteOptions::default()).unwrap();
        assert_eq!(e.url(), "https://api.openai.com/v1/embeddings");
        assert_eq!(cut("héllo", 2), "h");
    }
}
