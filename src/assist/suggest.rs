//! Suggested solutions: the current error and similar past errors with their
//! solutions go to the model, which answers with a solution, a confidence and
//! alternatives. Without a model (or when the call fails) the suggestion is the
//! solution of the most similar solved past error.
//!
//! It never stores a suggestion as an error's solution; only a person or agent
//! recording the fix does that.

use serde::Serialize;
use serde_json::Value;

use super::parse::{field_list, field_score, field_str, json_object, score_after, strip_fences};
use super::{AssistError, Assistant, Question};
use crate::memory::{AuditLog, Memory, MemoryBackend, MemoryError};

/// A suggested solution.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Suggestion {
    /// The error suggested for.
    pub error: String,
    /// What to do.
    pub solution: String,
    /// 0 to 1, as the model stated it (`None`: not stated, or no model).
    pub confidence: Option<f64>,
    /// Other things to try.
    pub alternatives: Vec<String>,
    /// Why, as the model put it.
    pub reasoning: Option<String>,
    /// The past errors consulted (ids).
    pub similar: Vec<String>,
    /// `llm` (the model's), `past_solution` (a solved past error's), or `none`.
    pub source: &'static str,
}

const SYSTEM: &str = "You are an expert debugging assistant. Suggest a concrete fix for the \
current error, using the similar past errors and their solutions where they apply. \
Do NOT just describe the error: say what to change.";

const AFTER: &str = "

## Task
Suggest a solution. Answer with JSON only, in this form:
{\"solution\": \"what to change\", \"confidence\": 0.0 to 1.0, \"alternatives\": [\"other fixes\"], \"reasoning\": \"why\"}";

fn meta_str<'a>(m: &'a Memory, k: &str) -> Option<&'a str> {
    m.metadata.get(k).and_then(Value::as_str)
}

fn describe_error(m: &Memory) -> String {
    let mut s = format!(
        "{}: {}\n",
        meta_str(m, "error_type").unwrap_or("error"),
        meta_str(m, "message").unwrap_or(&m.text)
    );
    if let Some(f) = meta_str(m, "file") {
        match m.metadata.get("line").and_then(Value::as_u64) {
            Some(l) => s.push_str(&format!("File: {f}:{l}\n")),
            None => s.push_str(&format!("File: {f}\n")),
        }
    }
    if let Some(t) = meta_str(m, "stack_trace") {
        let t: String = t.chars().take(3000).collect();
        s.push_str(&format!("Stack trace:\n{t}\n"));
    }
    s
}

/// The error `id` and the similar past errors (excluding it), those solved first.
pub(crate) fn error_and_similar(
    memories: &dyn MemoryBackend,
    id: &str,
) -> Result<(Memory, Vec<Memory>), AssistError> {
    let error = memories
        .get(id)?
        .ok_or_else(|| MemoryError::NotFound(id.to_string()))?;
    if error.kind != "error" {
        return Err(AssistError::Unusable(format!(
            "{id} is a {}, not an error",
            error.kind
        )));
    }
    let query = format!(
        "{} {}",
        meta_str(&error, "error_type").unwrap_or(""),
        meta_str(&error, "message").unwrap_or(&error.text)
    );
    let similar = memories
        .search_errors(&query, 8)?
        .into_iter()
        .map(|h| h.memory)
        .filter(|m| m.id != error.id)
        .collect();
    Ok((error, similar))
}

/// The suggestion without a model: the most similar solved past error's solution.
pub fn past_solution(error: &Memory, similar: &[Memory]) -> Suggestion {
    let solved: Vec<&Memory> = similar
        .iter()
        .filter(|m| meta_str(m, "solution").is_some())
        .collect();
    let solution = error_solution(error)
        .or_else(|| solved.first().and_then(|m| meta_str(m, "solution")))
        .unwrap_or("")
        .to_string();
    Suggestion {
        error: error.id.clone(),
        source: if solution.is_empty() {
            "none"
        } else {
            "past_solution"
        },
        solution,
        confidence: None,
        alternatives: solved
            .iter()
            .skip(1)
            .filter_map(|m| meta_str(m, "solution"))
            .map(String::from)
            .collect(),
        reasoning: None,
        similar: similar.iter().map(|m| m.id.clone()).collect(),
    }
}

fn error_solution(m: &Memory) -> Option<&str> {
    meta_str(m, "solution")
}

/// What a model's answer suggests.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    /// What to do.
    pub solution: String,
    /// 0 to 1, if stated.
    pub confidence: Option<f64>,
    /// Other things to try.
    pub alternatives: Vec<String>,
    /// Why.
    pub reasoning: Option<String>,
}

/// A suggestion from a model's answer: JSON, else the text itself as the solution.
pub fn parse_suggestion(text: &str) -> Option<Parsed> {
    if let Some(o) = json_object(text) {
        if let Some(solution) = field_str(&o, &["solution", "fix", "suggestion"]) {
            return Some(Parsed {
                solution: solution.chars().take(4000).collect(),
                confidence: field_score(&o, &["confidence", "score"]),
                alternatives: field_list(
                    &o,
                    &["alternatives", "alternative_solutions", "alternative"],
                ),
                reasoning: field_str(&o, &["reasoning", "reason", "explanation"]),
            });
        }
    }
    let body = strip_fences(text).trim();
    if body.is_empty() {
        return None;
    }
    Some(Parsed {
        solution: body.chars().take(4000).collect(),
        confidence: score_after(body, "confidence"),
        alternatives: Vec::new(),
        reasoning: None,
    })
}

impl Assistant {
    /// The model's suggestion for error `id` of `memories`, given similar past
    /// errors; the call is audited in the assistant's team log, else in `log`.
    pub fn suggest_solution(
        &self,
        memories: &dyn MemoryBackend,
        log: &dyn AuditLog,
        id: &str,
    ) -> Result<Suggestion, AssistError> {
        let (error, similar) = error_and_similar(memories, id)?;
        let mut data = format!(
            "## Current error\n{}\n## Similar past errors\n",
            describe_error(&error)
        );
        if similar.is_empty() {
            data.push_str("(none recorded)\n");
        }
        for (i, m) in similar.iter().enumerate() {
            data.push_str(&format!("{}. {}", i + 1, describe_error(m)));
            match meta_str(m, "solution") {
                Some(s) => data.push_str(&format!("   Solution: {s}\n")),
                None => data.push_str("   Solution: (none recorded)\n"),
            }
        }
        let answer = self.ask(
            log,
            &Question {
                purpose: "error_suggest",
                system: SYSTEM,
                before: "",
                data: &data,
                after: AFTER,
                temperature: 0.3,
                max_tokens: 800,
            },
        )?;
        let p = parse_suggestion(&answer.text)
            .ok_or_else(|| AssistError::Unusable("no solution in the answer".into()))?;
        Ok(Suggestion {
            error: error.id.clone(),
            solution: p.solution,
            confidence: p.confidence,
            alternatives: p.alternatives,
            reasoning: p.reasoning,
            similar: similar.iter().map(|m| m.id.clone()).collect(),
            source: "llm",
        })
    }
}

/// The model's suggestion for error `id` of `memories` when `assistant` is given and
/// answers, else the past solution; the warning says why the model's is missing. A
/// model call is audited as [`Assistant::suggest_solution`] says.
pub fn suggest(
    assistant: Option<&Assistant>,
    memories: &dyn MemoryBackend,
    log: &dyn AuditLog,
    id: &str,
) -> Result<(Suggestion, Option<String>), AssistError> {
    let mut warning = None;
    if let Some(a) = assistant {
        match a.suggest_solution(memories, log, id) {
            Ok(s) => return Ok((s, None)),
            Err(e @ AssistError::Memory(_)) => return Err(e),
            Err(e) => warning = super::warn("error suggestion", &e),
        }
    }
    let (error, similar) = error_and_similar(memories, id)?;
    Ok((past_solution(&error, &similar), warning))
}
