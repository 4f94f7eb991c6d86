//! Secrets already in a store: found in every record of the log, and purged.
//!
//! An older engram (or another tool writing the store) may have let a secret through.
//! [`find_stored_secrets`] reads every record still in `blob.dat` — live values, the
//! versions history keeps, audit events, and superseded records the next compaction
//! drops — and reports which hold a secret, by rule, never the text.
//! [`redact_stored_secrets`] compacts the log with every such record rewritten through
//! the same scanner every way in uses, then purges `tracker.db`'s freed pages, so the
//! old bytes are in no file of the store afterwards.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use super::secret_text::{redact_json, redact_secrets};
use super::PatternError;
use crate::store::{CompactReport, RecordKind, RecordView, Store};

/// One record holding secrets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredSecret {
    pub offset: u64,
    /// `put`, `event`, …
    pub kind: &'static str,
    /// The record's key, or the event's name.
    pub key: String,
    /// Whether the record is a key's live value (else a kept version, an event, or a
    /// superseded record the next compaction drops).
    pub live: bool,
    /// Secrets found, by kind (never the text).
    pub secrets: u64,
}

/// What [`redact_stored_secrets`] did.
#[derive(Debug, Clone, Serialize)]
pub struct RedactReport {
    /// Records rewritten with their secrets replaced.
    pub records_rewritten: u64,
    pub compaction: CompactSummary,
}

/// The compaction behind a redaction.
#[derive(Debug, Clone, Serialize)]
pub struct CompactSummary {
    pub bytes_before: u64,
    pub bytes_after: u64,
    pub generation: u64,
}

/// Every record of the log that holds a secret; see the module doc.
pub fn find_stored_secrets(store: &Store) -> Result<Vec<StoredSecret>, PatternError> {
    let (live, view) = store.read_with(|db| {
        let mut stmt = db.prepare("SELECT offset FROM records")?;
        let rows = stmt.query_map([], |r| r.get::<_, i64>(0))?;
        Ok(rows
            .map(|r| r.map(|o| o as u64))
            .collect::<rusqlite::Result<std::collections::HashSet<u64>>>()?)
    })?;
    let mut out = Vec::new();
    for item in view.snapshot().records() {
        let (offset, rec) = item?;
        if !matches!(rec.kind, RecordKind::Put | RecordKind::Event) {
            continue;
        }
        let Some((_, _, found)) = redacted(&rec)? else {
            continue;
        };
        let name = record_name(&rec);
        out.push(StoredSecret {
            offset,
            kind: rec.kind.name(),
            key: name,
            live: live.contains(&offset),
            secrets: found,
        });
    }
    Ok(out)
}

/// Compact the store with every secret replaced, then purge the tracker's freed pages;
/// see the module doc.
pub fn redact_stored_secrets(store: &Store) -> Result<RedactReport, PatternError> {
    let mut failure: Option<PatternError> = None;
    let mut rewrite = |rec: &RecordView<'_>| -> Option<(Vec<u8>, Vec<u8>)> {
        if !matches!(rec.kind, RecordKind::Put | RecordKind::Event) || failure.is_some() {
            return None;
        }
        match redacted(rec) {
            Ok(r) => r.map(|(meta, body, _)| (meta, body)),
            Err(e) => {
                failure = Some(e);
                None
            }
        }
    };
    let report: CompactReport = store.compact_rewriting(&mut rewrite)?;
    if let Some(e) = failure {
        return Err(e);
    }
    store.purge_tracker()?;
    Ok(RedactReport {
        records_rewritten: report.records_rewritten,
        compaction: CompactSummary {
            bytes_before: report.bytes_before,
            bytes_after: report.bytes_after,
            generation: report.generation,
        },
    })
}

/// The record's metadata and body with secrets replaced, and how many there were, or
/// `None` when it holds none. The `key` field is left as it is: it names the record.
type Rewritten = (Vec<u8>, Vec<u8>, u64);

fn redacted(rec: &RecordView<'_>) -> Result<Option<Rewritten>, PatternError> {
    let mut found = 0u64;
    let meta = if rec.meta.is_empty() {
        rec.meta.to_vec()
    } else {
        match serde_json::from_slice::<Map<String, Value>>(rec.meta) {
            Ok(mut m) => {
                let mut n = 0;
                for (k, v) in m.iter_mut() {
                    if k != "key" {
                        n += redact_json(v)?;
                    }
                }
                if n > 0 {
                    found += n;
                    serde_json::to_vec(&m).map_err(|e| PatternError::Invalid(e.to_string()))?
                } else {
                    rec.meta.to_vec()
                }
            }
            Err(_) => rec.meta.to_vec(),
        }
    };
    let body = match std::str::from_utf8(rec.body) {
        Ok(text) => {
            let r = redact_secrets(text)?;
            if r.secrets > 0 {
                found += r.secrets;
                r.text.into_bytes()
            } else {
                rec.body.to_vec()
            }
        }
        Err(_) => rec.body.to_vec(),
    };
    Ok((found > 0).then_some((meta, body, found)))
}

fn record_name(rec: &RecordView<'_>) -> String {
    let meta: Map<String, Value> = serde_json::from_slice(rec.meta).unwrap_or_default();
    meta.get("key")
        .or_else(|| meta.get("event"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// Secrets found per record kind, for a summary line.
pub fn summarise(found: &[StoredSecret]) -> BTreeMap<&'static str, u64> {
    let mut by = BTreeMap::new();
    for f in found {
        *by.entry(f.kind).or_default() += f.secrets;
    }
    by
}
