//! External providers: other services (MCP servers) asked for context beside the
//! built-in providers, all at once, each under its own deadline.
//!
//! [`ask_all`] starts every provider on its own thread and waits for each at most
//! its deadline; a provider that is late or fails is left out with a
//! [`ProviderNote`] saying why, so one dead server never holds up an answer. What
//! they return becomes [`ContextItem`]s attributed `[source: NAME: path:line]` by
//! the gate and sanitised, capped and flagged with the rest when blocks are made.
//! This module never writes what a provider returns anywhere (not into the store,
//! not into a log) and never trusts it: text, path and error messages alike are
//! treated as untrusted input.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::ContextItem;
use crate::gate::{external_attribution, external_note, external_text};

/// One result of an external provider, as it gave it (nothing checked yet).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExternalHit {
    pub text: String,
    pub path: Option<String>,
    pub start_line: Option<u64>,
    pub end_line: Option<u64>,
    /// The provider's own score, if it gave one (higher is better).
    pub score: Option<f64>,
}

/// A service engram may ask for context, beside its own store.
pub trait ExternalProvider: Send + Sync {
    /// Its name, as attributions and notes show it.
    fn name(&self) -> &str;
    /// The longest one request may wait for it.
    fn deadline(&self) -> Duration;
    /// At most `top_k` results for `query`, best first; the error is a message for a
    /// note (it is sanitised before anyone sees it).
    fn search(&self, query: &str, top_k: usize) -> Result<Vec<ExternalHit>, String>;
    /// Whether it can be reached and offers its tool, and how long that took.
    fn health(&self) -> ProviderHealth;
}

/// How one request to an external provider ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderStatus {
    /// It answered in time (its results are in).
    Ok,
    /// It did not answer within its deadline: skipped.
    Timeout,
    /// It failed (could not be started or reached, crashed, returned an error):
    /// skipped.
    Error,
}

/// What happened to one external provider in one request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProviderNote {
    pub provider: String,
    pub status: ProviderStatus,
    /// How many results it contributed.
    pub results: usize,
    pub elapsed_ms: u64,
    /// Why it was skipped (sanitised, one line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl ProviderNote {
    /// The note as one line of a context block: `[note: provider NAME skipped: …]`.
    pub fn line(&self) -> Option<String> {
        let why = self.reason.as_deref().unwrap_or("no reason given");
        match self.status {
            ProviderStatus::Ok => None,
            ProviderStatus::Timeout | ProviderStatus::Error => Some(format!(
                "[note: provider {} skipped: {why}]",
                external_note(&self.provider)
            )),
        }
    }
}

/// An external provider's health, for `engram providers`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProviderHealth {
    pub name: String,
    /// How it is reached: `stdio: PROGRAM …` or the URL.
    pub transport: String,
    pub tool: String,
    /// Whether a connection was made and the protocol handshake passed.
    pub reachable: bool,
    /// Whether it lists the configured tool (`None` when it could not be asked).
    pub tool_present: Option<bool>,
    /// Time to connect and list its tools, in milliseconds.
    pub latency_ms: u64,
    /// What went wrong, if anything (sanitised, one line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What the external providers answered to one query.
#[derive(Debug, Clone, Default)]
pub struct ExternalAnswer {
    /// One ranked list per provider that answered in time, in the providers' order.
    pub lists: Vec<Vec<ContextItem>>,
    /// One note per provider asked, in the providers' order.
    pub notes: Vec<ProviderNote>,
}

/// How long after the latest deadline a late report is still waited for.
const GRACE: Duration = Duration::from_millis(200);

/// Ask every provider for `query` at once; wait for each at most its deadline.
///
/// Each provider runs on a thread of its own; one that has not answered by its
/// deadline is noted as timed out and its thread left to finish (its answer is
/// dropped). Keys are `ext:NAME:N`, attributions built by the gate from the
/// provider's name and its (untrusted) path and lines.
pub fn ask_all(
    providers: &[Arc<dyn ExternalProvider>],
    query: &str,
    top_k: usize,
) -> ExternalAnswer {
    /// What one provider said, and how long it took.
    type Said = (Result<Vec<ExternalHit>, String>, Duration);
    let start = Instant::now();
    let (tx, rx) = mpsc::channel::<(usize, Said)>();
    let mut replies: Vec<Option<Said>> = providers.iter().map(|_| None).collect();
    for (i, p) in providers.iter().enumerate() {
        let p = p.clone();
        let tx = tx.clone();
        let query = query.to_string();
        let spawned = std::thread::Builder::new()
            .name(format!("provider-{}", p.name()))
            .spawn(move || {
                let began = Instant::now();
                let found = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    p.search(&query, top_k)
                }))
                .unwrap_or_else(|_| Err("the provider panicked".into()));
                // The receiver may be gone (deadline passed): nothing to do then.
                let _ = tx.send((i, (found, began.elapsed())));
            });
        if let Err(e) = spawned {
            replies[i] = Some((Err(format!("no thread to ask it on: {e}")), Duration::ZERO));
        }
    }
    drop(tx);
    // A provider that enforces its own deadline (as `McpProvider` does, cleaning up
    // as it gives up) reports just after it: that report is waited for.
    let latest = providers
        .iter()
        .map(|p| p.deadline())
        .max()
        .unwrap_or_default()
        + GRACE;
    while replies.iter().any(Option::is_none) {
        let Some(left) = latest.checked_sub(start.elapsed()) else {
            break;
        };
        match rx.recv_timeout(left) {
            Ok((i, said)) => replies[i] = Some(said),
            Err(_) => break,
        }
    }
    let mut answer = ExternalAnswer::default();
    for (p, reply) in providers.iter().zip(replies) {
        let deadline = p.deadline();
        let (status, reason, elapsed, hits) = match reply {
            Some((_, took)) if took >= deadline => {
                (ProviderStatus::Timeout, Some(late(deadline)), took, vec![])
            }
            Some((Ok(hits), took)) => (ProviderStatus::Ok, None, took, hits),
            Some((Err(e), took)) => (ProviderStatus::Error, Some(external_note(&e)), took, vec![]),
            None => (
                ProviderStatus::Timeout,
                Some(late(deadline)),
                start.elapsed().min(deadline),
                vec![],
            ),
        };
        let items = items(p.name(), hits, top_k);
        answer.notes.push(ProviderNote {
            provider: p.name().to_string(),
            status,
            results: items.len(),
            elapsed_ms: elapsed.as_millis() as u64,
            reason,
        });
        if status == ProviderStatus::Ok {
            answer.lists.push(items);
        }
    }
    answer
}

fn late(deadline: Duration) -> String {
    format!(
        "no answer within its deadline of {} ms",
        deadline.as_millis()
    )
}

/// A provider's hits as context items, at most `top_k`, best first as given.
fn items(provider: &str, hits: Vec<ExternalHit>, top_k: usize) -> Vec<ContextItem> {
    let n = hits.len().min(top_k);
    hits.into_iter()
        .take(top_k)
        .enumerate()
        .map(|(i, h)| ContextItem {
            key: format!("ext:{provider}:{i}"),
            attribution: external_attribution(
                provider,
                h.path.as_deref(),
                h.start_line,
                h.end_line,
            ),
            text: external_text(&h.text),
            // Without a score of its own, the provider's order is the score.
            score: h.score.unwrap_or((n - i) as f64),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fake {
        name: &'static str,
        wait: Duration,
        answer: Result<Vec<ExternalHit>, String>,
    }

    impl ExternalProvider for Fake {
        fn name(&self) -> &str {
            self.name
        }
        fn deadline(&self) -> Duration {
            Duration::from_millis(300)
        }
        fn search(&self, _: &str, _: usize) -> Result<Vec<ExternalHit>, String> {
            std::thread::sleep(self.wait);
            self.answer.clone()
        }
        fn health(&self) -> ProviderHealth {
            unreachable!("not asked in these tests")
        }
    }

    #[test]
    fn late_and_failing_providers_are_noted_and_the_rest_answer_in_time() {
        let hit = ExternalHit {
            text: "fn parse() {}".into(),
            path: Some("src/p.rs".into()),
            start_line: Some(3),
            end_line: Some(9),
            score: None,
        };
        let providers: Vec<Arc<dyn ExternalProvider>> = vec![
            Arc::new(Fake {
                name: "fast",
                wait: Duration::ZERO,
                answer: Ok(vec![hit.clone(), hit.clone(), hit]),
            }),
            Arc::new(Fake {
                name: "slow",
                wait: Duration::from_secs(5),
                answer: Ok(vec![]),
            }),
            Arc::new(Fake {
                name: "broken",
                wait: Duration::ZERO,
                answer: Err("exit status 3\n\u{1b}[2J".into()),
            }),
        ];
        let t = Instant::now();
        let a = ask_all(&providers, "parse", 2);
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        assert_eq!(a.lists.len(), 1);
        assert_eq!(a.lists[0].len(), 2);
        assert_eq!(a.lists[0][0].attribution, "[source: fast: src/p.rs:3-9]");
        assert_eq!(a.lists[0][0].key, "ext:fast:0");
        assert!(a.lists[0][0].score > a.lists[0][1].score);
        let status: Vec<_> = a.notes.iter().map(|n| n.status).collect();
        assert_eq!(
            status,
            [
                ProviderStatus::Ok,
                ProviderStatus::Timeout,
                ProviderStatus::Error
            ]
        );
        assert_eq!(a.notes[2].reason.as_deref(), Some("exit status 3"));
        assert!(a.notes[0].line().is_none());
        assert_eq!(
            a.notes[1].line().unwrap(),
            "[note: provider slow skipped: no answer within its deadline of 300 ms]"
        );
    }
}
