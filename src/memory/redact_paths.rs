//! The paths a memory names, through the redactor the code index stores paths with
//! (`patterns::redact_path`): the path inside each key it references (`symbols`,
//! anchors, callee anchors) and the path fields of its metadata (a file change's `path` and
//! `related_files`, a decision's `related_files`, an error's `file`).
//!
//! A secret in a path becomes the same stored form the index gives that file, a pure
//! function of the real path; so `file:notes/<token>.txt` names the record the index
//! wrote for that file, the anchor resolves, and staleness follows the file, while no
//! store file holds the token. Free text (the memory's text, other metadata) is
//! `redact_memory`'s, afterwards; the stored form has nothing left for it to find.
//!
//! Owns: which parts of a memory are paths. Must never change a path that holds no
//! secret.

use serde_json::Value;

use super::{Memory, Result};
use crate::key::Key;
use crate::patterns::redact_path;

/// Metadata fields that hold a path, or a list of paths.
const PATH_FIELDS: [&str; 3] = ["path", "related_files", "file"];

/// Redact the paths of `m` in place; how many were changed.
pub(crate) fn redact_memory_paths(m: &mut Memory) -> Result<u64> {
    let mut n = 0;
    for key in &mut m.symbols {
        n += redact_key(key)?;
    }
    for anchor in &mut m.anchors {
        n += redact_key(&mut anchor.key)?;
    }
    for callee in m.callees.iter_mut().flatten() {
        n += redact_key(&mut callee.of)?;
        n += redact_key(&mut callee.key)?;
    }
    for field in PATH_FIELDS {
        match m.metadata.get_mut(field) {
            Some(Value::String(p)) => n += redact_in_place(p)?,
            Some(Value::Array(list)) => {
                for v in list {
                    if let Value::String(p) = v {
                        n += redact_in_place(p)?;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(n)
}

/// The path inside a code key (`file:`, `sym:`, `chunk:`, `refs:`) as the index
/// stores it; a string that is no key is redacted as a path whole.
fn redact_key(key: &mut String) -> Result<u64> {
    let mut parsed = match Key::parse(key) {
        Ok(k) => k,
        Err(_) => return redact_in_place(key),
    };
    let path = match &mut parsed {
        Key::File { path }
        | Key::Symbol { path, .. }
        | Key::Chunk { path, .. }
        | Key::Refs { path } => path,
        _ => return Ok(0),
    };
    if redact_in_place(path)? == 0 {
        return Ok(0);
    }
    *key = parsed.to_string();
    Ok(1)
}

fn redact_in_place(path: &mut String) -> Result<u64> {
    let stored = match redact_path(path)? {
        std::borrow::Cow::Borrowed(_) => return Ok(0),
        std::borrow::Cow::Owned(s) => s,
    };
    *path = stored;
    Ok(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "ghp_Zq8wLr2TmV9xKc4YpB7nJd3HsF6gQa1Ue5Wi";

    #[test]
    fn a_secret_in_a_key_or_path_field_takes_the_index_s_stored_form() {
        let real = format!("notes/{TOKEN}.txt");
        let stored = redact_path(&real).unwrap().into_owned();
        let mut m = Memory::new("x");
        m.symbols = vec![
            format!("file:{real}"),
            format!("sym:{real}#f:function:1:2"),
            "file:src/lib.rs".into(),
        ];
        m.metadata
            .insert("path".into(), Value::String(real.clone()));
        m.metadata.insert(
            "related_files".into(),
            serde_json::json!([real.clone(), "src/lib.rs"]),
        );
        assert_eq!(redact_memory_paths(&mut m).unwrap(), 4);
        assert_eq!(m.symbols[0], format!("file:{stored}"));
        assert_eq!(m.symbols[1], format!("sym:{stored}#f:function:1:2"));
        assert_eq!(m.symbols[2], "file:src/lib.rs");
        assert_eq!(m.metadata["path"], stored.as_str());
        assert_eq!(
            m.metadata["related_files"],
            serde_json::json!([stored.clone(), "src/lib.rs"])
        );
        // Stored forms are left as they are: redacting twice changes nothing.
        assert_eq!(redact_memory_paths(&mut m).unwrap(), 0);
    }
}
