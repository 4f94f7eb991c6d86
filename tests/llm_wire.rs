//! The chat client against a local server speaking both wire formats: request shapes,
//! streamed replies, retries with Retry-After, timeouts, malformed and truncated bodies.

#![cfg(feature = "llm")]

#[path = "support/llm_server.rs"]
mod llm_server;

use std::time::Duration;

use engram::llm::{Api, ChatProvider, ChatRequest, HttpProvider, LlmSettings};
use llm_server::{Reply, Server};

fn settings(api: Api, server: &Server) -> LlmSettings {
    let mut s = LlmSettings::new(api, &server.addr, "test-model");
    s.api_key = Some("sk-test-key".into());
    s.timeout = Duration::from_secs(5);
    s.backoff = Duration::from_millis(10);
    s
}

fn ask() -> ChatRequest {
    ChatRequest::simple("You are terse.", "Say hi.", 0.2, 64)
}

#[test]
fn openai_request_shape_and_reply() {
    let server = Server::start(vec![Reply::openai("hi there")]);
    let p = HttpProvider::new(settings(Api::OpenAi, &server)).unwrap();
    let reply = p.chat(&ask()).unwrap();
    assert_eq!(reply.text, "hi there");
    assert_eq!(reply.usage.input_tokens, 11);
    assert_eq!(reply.usage.output_tokens, 7);
    assert!(!reply.usage.estimated);
    assert_eq!(reply.attempts, 1);
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method, "POST");
    assert_eq!(seen[0].path, "/chat/completions");
    assert_eq!(seen[0].header("authorization"), Some("Bearer sk-test-key"));
    let body = seen[0].json();
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["messages"][0]["content"], "You are terse.");
    assert_eq!(body["messages"][1]["role"], "user");
    assert_eq!(body["messages"][1]["content"], "Say hi.");
    assert_eq!(body["max_tokens"], 64);
    assert!(body.get("stream").is_none());
    assert_eq!(reply.bytes_sent as usize, seen[0].body.len());
    // What --dry-run shows is the body sent, the key masked.
    let shown = p.prepare(&ask());
    assert_eq!(shown.body, seen[0].body);
    assert!(!shown.to_string().contains("sk-test-key"));
}
