//! Every tool call's way in and out: secrets redacted from the arguments before the
//! tool runs (so neither the store nor the audit trail ever holds them), written text
//! checked for injection phrasing, error messages made safe to show, and one audit
//! event per call — also for calls refused before they ran. A write's event is
//! committed in the same batch (on the team backend, transaction) as the write; read
//! events are group-committed (gate/audit.rs says what a crash can lose).
//!
//! It never decides what a tool does ([`super::handlers`]) or what its answer looks
//! like ([`super::shape`]).

use serde_json::{json, Map, Value};

use super::args::arg_str;
use super::handlers::{Connection, Engine, ToolResult};
use super::shape;
use crate::gate::{redact_args, sanitize, AuditEvent};
use crate::memory::{attach_event_to_next_write, take_unattached_event};

/// Tools that write what their arguments say (their text is checked for injections).
const WRITES: &[&str] = &[
    "memory_write",
    "memory_write_structured",
    "set_note",
    "coding_start_session",
    "coding_track_file_change",
    "coding_record_error",
    "coding_record_decision",
    "memory_update",
];

/// Tools that change the store some other way (indexing, pattern sets, ending a
/// session): their event is committed, durably, before the call returns.
const OTHER_WRITES: &[&str] = &[
    "coding_end_session",
    "jit_index_file",
    "jit_index_directory",
    "register_file",
    "pattern_load",
    "pattern_delete",
    "memory_delete",
    "delete_note",
];

/// Arguments of `pattern_load` kept as given: a pattern set's regexes may look like
/// secrets.
const NOT_REDACTED: &[&str] = &["toml", "definition", "patterns"];

impl Engine {
    /// Run tool `name`, auditing it.
    pub fn call(&self, name: &str, args: &Map<String, Value>) -> ToolResult {
        self.call_as(name, args, None)
    }

    /// Run tool `name` for the caller who said they were `user_id`, auditing it, as
    /// a call of its own (no connection remembers a session it started).
    pub fn call_as(
        &self,
        name: &str,
        args: &Map<String, Value>,
        user_id: Option<&str>,
    ) -> ToolResult {
        self.call_on(&Connection::default(), name, args, user_id)
    }

    /// [`Engine::call_as`] on client connection `conn`: coding records made without
    /// a session id join the session this connection started, while it is open.
    pub fn call_on(
        &self,
        conn: &Connection,
        name: &str,
        args: &Map<String, Value>,
        user_id: Option<&str>,
    ) -> ToolResult {
        // An event left attached by a call that panicked must not ride on this one.
        take_unattached_event();
        let mut args = args.clone();
        let keep: &[&str] = match name {
            "pattern_load" => NOT_REDACTED,
            // Image data, never stored (the handler keeps its hash and size, and
            // redacts a path it keeps).
            "coding_record_error" => &["screenshot"],
            _ => &[],
        };
        let (redactions, mut result) = match redact_args(&mut args, keep) {
            Ok(n) => (n, Ok(Value::Null)),
            Err(e) => (
                0,
                Err(format!("secret scanner unavailable, nothing done: {e}")),
            ),
        };
        let is_write = WRITES.contains(&name) || OTHER_WRITES.contains(&name);
        let written_flags = if WRITES.contains(&name) {
            written_flags(&args)
        } else {
            Vec::new()
        };
        let query = audit_query(&args);
        let mut attached = false;
        if result.is_ok() && is_write && self.audit.rides_with_writes() {
            // The event as it will read if the write succeeds; it rides in the
            // write's own batch.
            let planned = AuditEvent {
                op: name.to_string(),
                repo: self.gate.repo.clone(),
                session: arg_str(&args, "session").map(String::from),
                user_id: user_id.map(String::from),
                query: query.clone(),
                results: 1,
                redactions,
                flagged: written_flags.iter().map(|f| f.to_string()).collect(),
                ..AuditEvent::default()
            };
            match planned.to_meta() {
                Ok(meta) => {
                    attach_event_to_next_write(meta);
                    attached = true;
                }
                Err(e) => result = Err(format!("audit event not encodable, nothing done: {e}")),
            }
        }
        if result.is_ok() {
            result = self.dispatch(name, &args, conn).map(|mut v| {
                if !written_flags.is_empty() && v.is_object() {
                    v["flags"] = json!(written_flags);
                }
                if redactions > 0 && v.is_object() {
                    v["redacted_secrets"] = json!(redactions);
                }
                shape::fit_list_reply(name, &args, &mut v, self.gate.caps.total_bytes);
                v
            });
        }
        // An error may echo the caller's input: it is sanitised and kept short too.
        let result = result.map_err(|e| shape::error_text(&e));
        let attached_unused = take_unattached_event().is_some();
        if attached && !attached_unused && result.is_ok() {
            return result; // the event was committed with the write
        }
        let (results, flagged) = match &result {
            Ok(v) => (shape::count_results(v), shape::collect_flags(v)),
            Err(_) => (0, written_flags.iter().map(|f| f.to_string()).collect()),
        };
        let index_redactions = result
            .as_ref()
            .ok()
            .and_then(|v| v.get("redactions"))
            .and_then(Value::as_object)
            .map(|m| m.values().filter_map(Value::as_u64).sum::<u64>())
            .unwrap_or(0);
        let audit = AuditEvent {
            op: name.to_string(),
            repo: self.gate.repo.clone(),
            session: arg_str(&args, "session").map(String::from),
            user_id: user_id.map(String::from),
            query,
            results,
            redactions: redactions + index_redactions,
            flagged,
            error: result.as_ref().err().cloned(),
            ..AuditEvent::default()
        };
        if is_write {
            // A change made some other way, or a write that failed: its event is
            // durable before the call returns, and a write whose event cannot be
            // written is reported as failed.
            if let Err(e) = self.audit.append(&audit) {
                tracing::error!("audit event not written: {e}");
                if result.is_ok() {
                    return Err(shape::error_text(&format!(
                        "the change was made but its audit event could not be written: {e}"
                    )));
                }
            }
        } else if let Err(e) = self.audit.push(&audit) {
            tracing::error!("audit event not queued: {e}");
        }
        result
    }

    /// Audit a call refused before it ran (unknown tool, arguments not matching the
    /// schema).
    pub fn audit_refused(&self, name: &str, message: &str) {
        let audit = AuditEvent {
            op: shape::error_text(name).chars().take(64).collect(),
            repo: self.gate.repo.clone(),
            error: Some(message.to_string()),
            ..AuditEvent::default()
        };
        if let Err(e) = self.audit.push(&audit) {
            tracing::error!("audit event not queued: {e}");
        }
    }
}

/// What the audit event names: the query, or what was written.
fn audit_query(args: &Map<String, Value>) -> Option<String> {
    [
        "query",
        "prompt",
        "text",
        "name",
        "id",
        "path",
        "decision",
        "message",
        "description",
    ]
    .iter()
    .find_map(|k| arg_str(args, k))
    .map(String::from)
}

/// Injection phrasings in the text a write tool was given.
fn written_flags(args: &Map<String, Value>) -> Vec<&'static str> {
    let mut flags: Vec<&'static str> = Vec::new();
    for v in args.values() {
        let texts: Vec<&str> = match v {
            Value::String(t) => vec![t.as_str()],
            Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        for t in texts {
            flags.extend(sanitize(t).flags);
        }
    }
    flags.sort();
    flags.dedup();
    flags
}
