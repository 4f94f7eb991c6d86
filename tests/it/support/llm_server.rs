//! A scripted chat-model server on 127.0.0.1 for the LLM tests: it answers each request
//! with the next scripted reply (any status, headers, body, delay, or a body cut short)
//! and records every request it was sent. [`Server::start_fn`] computes each answer
//! from the request instead (an embeddings server, …).

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// One scripted answer.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// Wait this long before answering (for timeouts).
    pub delay: Duration,
    /// Declare a longer body than is sent, then close (a truncated body).
    pub truncate: bool,
}

impl Reply {
    pub fn json(status: u16, body: impl Into<String>) -> Reply {
        Reply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.into(),
            delay: Duration::ZERO,
            truncate: false,
        }
    }

    pub fn sse(body: impl Into<String>) -> Reply {
        Reply {
            headers: vec![("content-type".into(), "text/event-stream".into())],
            ..Reply::json(200, body)
        }
    }

    pub fn header(mut self, k: &str, v: &str) -> Reply {
        self.headers.push((k.into(), v.into()));
        self
    }

    pub fn delayed(mut self, d: Duration) -> Reply {
        self.delay = d;
        self
    }

    pub fn truncated(mut self) -> Reply {
        self.truncate = true;
        self
    }

    /// An OpenAI chat-completions answer of `text`.
    pub fn openai(text: &str) -> Reply {
        Reply::json(
            200,
            serde_json::json!({
                "id": "c1", "object": "chat.completion", "model": "test-model",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
            })
            .to_string(),
        )
    }

    /// An Anthropic Messages answer of `text`.
    pub fn anthropic(text: &str) -> Reply {
        Reply::json(
            200,
            serde_json::json!({
                "id": "m1", "type": "message", "role": "assistant", "model": "claude-test",
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 13, "output_tokens": 5}
            })
            .to_string(),
        )
    }

    /// An OpenAI streamed answer of `text` in two chunks.
    pub fn openai_stream(text: &str) -> Reply {
        let (a, b) = text.split_at(text.len() / 2);
        let chunk = |t: &str| {
            serde_json::json!({"model": "test-model", "choices": [{"index": 0, "delta": {"content": t}}]})
                .to_string()
        };
        let usage = serde_json::json!({"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4}});
        Reply::sse(format!(
            "data: {}\n\ndata: {}\n\ndata: {usage}\n\ndata: [DONE]\n\n",
            chunk(a),
            chunk(b)
        ))
    }

    /// An Anthropic streamed answer of `text`.
    pub fn anthropic_stream(text: &str) -> Reply {
        let ev = |name: &str, v: serde_json::Value| format!("event: {name}\ndata: {v}\n\n");
        let mut s = ev(
            "message_start",
            serde_json::json!({"type": "message_start", "message": {"model": "claude-test", "usage": {"input_tokens": 8, "output_tokens": 1}}}),
        );
        s += &ev(
            "content_block_start",
            serde_json::json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        );
        for piece in [&text[..text.len() / 2], &text[text.len() / 2..]] {
            s += &ev(
                "content_block_delta",
                serde_json::json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}),
            );
        }
        s += &ev(
            "message_delta",
            serde_json::json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 6}}),
        );
        s += &ev("message_stop", serde_json::json!({"type": "message_stop"}));
        Reply::sse(s)
    }
}

/// A request the server received.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).expect("request body is JSON")
    }
}

/// The server: answers with `script` in order (the last reply repeats).
pub struct Server {
    pub addr: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

/// What answers a request (given every request so far, this one last).
type Handler = Arc<dyn Fn(&Seen) -> Reply + Send + Sync>;

impl Server {
    pub fn start(script: Vec<Reply>) -> Server {
        let script = Mutex::new((script, 0usize));
        Server::start_fn(move |_| {
            let mut s = script.lock().unwrap();
            let i = s.1.min(s.0.len().saturating_sub(1));
            s.1 += 1;
            s.0.get(i)
                .cloned()
                .unwrap_or_else(|| Reply::json(500, "{}"))
        })
    }

    /// A server whose every answer is computed from the request.
    pub fn start_fn(handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let seen2 = seen.clone();
        let handler: Handler = Arc::new(handler);
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let seen = seen2.clone();
                let handler = handler.clone();
                thread::spawn(move || serve(stream, seen, handler));
            }
        });
        Server { addr, seen }
    }

    /// Point an `engram` command at this server as its chat model (`test-model`, the
    /// key `api_key`), with no retries and a short timeout so a failing test fails fast.
    pub fn configure(&self, c: &mut std::process::Command, api_key: &str) {
        c.env("ENGRAM_LLM_MODEL", "test-model")
            .env("ENGRAM_LLM_BASE_URL", &self.addr)
            .env("ENGRAM_LLM_API_KEY", api_key)
            .env("ENGRAM_LLM_MAX_RETRIES", "0")
            .env("ENGRAM_LLM_TIMEOUT_SECS", "5");
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn serve(stream: TcpStream, seen: Arc<Mutex<Vec<Seen>>>, handler: Handler) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or("").to_string();
        let path = parts.next().unwrap_or("").to_string();
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.push((k.trim().to_lowercase(), v.trim().to_string()));
            }
        }
        let len: usize = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; len];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let request = Seen {
            method,
            path,
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        };
        seen.lock().unwrap().push(request.clone());
        let reply = handler(&request);
        thread::sleep(reply.delay);
        let mut out = stream.try_clone().unwrap();
        let declared = if reply.truncate {
            reply.body.len() + 100
        } else {
            reply.body.len()
        };
        let mut head = format!(
            "HTTP/1.1 {} X\r\ncontent-length: {declared}\r\n",
            reply.status
        );
        for (k, v) in &reply.headers {
            head += &format!("{k}: {v}\r\n");
        }
        if reply.truncate {
            head += "connection: close\r\n";
        }
        head += "\r\n";
        if out.write_all(head.as_bytes()).is_err() || out.write_all(reply.body.as_bytes()).is_err()
        {
            return;
        }
        let _ = out.flush();
        if reply.truncate {
            let _ = out.shutdown(std::net::Shutdown::Both);
            return;
        }
    }
}
