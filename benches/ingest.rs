//! Ingest benchmarks: bulk writes against SQLite doing the same work in the same run.
//!
//! - import: `Memories::import_file` of N memories of about 1 KiB each (default
//!   20,000; `ENGRAM_BENCH_N`), durability `always`, embeddings included, against
//!   SQLite (WAL, synchronous=FULL) inserting the same rows — id, metadata JSON,
//!   text and the embedding's bytes — into a table plus an FTS5 index over the text,
//!   in transactions of 1,000 rows (and as one transaction, printed beside it). The
//!   baseline gets its vectors precomputed: it is charged only for storing them.
//!   Then N more memories into the same store, and N more rows into the same
//!   database: an import into a store that has data (and vectors) already.
//! - embed: the built-in embedder on one thread over the import's texts and over
//!   pieces of about 1 KiB of the cargo registry's Rust sources (third-party code),
//!   20,000 of each, in batches of 50 (below the size the embedder splits across
//!   cores), against one `hash64` pass over the same texts: texts/s and the ratio.
//! - text: what the tracker's applying thread does with each memory's text, over the
//!   import's texts and the same registry pieces: `index_text` against a plain pass
//!   over the bytes, and `from_utf8` against `from_utf8_lossy`.
//!
//! `cargo bench --bench ingest`; `ENGRAM_BENCH=import,embed,text` picks parts;
//! `ENGRAM_BENCH_QUICK=1` shrinks the sizes for a smoke run; `ENGRAM_BENCH_PROFILE=1`
//! runs engram's side once and nothing else, for `perf record` (`=2`: both imports).

mod common;
use common::{bench_dir, quick, wanted};

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use engram::embed::Embedder;
use engram::memory::{Memories, Memory};
use engram::store::{Durability, StoreOptions};

/// xorshift64: deterministic text without an RNG crate.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// A vocabulary of 4,096 pronounceable made-up words, so the full-text index sees a
/// realistic spread of terms rather than a handful repeated.
fn vocabulary() -> Vec<String> {
    const ONSETS: &[&str] = &[
        "b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v",
    ];
    const NUCLEI: &[&str] = &["a", "e", "i", "o", "u", "ai", "ea", "ou"];
    const CODAS: &[&str] = &["", "n", "r", "s", "t", "ck", "ll", "nd"];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    (0..4096)
        .map(|_| {
            let syllables = 1 + rng.next() % 3;
            (0..syllables)
                .map(|_| {
                    let r = rng.next();
                    format!(
                        "{}{}{}",
                        ONSETS[(r % 16) as usize],
                        NUCLEI[((r >> 8) % 8) as usize],
                        CODAS[((r >> 16) % 8) as usize]
                    )
                })
                .collect::<String>()
        })
        .collect()
}

/// `n` memories of about 1 KiB of text each, with a task, a context and a tag; ids
/// from `first` on.
fn memories(n: usize, first: usize) -> Vec<Memory> {
    const CONTEXTS: &[&str] = &["auth", "billing", "api", "infra", "data"];
    let words = vocabulary();
    let mut rng = Rng(42 + first as u64);
    (first..first + n)
        .map(|i| {
            let mut text = String::with_capacity(1100);
            while text.len() < 1000 {
                text.push_str(&words[(rng.next() % words.len() as u64) as usize]);
                text.push(' ');
            }
            text.push_str(&format!("#{i}"));
            let mut m = Memory::new(text);
            m.id = format!("mem:{i:08x}");
            m.task = Some("debug".into());
            m.contexts = vec![CONTEXTS[i % CONTEXTS.len()].into()];
            m.tags = vec![words[(i * 7) % 128].clone()];
            m.created_ms = 1_700_000_000_000 + i as u64;
            m.updated_ms = m.created_ms;
            m
        })
        .collect()
}

fn write_jsonl(path: &Path, ms: &[Memory]) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("jsonl"));
    for m in ms {
        writeln!(f, "{}", serde_json::to_string(m).expect("json")).expect("write");
    }
    f.flush().expect("flush");
}

/// Seconds for engram to import each file of `jsonl` into one new store, one after
/// the other, durability `always`.
fn engram_import(jsonl: &[&Path], n: usize) -> Vec<f64> {
    let dir = bench_dir("ingest-engram");
    let memories = Memories::open_with(
        dir.path().join("store"),
        StoreOptions {
            durability: Durability::Always,
            create: true,
            ..StoreOptions::default()
        },
    )
    .expect("open");
    jsonl
        .iter()
        .map(|path| {
            let start = Instant::now();
            let report = memories.import_file(path).expect("import");
            let secs = start.elapsed().as_secs_f64();
            assert_eq!(report.imported as usize, n, "every memory imported");
            secs
        })
        .collect()
}

type Row = (String, String, String, Vec<u8>);

/// Seconds for SQLite (WAL, synchronous=FULL) to insert the same rows, their
/// precomputed vectors included, into a table plus FTS5, `batch` rows a transaction:
/// each of `parts` into one new database, one after the other.
fn sqlite_import(parts: &[&[Row]], batch: usize) -> Vec<f64> {
    let dir = bench_dir("ingest-sqlite");
    let mut db = rusqlite::Connection::open(dir.path().join("bench.db")).expect("open sqlite");
    db.pragma_update(None, "journal_mode", "WAL").expect("wal");
    db.pragma_update(None, "synchronous", "FULL").expect("sync");
    db.execute_batch(
        "CREATE TABLE memories (id TEXT PRIMARY KEY, meta TEXT NOT NULL, text TEXT NOT NULL, vector BLOB);
         CREATE VIRTUAL TABLE memories_fts USING fts5(text, content='memories', content_rowid='rowid');",
    )
    .expect("schema");
    let mut times = Vec::new();
    let mut total = 0;
    for rows in parts {
        let start = Instant::now();
        for chunk in rows.chunks(batch) {
            let tx = db.transaction().expect("tx");
            {
                let mut insert = tx
                    .prepare_cached(
                        "INSERT INTO memories (id, meta, text, vector) VALUES (?1, ?2, ?3, ?4)",
                    )
                    .expect("prepare");
                let mut fts = tx
                    .prepare_cached("INSERT INTO memories_fts (rowid, text) VALUES (?1, ?2)")
                    .expect("prepare fts");
                for (id, meta, text, vector) in chunk {
                    insert
                        .execute(rusqlite::params![id, meta, text, vector])
                        .expect("insert");
                    fts.execute(rusqlite::params![tx.last_insert_rowid(), text])
                        .expect("insert fts");
                }
            }
            tx.commit().expect("commit");
        }
        times.push(start.elapsed().as_secs_f64());
        total += rows.len();
        let count: i64 = db
            .query_row("SELECT count(*) FROM memories_fts", [], |r| r.get(0))
            .expect("count");
        assert_eq!(count as usize, total, "every row indexed");
    }
    times
}

fn bench_import() {
    let n: usize = std::env::var("ENGRAM_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick() { 2_000 } else { 20_000 });
    println!("\n## import: {n} memories of about 1 KiB, durability always, embeddings included");
    let (ms, more) = (memories(n, 0), memories(n, n));
    let dir = bench_dir("ingest-input");
    let jsonl = dir.path().join("memories.jsonl");
    let jsonl2 = dir.path().join("more.jsonl");
    write_jsonl(&jsonl, &ms);
    write_jsonl(&jsonl2, &more);
    // ENGRAM_BENCH_PROFILE=1: engram's side once, nothing else (for `perf record`).
    // ENGRAM_BENCH_PROFILE=2: then the second import into the same store too.
    if let Some(profile) = std::env::var_os("ENGRAM_BENCH_PROFILE") {
        let files: &[&Path] = if profile == "2" {
            &[&jsonl, &jsonl2]
        } else {
            &[&jsonl]
        };
        for secs in engram_import(files, n) {
            println!(
                "engram import_file {:.0} memories/s ({secs:.2} s)",
                n as f64 / secs
            );
        }
        return;
    }
    let embedder = engram::embed::default_embedder();
    let rows_of = |ms: &[Memory]| -> Vec<Row> {
        let texts: Vec<&str> = ms.iter().map(|m| m.text.as_str()).collect();
        let vectors = embedder.embed(&texts).expect("embed");
        ms.iter()
            .zip(&vectors)
            .map(|(m, v)| {
                let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                let meta = serde_json::Value::Object(m.to_meta()).to_string();
                (m.id.clone(), meta, m.text.clone(), bytes)
            })
            .collect()
    };
    let (rows, rows2) = (rows_of(&ms), rows_of(&more));
    // Alternate the two, best of three each, so a noisy neighbour hurts both alike.
    let mut best = [f64::MAX; 5];
    for _ in 0..3 {
        let e = engram_import(&[&jsonl, &jsonl2], n);
        let s = sqlite_import(&[&rows, &rows2], 1000);
        let one = sqlite_import(&[&rows], n);
        for (b, t) in best.iter_mut().zip([e[0], s[0], one[0], e[1], s[1]]) {
            *b = b.min(t);
        }
    }
    let [best_e, best_s, best_one, best_e2, best_s2] = best;
    let rate = |s: f64| n as f64 / s;
    println!(
        "engram import_file                 {:>9.0} memories/s ({best_e:.2} s)",
        rate(best_e)
    );
    println!(
        "SQLite WAL FULL, table + FTS5, 1000/tx {:>9.0} rows/s ({best_s:.2} s)  engram/SQLite {:.2}x",
        rate(best_s),
        best_s / best_e
    );
    println!(
        "SQLite WAL FULL, table + FTS5, one tx  {:>9.0} rows/s ({best_one:.2} s)  engram/SQLite {:.2}x",
        rate(best_one),
        best_one / best_e
    );
    println!("then {n} more into the same store / database:");
    println!(
        "engram import_file                 {:>9.0} memories/s ({best_e2:.2} s)",
        rate(best_e2)
    );
    println!(
        "SQLite WAL FULL, table + FTS5, 1000/tx {:>9.0} rows/s ({best_s2:.2} s)  engram/SQLite {:.2}x",
        rate(best_s2),
        best_s2 / best_e2
    );
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    if wanted("import") {
        bench_import();
    }
    if wanted("embed") {
        bench_embed();
    }
    if wanted("text") {
        bench_text();
    }
}

/// Best of three runs of `f` over `texts`, in seconds.
fn best_of_three(texts: &[&str], f: impl Fn(&str) -> usize) -> f64 {
    (0..3)
        .map(|_| {
            let t = Instant::now();
            let n: usize = texts.iter().map(|x| f(x)).sum();
            std::hint::black_box(n);
            t.elapsed().as_secs_f64()
        })
        .fold(f64::MAX, f64::min)
}

/// The per-text work the tracker's applying thread does on a memory's text, over the
/// import's texts and over registry sources (third-party code, with capitals and
/// underscores throughout): `index_text` against a plain read of the same bytes
/// (counting spaces), and `from_utf8` against `from_utf8_lossy`, in the same run.
fn bench_text() {
    let n: usize = if quick() { 2_000 } else { 20_000 };
    let memories: Vec<String> = memories(n, 0).into_iter().map(|m| m.text).collect();
    let code = code_pieces(n);
    println!("\n## a memory's text on the applying thread, best of three");
    for (what, texts) in [("import texts", &memories), ("registry code", &code)] {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let mb = refs.iter().map(|t| t.len()).sum::<usize>() as f64 / 1e6;
        let spaces = best_of_three(&refs, |t| t.bytes().filter(|&b| b == b' ').count());
        let index = best_of_three(&refs, |t| engram::fts::index_text(t).len());
        let lossy = best_of_three(&refs, |t| String::from_utf8_lossy(t.as_bytes()).len());
        let strict = best_of_three(&refs, |t| {
            std::str::from_utf8(t.as_bytes()).map_or(0, str::len)
        });
        println!(
            "{what:<14} {} texts, {mb:.1} MB: index_text {:.1} ms | space-count pass {:.1} ms | pass/index_text {:.2}x",
            refs.len(),
            index * 1e3,
            spaces * 1e3,
            spaces / index
        );
        println!(
            "{what:<14} from_utf8 {:.2} ms | from_utf8_lossy {:.2} ms | lossy/from_utf8 {:.1}x",
            strict * 1e3,
            lossy * 1e3,
            lossy / strict
        );
    }
}

/// About 1 KiB pieces of registry sources, cut at line ends, `n` of them at most.
fn code_pieces(n: usize) -> Vec<String> {
    let mut out = Vec::with_capacity(n);
    for path in common::registry_sources() {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let mut piece = String::with_capacity(1200);
        for line in text.lines() {
            piece.push_str(line);
            piece.push('\n');
            if piece.len() >= 1000 {
                out.push(std::mem::take(&mut piece));
                if out.len() == n {
                    return out;
                }
            }
        }
    }
    out
}

fn bench_embed() {
    let n: usize = if quick() { 2_000 } else { 20_000 };
    let memories: Vec<String> = memories(n, 0).into_iter().map(|m| m.text).collect();
    let code = code_pieces(n);
    println!("\n## built-in embedder, one thread, batches of 50");
    let e = engram::embed::default_embedder();
    for (what, texts) in [("import texts", &memories), ("registry code", &code)] {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let bytes: usize = refs.iter().map(|t| t.len()).sum();
        // Alternate the two, best of three each.
        let (mut best_e, mut best_read) = (f64::MAX, f64::MAX);
        for _ in 0..3 {
            let t = Instant::now();
            let mut zero = 0usize;
            for batch in refs.chunks(50) {
                let vs = e.embed(batch).expect("embed");
                zero += vs.iter().filter(|v| engram::embed::is_zero(v)).count();
            }
            best_e = best_e.min(t.elapsed().as_secs_f64());
            assert!(zero < refs.len() / 10, "{zero} texts embedded to nothing");
            let t = Instant::now();
            let h = refs.iter().fold(0u64, |h, t| h ^ engram::key::hash64(t));
            best_read = best_read.min(t.elapsed().as_secs_f64());
            std::hint::black_box(h);
        }
        let rate = |s: f64| refs.len() as f64 / s;
        println!(
            "{what:<14} {} texts, {:.1} MB: {:>9.0} texts/s | hash64 pass {:>9.0} texts/s | embedder/pass {:.3}x",
            refs.len(),
            bytes as f64 / 1e6,
            rate(best_e),
            rate(best_read),
            best_read / best_e
        );
    }
}
