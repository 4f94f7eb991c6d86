//! The chat client against a local server speaking both wire formats: request shapes,
//! streamed replies, retries with Retry-After, timeouts, malformed and truncated bodies.

#![cfg(feature = "llm")]

use std::time::Duration;

use engram::llm::{Api, ChatProvider, ChatRequest, HttpProvider, LlmSettings};
use llm_server::{Reply, Server};

use crate::support::llm_server;

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

#[test]
fn anthropic_request_shape_and_reply() {
    let server = Server::start(vec![Reply::anthropic("hello")]);
    let p = HttpProvider::new(settings(Api::Anthropic, &server)).unwrap();
    let reply = p.chat(&ask()).unwrap();
    assert_eq!(reply.text, "hello");
    assert_eq!(reply.model, "claude-test");
    assert_eq!(
        (reply.usage.input_tokens, reply.usage.output_tokens),
        (13, 5)
    );
    let seen = &server.seen()[0];
    assert_eq!(seen.path, "/v1/messages");
    assert_eq!(seen.header("x-api-key"), Some("sk-test-key"));
    assert_eq!(seen.header("anthropic-version"), Some("2023-06-01"));
    assert!(seen.header("authorization").is_none());
    let body = seen.json();
    assert_eq!(body["system"], "You are terse.");
    assert_eq!(body["messages"][0]["role"], "user");
    assert_eq!(body["messages"][0]["content"][0]["type"], "text");
    assert_eq!(body["messages"][0]["content"][0]["text"], "Say hi.");
    assert_eq!(body["max_tokens"], 64);
}

#[test]
fn images_take_each_formats_shape() {
    let image = engram::llm::Part::Image {
        media_type: "image/png".into(),
        base64: "iVBORw0KGgo=".into(),
    };
    let mut req = ask();
    req.messages[0].parts.push(image);
    for (api, reply) in [
        (Api::OpenAi, Reply::openai("ok")),
        (Api::Anthropic, Reply::anthropic("ok")),
    ] {
        let server = Server::start(vec![reply]);
        let p = HttpProvider::new(settings(api, &server)).unwrap();
        p.chat(&req).unwrap();
        let body = server.seen()[0].json();
        let last = |v: &serde_json::Value| v.as_array().unwrap().last().unwrap().clone();
        match api {
            Api::OpenAi => {
                let part = last(&body["messages"][1]["content"]);
                assert_eq!(part["type"], "image_url");
                assert_eq!(
                    part["image_url"]["url"],
                    "data:image/png;base64,iVBORw0KGgo="
                );
            }
            Api::Anthropic => {
                let part = last(&body["messages"][0]["content"]);
                assert_eq!(part["type"], "image");
                assert_eq!(part["source"]["media_type"], "image/png");
                assert_eq!(part["source"]["data"], "iVBORw0KGgo=");
            }
        }
    }
}

#[test]
fn streamed_replies_in_both_formats() {
    for (api, reply) in [
        (Api::OpenAi, Reply::openai_stream("streamed text")),
        (Api::Anthropic, Reply::anthropic_stream("streamed text")),
    ] {
        let server = Server::start(vec![reply]);
        let mut s = settings(api, &server);
        s.stream = true;
        let p = HttpProvider::new(s).unwrap();
        let reply = p.chat(&ask()).unwrap();
        assert_eq!(reply.text, "streamed text", "{api:?}");
        assert!(reply.usage.output_tokens > 0 && !reply.usage.estimated);
        assert_eq!(server.seen()[0].json()["stream"], true);
    }
}

#[test]
fn a_429_is_retried_after_the_servers_retry_after() {
    let server = Server::start(vec![
        Reply::json(429, r#"{"error":{"message":"slow down"}}"#).header("retry-after", "1"),
        Reply::openai("finally"),
    ]);
    let mut s = settings(Api::OpenAi, &server);
    s.backoff = Duration::from_millis(1);
    let p = HttpProvider::new(s).unwrap();
    let t = std::time::Instant::now();
    let reply = p.chat(&ask()).unwrap();
    assert!(
        t.elapsed() >= Duration::from_millis(950),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(reply.text, "finally");
    assert_eq!(reply.attempts, 2);
    assert_eq!(server.seen().len(), 2);
}

#[test]
fn server_errors_are_retried_then_reported() {
    let server = Server::start(vec![Reply::json(500, "oops"), Reply::openai("ok")]);
    let p = HttpProvider::new(settings(Api::OpenAi, &server)).unwrap();
    assert_eq!(p.chat(&ask()).unwrap().attempts, 2);

    let server = Server::start(vec![Reply::json(503, "down")]);
    let mut s = settings(Api::OpenAi, &server);
    s.max_retries = 2;
    let p = HttpProvider::new(s).unwrap();
    let e = p.chat(&ask()).unwrap_err();
    assert!(e.to_string().contains("503"), "{e}");
    assert_eq!(server.seen().len(), 3);

    // A client error is not retried.
    let server = Server::start(vec![Reply::json(401, r#"{"error":"bad key"}"#)]);
    let p = HttpProvider::new(settings(Api::OpenAi, &server)).unwrap();
    assert!(p.chat(&ask()).is_err());
    assert_eq!(server.seen().len(), 1);

    // A Retry-After longer than the longest wait gives up at once.
    let server = Server::start(vec![Reply::json(429, "{}").header("retry-after", "3600")]);
    let p = HttpProvider::new(settings(Api::OpenAi, &server)).unwrap();
    assert!(p.chat(&ask()).is_err());
    assert_eq!(server.seen().len(), 1);
}

#[test]
fn a_slow_server_times_out() {
    let server = Server::start(vec![Reply::openai("late").delayed(Duration::from_secs(3))]);
    let mut s = settings(Api::OpenAi, &server);
    s.timeout = Duration::from_secs(1);
    s.max_retries = 1;
    let p = HttpProvider::new(s).unwrap();
    let e = p.chat(&ask()).unwrap_err();
    assert!(matches!(e, engram::llm::LlmError::Timeout { .. }), "{e}");
    assert_eq!(server.seen().len(), 2, "a timeout is retried");
}

#[test]
fn malformed_and_truncated_bodies_are_errors_not_panics() {
    let cases = [
        (Api::OpenAi, Reply::json(200, "{not json")),
        (Api::OpenAi, Reply::json(200, r#"{"choices":[]}"#)),
        (
            Api::OpenAi,
            Reply::json(200, r#"{"error":{"message":"boom"}}"#),
        ),
        (Api::OpenAi, Reply::openai("cut").truncated()),
        (Api::Anthropic, Reply::json(200, r#"{"content":"no"}"#)),
        (Api::Anthropic, Reply::anthropic("cut").truncated()),
    ];
    for (api, reply) in cases {
        let server = Server::start(vec![reply.clone()]);
        let mut s = settings(api, &server);
        s.max_retries = 0;
        let p = HttpProvider::new(s).unwrap();
        assert!(p.chat(&ask()).is_err(), "{api:?} {reply:?}");
    }
    // A stream cut before its end marker.
    for (api, reply) in [
        (Api::OpenAi, Reply::openai_stream("abcdef")),
        (Api::Anthropic, Reply::anthropic_stream("abcdef")),
    ] {
        let cut = reply.body[..reply.body.len() - 40].to_string();
        let server = Server::start(vec![Reply::sse(cut)]);
        let mut s = settings(api, &server);
        s.stream = true;
        let p = HttpProvider::new(s).unwrap();
        let e = p.chat(&ask()).unwrap_err();
        assert!(e.to_string().contains("truncated"), "{e}");
    }
}

#[test]
fn a_missing_server_is_a_transport_error() {
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let p = HttpProvider::new(LlmSettings::new(Api::OpenAi, &addr, "m")).unwrap();
    let e = p.chat(&ask()).unwrap_err();
    assert!(matches!(e, engram::llm::LlmError::Transport { .. }), "{e}");
}

#[test]
fn the_concurrency_limit_holds() {
    let server = Server::start(vec![Reply::openai("x").delayed(Duration::from_millis(300))]);
    let mut s = settings(Api::OpenAi, &server);
    s.max_concurrency = 1;
    let p = HttpProvider::new(s).unwrap();
    let t = std::time::Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..3 {
            let p = p.clone();
            scope.spawn(move || p.chat(&ask()).unwrap());
        }
    });
    assert!(
        t.elapsed() >= Duration::from_millis(850),
        "{:?}",
        t.elapsed()
    );
}
