//! The inspector commands: init, verify, dump, stats, rebuild, salvage, compact. `verify`,
//! `dump` and `salvage` never change the store; they read `blob.dat` as it is, damage and all.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use engram::format::{CommitBody, RecordKind, RecordView};
use engram::memory::Memories;
use engram::store::{Durability, StoreOptions};
use serde_json::{json, Value};
use std::path::Path;

use super::output::Output;
use super::{store_dir, store_options, Cli};

fn existing_store(cli: &Cli) -> Result<std::path::PathBuf> {
    let dir = store_dir(cli)?;
    engram::store::refuse_missing_log(&dir)?;
    if !dir.join(engram::store::BLOB_FILE).exists() {
        bail!(
            "{} is not an engram store (no {}); pass --store DIR",
            dir.display(),
            engram::store::BLOB_FILE
        );
    }
    Ok(dir)
}

/// Create the store's log in an empty or new directory; a directory holding a store,
/// or what is left of one, is refused.
pub fn init(cli: &Cli, out: &Output) -> Result<ExitCode> {
    let dir = store_dir(cli)?;
    if dir.join(engram::store::BLOB_FILE).exists() {
        bail!("{} already holds an engram store", dir.display());
    }
    let memories = Memories::open_with(&dir, store_options(cli, &dir)?)?;
    let created = memories.store().open_report().created;
    if !created {
        bail!("{} already holds an engram store", dir.display());
    }
    out.value(
        &json!({"store": dir.display().to_string(), "created": true}),
        || format!("created an empty store in {}", dir.display()),
    )?;
    Ok(ExitCode::SUCCESS)
}

pub fn verify(cli: &Cli, out: &Output) -> Result<ExitCode> {
    let dir = existing_store(cli)?;
    let pb = out.spinner("verifying");
    let projections = engram::projections();
    let refs: Vec<&dyn engram::store::Projection> =
        projections.iter().map(|p| p.as_ref()).collect();
    let report = engram::store::verify_with(&dir, &refs);
    pb.finish_and_clear();
    let report = report.with_context(|| format!("verifying {}", dir.display()))?;
    let mut v = serde_json::to_value(&report)?;
    v["sound"] = Value::Bool(report.is_sound());
    out.value(&v, || {
        let mut s = String::new();
        for p in &report.problems {
            match p.offset {
                Some(o) => s.push_str(&format!("BAD {} offset {}: {}\n", p.file, o, p.what)),
                None => s.push_str(&format!("BAD {}: {}\n", p.file, p.what)),
            }
        }
        for w in &report.warnings {
            s.push_str(&format!("warning: {w}\n"));
        }
        s.push_str(&format!(
            "{}: {} records in {} batches, {} bytes, {} live keys",
            if report.is_sound() {
                "sound"
            } else {
                "UNSOUND"
            },
            report.records,
            report.batches,
            report.blob_bytes,
            report.live_keys
        ));
        s
    })?;
    Ok(if report.is_sound() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn record_json(offset: u64, rec: &RecordView<'_>) -> Value {
    let meta: Value = if rec.meta.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(rec.meta)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(rec.meta).into_owned()))
    };
    let mut v = json!({
        "offset": offset,
        "kind": rec.kind.name(),
        "seq": rec.seq(),
        "key_hash": rec.key_hash(),
        "timestamp_ms": rec.timestamp_ms(),
        "length": rec.record_len(),
        "meta": meta,
        "body_len": rec.body.len(),
    });
    if rec.kind == RecordKind::Commit {
        if let Ok(c) = CommitBody::decode(rec.body) {
            v["commit"] = json!({
                "batch_start": c.batch_start.get(),
                "prev_commit": c.prev_commit.get(),
                "record_count": c.record_count.get(),
                "first_seq": c.first_seq.get(),
                "batch_crc": c.batch_crc.get(),
            });
        }
    } else if rec.kind == RecordKind::Vector {
        if rec.header.flags.get() & engram::format::FLAG_SEALED != 0 {
            // Sealed (format-spec/encryption.md): the dimension is in the metadata,
            // and the values are not shown.
            v["sealed"] = json!(true);
        } else {
            v["dim"] = json!(rec.body.len() / 4);
        }
    } else {
        match std::str::from_utf8(rec.body) {
            Ok(s) => v["body"] = json!(s),
            Err(_) => {
                v["body_hex"] = json!(rec
                    .body
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect::<String>())
            }
        }
    }
    v
}

fn human_record(v: &Value) -> String {
    let key = v["meta"]["key"].as_str().unwrap_or("-");
    let mut line = format!(
        "@{:<10} {:<9} seq {:<8} {} ({} bytes)",
        v["offset"],
        v["kind"].as_str().unwrap_or("?"),
        v["seq"],
        key,
        v["length"]
    );
    if let Some(c) = v.get("commit") {
        line.push_str(&format!(
            " batch of {} from @{}",
            c["record_count"], c["batch_start"]
        ));
    }
    if let Some(body) = v["body"].as_str() {
        let preview: String = body
            .chars()
            .take(80)
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        if !preview.is_empty() {
            line.push_str(&format!("\n    {preview}"));
        }
    }
    line
}

pub fn dump(
    cli: &Cli,
    out: &Output,
    kind: Option<&str>,
    key: Option<&str>,
    offset: Option<u64>,
    limit: Option<usize>,
) -> Result<ExitCode> {
    let dir = existing_store(cli)?;
    let kind = match kind {
        None => None,
        Some(k) => Some(RecordKind::from_name(k).with_context(|| {
            format!("unknown kind {k:?}; expected one of put, tombstone, commit, vector, event")
        })?),
    };
    let key_hash = key.map(engram::key::hash64);
    let (_, snap) = engram::store::read_log(&dir)?;
    let mut stdout = std::io::stdout().lock();
    if out.is_json() {
        write!(stdout, "{{\"records\":[")?;
    }
    let mut shown = 0usize;
    let mut damaged = None;
    if let Some(off) = offset {
        match snap.record_at(off) {
            Ok(rec) => emit(&mut stdout, out, &record_json(off, &rec), &mut shown)?,
            Err(e) => damaged = Some(e.to_string()),
        }
    } else {
        for item in snap.records() {
            match item {
                Ok((off, rec)) => {
                    if kind.is_some_and(|k| k != rec.kind)
                        || key_hash.is_some_and(|h| h != rec.key_hash())
                    {
                        continue;
                    }
                    if limit.is_some_and(|l| shown >= l) {
                        break;
                    }
                    emit(&mut stdout, out, &record_json(off, &rec), &mut shown)?;
                }
                Err(e) => damaged = Some(e.to_string()),
            }
        }
    }
    if out.is_json() {
        writeln!(
            stdout,
            "],\"error\":{}}}",
            damaged.as_ref().map_or(Value::Null, |e| json!(e))
        )?;
    } else if let Some(e) = &damaged {
        writeln!(stdout, "stopped: {e}")?;
    }
    Ok(if damaged.is_some() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn emit(w: &mut impl Write, out: &Output, v: &Value, shown: &mut usize) -> Result<()> {
    if out.is_json() {
        if *shown > 0 {
            write!(w, ",")?;
        }
        serde_json::to_writer(&mut *w, v)?;
    } else {
        writeln!(w, "{}", human_record(v))?;
    }
    *shown += 1;
    Ok(())
}

pub fn stats(cli: &Cli, out: &Output) -> Result<ExitCode> {
    let dir = existing_store(cli)?;
    let memories = Memories::open_with(&dir, store_options(cli, &dir)?)?;
    let store = memories.store();
    let meta = store.meta()?;
    let snap = store.snapshot()?;
    let mut by_kind = serde_json::Map::new();
    let mut records = 0u64;
    for item in snap.records() {
        let (_, rec) = item?;
        records += 1;
        let n = by_kind.entry(rec.kind.name()).or_insert(json!(0));
        *n = json!(n.as_u64().unwrap_or(0) + 1);
    }
    let size = |name: &str| {
        std::fs::metadata(dir.join(name))
            .map(|m| m.len())
            .unwrap_or(0)
    };
    // The chat-model calls are audited where the audit trail is: the team database's
    // with database_url set.
    let llm_events = match super::config().get_opt("database_url") {
        Some(url) => {
            use engram::gate::AuditLog;
            super::backend::open_team(cli, url)?.0.read_audit(0)?
        }
        None => engram::gate::read_audit(store, 0)?,
    };
    let vector_bytes: u64 = std::fs::read_dir(&dir)?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("vectors-"))
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum();
    let v = json!({
        "store": dir,
        "memories": memories.count()?,
        "records": records,
        "records_by_kind": by_kind,
        "live_keys": store.live_records()?,
        "blob_bytes": snap.len(),
        "tracker_bytes": size(engram::store::TRACKER_FILE) + size("tracker.db-wal"),
        "vector_cache_bytes": vector_bytes,
        "applied_seq": meta.applied_seq,
        "generation": meta.generation,
        "llm": engram::assist::totals(&llm_events),
        "embedder": super::embedder_choice(),
    });
    let embedder = super::embedder_choice();
    out.value(&v, || {
        format!(
            "store       {}\nembedder    {} ({}: {})\nmemories    {}\nrecords     {} in the log, {} live keys\nblob.dat    {} bytes (generation {}, seq {})\ntracker.db  {} bytes\nllm calls   {} ({} failed), {} bytes sent, {} tokens in, {} tokens out, ${:.4}",
            dir.display(),
            embedder.name,
            embedder.reason,
            embedder.detail,
            v["memories"],
            records,
            v["live_keys"],
            v["blob_bytes"],
            meta.generation,
            meta.applied_seq,
            v["tracker_bytes"],
            v["llm"]["calls"],
            v["llm"]["failed"],
            v["llm"]["bytes_sent"],
            v["llm"]["input_tokens"],
            v["llm"]["output_tokens"],
            v["llm"]["cost_usd"].as_f64().unwrap_or(0.0)
        )
    })?;
    Ok(ExitCode::SUCCESS)
}

pub fn rebuild(cli: &Cli, out: &Output) -> Result<ExitCode> {
    let dir = existing_store(cli)?;
    let options = store_options(cli, &dir)?;
    // Without opening the store first: a damaged tracker can make an open fail, and
    // the rebuild never reads it.
    let pb = out.spinner("rebuilding derived files from blob.dat");
    let r = engram::store::rebuild_dir(&dir, options.clone(), engram::projections());
    pb.finish_and_clear();
    let r = r?;
    let memories = Memories::open_with(&dir, options)?;
    out.value(
        &json!({"batches": r.replayed_batches, "truncated_bytes": r.truncated_bytes, "memories": memories.count()?}),
        || format!("rebuilt tracker.db from {} batches", r.replayed_batches),
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Salvage the store's log into a new store in `into` (format-spec/blob-log.md,
/// "Salvage"). The damaged store is read, never opened as a store: opening would
/// recover it, and recovery of a damaged log refuses to write.
pub fn salvage(cli: &Cli, out: &Output, into: &Path) -> Result<ExitCode> {
    let dir = existing_store(cli)?;
    let inside = |a: &Path, b: &Path| -> Result<bool> {
        let a = std::path::absolute(a).with_context(|| format!("resolving {}", a.display()))?;
        let b = b.canonicalize().unwrap_or_else(|_| b.to_path_buf());
        Ok(a.starts_with(&b) || a.canonicalize().is_ok_and(|a| a.starts_with(&b)))
    };
    if inside(into, &dir)? {
        bail!(
            "--into {} is inside the damaged store {}; salvage never writes there, so pass a directory outside it",
            into.display(),
            dir.display()
        );
    }
    let occupied = match std::fs::read_dir(into) {
        Ok(mut entries) => entries.next().is_some(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(e).with_context(|| format!("reading {}", into.display())),
    };
    if occupied {
        bail!(
            "{} is not empty; salvage writes a new store, so pass --into a new or empty directory",
            into.display()
        );
    }
    // Each kept batch is committed without its own sync; `salvage` syncs once at the
    // end. With the store's key configured, the new store is sealed under it and
    // sealed vectors are carried; without, they are counted and left (re-embed).
    let options = StoreOptions {
        durability: Durability::Batch,
        vector_key: super::settings::vector_key(&dir)?,
        ..StoreOptions::default()
    };
    let memories = Memories::open_with(into, options)
        .with_context(|| format!("creating a store in {}", into.display()))?;
    let pb = out.spinner("salvaging blob.dat");
    let report = engram::store::salvage(&dir, memories.store());
    pb.finish_and_clear();
    let report = report.with_context(|| format!("salvaging {}", dir.display()))?;
    let mut v = serde_json::to_value(&report)?;
    v["into"] = Value::String(into.display().to_string());
    v["memories"] = json!(memories.count()?);
    v["lost_keys"] = json!(report.lost_keys());
    out.value(&v, || {
        let mut s = format!(
            "salvaged {} batches ({} records) into {}; {} batches lost",
            report.batches_kept,
            report.records_kept,
            into.display(),
            report.batches_lost
        );
        for d in &report.damaged {
            s.push_str(&format!(
                "\nlost bytes {}..{} ({}): {} records",
                d.start,
                d.end,
                d.why,
                d.lost.len()
            ));
            for r in &d.lost {
                s.push_str(&format!(
                    "\n  seq {} {} {}",
                    r.seq,
                    r.kind,
                    r.key.as_deref().unwrap_or("(key unreadable)")
                ));
            }
        }
        if let Some(h) = &report.header {
            s.push_str(&format!("\n{h}"));
        }
        if report.sealed_vectors_kept > 0 {
            s.push_str(&format!(
                "\n{} sealed vectors carried, sealed again under the same key",
                report.sealed_vectors_kept
            ));
        }
        if report.sealed_vectors_not_carried > 0 {
            s.push_str(&format!(
                "\n{} sealed vectors not carried: no key or another key was given; set the store's key (ENGRAM_KEY or key_file) and salvage again, or re-embed",
                report.sealed_vectors_not_carried
            ));
        }
        if report.records_not_carried > 0 {
            s.push_str(&format!(
                "\n{} records of kept batches not carried (sealed vectors without their key, unknown kinds)",
                report.records_not_carried
            ));
        }
        s
    })?;
    Ok(ExitCode::SUCCESS)
}

pub fn compact(cli: &Cli, out: &Output) -> Result<ExitCode> {
    let dir = existing_store(cli)?;
    let memories = Memories::open_with(&dir, store_options(cli, &dir)?)?;
    // The vectors of an embedder another one superseded go, unless it is the
    // configured one or an indexed file still names it (a switch of embedder not
    // finished).
    let configured = match super::embedder() {
        Ok(e) => Some(e.name().to_string()),
        Err(e) => {
            tracing::warn!("no embedder's vectors retired: the configured embedder: {e:#}");
            None
        }
    };
    let pb = out.spinner("compacting blob.dat");
    let r = match &configured {
        Some(configured) => memories.store().compact_retiring(&|db, name| {
            Ok(name != configured && !engram::index::embedder_in_use(db, name)?)
        }),
        None => memories.store().compact(),
    };
    pb.finish_and_clear();
    let r = r?;
    out.value(
        &json!({"bytes_before": r.bytes_before, "bytes_after": r.bytes_after, "records_before": r.records_before, "records_after": r.records_after, "generation": r.generation, "retired_embedders": r.retired_embedders}),
        || {
            let mut s = format!(
                "compacted blob.dat: {} → {} bytes, {} → {} records (generation {})",
                r.bytes_before, r.bytes_after, r.records_before, r.records_after, r.generation
            );
            if !r.retired_embedders.is_empty() {
                s.push_str(&format!(
                    "\nretired the vectors of {}",
                    r.retired_embedders.join(", ")
                ));
            }
            s
        },
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Parse a hash64 as the seeds write it: unsigned decimal, or the signed 64-bit integer
/// SQLite shows for the same bits.
pub(crate) fn parse_hash64(s: &str) -> Result<u64> {
    let t = s.trim();
    t.parse::<u64>()
        .or_else(|_| t.parse::<i64>().map(|v| v as u64))
        .map_err(|_| {
            anyhow::anyhow!(
                "{s:?} is not a hash64: expected a decimal integer, unsigned (0 to 2^64-1) or signed (-2^63 to 2^63-1)"
            )
        })
}

/// `engram key lookup HASH`: the live key with that hash64; exit code 1 if none.
pub fn key_lookup(cli: &Cli, out: &Output, hash: &str) -> Result<ExitCode> {
    let h = parse_hash64(hash)?;
    let dir = existing_store(cli)?;
    let memories = Memories::open_with(&dir, store_options(cli, &dir)?)?;
    let key = memories.store().key_for_hash(h)?;
    match key {
        Some(k) => {
            out.value(
                &json!({"hash64": h, "hash64_i64": h as i64, "key": k}),
                || k.clone(),
            )?;
            Ok(ExitCode::SUCCESS)
        }
        None if out.is_json() => {
            out.value(
                &json!({"hash64": h, "hash64_i64": h as i64, "key": null}),
                String::new,
            )?;
            Ok(ExitCode::from(1))
        }
        None => bail!(
            "no live key has hash64 {h} (signed {}); `engram key hash KEY` shows a key's hash",
            h as i64
        ),
    }
}

/// `engram key hash KEY`: hash64 of a key, unsigned and as SQLite shows it.
pub fn key_hash(out: &Output, key: &str) -> Result<ExitCode> {
    let h = engram::key::hash64(key);
    out.value(
        &json!({"key": key, "hash64": h, "hash64_i64": h as i64}),
        || h.to_string(),
    )?;
    Ok(ExitCode::SUCCESS)
}
