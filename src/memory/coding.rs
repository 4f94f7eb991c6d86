//! Coding memory: errors (with their solutions and how often they recur) and design
//! decisions, as typed entries.
//!
//! An error is an entry of kind `error`; a recurring one — same type, same message
//! once numbers, addresses and quoted values are normalised away, same file — is
//! counted on the existing entry (`frequency`) instead of stored again. A decision is
//! an entry of kind `decision` carrying its rationale, alternatives and impact. Both
//! are found through the same keyword search as every memory.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{Memories, Memory, MemoryError, MemoryFilter, RecallHit, Result};
use crate::key::hash64;

/// An error as an agent reports it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorReport {
    pub error_type: String,
    pub message: String,
    #[serde(default)]
    pub stack_trace: Option<String>,
    #[serde(default)]
    pub file: Option<String>,
    #[serde(default)]
    pub line: Option<u64>,
    #[serde(default)]
    pub solution: Option<String>,
    #[serde(default)]
    pub resolved: bool,
    #[serde(default)]
    pub screenshot: Option<String>,
    #[serde(default)]
    pub session: Option<String>,
    /// The file change (entry id) that fixed it.
    #[serde(default)]
    pub resolved_by: Option<String>,
    /// More metadata for the entry, as given (e.g. what a model read from the
    /// screenshot); never taken from a caller's arguments.
    #[serde(skip)]
    pub extra_metadata: Map<String, Value>,
}

/// A design decision.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub decision: String,
    #[serde(default)]
    pub rationale: String,
    #[serde(default)]
    pub alternatives: Vec<String>,
    #[serde(default)]
    pub impact: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub related_files: Vec<String>,
    /// 0 to 1.
    #[serde(default)]
    pub confidence: Option<f64>,
    #[serde(default)]
    pub reviewed: bool,
    #[serde(default)]
    pub session: Option<String>,
}

/// The part of an error message that identifies it across occurrences: lowercase,
/// numbers, hex addresses and quoted values replaced by placeholders, spaces folded.
pub fn normalise_message(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut chars = message.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '0' if chars.peek() == Some(&'x') => {
                chars.next();
                while chars.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
                    chars.next();
                }
                out.push_str("<hex>");
            }
            '0'..='9' => {
                while chars.peek().is_some_and(|c| c.is_ascii_digit()) {
                    chars.next();
                }
                out.push_str("<n>");
            }
            '"' | '\'' | '`' => {
                for d in chars.by_ref() {
                    if d == c {
                        break;
                    }
                }
                out.push_str("<str>");
            }
            c if c.is_whitespace() => {
                if !out.ends_with(' ') {
                    out.push(' ');
                }
            }
            c => out.extend(c.to_lowercase()),
        }
    }
    out.trim().to_string()
}

/// The signature recurring occurrences of an error share.
pub fn error_signature(e: &ErrorReport) -> String {
    let ident = format!(
        "{}\u{0}{}\u{0}{}",
        e.error_type.trim().to_lowercase(),
        normalise_message(&e.message),
        e.file.as_deref().unwrap_or("")
    );
    format!("{:016x}", hash64(&ident))
}

impl Memories {
    /// Record an error. A recurrence of a known one increments its `frequency` (and
    /// takes a new solution or resolved flag if given) instead of adding an entry.
    /// Without a session it joins the store's one open session, if exactly one is
    /// open (see [`Memories::active_session`]).
    pub fn record_error(&self, e: &ErrorReport) -> Result<Memory> {
        self.record_error_joining(e, &[], None)
    }

    /// [`Memories::record_error`] with tags (a recurrence adds them to the entry's),
    /// for a caller that started the session `started`: without a session the error
    /// joins that one while it is open (else the store's one open session).
    pub fn record_error_joining(
        &self,
        e: &ErrorReport,
        tags: &[String],
        started: Option<&str>,
    ) -> Result<Memory> {
        check_error(e)?;
        let signature = error_signature(e);
        // The frequency is read and incremented under the writer lock: concurrent
        // recurrences from other processes each count.
        self.locked(|l| {
            let mut joined = e.clone();
            self.join_locked(l, &mut joined.session, started)?;
            let e = &joined;
            let existing = l.find_by_label(&format!("errsig:{signature}"))?;
            match existing {
                Some(old) => {
                    let frequency = old
                        .metadata
                        .get("frequency")
                        .and_then(Value::as_u64)
                        .unwrap_or(1)
                        + 1;
                    let m = error_entry(e, &signature, tags, Some(&old), frequency);
                    self.update_locked(l, &old.id, m)
                }
                None => {
                    let m = error_entry(e, &signature, tags, None, 1);
                    self.write_locked(l, m)
                }
            }
        })
    }

    /// Past errors like `query`, those with a solution first, then by relevance.
    pub fn search_errors(&self, query: &str, top_k: usize) -> Result<Vec<RecallHit>> {
        let filter = MemoryFilter {
            kind: Some("error".into()),
            ..MemoryFilter::default()
        };
        let mut hits = self.recall_filtered(query, &filter, top_k)?;
        hits.sort_by_key(|h| !h.memory.metadata.contains_key("solution"));
        Ok(hits)
    }

    /// Record a design decision; without a session it joins the store's one open
    /// session, if exactly one is open.
    pub fn record_decision(&self, d: &Decision) -> Result<Memory> {
        self.record_decision_joining(d, None)
    }

    /// [`Memories::record_decision`] for a caller that started the session `started`
    /// (joined first while it is open).
    pub fn record_decision_joining(&self, d: &Decision, started: Option<&str>) -> Result<Memory> {
        self.write_joining(decision_entry(d)?, started)
    }

    /// The most recently updated live entry carrying `label`.
    pub(crate) fn find_by_label(&self, label: &str) -> Result<Option<Memory>> {
        let id = self
            .store()
            .with_tracker(|db| super::locked::id_by_label(db, label))?;
        match id {
            Some(id) => self.get(&id),
            None => Ok(None),
        }
    }
}

/// Refuse an error report without a type or a message.
pub(crate) fn check_error(e: &ErrorReport) -> Result<()> {
    if e.error_type.trim().is_empty() || e.message.trim().is_empty() {
        return Err(MemoryError::Invalid(
            "an error needs a type and a message".into(),
        ));
    }
    Ok(())
}

/// The entry an error is stored as: a first occurrence (`old` is `None`, `frequency`
/// 1), or the new version of the entry `old` of an earlier one, counted `frequency`
/// times, keeping its solution, resolved flag and tags unless `e` brings new ones.
/// Every backend builds error entries here.
pub(crate) fn error_entry(
    e: &ErrorReport,
    signature: &str,
    tags: &[String],
    old: Option<&Memory>,
    frequency: u64,
) -> Memory {
    let text = match &e.solution {
        Some(s) => format!("{}: {}\nsolution: {s}", e.error_type, e.message),
        None => format!("{}: {}", e.error_type, e.message),
    };
    let mut m = Memory::new(text);
    m.kind = "error".into();
    m.session = e.session.clone();
    let mut meta = Map::new();
    meta.insert("error_type".into(), json!(e.error_type));
    meta.insert("message".into(), json!(e.message));
    meta.insert("signature".into(), json!(signature));
    for (k, v) in [
        ("stack_trace", &e.stack_trace),
        ("file", &e.file),
        ("screenshot", &e.screenshot),
        ("resolved_by", &e.resolved_by),
    ] {
        if let Some(v) = v {
            meta.insert(k.into(), json!(v));
        }
    }
    if let Some(l) = e.line {
        meta.insert("line".into(), json!(l));
    }
    for (k, v) in &e.extra_metadata {
        meta.entry(k.clone()).or_insert_with(|| v.clone());
    }
    match old {
        Some(old) => {
            let solution = e.solution.clone().or_else(|| {
                old.metadata
                    .get("solution")
                    .and_then(Value::as_str)
                    .map(String::from)
            });
            if let Some(s) = &solution {
                meta.insert("solution".into(), json!(s));
                m.text = format!("{}: {}\nsolution: {s}", e.error_type, e.message);
            }
            let resolved = e.resolved
                || old
                    .metadata
                    .get("resolved")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
            meta.insert("resolved".into(), json!(resolved));
            meta.insert("frequency".into(), json!(frequency));
            m.metadata = meta;
            m.tags = old.tags.clone();
            for t in tags {
                if !m.tags.contains(t) {
                    m.tags.push(t.clone());
                }
            }
        }
        None => {
            if let Some(s) = &e.solution {
                meta.insert("solution".into(), json!(s));
            }
            meta.insert("resolved".into(), json!(e.resolved));
            meta.insert("frequency".into(), json!(frequency));
            m.metadata = meta;
            m.tags = tags.to_vec();
        }
    }
    m
}

/// The entry a design decision is stored as (checked: not empty, confidence 0 to 1).
pub(crate) fn decision_entry(d: &Decision) -> Result<Memory> {
    if d.decision.trim().is_empty() {
        return Err(MemoryError::Invalid("a decision must not be empty".into()));
    }
    if let Some(c) = d.confidence {
        if !(0.0..=1.0).contains(&c) {
            return Err(MemoryError::Invalid(format!(
                "confidence {c} is outside 0 to 1"
            )));
        }
    }
    let mut text = d.decision.clone();
    if !d.rationale.is_empty() {
        text.push_str(&format!("\nrationale: {}", d.rationale));
    }
    if !d.alternatives.is_empty() {
        text.push_str(&format!("\nalternatives: {}", d.alternatives.join("; ")));
    }
    let mut m = Memory::new(text);
    m.kind = "decision".into();
    m.insights = vec!["decision".into()];
    m.tags = d.tags.clone();
    m.session = d.session.clone();
    m.symbols = d
        .related_files
        .iter()
        .map(|f| format!("file:{f}"))
        .collect();
    let mut meta = Map::new();
    meta.insert("decision".into(), json!(d.decision));
    meta.insert("rationale".into(), json!(d.rationale));
    meta.insert("alternatives".into(), json!(d.alternatives));
    meta.insert("related_files".into(), json!(d.related_files));
    meta.insert("reviewed".into(), json!(d.reviewed));
    if let Some(i) = &d.impact {
        meta.insert("impact".into(), json!(i));
    }
    if let Some(c) = d.confidence {
        meta.insert("confidence".into(), json!(c));
    }
    m.metadata = meta;
    Ok(m)
}
