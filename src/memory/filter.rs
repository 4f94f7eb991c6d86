//! Filters for listing and recalling memories, compiled to SQL over the
//! `memory_labels` projection table. Every value is a bound parameter, never SQL text.

use rusqlite::types::Value as SqlValue;

use super::taxonomy::{self, Axis};
use super::{MemoryError, Result};

/// Which memories to consider. Empty means all; every set field must hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryFilter {
    /// Only entries of this kind (`memory`, `note`, `error`, …).
    pub kind: Option<String>,
    pub task: Option<String>,
    /// Every one of these insight types.
    pub insights: Vec<String>,
    /// Every one of these context types.
    pub contexts: Vec<String>,
    /// Every one of these tags.
    pub tags: Vec<String>,
    pub session: Option<String>,
    /// Updated at or after this Unix millisecond.
    pub since_ms: Option<u64>,
}

impl MemoryFilter {
    /// Normalise taxonomy values (refusing unknown ones, as writes do).
    pub fn normalised(mut self) -> Result<MemoryFilter> {
        let bad = |e: taxonomy::TaxonomyError| MemoryError::Invalid(e.to_string());
        if let Some(k) = &self.kind {
            if !super::model::KINDS.contains(&k.as_str()) {
                return Err(MemoryError::Invalid(format!(
                    "kind {k:?} is not one of {}",
                    super::model::KINDS.join(", ")
                )));
            }
        }
        if let Some(t) = &self.task {
            self.task = Some(taxonomy::normalise(Axis::Task, t).map_err(bad)?);
        }
        for i in &mut self.insights {
            *i = taxonomy::normalise(Axis::Insight, i).map_err(bad)?;
        }
        for c in &mut self.contexts {
            *c = taxonomy::normalise(Axis::Context, c).map_err(bad)?;
        }
        Ok(self)
    }

    /// `AND …` conditions on the alias `m` of `memories`, with their parameters.
    /// A label is tested with `m.seq IN (…)`, which SQLite answers by reading every
    /// memory holding the label once per statement: right when many rows are tested
    /// (a keyword ranking), see [`MemoryFilter::sql_per_row`] for a few.
    pub(crate) fn sql(&self) -> (String, Vec<SqlValue>) {
        self.sql_with(" AND m.seq IN (SELECT seq FROM memory_labels WHERE label = ?)")
    }

    /// [`MemoryFilter::sql`] with each label tested by one lookup of the row's own
    /// `(label, seq)`: for a statement that tests a few given memories (the vector
    /// candidates, [`super::filter_ids`]), where reading every memory holding the
    /// label cost 20 times the rest of a search.
    pub(crate) fn sql_per_row(&self) -> (String, Vec<SqlValue>) {
        self.sql_with(
            " AND EXISTS (SELECT 1 FROM memory_labels l WHERE l.label = ? AND l.seq = m.seq)",
        )
    }

    fn sql_with(&self, label_test: &str) -> (String, Vec<SqlValue>) {
        let mut sql = String::new();
        let mut args = Vec::new();
        let labels = self
            .kind
            .iter()
            .map(|k| format!("kind:{k}"))
            .chain(self.task.iter().map(|t| format!("task:{t}")))
            .chain(self.insights.iter().map(|i| format!("insight:{i}")))
            .chain(self.contexts.iter().map(|c| format!("context:{c}")))
            .chain(self.tags.iter().map(|t| format!("tag:{t}")))
            .chain(self.session.iter().map(|s| format!("session:{s}")));
        for label in labels {
            sql.push_str(label_test);
            args.push(SqlValue::Text(label));
        }
        if let Some(since) = self.since_ms {
            sql.push_str(" AND m.updated_ms >= ?");
            args.push(SqlValue::Integer(since.min(i64::MAX as u64) as i64));
        }
        (sql, args)
    }
}

/// Parse `--since`: Unix milliseconds, or an age like `90s`, `30m`, `12h`, `7d`.
pub fn parse_since(text: &str, now_ms: u64) -> Result<u64> {
    let t = text.trim();
    if let Ok(ms) = t.parse::<u64>() {
        return Ok(ms);
    }
    let (num, unit) = t.split_at(t.len().saturating_sub(1));
    let n: u64 = num.parse().map_err(|_| {
        MemoryError::Invalid(format!(
            "--since {text:?}: expected Unix milliseconds or an age like 30m, 12h, 7d"
        ))
    })?;
    let ms = match unit {
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        "w" => 604_800_000,
        _ => {
            return Err(MemoryError::Invalid(format!(
                "--since {text:?}: the unit is s, m, h, d or w"
            )))
        }
    };
    Ok(now_ms.saturating_sub(n.saturating_mul(ms)))
}
