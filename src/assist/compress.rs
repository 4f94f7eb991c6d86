//! Context compression: the project context rewritten by the model at one of three
//! levels (brief, detailed, comprehensive), cut to a byte budget whatever the model
//! returns.
//!
//! It never returns more than the budget and never stores what it returns.

use serde::Serialize;

use super::parse::strip_fences;
use super::{AssistError, Assistant, Question};
use crate::gate::truncate;
use crate::memory::AuditLog;

/// How much detail a compressed context keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// The handful of facts a session must not miss.
    Brief,
    /// The main decisions, constraints, pitfalls and open problems.
    Detailed,
    /// Everything that matters, grouped.
    Comprehensive,
}

/// A compression level that is none of the three.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("compression level {level:?}: expected brief, detailed or comprehensive")]
pub struct UnknownLevel {
    /// As given, lowercased.
    pub level: String,
}

impl std::str::FromStr for Level {
    type Err = UnknownLevel;
    fn from_str(s: &str) -> Result<Level, UnknownLevel> {
        match s.trim().to_ascii_lowercase().as_str() {
            "brief" => Ok(Level::Brief),
            "detailed" => Ok(Level::Detailed),
            "comprehensive" => Ok(Level::Comprehensive),
            other => Err(UnknownLevel {
                level: other.into(),
            }),
        }
    }
}

impl Level {
    fn instruction(self) -> &'static str {
        match self {
            Level::Brief => {
                "a BRIEF summary: the 3 to 7 facts a new session must not miss, as bullets"
            }
            Level::Detailed => {
                "a DETAILED summary: the main decisions, constraints, pitfalls, open errors and \
                 hot files, as short bulleted sections"
            }
            Level::Comprehensive => {
                "a COMPREHENSIVE summary: everything that matters, grouped under headings, \
                 dropping only repetition and noise"
            }
        }
    }
}

const SYSTEM: &str = "You compress a software project's working memory for an AI coding agent \
starting a new session. Keep identifiers, file paths and numbers exact; drop repetition.";

impl Assistant {
    /// `context` compressed to `level`, at most `budget` bytes; the call is audited in
    /// `log` (or the team log, when one is set).
    pub fn compress_context(
        &self,
        log: &dyn AuditLog,
        context: &str,
        level: Level,
        budget: usize,
    ) -> Result<String, AssistError> {
        let after = format!(
            "\n\n## Task\nRewrite the context above as {} in Markdown, at most {budget} bytes \
             (about {} words). Answer with the summary only.",
            level.instruction(),
            budget / 6
        );
        let answer = self.ask(
            log,
            &Question {
                purpose: "compress_context",
                system: SYSTEM,
                before: "## Project context\n",
                data: context,
                after: &after,
                temperature: 0.2,
                max_tokens: (budget / 3).clamp(64, 4096) as u32,
            },
        )?;
        let text = strip_fences(&answer.text);
        if text.trim().is_empty() {
            return Err(AssistError::Unusable(
                "the compressed context is empty".into(),
            ));
        }
        Ok(truncate(text, budget).0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_parse_in_any_case_and_others_are_named() {
        assert_eq!(" Brief ".parse::<Level>(), Ok(Level::Brief));
        assert_eq!("COMPREHENSIVE".parse::<Level>(), Ok(Level::Comprehensive));
        let e = "Short".parse::<Level>().unwrap_err();
        assert_eq!(
            e,
            UnknownLevel {
                level: "short".into()
            }
        );
        assert_eq!(
            e.to_string(),
            "compression level \"short\": expected brief, detailed or comprehensive"
        );
    }
}
