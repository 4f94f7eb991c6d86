//! Many processes, one store: every read-modify-write counted exactly, no reader
//! killed by a file cut under it, and `verify` sound at the end.
//!
//! The parent test spawns this test binary again, running the ignored `worker` test
//! with a role and a time budget in the environment. Workers print one `ACK …` line
//! per acknowledged operation; the parent checks the store against those lines.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use engram::index::IndexOptions;
use engram::memory::{ErrorReport, Memories, Memory};
use engram::store::{read_log, verify, WriteBatch};

use crate::support::rerun;

const WORKERS: usize = 8;
const MEMORY_IDS: usize = 20;
const ERRORS: usize = 5;
const NOTES: usize = 4;

fn memory_id(i: usize) -> String {
    format!("mem:000000{i:02x}")
}

fn error_report(k: usize) -> ErrorReport {
    ErrorReport {
        error_type: format!("TortureError{k}"),
        message: format!("operation {k} failed under load"),
        ..ErrorReport::default()
    }
}

/// A small deterministic generator (xorshift), seeded per worker.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

fn spawn(role: &str, id: usize, store: &Path, repo: &Path, seconds: f64) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .arg(rerun::test_name(module_path!(), "worker"))
        .args(["--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env("TORTURE_ROLE", role)
        .env("TORTURE_ID", id.to_string())
        .env("TORTURE_STORE", store)
        .env("TORTURE_REPO", repo)
        .env("TORTURE_SECONDS", seconds.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Wait for every child; each must exit 0 (not die of a signal). Returns their
/// `ACK` lines.
fn collect(children: Vec<Child>) -> Vec<String> {
    let mut acks = Vec::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "a worker failed ({:?}; a signal shows as None):\n{}\n{}",
            out.status.code(),
            stdout,
            String::from_utf8_lossy(&out.stderr)
        );
        // The test harness prints "test worker ... " before the first line.
        acks.extend(
            stdout
                .lines()
                .filter_map(|l| l.find("ACK ").map(|at| l[at + 4..].to_string())),
        );
    }
    acks
}

fn write_repo_file(repo: &Path, i: usize, generation: usize) {
    let body = format!(
        "/// Version {generation} of module {i}.\npub fn handler_{i}_{generation}(x: u32) -> u32 {{\n    x + {generation}\n}}\n\npub struct State{i} {{ pub n: u{w} }}\n",
        w = if generation.is_multiple_of(2) { 32 } else { 64 }
    );
    std::fs::write(repo.join(format!("m{i}.rs")), body).unwrap();
}

#[test]
fn eight_processes_count_every_update_and_verify_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    for i in 0..10 {
        write_repo_file(&repo, i, 0);
    }
    {
        let m = Memories::open(&store).unwrap();
        for i in 0..MEMORY_IDS {
            let mut mem = Memory::new(format!("shared memory {i}"));
            mem.id = memory_id(i);
            m.write(mem).unwrap();
        }
        // Explicit-id writes are "exists?" checks: a second one must be refused.
        let mut again = Memory::new("again");
        again.id = memory_id(0);
        assert!(m.write(again).is_err());
        m.record_error(&error_report(0)).unwrap();
    }
    let children = (0..WORKERS)
        .map(|id| spawn("mixed", id, &store, &repo, 6.0))
        .collect();
    let acks = collect(children);

    let memories = Memories::open(&store).unwrap();
    let mut updates: HashMap<String, Vec<u64>> = HashMap::new();
    let mut errors: HashMap<usize, u64> = HashMap::new();
    let mut notes: HashMap<String, BTreeMap<u64, String>> = HashMap::new();
    let mut remembered = Vec::new();
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    for a in &acks {
        let f: Vec<&str> = a.split(' ').collect();
        *counts.entry(f[0]).or_default() += 1;
        match f[0] {
            "update" => updates
                .entry(f[1].into())
                .or_default()
                .push(f[2].parse().unwrap()),
            "error" => *errors.entry(f[1].parse().unwrap()).or_default() += 1,
            "note" => {
                let by_version = notes.entry(f[1].into()).or_default();
                assert!(
                    by_version
                        .insert(f[2].parse().unwrap(), f[3].into())
                        .is_none(),
                    "two acknowledged note writes got version {} of {}",
                    f[2],
                    f[1]
                );
            }
            "remember" => remembered.push(f[1].to_string()),
            "verify-problem" => panic!("verify beside live writers reported: {a}"),
            _ => {}
        }
    }
    eprintln!("torture: acknowledged operations {counts:?}");

    // Each memory's versions run 1..N with no gap or duplicate.
    for i in 0..MEMORY_IDS {
        let id = memory_id(i);
        let mut acked = updates.remove(&id).unwrap_or_default();
        acked.sort_unstable();
        let n = acked.len() as u64;
        assert_eq!(
            acked,
            (2..=n + 1).collect::<Vec<_>>(),
            "{id}: acknowledged versions"
        );
        let history: Vec<u64> = memories
            .history(&id)
            .unwrap()
            .iter()
            .map(|m| m.version)
            .collect();
        assert_eq!(
            history,
            (1..=n + 1).collect::<Vec<_>>(),
            "{id}: stored versions"
        );
    }
    // Each error's frequency is the number of acknowledged records.
    for k in 0..ERRORS {
        let acked = errors.get(&k).copied().unwrap_or(0) + u64::from(k == 0);
        let found = memories
            .list_filtered(
                &engram::memory::MemoryFilter {
                    kind: Some("error".into()),
                    ..Default::default()
                },
                1000,
                0,
            )
            .unwrap()
            .into_iter()
            .filter(|m| m.metadata["error_type"] == format!("TortureError{k}"))
            .collect::<Vec<_>>();
        if acked == 0 {
            assert!(found.is_empty());
            continue;
        }
        assert_eq!(found.len(), 1, "error {k} must be one entry");
        assert_eq!(found[0].metadata["frequency"], acked, "error {k} frequency");
    }
    // Each note holds the last acknowledged value, and one entry per name.
    for (name, by_version) in &notes {
        let note = memories.note_get(name).unwrap().unwrap();
        let (last_version, last_value) = by_version.iter().next_back().unwrap();
        assert_eq!(note.version, *last_version, "{name}");
        assert_eq!(&note.text, last_value, "{name}");
        assert_eq!(
            by_version.keys().copied().collect::<Vec<_>>(),
            (1..=*last_version).collect::<Vec<_>>(),
            "{name}: versions"
        );
    }
    for id in &remembered {
        assert!(memories.get(id).unwrap().is_some(), "{id} was acknowledged");
    }

    // The index holds exactly the files on disk, with no orphan chunk or symbol.
    engram::index::index(memories.store(), &repo, &IndexOptions::default()).unwrap();
    let on_disk: HashSet<String> = std::fs::read_dir(&repo)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let (indexed, chunks, symbols, chunk_keys, sym_keys) = memories
        .store()
        .with_tracker(|db| {
            let mut stmt = db.prepare("SELECT path FROM code_files")?;
            let paths = stmt
                .query_map([], |r| r.get::<_, String>(0))?
                .collect::<rusqlite::Result<HashSet<_>>>()?;
            let sums: (i64, i64) = db.query_row(
                "SELECT coalesce(sum(chunks),0), coalesce(sum(symbols),0) FROM code_files",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            let count = |prefix: &str| -> rusqlite::Result<i64> {
                db.query_row(
                    "SELECT count(*) FROM records WHERE substr(key, 1, length(?1)) = ?1",
                    [prefix],
                    |r| r.get(0),
                )
            };
            Ok((paths, sums.0, sums.1, count("chunk:")?, count("sym:")?))
        })
        .unwrap();
    assert_eq!(indexed, on_disk);
    assert_eq!(
        chunk_keys, chunks,
        "chunk records against the files' chunk counts"
    );
    assert_eq!(
        sym_keys, symbols,
        "symbol records against the files' symbol counts"
    );
    drop(memories);
    let report = verify(&store).unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);
}

#[test]
fn readers_survive_abandoned_batches_and_recovery() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    Memories::open(&store)
        .unwrap()
        .remember("seed", &[], None)
        .unwrap();
    let mut children: Vec<Child> = (0..2)
        .map(|id| spawn("abandon", id, &store, &repo, 4.0))
        .collect();
    children.extend((0..3).map(|id| spawn("read", id, &store, &repo, 4.0)));
    let acks = collect(children);
    let reads = acks.iter().filter(|a| a.starts_with("read")).count();
    let abandoned = acks.iter().filter(|a| a.starts_with("abandon")).count();
    eprintln!("torture: {reads} reader passes beside {abandoned} abandoned batches");
    assert!(reads > 0 && abandoned > 0);
    let report = verify(&store).unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);
}

/// The child process: see the module doc. Run only by the tests above.
#[test]
#[ignore]
fn worker() {
    let Ok(role) = std::env::var("TORTURE_ROLE") else {
        return;
    };
    let id: usize = std::env::var("TORTURE_ID").unwrap().parse().unwrap();
    let store = PathBuf::from(std::env::var("TORTURE_STORE").unwrap());
    let repo = PathBuf::from(std::env::var("TORTURE_REPO").unwrap());
    let seconds: f64 = std::env::var("TORTURE_SECONDS").unwrap().parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let seed = 0x9e37_79b9_7f4a_7c15u64
        ^ ((id as u64 + 1) << 32)
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos() as u64;
    let mut rng = Rng(seed | 1);
    match role.as_str() {
        "mixed" => mixed(id, &store, &repo, deadline, &mut rng),
        "abandon" => abandon(&store, deadline, &mut rng),
        "read" => read(&store, deadline),
        other => panic!("unknown role {other}"),
    }
}

fn mixed(id: usize, store: &Path, repo: &Path, deadline: Instant, rng: &mut Rng) {
    let memories = Memories::open(store).unwrap();
    let mut n = 0usize;
    while Instant::now() < deadline {
        n += 1;
        match rng.below(100) {
            0..=19 => {
                let m = memories
                    .remember(&format!("worker {id} note {n}"), &[], None)
                    .unwrap();
                println!("ACK remember {}", m.id);
            }
            20..=44 => {
                let target = memory_id(rng.below(MEMORY_IDS));
                let m = memories
                    .update(&target, Memory::new(format!("worker {id} update {n}")))
                    .unwrap();
                println!("ACK update {target} {}", m.version);
            }
            45..=64 => {
                let k = rng.below(ERRORS);
                memories.record_error(&error_report(k)).unwrap();
                println!("ACK error {k}");
            }
            65..=79 => {
                let name = format!("note{}", rng.below(NOTES));
                let value = format!("w{id}-{n}");
                let m = memories.note_set(&name, &value, None).unwrap();
                println!("ACK note {name} {} {value}", m.version);
            }
            80..=87 => {
                if id.is_multiple_of(2) {
                    // Change the repository under the indexers.
                    write_repo_file(repo, rng.below(12), n);
                    if rng.below(4) == 0 {
                        let _ = std::fs::remove_file(repo.join(format!("m{}.rs", rng.below(12))));
                    }
                }
                engram::index::index(memories.store(), repo, &IndexOptions::default()).unwrap();
                println!("ACK index");
            }
            88..=91 => {
                memories.store().compact().unwrap();
                println!("ACK compact");
            }
            92..=96 => {
                let report = verify(store).unwrap();
                for p in &report.problems {
                    println!("ACK verify-problem {p:?}");
                }
                println!("ACK verify");
            }
            _ => {
                let (_, snap) = read_log(store).unwrap();
                let mut records = 0u64;
                for r in snap.records() {
                    if r.is_err() {
                        break;
                    }
                    records += 1;
                }
                println!("ACK dump {records}");
            }
        }
    }
}

/// Start batches of a few megabytes and drop them unfinished, now and then committing
/// one, so the log's tail is discarded again and again under the readers.
fn abandon(store: &Path, deadline: Instant, rng: &mut Rng) {
    let memories = Memories::open(store).unwrap();
    let s = memories.store();
    let mut n = 0;
    while Instant::now() < deadline {
        n += 1;
        let mut w = s.begin_batch().unwrap();
        let big = vec![b'x'; (1 + rng.below(4)) << 20];
        w.put(&format!("file:abandoned/{n}"), serde_json::Map::new(), big)
            .unwrap();
        if rng.below(5) == 0 {
            w.finish().unwrap();
        } else {
            drop(w);
            println!("ACK abandon {n}");
        }
        if rng.below(10) == 0 {
            let mut b = WriteBatch::new();
            b.delete(&format!("file:abandoned/{}", rng.below(n) + 1))
                .unwrap();
            s.commit(&b).unwrap();
        }
    }
}

/// Open, verify and dump the store in a loop.
fn read(store: &Path, deadline: Instant) {
    while Instant::now() < deadline {
        let m = Memories::open(store).unwrap();
        drop(m);
        let report = verify(store).unwrap();
        assert!(report.is_sound(), "{:?}", report.problems);
        let (_, snap) = read_log(store).unwrap();
        let mut bytes = 0u64;
        for r in snap.records() {
            match r {
                Ok((_, rec)) => bytes += rec.record_len() as u64,
                Err(_) => break,
            }
        }
        println!("ACK read {bytes}");
    }
}
