//! Switching embedders: the index pass re-embeds unchanged files without rewriting
//! their chunks, so the old embedder's vectors stay until the new ones are complete,
//! and search reads the most complete vector space meanwhile (and says so).

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use engram::embed::{EmbedError, Embedder, HashedEmbedder};
use engram::index::{self, IndexOptions, SecretAction};
use engram::search::{search, FusionWeights, SearchOptions, SearchResults};
use engram::store::{Store, StoreOptions};

/// Embedder A: a built-in one, which search can make from its name alone.
const A: &str = "hash-v2-256";

fn open(dir: &Path) -> Store {
    Store::open(dir, StoreOptions::default(), engram::projections()).unwrap()
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// Embedder B: another space (its own name and dimension), which search cannot make
/// by name. It can be told to fail after some calls (a pass cut short midway) and to
/// take a while per call (so that each file is committed in its own batch).
struct TestEmbedder {
    inner: HashedEmbedder,
    calls_left: AtomicUsize,
    delay: Duration,
}

impl TestEmbedder {
    fn new(calls_left: usize, delay: Duration) -> Self {
        TestEmbedder {
            inner: HashedEmbedder::new(64),
            calls_left: AtomicUsize::new(calls_left),
            delay,
        }
    }
}

impl Embedder for TestEmbedder {
    fn name(&self) -> &str {
        "test-b-64"
    }
    fn dimensions(&self) -> usize {
        64
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        std::thread::sleep(self.delay);
        let left = self.calls_left.load(Ordering::SeqCst);
        if left == 0 {
            return Err(EmbedError::Failed {
                embedder: self.name().into(),
                reason: "cut short by the test".into(),
            });
        }
        self.calls_left.store(left - 1, Ordering::SeqCst);
        self.inner.embed(texts)
    }
}

const FILES: usize = 6;

fn tree(root: &Path) {
    for i in 0..FILES {
        write(
            root,
            &format!("src/m{i}.py"),
            &format!(
                "def compute_checksum_{i}(buffer):\n    \"\"\"Add up the bytes of a buffer into a checksum.\"\"\"\n    total = 0\n    for byte in buffer:\n        total = (total + byte) % 65521\n    return total\n\n\ndef parse_header_{i}(line):\n    \"\"\"Split a header line into its name and value.\"\"\"\n    name, _, value = line.partition(':')\n    return name.strip(), value.strip()\n"
            ),
        );
    }
}

/// A plain pass with `embedder` (not keywords first: these tests follow a switch).
fn index_with(store: &Store, root: &Path, embedder: Arc<dyn Embedder>) -> index::IndexReport {
    index::index(
        store,
        root,
        &IndexOptions {
            embedder,
            threads: 1,
            keywords_first: false,
            ..IndexOptions::default()
        },
    )
    .unwrap()
}

/// Search with only the vector list counting, so a hit with a score came from it.
fn vector_search(store: &Store, embedder: Arc<dyn Embedder>) -> SearchResults {
    search(
        store,
        "add up the bytes of a buffer",
        &SearchOptions {
            embedder,
            weights: Some(FusionWeights {
                symbol: 0.0,
                keyword: 0.0,
                vector: 1.0,
            }),
            ..SearchOptions::default()
        },
    )
    .unwrap()
}

fn vector_hits(r: &SearchResults) -> usize {
    r.hits.iter().filter(|h| h.score > 0.0).count()
}

fn count(store: &Store, embedder: &str) -> u64 {
    store
        .vector_spaces()
        .unwrap()
        .into_iter()
        .find(|s| s.embedder == embedder)
        .map_or(0, |s| s.count)
}

fn chunk_seqs(store: &Store) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for i in 0..FILES {
        for c in 0.. {
            let key = format!("chunk:src/m{i}.py:{c}");
            match store.get(&key).unwrap() {
                Some(r) => out.push((key, r.seq)),
                None => break,
            }
        }
    }
    out
}

#[test]
fn a_switch_keeps_the_old_space_searchable_until_the_new_one_is_complete() {
    let repo = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    tree(repo.path());
    let store = open(dir.path());
    let a: Arc<dyn Embedder> = Arc::new(HashedEmbedder::new(256));
    assert_eq!(a.name(), A);
    let first = index_with(&store, repo.path(), a.clone());
    assert_eq!(first.files_indexed, FILES as u64);
    let a_vectors = count(&store, A);
    assert!(a_vectors >= FILES as u64, "{a_vectors}");
    let seqs = chunk_seqs(&store);
    assert!(seqs.len() >= FILES);

    // Switch to B; the pass fails on its third file, each earlier file committed.
    let b = Arc::new(TestEmbedder::new(2, Duration::from_millis(150)));
    let cut = index::index(
        &store,
        repo.path(),
        &IndexOptions {
            embedder: b.clone(),
            threads: 1,
            keywords_first: false,
            ..IndexOptions::default()
        },
    );
    assert!(cut.is_err(), "the pass was to fail midway");
    let b_vectors = count(&store, "test-b-64");
    assert!(
        b_vectors > 0 && b_vectors < a_vectors,
        "B has {b_vectors} of {a_vectors}"
    );
    // A's vectors are all still there, and the chunks were not rewritten.
    assert_eq!(count(&store, A), a_vectors);
    assert_eq!(chunk_seqs(&store), seqs);
    // Mid-switch, A is not superseded: nothing retires it.
    let r = store
        .compact_retiring(&|db, name| Ok(!index::embedder_in_use(db, name)?))
        .unwrap();
    assert!(r.retired_embedders.is_empty(), "{r:?}");
    assert_eq!(count(&store, A), a_vectors);
    let seqs = chunk_seqs(&store);
    // Search reads A's space, the most complete, and says so.
    let mid = vector_search(&store, b.clone());
    assert_eq!(mid.vector_space.as_deref(), Some(A));
    assert!(vector_hits(&mid) > 0, "{mid:?}");
    let json = serde_json::to_value(&mid).unwrap();
    assert_eq!(json["vector_space"], A);

    // Finish the pass: the files B already has are unchanged, the rest re-embedded.
    let b_done: Arc<dyn Embedder> = Arc::new(TestEmbedder::new(usize::MAX, Duration::ZERO));
    let rest = index_with(&store, repo.path(), b_done.clone());
    assert_eq!(rest.files_reembedded, FILES as u64 - 2, "{rest:?}");
    assert_eq!(rest.files_indexed, 0, "{rest:?}");
    assert_eq!(rest.files_unchanged, 2, "{rest:?}");
    assert_eq!(count(&store, "test-b-64"), a_vectors);
    assert_eq!(chunk_seqs(&store), seqs, "no chunk record was rewritten");
    let done = vector_search(&store, b_done.clone());
    assert_eq!(done.vector_space, None, "B is complete: its own space");
    assert!(vector_hits(&done) > 0, "{done:?}");
    assert!(serde_json::to_value(&done)
        .unwrap()
        .get("vector_space")
        .is_none());

    // Another pass with B changes nothing.
    let again = index_with(&store, repo.path(), b_done.clone());
    assert_eq!(again.files_unchanged, FILES as u64);
    assert_eq!(again.files_reembedded, 0);

    // Reopened (the counts are in the tracker, rebuilt from the log alike).
    drop(store);
    std::fs::remove_file(dir.path().join("tracker.db")).unwrap();
    let store = open(dir.path());
    assert_eq!(count(&store, A), a_vectors);
    assert_eq!(count(&store, "test-b-64"), a_vectors);

    // A plain compaction keeps A's vectors; one retiring superseded embedders drops
    // them, now that every file is on B and B has a vector for every key A had.
    assert!(store.compact().unwrap().retired_embedders.is_empty());
    assert_eq!(count(&store, A), a_vectors);
    let r = store
        .compact_retiring(&|db, name| Ok(!index::embedder_in_use(db, name)?))
        .unwrap();
    assert_eq!(r.retired_embedders, vec![A.to_string()]);
    assert_eq!(count(&store, A), 0);
    assert_eq!(count(&store, "test-b-64"), a_vectors);
    assert_eq!(chunk_seqs(&store), seqs);
    let after = vector_search(&store, b_done.clone());
    assert_eq!(after.vector_space, None);
    assert!(vector_hits(&after) > 0, "{after:?}");
    let caches: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("vectors-"))
        .collect();
    assert!(
        caches.iter().all(|n| !n.contains("hash-v2-256")),
        "{caches:?}"
    );
}

#[test]
fn a_file_changed_during_the_switch_is_written_in_full() {
    let repo = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    tree(repo.path());
    let store = open(dir.path());
    index_with(&store, repo.path(), Arc::new(HashedEmbedder::new(256)));
    let a_vectors = count(&store, A);
    let seqs = chunk_seqs(&store);
    write(
        repo.path(),
        "src/m0.py",
        "def compute_checksum_0(buffer):\n    \"\"\"Sum the bytes, modulo a prime.\"\"\"\n    return sum(buffer) % 65521\n",
    );
    let b: Arc<dyn Embedder> = Arc::new(TestEmbedder::new(usize::MAX, Duration::ZERO));
    let r = index_with(&store, repo.path(), b.clone());
    assert_eq!(r.files_indexed, 1, "{r:?}");
    assert_eq!(r.files_reembedded, FILES as u64 - 1, "{r:?}");
    let now = chunk_seqs(&store);
    for (key, seq) in &now {
        let before = seqs.iter().find(|(k, _)| k == key).map(|(_, s)| *s);
        if key.starts_with("chunk:src/m0.py:") {
            assert!(before.is_none_or(|s| s < *seq), "{key} was rewritten");
        } else {
            assert_eq!(before, Some(*seq), "{key} was not to be rewritten");
        }
    }
    // The changed file's chunks have B's vectors only; the others have both.
    let m0_chunks = now
        .iter()
        .filter(|(k, _)| k.starts_with("chunk:src/m0.py:"))
        .count() as u64;
    let old_m0 = seqs
        .iter()
        .filter(|(k, _)| k.starts_with("chunk:src/m0.py:"))
        .count() as u64;
    assert_eq!(count(&store, A), a_vectors - old_m0);
    assert_eq!(count(&store, "test-b-64"), a_vectors - old_m0 + m0_chunks);
}

#[test]
fn stored_chunks_that_differ_from_the_preparation_are_written_in_full() {
    // Same content, but the chunks this pass makes are not the stored ones (secrets
    // now excluded rather than redacted): the re-embed check under the lock refuses.
    let repo = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    tree(repo.path());
    write(
        repo.path(),
        "src/keys.py",
        "def connect():\n    \"\"\"Open the connection.\"\"\"\n    token = \"ghp_Zq8xV2mN4bR7tY1wK9pL3sD6fG0hJ5cE2aXu\"\n    return token\n",
    );
    let store = open(dir.path());
    index_with(&store, repo.path(), Arc::new(HashedEmbedder::new(256)));
    let r = index::index(
        &store,
        repo.path(),
        &IndexOptions {
            embedder: Arc::new(TestEmbedder::new(usize::MAX, Duration::ZERO)),
            secret_action: SecretAction::Exclude,
            threads: 1,
            keywords_first: false,
            ..IndexOptions::default()
        },
    )
    .unwrap();
    assert_eq!(r.files_indexed, 1, "{r:?}");
    assert_eq!(r.files_reembedded, FILES as u64, "{r:?}");
}

#[test]
fn keywords_first_answers_before_the_vectors_are_in_and_fully_after() {
    let repo = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    tree(repo.path());
    let store = open(dir.path());
    let b: Arc<dyn Embedder> = Arc::new(TestEmbedder::new(usize::MAX, Duration::ZERO));
    let opts = IndexOptions {
        embedder: b.clone(),
        threads: 1,
        ..IndexOptions::default()
    };
    assert!(opts.keywords_first, "keywords first is the default");

    // The keywords pass alone (what a first search over MCP waits for): every file is
    // in, with the built-in vectors and none of B's yet.
    let keywords = index::index_keywords(&store, repo.path(), &opts).unwrap();
    assert_eq!(keywords.files_indexed, FILES as u64, "{keywords:?}");
    let a_vectors = count(&store, A);
    assert!(a_vectors >= FILES as u64, "{a_vectors}");
    assert_eq!(count(&store, "test-b-64"), 0);
    let early = search(
        &store,
        "parse_header_3",
        &SearchOptions {
            embedder: b.clone(),
            ..SearchOptions::default()
        },
    )
    .unwrap();
    assert_eq!(
        early.hits.first().and_then(|h| h.path.as_deref()),
        Some("src/m3.py"),
        "{early:?}"
    );
    let mid = vector_search(&store, b.clone());
    assert_eq!(mid.vector_space.as_deref(), Some(A), "{mid:?}");
    assert!(vector_hits(&mid) > 0, "{mid:?}");

    // The whole pass: nothing re-chunked, B's vectors added to every chunk, and both
    // times reported.
    let seqs = chunk_seqs(&store);
    let full = index::index(&store, repo.path(), &opts).unwrap();
    assert_eq!(full.files_indexed, 0, "{full:?}");
    assert_eq!(full.files_reembedded, FILES as u64, "{full:?}");
    let k = full.keyword_seconds.expect("the keywords pass is timed");
    assert!(k <= full.seconds, "{full:?}");
    assert_eq!(chunk_seqs(&store), seqs);
    assert_eq!(count(&store, "test-b-64"), a_vectors);
    let done = vector_search(&store, b.clone());
    assert_eq!(done.vector_space, None, "B is complete: its own space");
    assert!(vector_hits(&done) > 0, "{done:?}");

    // An edit: the keywords pass rewrites the file, B's pass adds its vectors, and the
    // other files are left alone by both (their records still name B).
    write(
        repo.path(),
        "src/m0.py",
        "def compute_checksum_0(buffer):\n    \"\"\"Sum the bytes, modulo a prime.\"\"\"\n    return sum(buffer) % 65521\n",
    );
    let edit = index::index(&store, repo.path(), &opts).unwrap();
    assert_eq!(edit.files_indexed, 1, "{edit:?}");
    assert_eq!(edit.files_reembedded, 1, "{edit:?}");
    assert_eq!(edit.files_unchanged, FILES as u64 - 1, "{edit:?}");
    assert_eq!(count(&store, "test-b-64"), count(&store, A));
    assert_eq!(vector_search(&store, b.clone()).vector_space, None);
    let again = index::index(&store, repo.path(), &opts).unwrap();
    assert_eq!(
        (
            again.files_indexed,
            again.files_reembedded,
            again.files_unchanged
        ),
        (0, 0, FILES as u64),
        "{again:?}"
    );
}

/// Over MCP, indexing with a slow embedder answers once the keywords are in, and the
/// embedder's vectors are added by the engine in the background.
#[test]
fn jit_index_directory_answers_after_the_keywords_and_fills_vectors_in_the_background() {
    use engram::gate::{Caps, Gate};
    use engram::mcp::Engine;
    use engram::memory::Memories;

    let repo = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    tree(repo.path());
    // Slow enough that the fill cannot be done when the call returns.
    let b: Arc<dyn Embedder> = Arc::new(TestEmbedder::new(usize::MAX, Duration::from_millis(300)));
    let memories = Memories::open(dir.path().join("store")).unwrap();
    let gate = Gate::new(
        "repo",
        Some(repo.path().to_path_buf()),
        Vec::new(),
        Caps::default(),
    );
    let engine = Engine::new(
        memories,
        gate,
        IndexOptions {
            embedder: b.clone(),
            threads: 1,
            ..IndexOptions::default()
        },
    );
    let args = |v: serde_json::Value| v.as_object().cloned().unwrap();
    let r = engine
        .call("jit_index_directory", &args(serde_json::json!({})))
        .unwrap();
    assert_eq!(r["files_indexed"], FILES as u64, "{r}");
    assert!(
        r["vectors"]
            .as_str()
            .is_some_and(|v| v.contains("test-b-64")),
        "{r}"
    );
    let store = engine.memories.store();
    assert!(count(store, "test-b-64") < count(store, A));
    let hits = engine
        .call(
            "code_search",
            &args(serde_json::json!({"query": "parse_header_2"})),
        )
        .unwrap();
    assert_eq!(hits["hits"][0]["path"], "src/m2.py", "{hits}");

    assert!(engine.vector_fill.wait_idle(Duration::from_secs(60)));
    let status = engine.vector_fill.status();
    assert_eq!(status.last_error, None, "{status:?}");
    assert!(status.runs >= 1);
    assert_eq!(count(store, "test-b-64"), count(store, A));
    let done = vector_search(store, b.clone());
    assert_eq!(done.vector_space, None, "B is complete: its own space");
}
