//! Filters for listing and recalling memories, compiled to SQL over the
//! `memory_labels` projection table. Every value is a bound parameter, never SQL text.

use rusqlite::types::Value as SqlValue;

use super::model::PLAIN_KIND;
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
        // A plain memory (`kind` = `memory`, most of them) has no kind label: it is
        // the entry with none but the `kind:memory` an earlier writer may have left.
        if self.kind.as_deref() == Some(PLAIN_KIND) {
            sql.push_str(
                " AND NOT EXISTS (SELECT 1 FROM memory_labels l WHERE l.seq = m.seq \
                 AND l.label >= 'kind:' AND l.label < 'kind;' AND l.label <> 'kind:memory')",
            );
        }
        let labels = self
            .kind
            .iter()
            .filter(|k| k.as_str() != PLAIN_KIND)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Projection;

    /// The seqs of the memories `filter` keeps, by both of its SQL forms, in a real
    /// tracker file holding: 1, a plain memory with the `kind:memory` row earlier
    /// writers gave it; 2, a plain memory with no kind label; 3, a note.
    fn kept(filter: &MemoryFilter) -> (Vec<i64>, Vec<i64>, String) {
        let dir = tempfile::tempdir().unwrap();
        let db = rusqlite::Connection::open(dir.path().join("tracker.db")).unwrap();
        super::super::MemoryProjection.create(&db).unwrap();
        for seq in 1..=3 {
            db.execute(
                "INSERT INTO memories (seq, key_hash, id, tags, metadata, created_ms, updated_ms)
                 VALUES (?1, ?1, ?1, '[]', '{}', 0, 0)",
                [seq],
            )
            .unwrap();
        }
        for (label, seq) in [("kind:memory", 1), ("task:debug", 2), ("kind:note", 3)] {
            db.execute(
                "INSERT INTO memory_labels (label, seq) VALUES (?1, ?2)",
                rusqlite::params![label, seq],
            )
            .unwrap();
        }
        let run = |(sql, args): (String, Vec<SqlValue>)| -> Vec<i64> {
            let q = format!("SELECT m.seq FROM memories m WHERE 1{sql} ORDER BY m.seq");
            let mut stmt = db.prepare(&q).unwrap();
            let rows = stmt
                .query_map(rusqlite::params_from_iter(args), |r| r.get(0))
                .unwrap();
            rows.collect::<rusqlite::Result<_>>().unwrap()
        };
        let (sql, args) = filter.sql();
        let plan: Vec<String> = db
            .prepare(&format!(
                "EXPLAIN QUERY PLAN SELECT m.seq FROM memories m WHERE 1{sql}"
            ))
            .unwrap()
            .query_map(rusqlite::params_from_iter(args), |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        (
            run(filter.sql()),
            run(filter.sql_per_row()),
            plan.join("\n"),
        )
    }

    #[test]
    fn a_plain_memory_is_the_entry_without_a_kind_label() {
        let only = |kind: &str| MemoryFilter {
            kind: Some(kind.into()),
            ..MemoryFilter::default()
        };
        let (rows, per_row, plan) = kept(&only("memory"));
        assert_eq!(rows, [1, 2]);
        assert_eq!(per_row, [1, 2]);
        // Each memory is tested by its own labels (the `seq` index), not by reading
        // every typed entry's kind label.
        assert!(plan.contains("memory_labels_by_seq"), "{plan}");
        let (rows, per_row, _) = kept(&only("note"));
        assert_eq!((rows, per_row), (vec![3], vec![3]));
        let (rows, _, _) = kept(&MemoryFilter::default());
        assert_eq!(rows, [1, 2, 3]);
    }
}
