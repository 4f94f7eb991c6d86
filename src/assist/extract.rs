//! Knowledge extraction: the model reads a session's records and names the decisions,
//! pitfalls and preferences worth keeping; each becomes a memory with provenance
//! `llm_extracted` (so its trust is below what a person or agent stated), unless a
//! stored memory already says the same.
//!
//! It never updates or deletes an existing memory, and never stores more than
//! [`MAX_ITEMS`] items from one answer.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::{json, Value};

use super::parse::{field_str, json_object};
use super::summary::session_with_data;
use super::{AssistError, Assistant, Question};
use crate::memory::{AuditLog, Memories, Memory, MemoryBackend, MemoryFilter};

/// Most memories stored from one answer.
pub const MAX_ITEMS: usize = 20;

/// What an extraction stored.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Extracted {
    /// The new memories.
    pub stored: Vec<Memory>,
    /// Items left out because a stored memory already says the same.
    pub duplicates: usize,
}

const SYSTEM: &str = "You extract durable knowledge from a coding session's records: \
decisions taken (and why), pitfalls met (and how to avoid them), and the developer's \
preferences. Only what a future session would need; no narration.";

const AFTER: &str = "

## Task
List the decisions, pitfalls and preferences worth remembering, each as one \
self-contained sentence. Answer with JSON only:
{\"items\": [{\"kind\": \"decision\" | \"pitfall\" | \"preference\", \"text\": \"...\"}]}";

/// The (kind, text) items of a model's answer; `None` when it holds no list of items
/// at all (an empty list is an answer: nothing worth keeping).
pub fn parse_items(text: &str) -> Option<Vec<(&'static str, String)>> {
    let items: Vec<Value> = match json_object(text) {
        Some(o) => o
            .get("items")
            .or_else(|| o.values().find(|v| v.is_array()))
            .and_then(Value::as_array)
            .cloned()?,
        None => match text.find('[').zip(text.rfind(']')) {
            Some((a, b)) if a < b => serde_json::from_str(&text[a..=b]).ok()?,
            _ => return None,
        },
    };
    let mut out = Vec::new();
    for item in items {
        let Value::Object(o) = item else { continue };
        let kind = match field_str(&o, &["kind", "type", "category"])
            .unwrap_or_default()
            .to_ascii_lowercase()
            .trim_end_matches('s')
        {
            "decision" => "decision",
            "pitfall" => "pitfall",
            "preference" => "preference",
            _ => continue,
        };
        let Some(text) = field_str(&o, &["text", "content", "description"]) else {
            continue;
        };
        out.push((kind, text.chars().take(1000).collect()));
        if out.len() == MAX_ITEMS {
            break;
        }
    }
    Some(out)
}

fn words(s: &str) -> BTreeSet<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Whether two texts say the same: most of their words are shared.
pub fn same_words(a: &str, b: &str) -> bool {
    let (a, b) = (words(a), words(b));
    if a.is_empty() || b.is_empty() {
        return false;
    }
    let shared = a.intersection(&b).count() as f64;
    shared / a.union(&b).count() as f64 >= 0.8
}

impl Assistant {
    /// Extract decisions, pitfalls and preferences from session `id` into new
    /// memories (`llm_extracted`), skipping what is already stored.
    pub fn extract_knowledge(
        &self,
        memories: &Memories,
        id: &str,
    ) -> Result<Extracted, AssistError> {
        self.extract_knowledge_in(memories, memories, id)
    }

    /// [`Assistant::extract_knowledge`] from a session `memories` holds (the local
    /// store or the team backend), into it; the call audited in `log` (or the team
    /// log, when set).
    pub fn extract_knowledge_in(
        &self,
        memories: &dyn MemoryBackend,
        log: &dyn AuditLog,
        id: &str,
    ) -> Result<Extracted, AssistError> {
        let (session, data) = session_with_data(memories, id)?;
        let answer = self.ask(
            log,
            &Question {
                purpose: "extract_knowledge",
                system: SYSTEM,
                before: "## Session records\n",
                data: &data,
                after: AFTER,
                temperature: 0.1,
                max_tokens: 1200,
            },
        )?;
        let items = parse_items(&answer.text)
            .ok_or_else(|| AssistError::Unusable("no list of items in the answer".into()))?;
        let mut out = Extracted::default();
        let mut kept: Vec<String> = Vec::new();
        for (kind, text) in items {
            let known = memories
                .recall(&text, &MemoryFilter::default(), 5)?
                .iter()
                .any(|h| same_words(&h.memory.text, &text))
                || kept.iter().any(|k| same_words(k, &text));
            if known {
                out.duplicates += 1;
                continue;
            }
            let mut m = Memory::new(text.clone());
            m.provenance = "llm_extracted".into();
            m.insights = vec![match kind {
                "preference" => "constraint".to_string(),
                k => k.to_string(),
            }];
            m.tags = vec!["llm-extracted".into(), kind.into()];
            m.session = Some(session.id.clone());
            m.metadata
                .insert("extracted_from".into(), json!(session.id));
            m.metadata.insert("model".into(), json!(answer.model));
            let stored = memories.write(m)?;
            kept.push(text);
            out.stored.push(stored);
        }
        Ok(out)
    }
}
