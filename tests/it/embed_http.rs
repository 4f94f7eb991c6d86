//! Embedders over HTTP, end to end: a real server on 127.0.0.1, started here, computes
//! all-MiniLM-L6-v2 embeddings (engram's own in-process model) behind the
//! OpenAI-compatible and Ollama APIs; `engram` is pointed at it by configuration.
//! Search over it must equal search with the same model in process; retries honour
//! `Retry-After`; with the server gone, search and recall go keyword-only and say so.

#![cfg(all(feature = "llm", feature = "neural"))]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use engram::embed::Embedder;
use llm_server::{Reply, Seen, Server};
use serde_json::{json, Value};

use crate::support::llm_server;
use crate::support::model_dir;

const KEY: &str = "sk-test-embedding-key-0123456789";

fn model() -> Arc<dyn Embedder> {
    static MODEL: OnceLock<Arc<dyn Embedder>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            let dir =
                model_dir::minilm_dir().expect("all-MiniLM-L6-v2's files (tools/setup.sh test)");
            engram::embed::embedder_for("minilm", Some(&dir)).expect("load minilm")
        })
        .clone()
}

/// The embeddings of a request's `input`, as the API at `path` answers them.
fn answer(req: &Seen) -> Reply {
    let body = req.json();
    let input: Vec<String> = body["input"]
        .as_array()
        .expect("input is an array of texts")
        .iter()
        .map(|t| t.as_str().expect("each input is a text").to_string())
        .collect();
    let refs: Vec<&str> = input.iter().map(String::as_str).collect();
    let vectors = model().embed(&refs).unwrap();
    if req.path.ends_with("/api/embed") {
        return Reply::json(
            200,
            json!({"model": body["model"], "embeddings": vectors}).to_string(),
        );
    }
    // Reversed, with indexes: the client must put them back in order.
    let data: Vec<Value> = vectors
        .iter()
        .enumerate()
        .rev()
        .map(|(i, v)| json!({"object": "embedding", "index": i, "embedding": v}))
        .collect();
    Reply::json(
        200,
        json!({"object": "list", "data": data, "model": body["model"]}).to_string(),
    )
}

fn repo() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    let files = [
        ("src/mail.py", "def send_welcome_email(user):\n    \"\"\"Compose and deliver the greeting message to a new account.\"\"\"\n    body = render('welcome', user)\n    smtp.deliver(user.address, body)\n"),
        ("src/geometry.py", "def polygon_area(points):\n    total = 0.0\n    for (x1, y1), (x2, y2) in zip(points, points[1:] + points[:1]):\n        total += x1 * y2 - x2 * y1\n    return abs(total) / 2\n"),
        ("src/cache.py", "class LruCache:\n    def evict_oldest(self):\n        key = next(iter(self.order))\n        del self.items[key]\n        self.order.pop(key)\n"),
        ("src/settings.py", "AWS_KEY = 'AKIAHNHEOABTCPM7PCMI'\ndef load_settings(path):\n    with open(path) as f:\n        return parse_toml(f.read())\n"),
    ];
    for (rel, text) in files {
        std::fs::write(repo.join(rel), text).unwrap();
    }
    (tmp, repo)
}

/// `engram --store STORE ARGS…` with the embedder settings in `env`.
fn engram(store: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_engram"));
    c.arg("--store").arg(store).args(args);
    for var in [
        "ENGRAM_STORE",
        "ENGRAM_EMBEDDER",
        "ENGRAM_EMBED_BASE_URL",
        "ENGRAM_EMBED_API_KEY",
        "OPENAI_API_KEY",
        "VOYAGE_API_KEY",
        "OLLAMA_HOST",
    ] {
        c.env_remove(var);
    }
    // No configuration file but the environment's settings.
    c.env_remove("ENGRAM_CONFIG")
        .env("XDG_CONFIG_HOME", store.with_extension("config-home"));
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run engram")
}

fn ok_json(store: &Path, env: &[(&str, &str)], args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = engram(store, env, &all);
    assert!(
        out.status.success(),
        "engram {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

/// An embeddings URL on a port nothing listens on.
fn dead_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("http://{}/v1", l.local_addr().unwrap())
}

/// The settings of an OpenAI-compatible embedder at `url`, with a short timeout.
fn down_env(url: &str) -> [(&'static str, &str); 3] {
    [
        ("ENGRAM_EMBEDDER", "openai:all-minilm-l6-v2"),
        ("ENGRAM_EMBED_BASE_URL", url),
        ("ENGRAM_EMBED_TIMEOUT_SECS", "2"),
    ]
}

/// (key, score) of each hit.
fn hits(v: &Value) -> Vec<(String, f64)> {
    v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["key"].as_str().unwrap().to_string(),
                h["score"].as_f64().unwrap(),
            )
        })
        .collect()
}

const QUERIES: [&str; 3] = [
    "greeting message for a newly registered customer",
    "compute the surface of a shape from its corners",
    "drop the least recently used entry",
];

#[test]
fn http_embedders_search_like_the_same_model_in_process() {
    let (tmp, repo) = repo();
    let repo_s = repo.to_str().unwrap();
    let server = Server::start_fn(answer);
    let local_dir = model_dir::minilm_dir().unwrap();
    let local = tmp.path().join("local");
    let local_env = [
        ("ENGRAM_EMBEDDER", "minilm"),
        ("ENGRAM_MODEL_DIR", local_dir.to_str().unwrap()),
    ];
    ok_json(&local, &local_env, &["index", repo_s]);

    let openai_base = format!("{}/v1", server.addr);
    let apis: [(&str, &str, &str); 2] = [
        (
            "openai:all-minilm-l6-v2",
            openai_base.as_str(),
            "/v1/embeddings",
        ),
        ("ollama:all-minilm", server.addr.as_str(), "/api/embed"),
    ];
    for (name, base, path) in apis {
        let store = tmp.path().join(name.replace(':', "-"));
        let env = [
            ("ENGRAM_EMBEDDER", name),
            ("ENGRAM_EMBED_BASE_URL", base),
            ("ENGRAM_EMBED_API_KEY", KEY),
            ("ENGRAM_EMBED_BATCH", "2"),
        ];
        let before = server.seen().len();
        ok_json(&store, &env, &["index", repo_s]);
        let sent: Vec<Seen> = server.seen()[before..].to_vec();
        assert!(!sent.is_empty(), "{name}: nothing was sent");
        for req in &sent {
            assert_eq!(req.path, path, "{name}");
            assert_eq!(
                req.header("authorization"),
                Some(format!("Bearer {KEY}").as_str())
            );
            assert!(
                req.json()["input"].as_array().unwrap().len() <= 2,
                "{name}: batch over 2"
            );
            // Only redacted text leaves the machine.
            assert!(
                !req.body.contains("AKIAHNHEOABTCPM7PCMI"),
                "{name}: a secret was sent"
            );
        }
        for q in QUERIES {
            let remote = ok_json(&store, &env, &["search", q, "--top-k", "3"]);
            let here = ok_json(&local, &local_env, &["search", q, "--top-k", "3"]);
            assert!(remote.get("degraded").is_none(), "{name}: {remote}");
            let (r, h) = (hits(&remote), hits(&here));
            assert_eq!(
                r.iter().map(|x| &x.0).collect::<Vec<_>>(),
                h.iter().map(|x| &x.0).collect::<Vec<_>>(),
                "{name}, {q:?}"
            );
            for ((_, a), (_, b)) in r.iter().zip(&h) {
                assert!((a - b).abs() < 1e-6, "{name}, {q:?}: score {a} vs {b}");
            }
        }
        // The model, not the words, finds these: none of the query words is in the file.
        let top = hits(&ok_json(
            &store,
            &env,
            &["search", QUERIES[1], "--top-k", "1"],
        ));
        assert!(top[0].0.contains("geometry.py"), "{name}: {top:?}");
    }
}

#[test]
fn a_429_is_retried_after_the_time_it_asks_for() {
    let (tmp, _repo) = repo();
    let calls = AtomicUsize::new(0);
    let server = Server::start_fn(move |req| {
        if calls.fetch_add(1, Ordering::SeqCst) == 0 {
            Reply::json(429, r#"{"error": "slow down"}"#).header("retry-after", "1")
        } else {
            answer(req)
        }
    });
    let base = format!("{}/v1", server.addr);
    let env = [
        ("ENGRAM_EMBEDDER", "openai:all-minilm-l6-v2"),
        ("ENGRAM_EMBED_BASE_URL", base.as_str()),
    ];
    let store = tmp.path().join("store");
    let started = std::time::Instant::now();
    let m = ok_json(
        &store,
        &env,
        &["remember", "the staging database is rebuilt every night"],
    );
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(1),
        "did not wait for Retry-After"
    );
    assert_eq!(server.seen().len(), 2);
    let found = ok_json(
        &store,
        &env,
        &[
            "recall",
            "when does the test environment's DB get recreated",
        ],
    );
    assert_eq!(found["hits"][0]["key"], m["id"], "{found}");
    assert!(found.get("degraded").is_none());
}

#[test]
fn with_the_server_gone_search_is_keyword_only_and_says_so() {
    let (tmp, repo) = repo();
    let repo_s = repo.to_str().unwrap();
    let server = Server::start_fn(answer);
    let base = format!("{}/v1", server.addr);
    let store = tmp.path().join("store");
    let up = [
        ("ENGRAM_EMBEDDER", "openai:all-minilm-l6-v2"),
        ("ENGRAM_EMBED_BASE_URL", base.as_str()),
    ];
    ok_json(&store, &up, &["index", repo_s]);
    let remembered = ok_json(
        &store,
        &up,
        &[
            "remember",
            "polygon_area assumes the points go counter-clockwise",
        ],
    );

    let dead = dead_url();
    let down = down_env(&dead);
    // A query in words: an identifier-shaped one would not ask the embedder at all.
    let out = engram(&store, &down, &["search", "polygon area", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["degraded"].as_str().unwrap().starts_with("keyword only"),
        "{v}"
    );
    assert!(
        hits(&v).iter().any(|(k, _)| k.contains("geometry.py")),
        "{v}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("degraded"));

    let r = ok_json(&store, &down, &["recall", "polygon area"]);
    assert!(
        r["degraded"].as_str().unwrap().starts_with("keyword only"),
        "{r}"
    );
    assert_eq!(r["hits"][0]["key"], remembered["id"]);

    // A write that needs a vector fails with the embedder named, and stores nothing.
    std::fs::write(repo.join("src/new.py"), "def fresh():\n    return 1\n").unwrap();
    let out = engram(&store, &down, &["index", repo_s]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("openai:all-minilm-l6-v2") && err.contains(&dead),
        "{err}"
    );
    // Everything stored before is still there, and a later pass completes.
    assert!(hits(&ok_json(&store, &up, &["search", "polygon_area"]))
        .iter()
        .any(|(k, _)| k.contains("geometry.py")));
    ok_json(&store, &up, &["index", repo_s]);
    let fresh = ok_json(&store, &up, &["search", "fresh", "--top-k", "1"]);
    assert!(hits(&fresh)[0].0.contains("new.py"), "{fresh}");
}

/// A slow embedding server must not hold other writers up: vectors are computed before
/// the store's writer lock is taken.
#[test]
fn a_slow_embedder_does_not_hold_the_writer_lock() {
    let (tmp, _repo) = repo();
    let slow = Server::start_fn(|req| answer(req).delayed(std::time::Duration::from_secs(4)));
    let base = format!("{}/v1", slow.addr);
    let store = tmp.path().join("store");
    ok_json(
        &store,
        &[],
        &["remember", "the store exists before the race"],
    );
    let store2 = store.clone();
    let waiting = std::thread::spawn(move || {
        let env = [
            ("ENGRAM_EMBEDDER", "openai:all-minilm-l6-v2"),
            ("ENGRAM_EMBED_BASE_URL", base.as_str()),
        ];
        ok_json(
            &store2,
            &env,
            &["remember", "written through the slow embedder"],
        )
    });
    // Once the slow write's request has reached the server, it is waiting on it.
    let started = std::time::Instant::now();
    while slow.seen().is_empty() {
        assert!(
            started.elapsed().as_secs() < 20,
            "the slow write never called its embedder"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    ok_json(
        &store,
        &[],
        &["remember", "written beside it with the built-in embedder"],
    );
    ok_json(
        &store,
        &[],
        &["note", "set", "beside", "a note set meanwhile"],
    );
    // Had they waited for the slow write's lock, its memory would be stored by now.
    let listed = ok_json(&store, &[], &["list"]).to_string();
    assert!(listed.contains("a note set meanwhile"), "{listed}");
    assert!(
        !listed.contains("written through the slow embedder"),
        "the other writes waited for the slow one's lock: {listed}"
    );
    let m = waiting.join().unwrap();
    assert_eq!(
        ok_json(&store, &[], &["get", m["id"].as_str().unwrap()])["text"],
        "written through the slow embedder"
    );
}

/// A memory written while the embedder is down is kept, without its vector, and gets
/// the vector at the next `engram index` once the embedder answers.
#[test]
fn a_memory_written_while_the_embedder_is_down_is_kept_and_embedded_later() {
    let (tmp, repo) = repo();
    let repo_s = repo.to_str().unwrap();
    let store = tmp.path().join("store");
    let dead = dead_url();
    let down = down_env(&dead);
    let out = engram(
        &store,
        &down,
        &[
            "remember",
            "the nightly job rebuilds the staging database",
            "--json",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("stored without a vector"));
    let m: Value = serde_json::from_slice(&out.stdout).unwrap();

    let server = Server::start_fn(answer);
    let base = format!("{}/v1", server.addr);
    let up = [
        ("ENGRAM_EMBEDDER", "openai:all-minilm-l6-v2"),
        ("ENGRAM_EMBED_BASE_URL", base.as_str()),
    ];
    // No word in common with the memory: only its vector can find it.
    let query = "when is the test environment's DB recreated";
    let before = ok_json(&store, &up, &["recall", query]);
    assert!(
        !before.to_string().contains(m["id"].as_str().unwrap()),
        "{before}"
    );
    let report = ok_json(&store, &up, &["index", repo_s]);
    assert_eq!(report["memories_embedded"], 1, "{report}");
    let after = ok_json(&store, &up, &["recall", query]);
    assert_eq!(after["hits"][0]["key"], m["id"], "{after}");
    // Nothing is left to embed.
    assert_eq!(
        ok_json(&store, &up, &["index", repo_s])["memories_embedded"],
        0
    );
}
