//! The two wire formats: OpenAI-compatible chat completions and Anthropic Messages,
//! each as a request built from a [`ChatRequest`] and a reply (whole or streamed as
//! server-sent events) read into a [`ChatReply`]'s text and usage.
//!
//! This module owns the JSON shapes only: it sends nothing, never panics on what a
//! server returns, and never puts a real API key into a [`WireRequest`] it shows.

use serde::Serialize;
use serde_json::{json, Value};

use super::{Api, ChatRequest, LlmError, LlmSettings, Part, Role, Usage};

/// An HTTP request as it would be sent: what `--dry-run` prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WireRequest {
    /// Always `POST`.
    pub method: &'static str,
    /// The endpoint.
    pub url: String,
    /// Headers, the API key masked (`***`).
    pub headers: Vec<(String, String)>,
    /// The exact body.
    pub body: String,
}

impl std::fmt::Display for WireRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{} {}", self.method, self.url)?;
        for (k, v) in &self.headers {
            writeln!(f, "{k}: {v}")?;
        }
        writeln!(f)?;
        writeln!(f, "{}", self.body)
    }
}

/// The endpoint of `api` under `base`.
pub(crate) fn url(api: Api, base: &str) -> String {
    let base = base.trim_end_matches('/');
    match api {
        Api::OpenAi => format!("{base}/chat/completions"),
        Api::Anthropic if base.ends_with("/v1") => format!("{base}/messages"),
        Api::Anthropic => format!("{base}/v1/messages"),
    }
}

/// The request for `req` to `model`; the key is included only when `reveal_key`.
pub(crate) fn build(
    s: &LlmSettings,
    model: &str,
    req: &ChatRequest,
    reveal_key: bool,
) -> WireRequest {
    let key = |k: &str| {
        if reveal_key {
            k.to_string()
        } else {
            "***".to_string()
        }
    };
    let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
    let body = match s.api {
        Api::OpenAi => {
            if let Some(k) = &s.api_key {
                headers.push(("authorization".into(), format!("Bearer {}", key(k))));
            }
            openai_body(model, req, s.stream)
        }
        Api::Anthropic => {
            if let Some(k) = &s.api_key {
                headers.push(("x-api-key".into(), key(k)));
            }
            headers.push(("anthropic-version".into(), "2023-06-01".into()));
            anthropic_body(model, req, s.stream)
        }
    };
    WireRequest {
        method: "POST",
        url: url(s.api, &s.base_url),
        headers,
        body: body.to_string(),
    }
}

fn role(r: Role) -> &'static str {
    match r {
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

fn openai_body(model: &str, req: &ChatRequest, stream: bool) -> Value {
    let mut messages = Vec::new();
    if let Some(sys) = &req.system {
        messages.push(json!({"role": "system", "content": sys}));
    }
    for m in &req.messages {
        let content = match m.parts.as_slice() {
            [Part::Text(t)] => json!(t),
            parts => Value::Array(
                parts
                    .iter()
                    .map(|p| match p {
                        Part::Text(t) => json!({"type": "text", "text": t}),
                        Part::Image { media_type, base64 } => json!({
                            "type": "image_url",
                            "image_url": {"url": format!("data:{media_type};base64,{base64}")}
                        }),
                    })
                    .collect(),
            ),
        };
        messages.push(json!({"role": role(m.role), "content": content}));
    }
    let mut body = json!({
        "model": model,
        "messages": messages,
        "temperature": req.temperature,
        "max_tokens": req.max_tokens,
    });
    if stream {
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

fn anthropic_body(model: &str, req: &ChatRequest, stream: bool) -> Value {
    let messages: Vec<Value> = req
        .messages
        .iter()
        .map(|m| {
            let content: Vec<Value> = m
                .parts
                .iter()
                .map(|p| match p {
                    Part::Text(t) => json!({"type": "text", "text": t}),
                    Part::Image { media_type, base64 } => json!({
                        "type": "image",
                        "source": {"type": "base64", "media_type": media_type, "data": base64}
                    }),
                })
                .collect();
            json!({"role": role(m.role), "content": content})
        })
        .collect();
    let mut body = json!({
        "model": model,
        "max_tokens": req.max_tokens,
        "temperature": req.temperature,
        "messages": messages,
    });
    if let Some(sys) = &req.system {
        body["system"] = json!(sys);
    }
    if stream {
        body["stream"] = json!(true);
    }
    body
}

/// The text, model and usage of a reply body (`streamed`: server-sent events).
pub fn parse_reply(
    api: Api,
    body: &str,
    streamed: bool,
) -> Result<(String, Option<String>, Option<Usage>), LlmError> {
    match (api, streamed) {
        (Api::OpenAi, false) => parse_openai(body),
        (Api::Anthropic, false) => parse_anthropic(body),
        (Api::OpenAi, true) => parse_openai_stream(body),
        (Api::Anthropic, true) => parse_anthropic_stream(body),
    }
}

fn malformed(what: impl Into<String>) -> LlmError {
    LlmError::Malformed(what.into())
}

fn json_of(text: &str) -> Result<Value, LlmError> {
    serde_json::from_str(text).map_err(|e| malformed(format!("not JSON ({e})")))
}

fn error_in(v: &Value) -> Option<String> {
    let e = v.get("error")?;
    Some(
        e.get("message")
            .and_then(Value::as_str)
            .map(String::from)
            .unwrap_or_else(|| e.to_string()),
    )
}

fn count(v: Option<&Value>) -> u64 {
    v.and_then(Value::as_u64).unwrap_or(0)
}

fn model_of(v: &Value) -> Option<String> {
    v.get("model").and_then(Value::as_str).map(String::from)
}

fn parse_openai(body: &str) -> Result<(String, Option<String>, Option<Usage>), LlmError> {
    let v = json_of(body)?;
    if let Some(e) = error_in(&v) {
        return Err(malformed(format!("the provider reported an error: {e}")));
    }
    let text = v
        .pointer("/choices/0/message/content")
        .and_then(Value::as_str)
        .ok_or_else(|| malformed("no choices[0].message.content"))?;
    let usage = v.get("usage").filter(|u| u.is_object()).map(|u| Usage {
        input_tokens: count(u.get("prompt_tokens")),
        output_tokens: count(u.get("completion_tokens")),
        estimated: false,
    });
    Ok((text.to_string(), model_of(&v), usage))
}

fn parse_anthropic(body: &str) -> Result<(String, Option<String>, Option<Usage>), LlmError> {
    let v = json_of(body)?;
    if let Some(e) = error_in(&v) {
        return Err(malformed(format!("the provider reported an error: {e}")));
    }
    let blocks = v
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed("no content array"))?;
    let text: String = blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    let usage = v.get("usage").filter(|u| u.is_object()).map(|u| Usage {
        input_tokens: count(u.get("input_tokens")),
        output_tokens: count(u.get("output_tokens")),
        estimated: false,
    });
    Ok((text, model_of(&v), usage))
}

/// The `data:` payloads of a server-sent event stream, in order.
fn sse_data(body: &str) -> Vec<&str> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .collect()
}

/// One event's JSON; the stream's last event cut short reads as truncation.
fn event_json(data: &str, last: bool) -> Result<Value, LlmError> {
    serde_json::from_str(data).map_err(|e| {
        if last {
            malformed(format!(
                "the stream's last event is cut short (truncated): {e}"
            ))
        } else {
            malformed(format!("a stream event is not JSON ({e})"))
        }
    })
}

fn parse_openai_stream(body: &str) -> Result<(String, Option<String>, Option<Usage>), LlmError> {
    let mut text = String::new();
    let mut model = None;
    let mut usage = None;
    let mut done = false;
    let events = sse_data(body);
    for (i, data) in events.iter().enumerate() {
        if *data == "[DONE]" {
            done = true;
            break;
        }
        let v = event_json(data, i + 1 == events.len())?;
        if let Some(e) = error_in(&v) {
            return Err(malformed(format!("the stream reported an error: {e}")));
        }
        if model.is_none() {
            model = model_of(&v);
        }
        if let Some(t) = v
            .pointer("/choices/0/delta/content")
            .and_then(Value::as_str)
        {
            text.push_str(t);
        }
        if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
            usage = Some(Usage {
                input_tokens: count(u.get("prompt_tokens")),
                output_tokens: count(u.get("completion_tokens")),
                estimated: false,
            });
        }
    }
    if !done {
        return Err(malformed("the stream ended before [DONE] (truncated)"));
    }
    Ok((text, model, usage))
}

fn parse_anthropic_stream(body: &str) -> Result<(String, Option<String>, Option<Usage>), LlmError> {
    let mut text = String::new();
    let mut model = None;
    let mut usage: Option<Usage> = None;
    let mut done = false;
    let events = sse_data(body);
    for (i, data) in events.iter().enumerate() {
        let v = event_json(data, i + 1 == events.len())?;
        match v.get("type").and_then(Value::as_str).unwrap_or("") {
            "error" => {
                let e = error_in(&v).unwrap_or_else(|| "unknown".into());
                return Err(malformed(format!("the stream reported an error: {e}")));
            }
            "message_start" => {
                let m = v.get("message");
                model = m.and_then(model_of);
                if let Some(u) = m.and_then(|m| m.get("usage")) {
                    let u0 = usage.get_or_insert_with(Usage::default);
                    u0.input_tokens = count(u.get("input_tokens"));
                    u0.output_tokens = count(u.get("output_tokens"));
                }
            }
            "content_block_delta" => {
                if let Some(t) = v.pointer("/delta/text").and_then(Value::as_str) {
                    text.push_str(t);
                }
            }
            "message_delta" => {
                if let Some(u) = v.get("usage") {
                    let u0 = usage.get_or_insert_with(Usage::default);
                    u0.output_tokens = count(u.get("output_tokens")).max(u0.output_tokens);
                }
            }
            "message_stop" => {
                done = true;
                break;
            }
            _ => {}
        }
    }
    if !done {
        return Err(malformed(
            "the stream ended before message_stop (truncated)",
        ));
    }
    Ok((text, model, usage))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_formats_read_whole_and_streamed_replies_and_refuse_truncation() {
        let (t, m, u) = parse_reply(
            Api::OpenAi,
            r#"{"model":"x","choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#,
            false,
        )
        .unwrap();
        assert_eq!((t.as_str(), m.as_deref()), ("hi", Some("x")));
        assert_eq!(u.unwrap().input_tokens, 3);
        let sse = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\ndata: [DONE]\n\n";
        assert_eq!(parse_reply(Api::OpenAi, sse, true).unwrap().0, "ab");
        assert!(parse_reply(Api::OpenAi, &sse[..60], true).is_err());
        let a = r#"{"model":"c","content":[{"type":"text","text":"yo"}],"usage":{"input_tokens":5,"output_tokens":2}}"#;
        assert_eq!(parse_reply(Api::Anthropic, a, false).unwrap().0, "yo");
        let asse = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"c\",\"usage\":{\"input_tokens\":4}}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"q\"}}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":7}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
        let (t, _, u) = parse_reply(Api::Anthropic, asse, true).unwrap();
        assert_eq!(t, "q");
        assert_eq!(u.unwrap().output_tokens, 7);
        assert!(parse_reply(Api::Anthropic, &asse[..asse.len() - 60], true).is_err());
        assert!(parse_reply(Api::OpenAi, "{\"choices\":", false).is_err());
    }
}
