//! [`HttpProvider`]: a blocking HTTP chat client over either wire format, with a
//! per-attempt timeout, a limit on calls in flight, retries with exponential backoff on
//! 429, 5xx and timeouts (a `Retry-After` header wins), and the usage and cost of
//! every call.
//!
//! This module owns sending and retrying; it must never log a body or an API key, and
//! never be called on an async runtime's thread (it blocks).

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use super::wire::{self, WireRequest};
use super::{ChatProvider, ChatReply, ChatRequest, LlmError, LlmSettings, Part, Usage};

/// A limit on calls in flight, shared by clones of a provider.
#[derive(Default)]
struct Slots {
    busy: Mutex<usize>,
    freed: Condvar,
}

struct Slot<'a>(&'a Slots);

impl Slots {
    fn take(&self, max: usize) -> Slot<'_> {
        let mut busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
        while *busy >= max {
            busy = self.freed.wait(busy).unwrap_or_else(|p| p.into_inner());
        }
        *busy += 1;
        Slot(self)
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut busy = self.0.busy.lock().unwrap_or_else(|p| p.into_inner());
        *busy = busy.saturating_sub(1);
        self.0.freed.notify_one();
    }
}

/// A chat model reached over HTTP.
///
/// The HTTP client is made per call, on the calling thread: a blocking client owns a
/// runtime of its own, which must not be dropped on an async runtime's thread, and a
/// provider may be held (and dropped) by the async MCP server.
#[derive(Clone)]
pub struct HttpProvider {
    settings: LlmSettings,
    /// The model this provider asks (the chat or the vision model).
    model: String,
    slots: Arc<Slots>,
}

impl HttpProvider {
    /// A provider for the settings' chat model.
    pub fn new(settings: LlmSettings) -> Result<HttpProvider, LlmError> {
        Ok(HttpProvider {
            model: settings.model.clone(),
            settings,
            slots: Arc::default(),
        })
    }

    /// The same provider asking the settings' vision model (sharing the call limit).
    pub fn for_vision(&self) -> HttpProvider {
        HttpProvider {
            model: self.settings.vision_model().to_string(),
            ..self.clone()
        }
    }

    /// The settings in use.
    pub fn settings(&self) -> &LlmSettings {
        &self.settings
    }

    fn transport(&self) -> Transport {
        Transport {
            timeout: self.settings.timeout,
            max_retries: self.settings.max_retries,
            backoff: self.settings.backoff,
            max_wait: self.settings.max_wait,
        }
    }
}

/// How a model endpoint is reached: a JSON POST with a per-attempt timeout and
/// retries with exponential backoff on 429, 5xx and timeouts (a `Retry-After` header
/// wins). Shared by the chat provider and the remote embedders.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Transport {
    /// Longest one HTTP attempt may take.
    pub timeout: Duration,
    /// Retries after a 429, a 5xx or a timeout.
    pub max_retries: u32,
    /// First backoff delay; doubled per retry.
    pub backoff: Duration,
    /// Longest wait a `Retry-After` may ask for before the call gives up instead.
    pub max_wait: Duration,
}

impl Transport {
    /// A blocking client, made on the calling thread (see [`HttpProvider`]).
    pub fn client(&self, url: &str) -> Result<reqwest::blocking::Client, LlmError> {
        reqwest::blocking::Client::builder()
            .connect_timeout(self.timeout.min(Duration::from_secs(10)))
            .timeout(self.timeout)
            .build()
            .map_err(|e| LlmError::Transport {
                url: url.to_string(),
                reason: e.to_string(),
            })
    }

    /// POST `body` to `url` with `headers`, retrying what is transient; the reply's
    /// body on a 2xx and the attempts it took. `what` names the call in retry
    /// warnings (never the body).
    pub fn post(
        &self,
        client: &reqwest::blocking::Client,
        url: &str,
        headers: &[(String, String)],
        body: &[u8],
        what: &str,
    ) -> Result<(String, u32), LlmError> {
        let mut attempts = 0u32;
        let mut delay = self.backoff;
        loop {
            attempts += 1;
            match self.send_once(client, url, headers, body) {
                Ok(body) => return Ok((body, attempts)),
                Err(f) => {
                    let wait = f.retry_after.unwrap_or(delay);
                    if !f.error.is_transient()
                        || attempts > self.max_retries
                        || wait > self.max_wait
                    {
                        return Err(f.error);
                    }
                    tracing::warn!(
                        attempt = attempts,
                        wait_ms = wait.as_millis() as u64,
                        "{what} failed ({}); retrying",
                        f.error
                    );
                    std::thread::sleep(wait);
                    delay = (delay * 2).min(self.max_wait);
                }
            }
        }
    }

    fn send_once(
        &self,
        client: &reqwest::blocking::Client,
        url: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<String, Failure> {
        let mut rb = client.post(url);
        for (k, v) in headers {
            rb = rb.header(k.as_str(), v.as_str());
        }
        let fail = |error| Failure {
            error,
            retry_after: None,
        };
        let sent = rb
            .body(body.to_vec())
            .send()
            .map_err(|e| fail(self.error(&e, url)))?;
        let status = sent.status().as_u16();
        let retry_after = sent
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| retry_after(v, now_unix()));
        let body = sent.text().map_err(|e| fail(self.error(&e, url)))?;
        if (200..300).contains(&status) {
            return Ok(body);
        }
        Err(Failure {
            error: LlmError::Status {
                status,
                excerpt: body.chars().take(200).collect(),
            },
            retry_after,
        })
    }

    fn error(&self, e: &reqwest::Error, url: &str) -> LlmError {
        let url = url.to_string();
        if e.is_timeout() {
            LlmError::Timeout {
                url,
                secs: self.timeout.as_secs(),
            }
        } else {
            // The chain's innermost reason names the cause (refused, reset, …).
            let mut reason = e.to_string();
            let mut src = std::error::Error::source(e);
            while let Some(s) = src {
                reason = s.to_string();
                src = s.source();
            }
            LlmError::Transport { url, reason }
        }
    }
}

/// The `Retry-After` seconds of a failed attempt, carried beside its error.
struct Failure {
    error: LlmError,
    retry_after: Option<Duration>,
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// How long a `Retry-After` value asks to wait: delay-seconds, or an HTTP date
/// (`Sun, 06 Nov 1994 08:49:37 GMT`) measured from `now` (Unix seconds).
pub(crate) fn retry_after(value: &str, now: u64) -> Option<Duration> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    // IMF-fixdate: day-name, DD Mon YYYY HH:MM:SS GMT
    let rest = v.split_once(", ")?.1;
    let parts: Vec<&str> = rest.split_whitespace().collect();
    let [day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let m = MONTHS.iter().position(|x| x == month)? as i64 + 1;
    let d: i64 = day.parse().ok()?;
    let y: i64 = year.parse().ok()?;
    let hms: Vec<i64> = time
        .split(':')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let &[h, mi, se] = hms.as_slice() else {
        return None;
    };
    // A server's header: out-of-range fields are refused, never overflowed.
    let sane = (1970..=9999).contains(&y)
        && (1..=31).contains(&d)
        && (0..24).contains(&h)
        && (0..60).contains(&mi)
        && (0..=60).contains(&se);
    if !sane {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let (y2, m2) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let doy = (153 * m2 + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let at = days * 86_400 + h * 3600 + mi * 60 + se;
    Some(Duration::from_secs(
        u64::try_from(at).ok()?.saturating_sub(now),
    ))
}

fn estimate(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

impl ChatProvider for HttpProvider {
    fn model(&self) -> &str {
        &self.model
    }

    fn prepare(&self, request: &ChatRequest) -> WireRequest {
        wire::build(&self.settings, &self.model, request, false)
    }

    fn chat(&self, request: &ChatRequest) -> Result<ChatReply, LlmError> {
        let wire = wire::build(&self.settings, &self.model, request, true);
        let _slot = self.slots.take(self.settings.max_concurrency);
        let transport = self.transport();
        let client = transport.client(&wire.url)?;
        let (body, attempts) = transport.post(
            &client,
            &wire.url,
            &wire.headers,
            wire.body.as_bytes(),
            "LLM call",
        )?;
        let (text, model, usage) =
            wire::parse_reply(self.settings.api, &body, self.settings.stream)?;
        let usage = usage.unwrap_or_else(|| {
            let sent: usize = request
                .messages
                .iter()
                .flat_map(|m| &m.parts)
                .map(|p| match p {
                    Part::Text(t) => t.len(),
                    Part::Image { base64, .. } => base64.len(),
                })
                .sum::<usize>()
                + request.system.as_ref().map_or(0, String::len);
            Usage {
                input_tokens: estimate(sent),
                output_tokens: estimate(text.len()),
                estimated: true,
            }
        });
        Ok(ChatReply {
            cost_usd: self.settings.cost(&usage),
            text,
            model: model.unwrap_or_else(|| self.model.clone()),
            usage,
            bytes_sent: wire.body.len() as u64,
            attempts,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        assert_eq!(retry_after(" 7 ", 0), Some(Duration::from_secs(7)));
        // 784111777 is Sun, 06 Nov 1994 08:49:37 GMT.
        let date = "Sun, 06 Nov 1994 08:49:37 GMT";
        assert_eq!(
            retry_after(date, 784_111_777 - 30),
            Some(Duration::from_secs(30))
        );
        assert_eq!(retry_after(date, 784_111_777 + 30), Some(Duration::ZERO));
        assert_eq!(retry_after("soon", 0), None);
        assert_eq!(retry_after("Sun, 06 Foo 1994 08:49:37 GMT", 0), None);
        assert_eq!(
            retry_after("Sun, 06 Nov 99999999999999 08:49:37 GMT", 0),
            None
        );
        assert_eq!(
            retry_after("Sun, 06 Nov 1994 -9223372036854775808:49:37 GMT", 0),
            None
        );
    }
}
