//! The session summary a model writes (overview, decisions, challenges and solutions,
//! patterns, recommendations), stored beside the deterministic one on the session
//! entry (`metadata.llm_summary`, provenance `llm_extracted`).
//!
//! It never replaces the deterministic summary and never runs unless asked: the
//! session's records are the data, put through the gate like every request.

use serde_json::{json, Value};

use super::parse::strip_fences;
use super::{AssistError, Assistant, Question};
use crate::memory::{AuditLog, Memories, Memory, MemoryBackend, MemoryFilter};

const SYSTEM: &str = "You are an expert software engineering assistant specializing in \
analysing coding sessions.

Your role:
- Analyze coding activities comprehensively
- Extract key technical decisions
- Provide actionable insights

Output requirements:
- Use clear, structured markdown
- Focus on \"why\" not just \"what\"
- Include specific examples
- Do NOT just describe, provide actionable recommendations";

const TASK: &str = "

## Task
Generate a structured summary covering:
1. Session Overview
2. Key Technical Decisions
3. Challenges & Solutions
4. Patterns Observed
5. Recommendations

## Example Output Structure
```markdown
# Session Summary

## Overview
What the session set out to do and what it achieved.

## Key Technical Decisions
- Decision: why it was made, what it trades off.

## Challenges & Solutions
- Challenge: how it was solved.

## Patterns Observed
- A recurring pattern in the work.

## Recommendations
- What to do next, concretely.
```

Now generate the summary:";

/// A session's records as the data of a question: its description and outcome, then
/// every entry it recorded, oldest first.
pub(crate) fn session_data(session: &Memory, entries: &[Memory]) -> String {
    let meta = |m: &Memory, k: &str| m.metadata.get(k).cloned().unwrap_or(Value::Null);
    let mut s = format!(
        "Description: {}\nOutcome: {}\n",
        meta(session, "description")
            .as_str()
            .unwrap_or(&session.text),
        match meta(session, "success").as_bool() {
            Some(true) => "succeeded",
            Some(false) => "did not reach its goal",
            None => "still active",
        }
    );
    if let Some(given) = meta(session, "user_summary").as_str() {
        s.push_str(&format!("Summary given by the agent: {given}\n"));
    }
    for kind in ["file_change", "error", "decision", "memory", "note"] {
        // What a model extracted earlier is not evidence of the session.
        let of: Vec<&Memory> = entries
            .iter()
            .filter(|e| e.kind == kind && e.provenance != "llm_extracted")
            .collect();
        if of.is_empty() {
            continue;
        }
        let title = match kind {
            "file_change" => "File changes",
            "error" => "Errors",
            "decision" => "Decisions",
            _ => "Other records",
        };
        s.push_str(&format!("\n### {title}\n"));
        for e in of {
            let text: String = e.text.chars().take(600).collect();
            s.push_str(&format!("- {}\n", text.replace('\n', "\n  ")));
        }
    }
    s
}

/// The session entry `id` and the text describing it and its records, as sent to a
/// model; an error when `id` is not a session.
pub(crate) fn session_with_data(
    memories: &dyn MemoryBackend,
    id: &str,
) -> Result<(Memory, String), AssistError> {
    let session = memories
        .get(id)?
        .filter(|m| m.kind == "session")
        .ok_or_else(|| AssistError::Unusable(format!("{id} is not a session")))?;
    let entries = session_entries(memories, &session)?;
    let data = session_data(&session, &entries);
    Ok((session, data))
}

/// The entries a session recorded, oldest first.
fn session_entries(
    memories: &dyn MemoryBackend,
    session: &Memory,
) -> Result<Vec<Memory>, AssistError> {
    let filter = MemoryFilter {
        session: Some(session.id.clone()),
        ..MemoryFilter::default()
    };
    let mut entries = memories.list_filtered(&filter, 2000, 0)?;
    entries.sort_by_key(|e| (e.created_ms, e.id.clone()));
    Ok(entries)
}

impl Assistant {
    /// The model's Markdown summary of session `id`, stored on the session entry beside
    /// the deterministic one; returns the updated entry.
    pub fn summarize_session(&self, memories: &Memories, id: &str) -> Result<Memory, AssistError> {
        self.summarize_session_in(memories, memories, id)
    }

    /// [`Assistant::summarize_session`] of a session `memories` holds (the local store
    /// or the team backend), the call audited in `log` (or the team log, when set).
    pub fn summarize_session_in(
        &self,
        memories: &dyn MemoryBackend,
        log: &dyn AuditLog,
        id: &str,
    ) -> Result<Memory, AssistError> {
        let (session, data) = session_with_data(memories, id)?;
        let answer = self.ask(
            log,
            &Question {
                purpose: "session_summary",
                system: SYSTEM,
                before: "Analyze the following coding session:\n\n## Session Information\n",
                data: &data,
                after: TASK,
                temperature: 0.3,
                max_tokens: 1500,
            },
        )?;
        let summary = strip_fences(&answer.text).to_string();
        if summary.trim().is_empty() {
            return Err(AssistError::Unusable("the summary is empty".into()));
        }
        let mut m = session.clone();
        m.metadata.insert("llm_summary".into(), json!(summary));
        m.metadata
            .insert("llm_summary_model".into(), json!(answer.model));
        m.metadata
            .insert("llm_summary_provenance".into(), json!("llm_extracted"));
        Ok(memories.update(&session.id, m)?)
    }
}
