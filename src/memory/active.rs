//! The active session: which session a coding record made without a session id
//! joins, and which one an end without an id ends.
//!
//! The rule, the same for every backend: the session the caller started (an MCP
//! connection remembers the one its `coding_start_session` made) while that session
//! is still open; else the store's one open session, when exactly one is open; else
//! none, and the record stays unattached. A session is open while its status is
//! `active`. The local store decides under its writer lock, in the batch that writes
//! the record, so a record never joins a session another process ended meanwhile
//! (after its summary was written). This module never starts or ends a session.

use serde_json::Value;

use super::{Locked, Memories, Memory, MemoryError, Result};

/// What the rule found.
#[derive(Debug, Clone, PartialEq)]
pub enum ActiveSession {
    /// The session a record joins (or an end without an id ends).
    One(String),
    /// No session is open.
    Nothing,
    /// Several are open and the caller started none of them: their entries, most
    /// recently updated first.
    Several(Vec<Memory>),
}

impl ActiveSession {
    /// The id of the session, when there is exactly one.
    pub fn id(&self) -> Option<&str> {
        match self {
            ActiveSession::One(id) => Some(id),
            _ => None,
        }
    }

    /// The session an end without an id ends, or why there is none to end.
    pub fn to_end(&self) -> Result<&str> {
        match self {
            ActiveSession::One(id) => Ok(id),
            ActiveSession::Nothing => Err(MemoryError::Invalid(
                "no active coding session to end; pass its id, or start a session first".into(),
            )),
            ActiveSession::Several(open) => Err(MemoryError::Invalid(format!(
                "{} coding sessions are active; pass the id of the one to end: {}",
                open.len(),
                open.iter()
                    .take(20)
                    .map(|m| format!(
                        "{} ({})",
                        m.id,
                        m.metadata
                            .get("description")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }
}

/// Whether `m` is an open session.
pub fn is_open_session(m: &Memory) -> bool {
    m.kind == "session" && m.metadata.get("status").and_then(Value::as_str) == Some("active")
}

/// The rule over `open` (the open sessions, most recently updated first), for a
/// caller that started `started` (if any).
pub fn active_among(open: &[Memory], started: Option<&str>) -> ActiveSession {
    if let Some(s) = started {
        if open.iter().any(|m| m.id == s) {
            return ActiveSession::One(s.to_string());
        }
    }
    match open {
        [] => ActiveSession::Nothing,
        [one] => ActiveSession::One(one.id.clone()),
        several => ActiveSession::Several(several.to_vec()),
    }
}

/// The ids of the open sessions, most recently updated first. The status is read
/// from the tracker's copy of each entry's metadata, so abandoned sessions however
/// old count too.
fn open_ids(db: &rusqlite::Connection) -> crate::store::Result<Vec<String>> {
    let mut stmt = db.prepare_cached(
        "SELECT m.id FROM memory_labels l JOIN memories m ON m.seq = l.seq
         WHERE l.label = 'kind:session' AND json_extract(m.metadata, '$.status') = 'active'
         ORDER BY m.updated_ms DESC, m.seq DESC",
    )?;
    let rows = stmt.query_map([], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<Vec<String>>>()?)
}

impl Memories {
    /// The open sessions, most recently updated first.
    pub fn open_sessions(&self) -> Result<Vec<Memory>> {
        let ids = self.store().with_tracker(open_ids)?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            out.extend(self.get(&id)?.filter(is_open_session));
        }
        Ok(out)
    }

    /// The session a record made now without a session id would join, for a caller
    /// that started `started` (see the module doc).
    pub fn active_session(&self, started: Option<&str>) -> Result<ActiveSession> {
        Ok(active_among(&self.open_sessions()?, started))
    }

    /// [`Memories::active_session`] as of the lock `l` holds.
    pub(crate) fn active_session_locked(
        &self,
        l: &Locked<'_>,
        started: Option<&str>,
    ) -> Result<ActiveSession> {
        // The common case, a connection recording into the session it started, reads
        // one entry.
        if let Some(s) = started {
            if l.get(s)?.is_some_and(|m| is_open_session(&m)) {
                return Ok(ActiveSession::One(s.to_string()));
            }
        }
        let ids = l.with_tracker(open_ids)?;
        if ids.len() == 1 {
            return Ok(ActiveSession::One(ids[0].clone()));
        }
        let mut open = Vec::with_capacity(ids.len());
        for id in ids {
            open.extend(l.get(&id)?.filter(is_open_session));
        }
        Ok(active_among(&open, None))
    }

    /// Give `session`, when it is unset, the active session as of the lock `l` holds.
    pub(crate) fn join_locked(
        &self,
        l: &Locked<'_>,
        session: &mut Option<String>,
        started: Option<&str>,
    ) -> Result<()> {
        if session.is_none() {
            *session = self
                .active_session_locked(l, started)?
                .id()
                .map(String::from);
        }
        Ok(())
    }
}

impl Memories {
    /// Write the new entry `m` (a file change, a decision); without a session it
    /// joins the active one, decided under the same lock as the write.
    pub(crate) fn write_joining(&self, mut m: Memory, started: Option<&str>) -> Result<Memory> {
        let ahead = m.clone();
        self.locked_ahead(&[&ahead], |l| {
            self.join_locked(l, &mut m.session, started)?;
            self.write_locked(l, m)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{Decision, ErrorReport, FileChange, MemoryProjection};
    use crate::store::StoreOptions;

    fn open(dir: &std::path::Path) -> Memories {
        Memories::open_with_projections(
            dir,
            StoreOptions::default(),
            vec![Box::new(MemoryProjection)],
        )
        .unwrap()
    }

    fn change(path: &str) -> FileChange {
        FileChange {
            path: path.into(),
            action: "edit".into(),
            reason: format!("adjust {path}"),
            ..FileChange::default()
        }
    }

    fn error(message: &str, solution: Option<&str>) -> ErrorReport {
        ErrorReport {
            error_type: "E".into(),
            message: message.into(),
            solution: solution.map(String::from),
            ..ErrorReport::default()
        }
    }

    #[test]
    fn records_without_a_session_join_the_active_one() {
        let dir = tempfile::tempdir().unwrap();
        let m = open(dir.path());
        // No session open: the record stays unattached.
        let before = m.track_file_change(&change("a.rs")).unwrap();
        assert_eq!(before.session, None);
        assert_eq!(m.active_session(None).unwrap(), ActiveSession::Nothing);

        // One open: everything joins it, whoever started it.
        let s1 = m.start_session("first", &[]).unwrap();
        let c = m.track_file_change(&change("src/x.rs")).unwrap();
        let e = m.record_error(&error("boom 1", Some("guard"))).unwrap();
        let d = m
            .record_decision(&Decision {
                decision: "keep it".into(),
                ..Decision::default()
            })
            .unwrap();
        for r in [&c, &e, &d] {
            assert_eq!(r.session.as_deref(), Some(s1.id.as_str()), "{r:?}");
        }
        // A given session is kept.
        let mut elsewhere = change("src/y.rs");
        elsewhere.session = Some("mem:0000abcd".into());
        assert_eq!(
            m.track_file_change(&elsewhere).unwrap().session.as_deref(),
            Some("mem:0000abcd")
        );

        // Two open: a caller that started one joins it; another joins none.
        let s2 = m.start_session("second", &[]).unwrap();
        let none = m.track_file_change(&change("src/z.rs")).unwrap();
        assert_eq!(none.session, None);
        let mine = m
            .track_file_change_joining(&change("src/z.rs"), Some(&s1.id))
            .unwrap();
        assert_eq!(mine.session.as_deref(), Some(s1.id.as_str()));
        let theirs = m
            .record_error_joining(&error("other failure", None), &[], Some(&s2.id))
            .unwrap();
        assert_eq!(theirs.session.as_deref(), Some(s2.id.as_str()));
        match m.active_session(None).unwrap() {
            ActiveSession::Several(open) => {
                let ids: Vec<&str> = open.iter().map(|s| s.id.as_str()).collect();
                assert_eq!(ids, [s2.id.as_str(), s1.id.as_str()]);
            }
            other => panic!("two sessions are open: {other:?}"),
        }
        let refused = m.end_active_session(None, true, None).unwrap_err();
        assert!(
            refused.to_string().contains("2 coding sessions are active")
                && refused.to_string().contains(&s1.id),
            "{refused}"
        );

        // s2 ended: a caller that started it joins the one still open.
        let ended = m.end_active_session(Some(&s2.id), true, None).unwrap();
        assert_eq!(ended.id, s2.id);
        assert_eq!(ended.metadata["errors_encountered"], 1);
        let late = m
            .track_file_change_joining(&change("src/w.rs"), Some(&s2.id))
            .unwrap();
        assert_eq!(late.session.as_deref(), Some(s1.id.as_str()));

        // Ending without an id ends the one open; then none is open.
        let ended = m.end_active_session(None, true, None).unwrap();
        assert_eq!(ended.id, s1.id);
        assert_eq!(
            ended.metadata["files_touched"],
            serde_json::json!(["src/x.rs", "src/z.rs", "src/w.rs"])
        );
        assert!(ended.text.contains("files changed (3)"), "{}", ended.text);
        // An error with a solution is fixed, in the summary and in the count.
        assert!(ended.text.contains("errors fixed (1)"), "{}", ended.text);
        assert_eq!(ended.metadata["errors_fixed"], 1);
        assert_eq!(ended.metadata["errors_encountered"], 1);
        assert_eq!(ended.metadata["decisions_made"], 1);
        assert_eq!(m.active_session(None).unwrap(), ActiveSession::Nothing);
        let refused = m.end_active_session(Some(&s1.id), true, None).unwrap_err();
        assert!(
            refused.to_string().contains("no active coding session"),
            "{refused}"
        );
        let after = m.record_error(&error("late failure", None)).unwrap();
        assert_eq!(after.session, None, "no session is open");
    }

    #[test]
    fn a_file_changed_twice_is_one_file_touched() {
        let dir = tempfile::tempdir().unwrap();
        let m = open(dir.path());
        let s = m.start_session("twice", &[]).unwrap();
        m.track_file_change(&change("src/a.rs")).unwrap();
        let mut again = change("src/a.rs");
        again.action = "refactor".into();
        m.track_file_change(&again).unwrap();
        let ended = m.end_session(&s.id, true).unwrap();
        assert_eq!(
            ended.metadata["files_touched"],
            serde_json::json!(["src/a.rs"])
        );
        assert!(ended.text.contains("files changed (1)"), "{}", ended.text);
        assert!(
            ended.text.contains("edit src/a.rs") && ended.text.contains("refactor src/a.rs"),
            "{}",
            ended.text
        );
    }
}
