//! Indexing on many threads writes what indexing on one writes: the same records in
//! the same order in the log, and the same answers from the tracker and search.

use std::path::Path;

use engram::index::{self, IndexOptions, IndexReport};
use engram::search::{search, SearchOptions};
use engram::store::{RecordKind, Store, StoreOptions};

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// A tree of real code (this crate's own sources), plus a binary file and a file
/// holding a secret, so skipping and redaction counts are merged across threads too.
fn fixture(root: &Path) {
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), root);
    std::fs::write(root.join("blob.bin"), [0u8, 159, 146, 150, 0, 1]).unwrap();
    std::fs::write(
        root.join("deploy.py"),
        "TOKEN = \"ghp_a8Kd02Lm5Qz7Rt1Vw3Yb6Nc9Pf4Hj2Sx0Ue8\"\n",
    )
    .unwrap();
}

fn index_with(root: &Path, dir: &Path, threads: usize) -> (Store, IndexReport) {
    let store = Store::open(dir, StoreOptions::default(), engram::projections()).unwrap();
    let opts = IndexOptions {
        threads,
        ..IndexOptions::default()
    };
    let report = index::index(&store, root, &opts).unwrap();
    (store, report)
}

/// Every put and vector record in log order: kind, metadata and body.
fn log_records(store: &Store) -> Vec<(String, Vec<u8>, Vec<u8>)> {
    let snap = store.snapshot().unwrap();
    snap.records()
        .map(|r| r.unwrap().1)
        .filter(|r| matches!(r.kind, RecordKind::Put | RecordKind::Vector))
        .map(|r| (format!("{:?}", r.kind), r.meta.to_vec(), r.body.to_vec()))
        .collect()
}

fn rows(store: &Store, sql: &str) -> Vec<String> {
    store
        .with_tracker(|db| {
            let mut stmt = db.prepare(sql)?;
            let n = stmt.column_count();
            let rows = stmt.query_map([], |r| {
                let mut cols = Vec::with_capacity(n);
                for i in 0..n {
                    cols.push(format!("{:?}", r.get_ref(i)?));
                }
                Ok(cols.join("|"))
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .unwrap()
}

#[test]
fn many_threads_write_what_one_thread_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("repo");
    fixture(&root);
    let (one, r1) = index_with(&root, &tmp.path().join("one"), 1);
    // Two threads: this one (committing, and preparing when nothing is ready) and one
    // helper; four: three helpers.
    let (two, r2) = index_with(&root, &tmp.path().join("two"), 2);
    let (many, r4) = index_with(&root, &tmp.path().join("many"), 4);
    assert_eq!(r1.files_indexed, r2.files_indexed);
    assert!(
        log_records(&one) == log_records(&two),
        "two threads: the same records in the same order"
    );

    assert!(r1.files_indexed > 50, "the fixture is real code: {r1:?}");
    assert_eq!(r1.files_indexed, r4.files_indexed);
    assert_eq!(r1.chunks, r4.chunks);
    assert_eq!(r1.symbols, r4.symbols);
    assert_eq!(r1.skipped_binary, 1);
    assert_eq!(r1.skipped_binary, r4.skipped_binary);
    assert!(!r1.redactions.is_empty(), "the planted token is redacted");
    assert_eq!(r1.redactions, r4.redactions);

    let (log1, log4) = (log_records(&one), log_records(&many));
    assert!(log1.len() > 500);
    assert!(log1 == log4, "the same records in the same order");

    for sql in [
        "SELECT path, lang, hash, chunks, symbols, imports FROM code_files ORDER BY path",
        "SELECT path, chunk_id, lang, start_line, end_line, symbol FROM code_chunks ORDER BY path, chunk_id",
        "SELECT path, name, qualified_name, kind, start_line, end_line, signature FROM code_symbols ORDER BY path, start_line, qualified_name",
        "SELECT key FROM records ORDER BY key",
    ] {
        assert_eq!(rows(&one, sql), rows(&many, sql), "{sql}");
    }
    let opts = SearchOptions::default();
    for q in [
        "open the store",
        "redact secrets",
        "BatchWriter",
        "vector cache grow",
    ] {
        let keys = |s: &Store| -> Vec<String> {
            search(s, q, &opts)
                .unwrap()
                .hits
                .into_iter()
                .map(|h| h.key)
                .collect()
        };
        let k1 = keys(&one);
        assert!(!k1.is_empty(), "{q}");
        assert_eq!(k1, keys(&many), "{q}");
    }
}

/// Counts the texts it embeds: on the preparing threads, one per one-chunk file.
struct Counting {
    inner: engram::embed::HashedEmbedder,
    texts: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl engram::embed::Embedder for Counting {
    fn name(&self) -> &str {
        "counting-test"
    }
    fn dimensions(&self) -> usize {
        self.inner.dimensions()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, engram::embed::EmbedError> {
        self.texts
            .fetch_add(texts.len(), std::sync::atomic::Ordering::SeqCst);
        self.inner.embed(texts)
    }
}

/// Issue 43: the preparing threads ran ahead of a slow writer without limit (the
/// reorder window was drained whole at every file), so prepared files piled up and
/// resident memory grew with the tree (576 MB anonymous for 2.7M lines). Here the
/// writer's side is slowed (the progress callback runs on it) and the preparers are
/// fast: how far they get ahead of the files accepted stays within the window
/// whatever the tree's size.
#[test]
fn preparing_threads_stay_within_a_bounded_window_of_a_slow_writer() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("tree");
    std::fs::create_dir_all(&root).unwrap();
    const FILES: usize = 600;
    for i in 0..FILES {
        std::fs::write(
            root.join(format!("note{i:04}.txt")),
            format!("note number {i}\n"),
        )
        .unwrap();
    }
    let texts = Arc::new(AtomicUsize::new(0));
    let ahead = Arc::new(AtomicUsize::new(0));
    let (t, a) = (texts.clone(), ahead.clone());
    let store = Store::open(
        dir.path().join("store"),
        StoreOptions::default(),
        engram::projections(),
    )
    .unwrap();
    let opts = IndexOptions {
        threads: 2,
        keywords_first: false,
        embedder: Arc::new(Counting {
            inner: engram::embed::HashedEmbedder::default(),
            texts: texts.clone(),
        }),
        progress: Some(Arc::new(move |done, _total| {
            std::thread::sleep(std::time::Duration::from_millis(2));
            let prepared = t.load(Ordering::SeqCst) as u64;
            a.fetch_max(prepared.saturating_sub(done) as usize, Ordering::SeqCst);
        })),
        ..IndexOptions::default()
    };
    let report = index::index(&store, &root, &opts).unwrap();
    assert_eq!(report.files_indexed, FILES as u64);
    assert_eq!(texts.load(Ordering::SeqCst), FILES, "one chunk a file");
    let most = ahead.load(Ordering::SeqCst);
    // The window: 64 results in the channel, 64 waiting in order, the files in hand.
    assert!(
        most <= 140,
        "the preparers got {most} files ahead of the writer"
    );
}
