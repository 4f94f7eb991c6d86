//! What a new session should know first, and patterns across sessions — both computed
//! from the entries alone, without a model.
//!
//! The project context is a text block within a byte budget: recent sessions, open
//! pitfalls, constraints and todos, the most changed files, unresolved errors and key
//! decisions, in that order, each section cut to fit. Pattern analysis counts
//! recurring error types, files that change together, hot files and decision tags.
//!
//! Both read entries only through [`MemoryBackend::list_filtered`], so they answer
//! for whichever backend holds the memories: the local store, or the team backend,
//! where they see only the caller's repository's rows.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use serde_json::Value;

use super::{Memories, Memory, MemoryBackend, MemoryFilter, Result};

/// What pattern analysis finds.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PatternReport {
    /// (error type, total occurrences), most frequent first.
    pub recurring_errors: Vec<(String, u64)>,
    /// (file, file, sessions in which both changed), most frequent first.
    pub co_changes: Vec<(String, String, u64)>,
    /// (file, changes), most changed first.
    pub hot_files: Vec<(String, u64)>,
    /// Month (`YYYY-MM`) → decision tag → count.
    pub decision_tags: BTreeMap<String, BTreeMap<String, u64>>,
}

fn of_kind(b: &dyn MemoryBackend, kind: &str, limit: usize) -> Result<Vec<Memory>> {
    let filter = MemoryFilter {
        kind: Some(kind.into()),
        ..MemoryFilter::default()
    };
    b.list_filtered(&filter, limit, 0)
}

impl Memories {
    /// The context block for a new session, at most `budget` bytes.
    pub fn project_context(&self, budget: usize) -> Result<String> {
        project_context_of(self, budget, &|_| None)
    }

    /// [`project_context_of`] this store.
    pub fn project_context_marked(
        &self,
        budget: usize,
        mark: &dyn Fn(&Memory) -> Option<String>,
    ) -> Result<String> {
        project_context_of(self, budget, mark)
    }

    /// [`analyze_patterns_of`] this store.
    pub fn analyze_patterns(&self) -> Result<PatternReport> {
        analyze_patterns_of(self)
    }
}

/// The context block for a new session from the memories of `b`, at most `budget`
/// bytes, where `mark` may tag an entry (a `[stale: …]` label, say): a tagged
/// entry's line ends with the tag, and it is listed after the untagged entries of its
/// section (which are otherwise in the same order).
pub fn project_context_of(
    b: &dyn MemoryBackend,
    budget: usize,
    mark: &dyn Fn(&Memory) -> Option<String>,
) -> Result<String> {
    let first_line = |m: &Memory| m.text.lines().next().unwrap_or("").to_string();
    let tagged = |m: &Memory, line: String| match mark(m) {
        Some(tag) => (true, format!("{line} {tag}")),
        None => (false, line),
    };
    let ordered = |mut lines: Vec<(bool, String)>| -> Vec<String> {
        lines.sort_by_key(|(stale, _)| *stale);
        lines.into_iter().map(|(_, l)| l).collect()
    };
    let mut sections: Vec<(String, Vec<String>)> = Vec::new();
    let sessions = of_kind(b, "session", 5)?;
    sections.push((
        "Recent sessions".into(),
        sessions.iter().map(first_line).collect(),
    ));
    for insight in ["pitfall", "constraint", "todo"] {
        let filter = MemoryFilter {
            insights: vec![insight.into()],
            ..MemoryFilter::default()
        };
        let items = b.list_filtered(&filter, 10, 0)?;
        sections.push((
            format!("Open {insight}s"),
            ordered(
                items
                    .iter()
                    .map(|m| tagged(m, format!("{} [{}]", first_line(m), m.id)))
                    .collect(),
            ),
        ));
    }
    let hot = analyze_patterns_of(b)?.hot_files;
    sections.push((
        "Most changed files".into(),
        hot.iter()
            .take(10)
            .map(|(f, n)| format!("{f} ({n} changes)"))
            .collect(),
    ));
    let errors: Vec<(bool, String)> = of_kind(b, "error", 50)?
        .iter()
        .filter(|e| !is_resolved(e))
        .take(10)
        .map(|e| {
            let n = e
                .metadata
                .get("frequency")
                .and_then(Value::as_u64)
                .unwrap_or(1);
            tagged(e, format!("{} (seen {n}x) [{}]", first_line(e), e.id))
        })
        .collect();
    sections.push(("Unresolved errors".into(), ordered(errors)));
    let decisions = of_kind(b, "decision", 10)?;
    sections.push((
        "Key decisions".into(),
        ordered(
            decisions
                .iter()
                .map(|d| tagged(d, format!("{} [{}]", first_line(d), d.id)))
                .collect(),
        ),
    ));

    let mut out = String::new();
    for (title, lines) in sections {
        if lines.is_empty() {
            continue;
        }
        let head = format!("## {title}\n");
        if out.len() + head.len() > budget {
            break;
        }
        out.push_str(&head);
        for l in lines {
            let line = format!("- {l}\n");
            if out.len() + line.len() > budget {
                return Ok(out);
            }
            out.push_str(&line);
        }
    }
    Ok(out)
}

/// Counts across every recorded error, file change and decision of `b`.
pub fn analyze_patterns_of(b: &dyn MemoryBackend) -> Result<PatternReport> {
    let all = usize::MAX >> 1;
    let mut report = PatternReport::default();

    let mut errors: HashMap<String, u64> = HashMap::new();
    for e in of_kind(b, "error", all)? {
        let t = e
            .metadata
            .get("error_type")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string();
        *errors.entry(t).or_default() += e
            .metadata
            .get("frequency")
            .and_then(Value::as_u64)
            .unwrap_or(1);
    }
    report.recurring_errors = sorted(errors);

    let mut hot: HashMap<String, u64> = HashMap::new();
    let mut by_session: HashMap<String, Vec<String>> = HashMap::new();
    for c in of_kind(b, "file_change", all)? {
        let Some(path) = c.metadata.get("path").and_then(Value::as_str) else {
            continue;
        };
        *hot.entry(path.to_string()).or_default() += 1;
        if let Some(s) = &c.session {
            let files = by_session.entry(s.clone()).or_default();
            if !files.iter().any(|f| f == path) {
                files.push(path.to_string());
            }
        }
    }
    report.hot_files = sorted(hot);
    let mut pairs: HashMap<(String, String), u64> = HashMap::new();
    for mut files in by_session.into_values() {
        files.sort();
        for i in 0..files.len() {
            for j in i + 1..files.len() {
                *pairs
                    .entry((files[i].clone(), files[j].clone()))
                    .or_default() += 1;
            }
        }
    }
    let mut co: Vec<(String, String, u64)> =
        pairs.into_iter().map(|((a, b), n)| (a, b, n)).collect();
    co.sort_by(|x, y| y.2.cmp(&x.2).then_with(|| (&x.0, &x.1).cmp(&(&y.0, &y.1))));
    report.co_changes = co;

    for d in of_kind(b, "decision", all)? {
        let month = month_of(d.created_ms);
        let tags = report.decision_tags.entry(month).or_default();
        for t in &d.tags {
            *tags.entry(t.clone()).or_default() += 1;
        }
    }
    Ok(report)
}

/// An error is settled once marked resolved, fixed by a change, or given a solution.
pub(crate) fn is_resolved(e: &Memory) -> bool {
    e.metadata
        .get("resolved")
        .and_then(Value::as_bool)
        .unwrap_or(false)
        || e.metadata.contains_key("resolved_by")
        || e.metadata.contains_key("solution")
}

fn sorted(counts: HashMap<String, u64>) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = counts.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}

/// `YYYY-MM` of a Unix millisecond timestamp (UTC), by the civil-from-days algorithm.
fn month_of(ms: u64) -> String {
    let days = (ms / 86_400_000) as i64;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn months_are_civil() {
        assert_eq!(super::month_of(0), "1970-01");
        assert_eq!(super::month_of(1_700_000_000_000), "2023-11");
        assert_eq!(super::month_of(951_782_400_000), "2000-02"); // 2000-02-29
    }
}
