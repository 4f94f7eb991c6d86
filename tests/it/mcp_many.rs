//! Eight `engram serve` processes on one store, as eight agent windows would run
//! them: each writes and searches at once over raw JSON-RPC on stdio. Afterwards
//! every acknowledged write is there exactly once, no call failed (no "locked"), and
//! the store verifies.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

const SERVERS: usize = 8;
const WRITES: usize = 25;

/// Run one server through `WRITES` writes and a search after each; returns the ids
/// it was given.
fn client(store: &Path, repo: &Path, n: usize) -> Result<Vec<String>, String> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_engram"))
        .arg("--store")
        .arg(store)
        .arg("serve")
        .arg("--repo")
        .arg(repo)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut lines = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
    let mut send =
        |v: Value| -> Result<(), String> { writeln!(stdin, "{v}").map_err(|e| e.to_string()) };
    let mut recv = |id: u64| -> Result<Value, String> {
        for line in lines.by_ref() {
            let v: Value = serde_json::from_str(&line.map_err(|e| e.to_string())?)
                .map_err(|e| e.to_string())?;
            if v["id"] == id {
                return Ok(v);
            }
        }
        Err(format!("server {n} closed before answering {id}"))
    };
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
    )?;
    recv(0)?;
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
    let mut ids = Vec::new();
    let mut id = 1u64;
    for i in 0..WRITES {
        for (tool, args) in [
            (
                "memory_write_structured",
                json!({"text": format!("server {n} write {i} about caching"), "insights": ["decision"], "tags": [format!("s{n}")]}),
            ),
            ("memory_search", json!({"query": "caching decision"})),
        ] {
            send(
                json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}}),
            )?;
            let r = recv(id)?;
            let result = &r["result"];
            if !r["error"].is_null() || result["isError"] == true {
                return Err(format!("server {n}: {tool} failed: {r}"));
            }
            if tool == "memory_write_structured" {
                let text = result["content"][0]["text"].as_str().ok_or("no content")?;
                let v: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
                ids.push(v["id"].as_str().ok_or("no id")?.to_string());
            }
            id += 1;
        }
    }
    drop(stdin);
    let _ = child.wait();
    Ok(ids)
}

#[test]
fn eight_servers_share_one_store() {
    let store = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let handles: Vec<_> = (0..SERVERS)
        .map(|n| {
            let (s, r) = (store.path().to_path_buf(), repo.path().to_path_buf());
            std::thread::spawn(move || client(&s, &r, n))
        })
        .collect();
    let mut all = Vec::new();
    for h in handles {
        all.extend(h.join().unwrap().unwrap_or_else(|e| panic!("{e}")));
    }
    // A figure for the record (not a timed test): writes acknowledged per second,
    // each followed by a search, with the servers' start-up included.
    eprintln!(
        "{} writes + {} searches by {SERVERS} servers in {:.2} s",
        all.len(),
        all.len(),
        started.elapsed().as_secs_f64()
    );
    assert_eq!(all.len(), SERVERS * WRITES);
    let mut unique = all.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), all.len(), "an id was handed out twice");
    let memories = engram::memory::Memories::open(store.path()).unwrap();
    assert_eq!(memories.count().unwrap(), all.len() as u64);
    for id in &all {
        assert!(
            memories.get(id).unwrap().is_some(),
            "{id} acknowledged but missing"
        );
    }
    drop(memories);
    assert!(engram::store::verify(store.path()).unwrap().is_sound());
}
