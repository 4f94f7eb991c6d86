//! Notes: key/value pairs per repository, human-editable, with provenance.
//!
//! A note is an entry of kind `note` whose text is the value and whose metadata names
//! it; setting an existing name writes a new version, so a note's history is kept like
//! any entry's. Found by name through the `note:{name}` label.

use serde_json::Value;

use super::{Memories, Memory, MemoryError, MemoryFilter, Result};

/// A note name, trimmed and checked.
pub(crate) fn check_name(name: &str) -> Result<&str> {
    let n = name.trim();
    if n.is_empty() || n.len() > 128 || n.chars().any(char::is_control) {
        return Err(MemoryError::Invalid(format!(
            "note name {name:?} must be 1 to 128 bytes without control characters"
        )));
    }
    Ok(n)
}

impl Memories {
    /// Set note `name` to `value` (a new version if it exists).
    pub fn note_set(&self, name: &str, value: &str, provenance: Option<&str>) -> Result<Memory> {
        let (name, m) = note_entry(name, value, provenance)?;
        // Which entry holds the note is read under the writer lock, so two processes
        // setting a new note at once make one entry with two versions, not two notes.
        let label = format!("note:{name}");
        self.locked_ahead(&[&m], |l| match l.find_by_label(&label)? {
            Some(old) => self.update_locked(l, &old.id, m.clone()),
            None => self.write_locked(l, m.clone()),
        })
    }

    /// The note named `name`.
    pub fn note_get(&self, name: &str) -> Result<Option<Memory>> {
        let name = check_name(name)?;
        self.find_by_label(&format!("note:{name}"))
    }

    /// Every note, most recently set first.
    pub fn note_list(&self) -> Result<Vec<Memory>> {
        let filter = MemoryFilter {
            kind: Some("note".into()),
            ..MemoryFilter::default()
        };
        self.list_filtered(&filter, usize::MAX >> 1, 0)
    }

    /// Delete note `name`; false when there was none.
    pub fn note_delete(&self, name: &str) -> Result<bool> {
        let label = format!("note:{}", check_name(name)?);
        self.locked(|l| match l.find_by_label(&label)? {
            Some(m) => self.forget_locked(l, &m.id),
            None => Ok(false),
        })
    }
}

/// The entry note `name` is set to `value` as (the name checked and trimmed, returned
/// beside it).
pub(crate) fn note_entry<'n>(
    name: &'n str,
    value: &str,
    provenance: Option<&str>,
) -> Result<(&'n str, Memory)> {
    let name = check_name(name)?;
    let mut m = Memory::new(value);
    m.kind = "note".into();
    m.metadata.insert("name".into(), Value::String(name.into()));
    if let Some(p) = provenance {
        m.provenance = p.into();
    }
    Ok((name, m))
}

/// The name of a note entry.
pub fn note_name(m: &Memory) -> Option<&str> {
    m.metadata.get("name").and_then(Value::as_str)
}
