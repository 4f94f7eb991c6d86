//! The seeds' spellings of a memory line, brought to engram's before it is parsed.
//!
//! Import accepts, besides engram's own fields (see `jsonl`):
//!
//! | field | from | becomes |
//! |---|---|---|
//! | `context` | Galaxybrain (003) | `contexts` (a serde alias on [`Memory`]) |
//! | `symbol_keys` | 003 | `symbols`: key strings as they are, hash64 integers (unsigned, or signed as SQLite shows them) resolved to the live key |
//! | `created_at`, `updated_at`, `timestamp` | 003, memory_lib (004) | `created_ms`, `updated_ms` (`timestamp` is the creation time); ISO 8601 or epoch seconds |
//! | `key_hash` | 003 | checked against `hash64(id)`, then dropped |
//! | an id that is no memory id (004's UUID4) | 004 | `mem:` + the first 8 hex digits of `hash64(id)`, the original kept in `metadata.legacy_id` |
//! | `type: "non-code"` with `content`, `title`, `category`, `file_path` | 004 | `text`; `metadata.title`, `.category`, `.file_path`; `file_path` also as the symbol `file:…` |
//! | `metadata` as a JSON-encoded string | 004 (its SQLite column) | the object |
//!
//! `type: "code"` lines are refused (code entities come from indexing the source).
//! Everything else unknown is still refused when the result is parsed as a [`Memory`].
//! Export writes engram's spelling only.

use serde_json::{Map, Value};

use super::model::{InvalidMemory, Memory};
use crate::key::hash64;
use crate::store::StoreError;

/// Resolves a hash64 to its live key; `Err` is a store failure, reported as is.
/// Called from every thread that parses an import's lines.
pub(crate) type Resolve<'a> = dyn Fn(u64) -> Result<Option<String>, StoreError> + Sync + 'a;

/// Why one line of an import cannot be taken, in either spelling; the text says
/// what to write instead (it is reported after the line's number).
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    /// Not JSON, or JSON that does not fit a memory's fields (serde's own words).
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    #[error("a line must be one JSON object")]
    NotAnObject,
    #[error(transparent)]
    Invalid(#[from] InvalidMemory),
    #[error("metadata is a string but not JSON ({0})")]
    MetadataText(#[source] serde_json::Error),
    #[error("metadata must be a JSON object")]
    MetadataNotAnObject,
    #[error("a memory_lib code entity (type \"code\") is not a memory; index the source instead (engram index)")]
    CodeEntity,
    #[error("type {kind} is not one of \"non-code\" (memory_lib notes) or \"code\"; engram's own field is kind")]
    UnknownType { kind: Value },
    #[error("id must be a string, not {id}")]
    IdNotAString { id: Value },
    #[error("a legacy id is 1 to 256 bytes")]
    LegacyIdLength,
    #[error("id {id:?} is not a memory id, so it is kept as metadata.legacy_id, but that is already {kept}")]
    LegacyIdTaken { id: String, kept: Value },
    #[error("key_hash {value} is not a 64-bit integer")]
    KeyHashNotAnInteger { value: Value },
    #[error("key_hash is given without an id to check it against")]
    KeyHashWithoutId,
    #[error("key_hash {given} is not hash64({id:?}) = {expected} (signed {}); the line is corrupt or the id was changed", *expected as i64)]
    KeyHashMismatch {
        given: u64,
        id: String,
        expected: u64,
    },
    #[error("give content or text, not both")]
    ContentAndText,
    #[error("{field} must be a string, not {value}")]
    NotAString { field: &'static str, value: Value },
    #[error("symbols must be a list of keys")]
    SymbolsNotAList,
    #[error("{field} is given both as a field and in metadata, differently")]
    MetadataConflict { field: String },
    #[error("give one of {}, not several", fields.join(", "))]
    SeveralTimes { fields: Vec<&'static str> },
    #[error("{field}: {problem}")]
    Time {
        field: &'static str,
        problem: TimeError,
    },
    #[error("symbol_keys must be a list of keys or hash64 integers")]
    SymbolKeysNotAList,
    #[error("symbol_keys[{index}]: no live key has hash64 {hash} (signed {}); index the repository first, or give the key itself", *hash as i64)]
    UnknownHash { index: usize, hash: u64 },
    #[error("symbol_keys[{index}]: {item} is neither a key nor a hash64 integer")]
    NotAKey { index: usize, item: Value },
    /// Looking a hash64 up in the store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why a time field's value is no time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeError {
    #[error("{value} is not epoch seconds between 1970 and 9999")]
    EpochRange { value: serde_json::Number },
    #[error("{value} is neither ISO 8601 text nor epoch seconds")]
    NotATime { value: Value },
    #[error("{text:?} is not an ISO 8601 time such as 2025-01-15T10:30:00Z")]
    NotIso8601 { text: String },
    #[error("{text:?} is before 1970")]
    Before1970 { text: String },
}

/// A line as parsed: the memory, and the legacy id its id was derived from, if the
/// line's id was not a memory id (the id is then settled when the batch is written).
pub(super) struct Parsed {
    pub memory: Memory,
    pub legacy: Option<String>,
}

/// Parse one non-blank line in either spelling and validate it.
pub(super) fn parse_line(line: &str, resolve: &Resolve<'_>) -> Result<Parsed, LineError> {
    let value: Value = serde_json::from_str(line)?;
    let Value::Object(obj) = value else {
        return Err(LineError::NotAnObject);
    };
    let (obj, legacy) = to_engram(obj, resolve)?;
    let mut memory: Memory = serde_json::from_value(Value::Object(obj))?;
    memory.validate()?;
    Ok(Parsed { memory, legacy })
}

#[cfg(test)]
fn parse_memory(line: &str, resolve: &Resolve<'_>) -> Result<Memory, LineError> {
    parse_line(line, resolve).map(|p| p.memory)
}

/// The id a legacy (non-`mem:`) id maps to; `round` > 0 re-rolls after a collision.
pub(super) fn derived_id(legacy: &str, round: u32) -> String {
    let h = if round == 0 {
        hash64(legacy)
    } else {
        hash64(&format!("{legacy}#{round}"))
    };
    format!("mem:{:08x}", h >> 32)
}

/// The legacy id a memory was imported under, if any.
pub(super) fn legacy_id(m: &Memory) -> Option<&str> {
    m.metadata.get("legacy_id").and_then(Value::as_str)
}

type Engram = (Map<String, Value>, Option<String>);

fn to_engram(mut obj: Map<String, Value>, resolve: &Resolve<'_>) -> Result<Engram, LineError> {
    // memory_lib's metadata column is a JSON-encoded dict; its optional columns are null.
    match obj.get("metadata") {
        Some(Value::Null) => {
            obj.remove("metadata");
        }
        Some(Value::String(s)) => {
            let parsed: Value = serde_json::from_str(s).map_err(LineError::MetadataText)?;
            match parsed {
                Value::Object(_) => obj.insert("metadata".into(), parsed),
                Value::Null => obj.remove("metadata"),
                _ => return Err(LineError::MetadataNotAnObject),
            };
        }
        _ => {}
    }
    if let Some(kind) = obj.remove("type") {
        match kind.as_str() {
            Some("non-code") => non_code(&mut obj)?,
            Some("code") => return Err(LineError::CodeEntity),
            _ => return Err(LineError::UnknownType { kind }),
        }
    }
    times(&mut obj)?;
    if let Some(keys) = obj.remove("symbol_keys") {
        symbol_keys(&mut obj, keys, resolve)?;
    }
    let key_hash = obj.remove("key_hash");
    let mut legacy = None;
    let original_id = match obj.get("id") {
        // An empty id is none given (what `Memory::new` serialises): a fresh one.
        Some(Value::String(s)) if s.is_empty() => {
            obj.remove("id");
            None
        }
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Null) | None => {
            obj.remove("id");
            None
        }
        Some(other) => return Err(LineError::IdNotAString { id: other.clone() }),
    };
    if let Some(id) = &original_id {
        if !id.starts_with("mem:") && super::normalise_id(id).is_err() {
            if id.trim().is_empty() || id.len() > 256 {
                return Err(LineError::LegacyIdLength);
            }
            let meta = obj
                .entry("metadata")
                .or_insert_with(|| Value::Object(Map::new()));
            let Value::Object(meta) = meta else {
                return Err(LineError::MetadataNotAnObject);
            };
            match meta.get("legacy_id") {
                Some(Value::String(l)) if l == id => {}
                Some(other) => {
                    return Err(LineError::LegacyIdTaken {
                        id: id.clone(),
                        kept: other.clone(),
                    })
                }
                None => {
                    meta.insert("legacy_id".into(), Value::String(id.clone()));
                }
            }
            obj.insert("id".into(), Value::String(derived_id(id, 0)));
            legacy = Some(id.clone());
        }
    }
    if let Some(h) = key_hash {
        let Some(given) = hash_of(&h) else {
            return Err(LineError::KeyHashNotAnInteger { value: h });
        };
        let Some(id) = &original_id else {
            return Err(LineError::KeyHashWithoutId);
        };
        let canonical = super::normalise_id(id).unwrap_or_else(|_| id.clone());
        if given != hash64(id) && given != hash64(&canonical) {
            return Err(LineError::KeyHashMismatch {
                given,
                expected: hash64(&canonical),
                id: canonical,
            });
        }
    }
    Ok((obj, legacy))
}

/// memory_lib's non-code memory: `content` is the text; `title`, `category` and
/// `file_path` go to metadata, `file_path` also to symbols.
fn non_code(obj: &mut Map<String, Value>) -> Result<(), LineError> {
    match (obj.remove("content"), obj.contains_key("text")) {
        (Some(_), true) => return Err(LineError::ContentAndText),
        (Some(c), false) => {
            obj.insert("text".into(), c);
        }
        (None, _) => {}
    }
    let mut moved = Map::new();
    for field in ["title", "category", "file_path"] {
        match obj.remove(field) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) => {
                moved.insert(field.into(), Value::String(s));
            }
            Some(value) => return Err(LineError::NotAString { field, value }),
        }
    }
    if let Some(Value::String(path)) = moved.get("file_path") {
        let key = format!("file:{}", path.trim_start_matches("./"));
        let symbols = obj
            .entry("symbols")
            .or_insert_with(|| Value::Array(Vec::new()));
        let Value::Array(symbols) = symbols else {
            return Err(LineError::SymbolsNotAList);
        };
        if !symbols.iter().any(|s| s.as_str() == Some(key.as_str())) {
            symbols.push(Value::String(key));
        }
    }
    if !moved.is_empty() {
        let meta = obj
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        let Value::Object(meta) = meta else {
            return Err(LineError::MetadataNotAnObject);
        };
        for (k, v) in moved {
            if meta.get(&k).is_some_and(|old| old != &v) {
                return Err(LineError::MetadataConflict { field: k });
            }
            meta.insert(k, v);
        }
    }
    Ok(())
}

/// `created_at`/`timestamp` → `created_ms`, `updated_at` → `updated_ms`.
fn times(obj: &mut Map<String, Value>) -> Result<(), LineError> {
    for (names, target) in [
        (&["created_at", "timestamp"][..], "created_ms"),
        (&["updated_at"][..], "updated_ms"),
    ] {
        let given: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| obj.get(*n).is_some_and(|v| !v.is_null()))
            .collect();
        if given.len() + usize::from(obj.contains_key(target)) > 1 {
            let mut all = given.clone();
            if obj.contains_key(target) {
                all.push(target);
            }
            return Err(LineError::SeveralTimes { fields: all });
        }
        let mut ms = None;
        for n in names {
            if let Some(v) = obj.remove(*n) {
                if !v.is_null() {
                    ms =
                        Some(time_ms(&v).map_err(|problem| LineError::Time { field: n, problem })?);
                }
            }
        }
        if let Some(ms) = ms {
            obj.insert(target.into(), Value::from(ms));
        }
    }
    Ok(())
}

/// `symbol_keys` (key strings or hash64 integers) merged into `symbols`.
fn symbol_keys(
    obj: &mut Map<String, Value>,
    keys: Value,
    resolve: &Resolve<'_>,
) -> Result<(), LineError> {
    let items = match keys {
        Value::Array(a) => a,
        Value::Null => Vec::new(),
        // 003 keeps the list as a JSON-encoded TEXT column.
        Value::String(s) => match serde_json::from_str::<Value>(&s) {
            Ok(Value::Array(a)) => a,
            _ => return Err(LineError::SymbolKeysNotAList),
        },
        _ => return Err(LineError::SymbolKeysNotAList),
    };
    let mut resolved = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let key = match (item, hash_of(item)) {
            (_, Some(hash)) => resolve(hash)?.ok_or(LineError::UnknownHash { index: i, hash })?,
            (Value::String(s), None) => s.clone(),
            _ => {
                return Err(LineError::NotAKey {
                    index: i,
                    item: item.clone(),
                })
            }
        };
        resolved.push(Value::String(key));
    }
    let symbols = obj
        .entry("symbols")
        .or_insert_with(|| Value::Array(Vec::new()));
    let Value::Array(symbols) = symbols else {
        return Err(LineError::SymbolsNotAList);
    };
    for k in resolved {
        if !symbols.contains(&k) {
            symbols.push(k);
        }
    }
    Ok(())
}

/// A hash64 given as an unsigned or signed 64-bit integer, or as one in decimal text.
fn hash_of(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64().or_else(|| n.as_i64().map(|i| i as u64)),
        Value::String(s)
            if !s.is_empty()
                && s.trim_start_matches('-')
                    .bytes()
                    .all(|b| b.is_ascii_digit()) =>
        {
            s.parse::<u64>()
                .ok()
                .or_else(|| s.parse::<i64>().ok().map(|i| i as u64))
        }
        _ => None,
    }
}

/// Unix milliseconds from epoch seconds (integer or fraction) or ISO 8601 text.
fn time_ms(v: &Value) -> Result<u64, TimeError> {
    match v {
        Value::Number(n) => {
            let secs = n.as_f64().unwrap_or(f64::NAN);
            if !(0.0..=253_402_300_799.0).contains(&secs) {
                return Err(TimeError::EpochRange { value: n.clone() });
            }
            Ok((secs * 1000.0).round() as u64)
        }
        Value::String(s) => iso8601_ms(s),
        other => Err(TimeError::NotATime {
            value: other.clone(),
        }),
    }
}

/// `YYYY-MM-DD[T ]HH:MM:SS[.fraction][Z|±HH:MM|±HHMM]`; no zone means UTC (Python's
/// `datetime.utcnow().isoformat()`). Unix milliseconds, the fraction truncated.
pub(super) fn iso8601_ms(s: &str) -> Result<u64, TimeError> {
    let bad = || TimeError::NotIso8601 { text: s.into() };
    let b = s.trim().as_bytes();
    let num = |r: std::ops::Range<usize>| -> Result<i64, TimeError> {
        let d = b.get(r).ok_or_else(bad)?;
        if d.iter().all(u8::is_ascii_digit) {
            Ok(d.iter().fold(0i64, |a, &c| a * 10 + i64::from(c - b'0')))
        } else {
            Err(bad())
        }
    };
    if b.len() < 19
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't' | b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return Err(bad());
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days_in = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1970..=9999).contains(&y)
        || !(1..=12).contains(&mo)
        || d < 1
        || d > days_in[(mo - 1) as usize]
        || h > 23
        || mi > 59
        || sec > 60
    {
        return Err(bad());
    }
    let mut i = 19;
    let mut ms = 0i64;
    if b.get(i) == Some(&b'.') || b.get(i) == Some(&b',') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return Err(bad());
        }
        let frac = &b[start..i.min(start + 3)];
        ms = frac.iter().fold(0i64, |a, &c| a * 10 + i64::from(c - b'0'))
            * 10i64.pow(3 - frac.len() as u32);
    }
    let offset_s = match b.get(i) {
        None => 0,
        Some(b'Z' | b'z') if i + 1 == b.len() => 0,
        Some(&sign @ (b'+' | b'-')) => {
            let (oh, om) = match b.len() - i {
                6 if b[i + 3] == b':' => (num(i + 1..i + 3)?, num(i + 4..i + 6)?),
                5 => (num(i + 1..i + 3)?, num(i + 3..i + 5)?),
                3 => (num(i + 1..i + 3)?, 0),
                _ => return Err(bad()),
            };
            if oh > 23 || om > 59 {
                return Err(bad());
            }
            let o = oh * 3600 + om * 60;
            if sign == b'+' {
                o
            } else {
                -o
            }
        }
        _ => return Err(bad()),
    };
    // Days from 1970-01-01 to the civil date (Howard Hinnant's days_from_civil).
    let (yy, mm) = if mo <= 2 {
        (y - 1, mo + 9)
    } else {
        (y, mo - 3)
    };
    let era = yy.div_euclid(400);
    let yoe = yy - era * 400;
    let doy = (153 * mm + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec - offset_s;
    if secs < 0 {
        return Err(TimeError::Before1970 { text: s.into() });
    }
    Ok((secs * 1000 + ms) as u64)
}

#[cfg(test)]
#[path = "jsonl_compat_tests.rs"]
mod tests;
