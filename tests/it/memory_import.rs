//! The local import as it writes now: the first blocks of the file written while
//! the rest is read, the vectors embedded in chunks on a thread of their own, each
//! chunk's written after the next chunk's puts, all applied to the tracker while they
//! are written; and the file still imported whole or not at all.

use std::io::Write;

use engram::memory::{Memories, Memory};

/// More lines than two of the import's embedding chunks (1,024 texts each).
const LINES: usize = 2_100;

fn line(id: &str, text: &str) -> String {
    let mut m = Memory::new(text);
    m.id = id.into();
    serde_json::to_string(&m).unwrap()
}

/// A line repeating an id within the chunk after its first line: its put reaches the
/// log before the first line's vector would, so that vector must not be written: it
/// would outlive the later put. The later text embeds to nothing, so no later vector
/// replaces it either.
#[test]
fn an_id_repeated_in_the_next_chunk_keeps_no_vector_of_its_earlier_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.jsonl");
    let mut f = std::fs::File::create(&path).unwrap();
    let first = "note 10 about the parser of topic3";
    let later = "--- ... ---";
    for i in 0..LINES {
        if i == 1500 {
            writeln!(f, "{}", line("mem:0000000a", later)).unwrap();
        }
        let text = format!("note {i} about the parser of topic{}", i % 7);
        writeln!(f, "{}", line(&format!("mem:{i:08x}"), &text)).unwrap();
    }
    drop(f);
    let m = Memories::open(dir.path().join("store")).unwrap();
    let report = m.import_file(&path).unwrap();
    assert_eq!((report.imported, report.replaced), (LINES as u64 + 1, 1));
    assert_eq!(m.get("mem:0000000a").unwrap().unwrap().text, later);
    assert!(m.embedder().embed(&[later]).unwrap()[0]
        .iter()
        .all(|x| *x == 0.0));
    assert_eq!(
        m.store().vector_spaces().unwrap()[0].count,
        LINES as u64 - 1
    );
    let top = |text: &str| {
        let query = &m.embedder().embed(&[text]).unwrap()[0];
        let hits = m
            .store()
            .vector_search(m.embedder().name(), query, 1)
            .unwrap();
        (hits[0].key.clone(), hits[0].score)
    };
    let (key, score) = top(first);
    assert!(
        key != "mem:0000000a" || score < 0.999,
        "the first line's vector outlived its put"
    );
    let report = engram::store::verify(&dir.path().join("store")).unwrap();
    assert!(
        report.is_sound() && report.warnings.is_empty(),
        "{report:?}"
    );
}

#[test]
fn an_import_stores_every_vector_and_a_repeated_id_keeps_its_last_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.jsonl");
    let mut f = std::fs::File::create(&path).unwrap();
    for i in 0..LINES {
        let text = format!("note {i} about the parser of topic{}", i % 7);
        writeln!(f, "{}", line(&format!("mem:{i:08x}"), &text)).unwrap();
    }
    // The same id again, last: its text and its vector are the ones kept.
    let last = "zebra crossings need a longer green phase";
    writeln!(f, "{}", line("mem:00000005", last)).unwrap();
    drop(f);

    let m = Memories::open(dir.path().join("store")).unwrap();
    let report = m.import_file(&path).unwrap();
    assert_eq!((report.imported, report.replaced), (LINES as u64 + 1, 1));
    assert_eq!(m.count().unwrap(), LINES as u64);
    assert_eq!(m.get("mem:00000005").unwrap().unwrap().text, last);
    assert_eq!(
        m.get("mem:00000833").unwrap().unwrap().text,
        format!("note {} about the parser of topic{}", 0x833, 0x833 % 7)
    );

    // One live vector a memory, the repeated one's made from its last text.
    let spaces = m.store().vector_spaces().unwrap();
    assert_eq!(spaces.len(), 1);
    assert_eq!(spaces[0].count, LINES as u64);
    let query = &m.embedder().embed(&[last]).unwrap()[0];
    let hits = m
        .store()
        .vector_search(m.embedder().name(), query, 1)
        .unwrap();
    assert_eq!(hits[0].key, "mem:00000005");
    assert!(hits[0].score > 0.999, "{}", hits[0].score);

    // The tracker the import filled is the one the log replays to.
    drop(m);
    for f in ["tracker.db", "tracker.db-wal", "tracker.db-shm"] {
        let _ = std::fs::remove_file(dir.path().join("store").join(f));
    }
    let m = Memories::open(dir.path().join("store")).unwrap();
    assert_eq!(m.count().unwrap(), LINES as u64);
    assert_eq!(m.store().vector_spaces().unwrap()[0].count, LINES as u64);
    assert_eq!(
        m.recall("zebra crossings", 1).unwrap()[0].memory.id,
        "mem:00000005"
    );
}

/// `n` good lines, ids from `first` on, with a bad one at line `bad` (1-based) if any.
fn file_with(path: &std::path::Path, first: usize, n: usize, bad: Option<usize>) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for i in 0..n {
        if bad == Some(i + 1) {
            writeln!(f, r#"{{"text":"half a line"#).unwrap();
        }
        let id = format!("mem:{:08x}", first + i);
        let text = format!("note {i} about the parser of topic{}", i % 7);
        writeln!(f, "{}", line(&id, &text)).unwrap();
    }
}

/// The import writes the first blocks of a file while it reads the rest; a bad line
/// far into the file, found after writing began, still leaves the store as it was:
/// no memory, no vector, a clean `verify`, and the next import works.
#[test]
fn a_bad_line_found_after_writing_began_leaves_the_store_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let m = Memories::open(&store).unwrap();
    let before = dir.path().join("before.jsonl");
    file_with(&before, 0, 50, None);
    assert_eq!(m.import_file(&before).unwrap().imported, 50);

    // Bad at line 15,000: past the first block (1,024 lines) and the second (8,192).
    let path = dir.path().join("in.jsonl");
    file_with(&path, 1_000_000, 20_000, Some(15_000));
    let err = m.import_file(&path).unwrap_err().to_string();
    assert!(
        err.contains("1 bad line(s), nothing imported") && err.contains("line 15000: "),
        "{err}"
    );
    assert_eq!(m.count().unwrap(), 50);
    assert!(m.get(&format!("mem:{:08x}", 1_000_000)).unwrap().is_none());
    assert_eq!(m.store().vector_spaces().unwrap()[0].count, 50);
    let report = engram::store::verify(&store).unwrap();
    assert!(
        report.is_sound() && report.warnings.is_empty(),
        "{report:?}"
    );

    // The same file, mended, imports whole.
    file_with(&path, 1_000_000, 20_000, None);
    assert_eq!(m.import_file(&path).unwrap().imported, 20_000);
    assert_eq!(m.count().unwrap(), 20_050);
    assert_eq!(m.store().vector_spaces().unwrap()[0].count, 20_050);
    drop(m);
    let report = engram::store::verify(&store).unwrap();
    assert!(
        report.is_sound() && report.warnings.is_empty(),
        "{report:?}"
    );
}

/// An embedder slower than the import lets run beside the writing (a model, a
/// server), counting the texts it is given.
struct Slow {
    inner: engram::embed::HashedEmbedder,
    texts: std::sync::atomic::AtomicUsize,
}

impl engram::embed::Embedder for Slow {
    fn name(&self) -> &str {
        "slow-test"
    }
    fn dimensions(&self) -> usize {
        self.inner.dimensions()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, engram::embed::EmbedError> {
        self.texts
            .fetch_add(texts.len(), std::sync::atomic::Ordering::SeqCst);
        // 600 µs a text: more than the import lets run under the lock (500).
        std::thread::sleep(std::time::Duration::from_micros(600 * texts.len() as u64));
        self.inner.embed(texts)
    }
}

/// A slow embedder embeds one chunk before the whole file is known good, never more:
/// a bad file costs it at most that chunk. A good file gets every vector.
#[test]
fn a_slow_embedder_embeds_nothing_past_its_first_chunk_of_a_bad_file() {
    let dir = tempfile::tempdir().unwrap();
    let slow = std::sync::Arc::new(Slow {
        inner: engram::embed::default_embedder(),
        texts: Default::default(),
    });
    let m = Memories::open(dir.path().join("store"))
        .unwrap()
        .with_embedder(slow.clone());
    let path = dir.path().join("in.jsonl");
    // Bad in the third block: the first two (1,024 and 8,192 lines) were handed on.
    file_with(&path, 0, 12_000, Some(11_000));
    let err = m.import_file(&path).unwrap_err().to_string();
    assert!(err.contains("line 11000: "), "{err}");
    assert_eq!(slow.texts.load(std::sync::atomic::Ordering::SeqCst), 1024);
    assert_eq!(m.count().unwrap(), 0);

    file_with(&path, 0, 1_500, None);
    slow.texts.store(0, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(m.import_file(&path).unwrap().imported, 1_500);
    assert_eq!(slow.texts.load(std::sync::atomic::Ordering::SeqCst), 1_500);
    assert_eq!(m.store().vector_spaces().unwrap()[0].count, 1_500);
}

/// Peak resident memory of a running process, from `/proc` (0 once it is gone).
fn peak_rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Issue 40: `engram import /dev/zero` read one endless line (2.8 GB in 8 s) and never
/// ended. Now a line is refused as soon as it passes `max_line_bytes`, before it is
/// held whole: the import ends with an error naming the line and the limit, within
/// seconds, its memory bounded.
#[test]
fn an_endless_line_ends_the_import_with_an_error_naming_the_line_and_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let engram = |file: &std::path::Path, limit: Option<&str>| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_engram"));
        c.arg("--store")
            .arg(&store)
            .arg("import")
            .arg(file)
            .env_remove("ENGRAM_STORE")
            .env_remove("ENGRAM_MAX_LINE_BYTES")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        if let Some(limit) = limit {
            c.env("ENGRAM_MAX_LINE_BYTES", limit);
        }
        c.spawn().unwrap()
    };

    let started = std::time::Instant::now();
    let mut child = engram(std::path::Path::new("/dev/zero"), None);
    let mut peak = 0;
    let status = loop {
        peak = peak.max(peak_rss_bytes(child.id()));
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > std::time::Duration::from_secs(10) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("engram import /dev/zero still running after 10 s ({peak} bytes resident)");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!status.success());
    assert!(
        err.contains("line 1") && err.contains("67108864") && err.contains("max_line_bytes"),
        "{err}"
    );
    assert!(peak < 200 << 20, "{peak} bytes resident");

    // A file's third line over a smaller limit: named, and nothing imported.
    let path = dir.path().join("in.jsonl");
    let long = line("mem:00000003", &"word ".repeat(400));
    let text = [
        line("mem:00000001", "one"),
        line("mem:00000002", "two"),
        long,
    ]
    .join("\n");
    std::fs::write(&path, text).unwrap();
    let out = engram(&path, Some("1000")).wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("line 3") && err.contains("1000 bytes"),
        "{err}"
    );
    let m = Memories::open(&store).unwrap();
    assert!(
        m.get("mem:00000001").unwrap().is_none(),
        "a memory was imported"
    );
    drop(m);
    let out = engram(&path, Some("4000")).wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
