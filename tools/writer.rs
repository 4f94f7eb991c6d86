//! `engram-writer`: a load generator for crash and concurrency tests.
//!
//! Writer mode commits `--batches` batches of `--batch-size` puts with keys
//! `file:w{id}/b{batch}/r{record}` and bodies derived from the key (see [`body_for`]),
//! printing `ack {id} {batch} {commit_seq}` on stdout, flushed, after each commit
//! returns — so a parent that kills it knows exactly which batches were acknowledged.
//! Reader mode (`--read`) opens the store repeatedly and checks every value it finds
//! against its key, exiting 3 on the first corrupt read. Exit 2 is bad usage.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use engram::store::{Durability, Store, StoreOptions, WriteBatch};
use serde_json::Map;

/// The body every writer stores under `key`: the key repeated to `len` bytes.
fn body_for(key: &str, len: usize) -> Vec<u8> {
    key.bytes()
        .chain(std::iter::once(b'|'))
        .cycle()
        .take(len.max(1))
        .collect()
}

struct Args {
    store: String,
    id: u64,
    batches: u64,
    batch_size: u64,
    value_bytes: usize,
    durability: Durability,
    read_seconds: Option<f64>,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        store: String::new(),
        id: 0,
        batches: 100,
        batch_size: 10,
        value_bytes: 256,
        durability: Durability::Always,
        read_seconds: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        let num = |v: String| {
            v.parse::<u64>()
                .map_err(|_| format!("{flag}: {v:?} is not a number"))
        };
        match flag.as_str() {
            "--store" => a.store = val()?,
            "--id" => a.id = num(val()?)?,
            "--batches" => a.batches = num(val()?)?,
            "--batch-size" => a.batch_size = num(val()?)?,
            "--value-bytes" => a.value_bytes = num(val()?)? as usize,
            "--durability" => {
                a.durability = val()?.parse::<Durability>().map_err(|e| e.to_string())?
            }
            "--read" => {
                let v = val()?;
                a.read_seconds = Some(
                    v.parse()
                        .map_err(|_| format!("--read: {v:?} is not a number of seconds"))?,
                );
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if a.store.is_empty() {
        return Err("--store DIR is required".into());
    }
    Ok(a)
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("engram-writer: {e}\nusage: engram-writer --store DIR [--id N] [--batches B] [--batch-size K] [--value-bytes V] [--durability always|batch|never] [--read SECONDS]");
            return ExitCode::from(2);
        }
    };
    let result = match args.read_seconds {
        Some(s) => read(&args, Duration::from_secs_f64(s)),
        None => write(&args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("engram-writer: {e}");
            ExitCode::from(1)
        }
    }
}

fn open(args: &Args) -> Result<Store, String> {
    let opts = StoreOptions {
        durability: args.durability,
        create: true,
        ..StoreOptions::default()
    };
    Store::open(&args.store, opts, engram::projections()).map_err(|e| e.to_string())
}

fn write(args: &Args) -> Result<ExitCode, String> {
    let store = open(args)?;
    let mut stdout = std::io::stdout().lock();
    for b in 0..args.batches {
        let mut batch = WriteBatch::new();
        for r in 0..args.batch_size {
            let key = format!("file:w{}/b{b}/r{r}", args.id);
            batch
                .put(&key, Map::new(), body_for(&key, args.value_bytes))
                .map_err(|e| e.to_string())?;
        }
        let info = store.commit(&batch).map_err(|e| e.to_string())?;
        writeln!(stdout, "ack {} {b} {}", args.id, info.commit_seq).map_err(|e| e.to_string())?;
        stdout.flush().map_err(|e| e.to_string())?;
    }
    Ok(ExitCode::SUCCESS)
}

fn read(args: &Args, for_how_long: Duration) -> Result<ExitCode, String> {
    let start = Instant::now();
    let mut reads = 0u64;
    while start.elapsed() < for_how_long {
        let store = open(args)?;
        let snap = store.snapshot().map_err(|e| e.to_string())?;
        let keys: Vec<String> = store
            .with_tracker(|db| {
                let mut stmt = db.prepare("SELECT key FROM records ORDER BY random() LIMIT 50")?;
                let rows = stmt.query_map([], |r| r.get(0))?;
                Ok(rows.collect::<rusqlite::Result<Vec<String>>>()?)
            })
            .map_err(|e| e.to_string())?;
        drop(snap);
        for key in keys {
            if let Some(rec) = store.get(&key).map_err(|e| e.to_string())? {
                if rec.body != body_for(&key, rec.body.len()) {
                    eprintln!("engram-writer: corrupt value under {key}");
                    return Ok(ExitCode::from(3));
                }
                reads += 1;
            }
        }
    }
    println!("reads {reads}");
    Ok(ExitCode::SUCCESS)
}
