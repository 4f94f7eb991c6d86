//! Sealed vectors end to end (format-spec/encryption.md), through the real `engram`
//! binary: a store sealed at creation and a plain twin fed the same repository and
//! memories. The sealed one must hold no vector's bytes in any file of its directory
//! (read raw, not through engram), answer every search exactly as the plain one does,
//! refuse a wrong or missing key by name, and keep every vector through rotation.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use engram::store::{read_log, scan_batches, RecordKind, ScanStart};
use engram_cli::stderr;
use leaks::files_under;
use serde_json::Value;

use crate::support::engram_cli;
use crate::support::leaks;

/// `engram --store STORE ARGS…` with the key file `key` (or none) as the only key.
fn engram(store: &Path, key: Option<&Path>, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_engram"));
    cmd.arg("--store")
        .arg(store)
        .args(args)
        .env_remove("ENGRAM_STORE")
        .env_remove("ENGRAM_KEY")
        .env_remove("ENGRAM_KEY_FILE");
    if let Some(key) = key {
        cmd.env("ENGRAM_KEY_FILE", key);
    }
    cmd.output().expect("run engram")
}

fn ok_json(store: &Path, key: Option<&Path>, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = engram(store, key, &all);
    assert!(
        out.status.success(),
        "engram {args:?} failed: {}",
        stderr(&out)
    );
    serde_json::from_slice(&out.stdout).expect("JSON output")
}

/// A small repository in several languages, with distinct vocabulary per file.
fn write_repo(root: &Path) {
    let topics = [
        ("billing", "invoice", "refund"),
        ("auth", "session", "token_expiry"),
        ("search", "ranking", "bm25_weight"),
        ("storage", "segment", "compaction"),
        ("network", "retry", "backoff"),
        ("parser", "grammar", "lookahead"),
    ];
    for (i, (area, noun, detail)) in topics.iter().enumerate() {
        let dir = root.join(area);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(format!("{noun}.rs")),
            format!(
                "/// Computes the {detail} of a {noun} in the {area} module.\npub fn compute_{detail}(input: u64) -> u64 {{\n    let {noun}_count = input * {i} + 7;\n    {noun}_count.rotate_left(3)\n}}\n\npub struct {noun}Registry {{ pub entries: Vec<u64> }}\n"
            ),
        )
        .unwrap();
        std::fs::write(
            dir.join(format!("{noun}_tools.py")),
            format!(
                "def load_{noun}(path):\n    \"\"\"Load every {noun} for the {area} {detail} report.\"\"\"\n    with open(path) as f:\n        return [line.split(',') for line in f]\n\n\nclass {noun}Cache:\n    def evict(self, key):\n        return self.entries.pop(key, None)\n"
            ),
        )
        .unwrap();
    }
}

const MEMORIES: &[&str] = &[
    "tracker.db runs in WAL mode so readers never block the writer",
    "refunds are issued within 14 days of the invoice",
    "session tokens expire after one hour of inactivity",
    "retry network calls with exponential backoff capped at 30 seconds",
    "the grammar needs two tokens of lookahead for generics",
];

const QUERIES: &[&str] = &[
    "when do refunds happen",
    "token expiry for sessions",
    "exponential backoff",
    "rank documents by relevance",
    "evict an entry from the cache",
    "readers and writers in the tracker",
];

/// Feed a store the repository and the memories.
fn fill(store: &Path, key: Option<&Path>, repo: &Path) {
    let out = engram(store, key, &["index", repo.to_str().unwrap()]);
    assert!(out.status.success(), "index: {}", stderr(&out));
    for m in MEMORIES {
        let out = engram(store, key, &["remember", m]);
        assert!(out.status.success(), "remember: {}", stderr(&out));
    }
}

/// What a search answers, without memory keys (random per store).
fn answers(store: &Path, key: Option<&Path>) -> Vec<Value> {
    let mut all = Vec::new();
    for q in QUERIES {
        for args in [vec!["search", q], vec!["recall", q]] {
            let mut hits = ok_json(store, key, &args)["hits"].clone();
            for h in hits.as_array_mut().unwrap() {
                if h["kind"] == "memory" {
                    h.as_object_mut().unwrap().remove("key");
                }
            }
            all.push(hits);
        }
    }
    all
}

/// Every vector record of the log in `store`: (meta, body).
fn vector_records(store: &Path) -> Vec<(Value, Vec<u8>, u16)> {
    let (_, snap) = read_log(store).unwrap();
    let mut out = Vec::new();
    scan_batches(
        snap.bytes(),
        ScanStart {
            offset: 64,
            last_commit: 0,
            last_seq: 0,
        },
        |b| -> engram::store::Result<()> {
            for (_, rec) in b.records() {
                if rec.kind == RecordKind::Vector {
                    let meta: Value = serde_json::from_slice(rec.meta).unwrap();
                    out.push((meta, rec.body.to_vec(), rec.header.flags.get()));
                }
            }
            Ok(())
        },
    )
    .unwrap();
    out
}

/// Runs of four floats of the plain store's vectors, two or more of them non-zero
/// (the built-in embedder's vectors are sparse): specific enough that finding one
/// anywhere else means a vector leaked.
fn plaintext_windows(plain: &Path) -> HashSet<[u8; 16]> {
    let mut windows = HashSet::new();
    for (_, body, _) in vector_records(plain) {
        for w in body.windows(16).step_by(4) {
            let nonzero = w
                .chunks_exact(4)
                .filter(|f| f32::from_le_bytes([f[0], f[1], f[2], f[3]]) != 0.0)
                .count();
            if nonzero >= 2 {
                windows.insert(<[u8; 16]>::try_from(w).unwrap());
            }
        }
    }
    windows
}

/// Files of `dir` holding any of `windows`, at any byte offset.
fn files_with(dir: &Path, windows: &HashSet<[u8; 16]>) -> Vec<String> {
    let mut files = Vec::new();
    files_under(dir, dir, &mut files);
    files
        .into_iter()
        .filter(|(_, bytes)| {
            bytes
                .windows(16)
                .any(|w| windows.contains(<&[u8; 16]>::try_from(w).unwrap()))
        })
        .map(|(name, _)| name)
        .collect()
}

struct Twins {
    _tmp: tempfile::TempDir,
    plain: PathBuf,
    sealed: PathBuf,
    key: PathBuf,
    keys_dir: PathBuf,
}

/// A plain and a sealed store (sealed at creation) with the same contents.
fn twins() -> Twins {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    write_repo(&repo);
    let keys_dir = tmp.path().join("keys");
    std::fs::create_dir(&keys_dir).unwrap();
    let key = keys_dir.join("store.key");
    let plain = tmp.path().join("plain");
    let sealed = tmp.path().join("sealed");
    let made = ok_json(
        &sealed,
        None,
        &["encrypt", "--new-key", "--key-file", key.to_str().unwrap()],
    );
    assert_eq!(made["action"], "sealed", "{made}");
    fill(&plain, None, &repo);
    fill(&sealed, Some(&key), &repo);
    Twins {
        _tmp: tmp,
        plain,
        sealed,
        key,
        keys_dir,
    }
}

#[test]
fn a_sealed_store_holds_no_vector_in_the_clear_and_answers_like_a_plain_one() {
    let t = twins();
    let windows = plaintext_windows(&t.plain);
    assert!(
        windows.len() > 200,
        "too few distinctive vector bytes to test with: {}",
        windows.len()
    );
    // The check can fail: the plain store's own files hold them.
    assert!(!files_with(&t.plain, &windows).is_empty());
    assert_eq!(files_with(&t.sealed, &windows), Vec::<String>::new());

    let sealed_records = vector_records(&t.sealed);
    assert_eq!(sealed_records.len(), vector_records(&t.plain).len());
    assert!(sealed_records
        .iter()
        .all(|(_, _, flags)| flags & 0x0100 != 0));
    let names: Vec<String> = std::fs::read_dir(&t.sealed)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !names.iter().any(|n| n.contains(".vec")),
        "a sealed store writes no vector cache file: {names:?}"
    );

    let expected = answers(&t.plain, None);
    assert_eq!(answers(&t.sealed, Some(&t.key)), expected);
    let verify = engram(&t.sealed, Some(&t.key), &["verify"]);
    assert!(verify.status.success(), "verify: {}", stderr(&verify));

    // Sealing a store that has vectors in the clear: afterwards none is left in any
    // of its files (compaction dropped the old log, the cache files are gone).
    let later_key = t.keys_dir.join("later.key");
    let r = ok_json(
        &t.plain,
        None,
        &[
            "encrypt",
            "--new-key",
            "--key-file",
            later_key.to_str().unwrap(),
        ],
    );
    assert_eq!(r["action"], "sealed", "{r}");
    assert_eq!(files_with(&t.plain, &windows), Vec::<String>::new());
    assert_eq!(answers(&t.plain, Some(&later_key)), expected);
}

#[test]
fn a_wrong_or_missing_key_is_refused_and_rotation_keeps_every_vector() {
    let t = twins();
    let first_id = ok_json(&t.sealed, Some(&t.key), &["stats"]);
    let expected = answers(&t.plain, None);

    let windows = plaintext_windows(&t.plain);

    let other = t.keys_dir.join("other.key");
    let other_key = engram::store::VectorKey::generate().unwrap();
    other_key.write_new_file(&other).unwrap();
    let other_id = other_key.id_hex();
    let sealed_id = vector_records(&t.sealed)[0].0["key_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(other_id, sealed_id);

    let wrong = engram(&t.sealed, Some(&other), &["search", "refunds"]);
    assert!(!wrong.status.success());
    let msg = stderr(&wrong);
    assert!(msg.contains(&sealed_id) && msg.contains(&other_id), "{msg}");
    let missing = engram(&t.sealed, None, &["recall", "refunds"]);
    assert!(!missing.status.success());
    assert!(
        stderr(&missing).contains("no key was given"),
        "{}",
        stderr(&missing)
    );
    // Nothing was written by the refused calls.
    assert_eq!(ok_json(&t.sealed, Some(&t.key), &["stats"]), first_id);

    // Rotate to a new key: every vector is resealed, the old key stops working.
    let rotated_key = t.keys_dir.join("rotated.key");
    let r = ok_json(
        &t.sealed,
        Some(&t.key),
        &[
            "encrypt",
            "--new-key",
            "--key-file",
            rotated_key.to_str().unwrap(),
        ],
    );
    assert_eq!(r["action"], "rotated", "{r}");
    let records = vector_records(&t.sealed);
    assert_eq!(
        r["vectors_sealed"].as_u64().unwrap() as usize,
        records.len()
    );
    let new_id = r["key_id"].as_str().unwrap();
    assert!(records.iter().all(|(m, _, _)| m["key_id"] == new_id));
    assert_eq!(answers(&t.sealed, Some(&rotated_key)), expected);
    let old = engram(&t.sealed, Some(&t.key), &["search", "refunds"]);
    assert!(!old.status.success());
    assert_eq!(files_with(&t.sealed, &windows), Vec::<String>::new());
}

#[test]
fn a_plain_store_with_data_is_never_given_vectors_in_the_clear_by_a_keyed_engram() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let out = engram(&store, None, &["remember", "written before any key"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let key = tmp.path().join("k");
    std::fs::write(&key, [3u8; 32]).unwrap();
    let refused = engram(&store, Some(&key), &["remember", "a vector would be plain"]);
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("engram encrypt"),
        "{}",
        stderr(&refused)
    );

    // A key kept inside the store directory protects nothing: refused.
    let inside = store.join("store.key");
    std::fs::write(&inside, [4u8; 32]).unwrap();
    let out = engram(
        &store,
        None,
        &["encrypt", "--key-file", inside.to_str().unwrap()],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("inside the store"),
        "{}",
        stderr(&out)
    );
    let out = engram(&store, Some(&inside), &["recall", "written"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("inside the store"),
        "{}",
        stderr(&out)
    );
}

/// A store handle with `key`, as a second process would hold one.
fn keyed(dir: &Path, key: &engram::store::VectorKey) -> engram::store::Store {
    let opts = engram::store::StoreOptions {
        vector_key: Some(key.clone()),
        ..Default::default()
    };
    engram::store::Store::open(dir, opts, engram::projections()).unwrap()
}

fn unit(dim: usize, hot: usize) -> Vec<f32> {
    (0..dim)
        .map(|i| if i == hot { 1.0 } else { 0.01 })
        .collect()
}

#[test]
fn a_warm_in_memory_cache_follows_other_writers_batch_by_batch_and_past_the_replay_limit() {
    use engram::store::WriteBatch;
    let tmp = tempfile::tempdir().unwrap();
    let key = engram::store::VectorKey::generate().unwrap();
    let reader = keyed(tmp.path(), &key);
    assert_eq!(reader.sealed_key_id().unwrap(), Some(key.id_hex()));
    let writer = keyed(tmp.path(), &key);
    let put = |name: &str, hot: usize| {
        let mut b = WriteBatch::new();
        b.put(name, Default::default(), name.as_bytes().to_vec())
            .unwrap();
        b.put_vector(name, "e", &unit(128, hot)).unwrap();
        writer.commit(&b).unwrap();
    };
    put("doc:a", 0);
    let top = |hot: usize| {
        reader.vector_search("e", &unit(128, hot), 1).unwrap()[0]
            .key
            .clone()
    };
    assert_eq!(top(0), "doc:a"); // the reader's cache is warm from here on

    // One batch behind: replayed from the log into the warm cache.
    put("doc:b", 1);
    assert_eq!(top(1), "doc:b");
    // A vector replaced and a key deleted by the other handle.
    put("doc:a", 2);
    assert_eq!(top(2), "doc:a");
    let mut del = WriteBatch::new();
    del.delete("doc:b").unwrap();
    writer.commit(&del).unwrap();
    assert!(reader
        .vector_search("e", &unit(128, 1), 5)
        .unwrap()
        .iter()
        .all(|m| m.key != "doc:b"));
    // More batches than a search replays: the cache is rebuilt from the log.
    for i in 0..70 {
        put(&format!("doc:n{i}"), 3 + i);
    }
    assert_eq!(
        reader.vector_search("e", &unit(128, 2), 200).unwrap().len(),
        71
    );
    assert_eq!(top(31), "doc:n28");

    // A handle without the key reads nothing sealed, and says why.
    let keyless =
        engram::store::Store::open(tmp.path(), Default::default(), engram::projections()).unwrap();
    let err = keyless.vector_search("e", &unit(128, 0), 1).unwrap_err();
    assert!(err.to_string().contains(&key.id_hex()), "{err}");
}
