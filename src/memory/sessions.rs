//! Coding sessions and file changes.
//!
//! A session is an entry of kind `session`; everything recorded with its id as
//! `session` belongs to it. Ending a session writes a summary built from those entries
//! — files touched, errors met and fixed, decisions — deterministic and useful without
//! any model. A file change is an entry of kind `file_change` with its reason.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{Memories, Memory, MemoryError, MemoryFilter, Result};

/// The actions a file change can be.
pub const CHANGE_ACTIONS: &[&str] = &["create", "edit", "delete", "rename", "refactor", "test"];

/// A change to a file and why it was made.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FileChange {
    pub path: String,
    pub action: String,
    pub reason: String,
    #[serde(default)]
    pub diff_summary: Option<String>,
    #[serde(default)]
    pub related_files: Vec<String>,
    #[serde(default)]
    pub start_line: Option<u64>,
    #[serde(default)]
    pub end_line: Option<u64>,
    #[serde(default)]
    pub session: Option<String>,
}

impl Memories {
    /// Start a session; returns its entry (the id is the session id).
    pub fn start_session(&self, description: &str, tags: &[String]) -> Result<Memory> {
        self.write(session_entry(description, tags)?)
    }

    /// End a session: mark it and write the summary of what it recorded.
    pub fn end_session(&self, id: &str, success: bool) -> Result<Memory> {
        self.end_session_with(id, success, None)
    }

    /// [`Memories::end_session`], keeping the caller's own summary beside the
    /// generated one (in the text and as `metadata.user_summary`).
    pub fn end_session_with(
        &self,
        id: &str,
        success: bool,
        user_summary: Option<&str>,
    ) -> Result<Memory> {
        self.locked(|l| self.end_session_locked(l, id, success, user_summary))
    }

    /// End the active session (see [`Memories::active_session`]) for a caller that
    /// started `started`; refused, naming the open ones, when none or several are
    /// open. Which one is decided under the lock that ends it.
    pub fn end_active_session(
        &self,
        started: Option<&str>,
        success: bool,
        user_summary: Option<&str>,
    ) -> Result<Memory> {
        self.locked(|l| {
            let active = self.active_session_locked(l, started)?;
            self.end_session_locked(l, active.to_end()?, success, user_summary)
        })
    }

    fn end_session_locked(
        &self,
        l: &mut super::Locked<'_>,
        id: &str,
        success: bool,
        user_summary: Option<&str>,
    ) -> Result<Memory> {
        let id = super::normalise_id(id)?;
        let Some(session) = l.get(&id)? else {
            return Err(MemoryError::NotFound(id.to_string()));
        };
        check_session(&session)?;
        let filter = MemoryFilter {
            session: Some(session.id.clone()),
            ..MemoryFilter::default()
        };
        let entries = self.list_filtered(&filter, usize::MAX >> 1, 0)?;
        let m = ended_session(&session, entries, success, user_summary);
        self.update_locked(l, &session.id, m)
    }

    /// Record a file change with its reason; without a session it joins the store's
    /// one open session, if exactly one is open.
    pub fn track_file_change(&self, c: &FileChange) -> Result<Memory> {
        self.track_file_change_joining(c, None)
    }

    /// [`Memories::track_file_change`] for a caller that started the session
    /// `started` (joined first while it is open).
    pub fn track_file_change_joining(
        &self,
        c: &FileChange,
        started: Option<&str>,
    ) -> Result<Memory> {
        self.write_joining(change_entry(c)?, started)
    }
}

/// The entry a new session is stored as.
pub(crate) fn session_entry(description: &str, tags: &[String]) -> Result<Memory> {
    if description.trim().is_empty() {
        return Err(MemoryError::Invalid("a session needs a description".into()));
    }
    let mut m = Memory::new(format!("session: {description}"));
    m.kind = "session".into();
    m.tags = tags.to_vec();
    m.metadata.insert("description".into(), json!(description));
    m.metadata.insert("status".into(), json!("active"));
    Ok(m)
}

/// Refuse to end an entry that is not a session.
pub(crate) fn check_session(session: &Memory) -> Result<()> {
    if session.kind != "session" {
        return Err(MemoryError::Invalid(format!(
            "{} is a {}, not a session",
            session.id, session.kind
        )));
    }
    Ok(())
}

/// The new version of `session` when it ends: its summary built from `entries` (every
/// entry recorded with its id as `session`, in any order), the caller's own summary
/// kept beside it.
pub(crate) fn ended_session(
    session: &Memory,
    mut entries: Vec<Memory>,
    success: bool,
    user_summary: Option<&str>,
) -> Memory {
    entries.sort_by_key(|e| (e.created_ms, e.id.clone()));
    let (summary, counts) = summarise(session, &entries, success);
    let mut m = session.clone();
    m.text = summary.clone();
    if let Some(given) = user_summary.map(str::trim).filter(|t| !t.is_empty()) {
        m.text.push_str(&format!("\nsummary given: {given}\n"));
        m.metadata.insert("user_summary".into(), json!(given));
    }
    m.metadata.insert("status".into(), json!("ended"));
    m.metadata.insert("success".into(), json!(success));
    m.metadata.insert("summary".into(), json!(summary));
    m.metadata
        .insert("ended_ms".into(), json!(crate::store::now_ms()));
    // The statistics are the summary's own sections counted, so the two never
    // disagree.
    m.metadata
        .insert("files_touched".into(), json!(counts.files_touched));
    m.metadata.insert(
        "errors_encountered".into(),
        json!(counts.errors_encountered),
    );
    m.metadata
        .insert("errors_fixed".into(), json!(counts.errors_fixed));
    m.metadata
        .insert("decisions_made".into(), json!(counts.decisions_made));
    m
}

/// The entry a file change is stored as (checked: path, reason, action, line range).
pub(crate) fn change_entry(c: &FileChange) -> Result<Memory> {
    if c.path.trim().is_empty() || c.reason.trim().is_empty() {
        return Err(MemoryError::Invalid(
            "a file change needs a path and a reason".into(),
        ));
    }
    if !CHANGE_ACTIONS.contains(&c.action.as_str()) {
        return Err(MemoryError::Invalid(format!(
            "action {:?} is not one of {}",
            c.action,
            CHANGE_ACTIONS.join(", ")
        )));
    }
    if let (Some(a), Some(b)) = (c.start_line, c.end_line) {
        if a == 0 || b < a {
            return Err(MemoryError::Invalid(format!(
                "line range {a}-{b} is not 1-based and ordered"
            )));
        }
    }
    let mut text = format!("{} {}: {}", c.action, c.path, c.reason);
    if let Some(d) = &c.diff_summary {
        text.push_str(&format!("\n{d}"));
    }
    let mut m = Memory::new(text);
    m.kind = "file_change".into();
    m.session = c.session.clone();
    m.symbols = std::iter::once(&c.path)
        .chain(&c.related_files)
        .map(|p| format!("file:{p}"))
        .collect();
    let mut meta = Map::new();
    meta.insert("path".into(), json!(c.path));
    meta.insert("action".into(), json!(c.action));
    meta.insert("reason".into(), json!(c.reason));
    meta.insert("related_files".into(), json!(c.related_files));
    for (k, v) in [
        ("diff_summary", c.diff_summary.as_ref().map(|d| json!(d))),
        ("start_line", c.start_line.map(|l| json!(l))),
        ("end_line", c.end_line.map(|l| json!(l))),
    ] {
        if let Some(v) = v {
            meta.insert(k.into(), v);
        }
    }
    m.metadata = meta;
    Ok(m)
}

fn field<'a>(m: &'a Memory, name: &str) -> Option<&'a str> {
    m.metadata.get(name).and_then(Value::as_str)
}

/// What a session's summary lists, counted.
#[derive(Debug, Default, PartialEq)]
struct Counts {
    /// Each path changed, once, in the order first changed.
    files_touched: Vec<String>,
    errors_encountered: usize,
    errors_fixed: usize,
    decisions_made: usize,
}

/// The deterministic summary of a session, and what it lists counted.
fn summarise(session: &Memory, entries: &[Memory], success: bool) -> (String, Counts) {
    let description = field(session, "description").unwrap_or("");
    let mut out = format!(
        "session {} {}: {description}\n",
        session.id,
        if success {
            "succeeded"
        } else {
            "did not succeed"
        }
    );
    // One line per file, each of its distinct changes on it.
    let mut files: Vec<(String, Vec<String>)> = Vec::new();
    for e in entries.iter().filter(|e| e.kind == "file_change") {
        let path = field(e, "path").unwrap_or("?").to_string();
        let change = format!(
            "{} {} — {}",
            field(e, "action").unwrap_or("?"),
            path,
            field(e, "reason").unwrap_or("")
        );
        match files.iter_mut().find(|(p, _)| *p == path) {
            Some((_, changes)) if !changes.contains(&change) => changes.push(change),
            Some(_) => {}
            None => files.push((path, vec![change])),
        }
    }
    let (fixed, open): (Vec<&Memory>, Vec<&Memory>) = entries
        .iter()
        .filter(|e| e.kind == "error")
        .partition(|e| super::context::is_resolved(e));
    let decisions: Vec<&Memory> = entries.iter().filter(|e| e.kind == "decision").collect();
    let counts = Counts {
        files_touched: files.iter().map(|(p, _)| p.clone()).collect(),
        errors_encountered: fixed.len() + open.len(),
        errors_fixed: fixed.len(),
        decisions_made: decisions.len(),
    };
    let mut section = |title: &str, lines: Vec<String>| {
        if !lines.is_empty() {
            out.push_str(&format!("{title} ({}):\n", lines.len()));
            for l in lines {
                out.push_str(&format!("- {l}\n"));
            }
        }
    };
    section(
        "files changed",
        files.into_iter().map(|(_, c)| c.join("; ")).collect(),
    );
    section(
        "errors fixed",
        fixed
            .iter()
            .map(|e| {
                format!(
                    "{} → {}",
                    field(e, "message").unwrap_or("?"),
                    field(e, "solution").unwrap_or("")
                )
            })
            .collect(),
    );
    section(
        "errors unresolved",
        open.iter()
            .map(|e| field(e, "message").unwrap_or("?").to_string())
            .collect(),
    );
    section(
        "decisions",
        decisions
            .iter()
            .map(|d| {
                format!(
                    "{} ({})",
                    field(d, "decision").unwrap_or("?"),
                    field(d, "rationale").unwrap_or("")
                )
            })
            .collect(),
    );
    let others = entries
        .iter()
        .filter(|e| !["file_change", "error", "decision", "session"].contains(&e.kind.as_str()))
        .count();
    if others > 0 {
        out.push_str(&format!("{others} other memories recorded\n"));
    }
    (out, counts)
}
