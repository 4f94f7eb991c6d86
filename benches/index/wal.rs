//! What an index run writes to `tracker.db-wal`, batch by batch, and which B-trees
//! (tables, indexes, the full-text tables' shadow tables) those pages belong to.
//!
//! A reader connection holds a read transaction on the tracker from before the run to
//! after it, so no checkpoint can copy the WAL back or restart it: every frame each
//! commit wrote stays in the file, in order. A batch's frames are the bytes the WAL
//! grew by (24-byte frame header, then one page), and each page number is attributed
//! to its B-tree with SQLite's `dbstat` table as the tracker stands at the end. A page
//! that changed owner during the run (freed by a full-text merge, reused elsewhere)
//! counts for its last owner; free pages count as `(free)`. The WAL bytes a commit
//! writes do not depend on when checkpoints run, so holding them back changes what is
//! measured only in time, which is why the wall time is taken from a separate run.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

/// One committed transaction in the WAL: its frames and the distinct pages they hold.
pub struct Txn {
    pub frames: u64,
    pub pages: Vec<u32>,
}

/// A parsed WAL: page size and the committed transactions, in order.
pub struct Wal {
    pub page_size: u64,
    pub salt: (u32, u32),
    pub txns: Vec<Txn>,
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Parse the WAL file at `path` (empty when missing). Frames are taken while their
/// salts match the header's; a trailing transaction without its commit frame is left
/// out (it was never committed).
pub fn parse(path: &Path) -> Wal {
    let bytes = std::fs::read(path).unwrap_or_default();
    if bytes.len() < 32 {
        return Wal {
            page_size: 0,
            salt: (0, 0),
            txns: Vec::new(),
        };
    }
    let page_size = u64::from(be32(&bytes, 8));
    let salt = (be32(&bytes, 16), be32(&bytes, 20));
    let frame = 24 + page_size as usize;
    let mut txns = Vec::new();
    let (mut frames, mut pages) = (0u64, HashSet::new());
    let mut at = 32;
    while at + frame <= bytes.len() {
        if (be32(&bytes, at + 8), be32(&bytes, at + 12)) != salt {
            break;
        }
        frames += 1;
        pages.insert(be32(&bytes, at));
        if be32(&bytes, at + 4) != 0 {
            let mut p: Vec<u32> = pages.drain().collect();
            p.sort_unstable();
            txns.push(Txn { frames, pages: p });
            frames = 0;
        }
        at += frame;
    }
    Wal {
        page_size,
        salt,
        txns,
    }
}

/// Each page's B-tree (table or index name), from `dbstat`.
pub fn page_owners(db: &rusqlite::Connection) -> HashMap<u32, String> {
    let mut stmt = db
        .prepare("SELECT pageno, name FROM dbstat")
        .expect("dbstat (SQLITE_ENABLE_DBSTAT_VTAB)");
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, u32>(0)?, r.get::<_, String>(1)?)))
        .expect("dbstat rows");
    rows.map(|r| r.expect("dbstat row")).collect()
}

/// Pages of each B-tree in the file, from `dbstat`.
pub fn btree_sizes(db: &rusqlite::Connection) -> BTreeMap<String, u64> {
    let mut sizes = BTreeMap::new();
    for name in page_owners(db).into_values() {
        *sizes.entry(name).or_insert(0) += 1;
    }
    sizes
}

/// Print the run's WAL figures: `txns` are the transactions of the run, `owners` the
/// page owners at its end, `sizes` each B-tree's pages at its end.
fn report(
    page_size: u64,
    txns: &[Txn],
    owners: &HashMap<u32, String>,
    sizes: &BTreeMap<String, u64>,
    tracker_bytes: u64,
) {
    let frame_bytes = page_size + 24;
    let frames: u64 = txns.iter().map(|t| t.frames).sum();
    let wal_bytes = frames * frame_bytes;
    let n = txns.len().max(1) as f64;
    let mut per_tree: BTreeMap<&str, u64> = BTreeMap::new();
    for t in txns {
        for p in &t.pages {
            let name = owners.get(p).map_or("(free)", String::as_str);
            *per_tree.entry(name).or_insert(0) += 1;
        }
    }
    let mut per_batch: Vec<u64> = txns.iter().map(|t| t.frames * frame_bytes).collect();
    per_batch.sort_unstable();
    let pct = |p: f64| {
        per_batch
            .get(((per_batch.len().max(1) - 1) as f64 * p).round() as usize)
            .copied()
            .unwrap_or(0) as f64
            / 1e3
    };
    println!(
        "  WAL: {} batches, {frames} frames of {page_size} B, {:.1} MB ({:.2}x the tracker's {:.1} MB); per batch mean {:.0} KB, p50 {:.0} KB, p90 {:.0} KB, max {:.0} KB",
        txns.len(),
        wal_bytes as f64 / 1e6,
        wal_bytes as f64 / tracker_bytes.max(1) as f64,
        tracker_bytes as f64 / 1e6,
        wal_bytes as f64 / n / 1e3,
        pct(0.5),
        pct(0.9),
        pct(1.0),
    );
    // A batch the indexer committed in two transactions writes the pages both
    // touched twice; the distinct pages of a batch do not depend on that split.
    let distinct: usize = txns.iter().map(|t| t.pages.len()).sum();
    println!(
        "  distinct pages per batch: mean {:.0} ({:.0} KB); in all {distinct} ({:.1} MB)",
        distinct as f64 / n,
        distinct as f64 / n * page_size as f64 / 1e3,
        distinct as f64 * page_size as f64 / 1e6
    );
    println!(
        "  {:<34} {:>10} {:>9} {:>7} {:>10} {:>9}",
        "b-tree", "pages wr.", "per batch", "share", "size (pg)", "wr./size"
    );
    let mut rows: Vec<(&str, u64)> = per_tree.into_iter().collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let total: u64 = rows.iter().map(|r| r.1).sum();
    for (name, written) in rows.iter().take(24) {
        let size = sizes.get(*name).copied().unwrap_or(0);
        println!(
            "  {name:<34} {written:>10} {:>9.1} {:>6.1}% {size:>10} {:>9.2}",
            *written as f64 / n,
            100.0 * *written as f64 / total.max(1) as f64,
            *written as f64 / size.max(1) as f64,
        );
    }
}

/// The frames in bytes `from..to` of the WAL at `path` (whole frames from a frame
/// boundary): how many, and the distinct pages they hold.
fn frames_between(path: &Path, page_size: u64, from: u64, to: u64) -> Txn {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).expect("open WAL");
    f.seek(SeekFrom::Start(from)).expect("seek WAL");
    let mut bytes = vec![0u8; (to - from) as usize];
    f.read_exact(&mut bytes).expect("read WAL");
    let frame = 24 + page_size as usize;
    let mut pages: Vec<u32> = bytes.chunks_exact(frame).map(|b| be32(b, 0)).collect();
    let frames = pages.len() as u64;
    pages.sort_unstable();
    pages.dedup();
    Txn { frames, pages }
}

/// Index `staged` into a new store `batch_files` files at a time (hard-linked into the
/// indexed tree in path order, one `index` run each, so a batch holds the same files
/// whatever the machine's speed: the indexer's own batches are cut by time), with the
/// WAL held back; report what each run wrote. Then index `staged` cold into another
/// store as usual, for the wall time.
pub fn run(staged: &Path, batch_files: usize, files: u64, lines: u64, mb: f64) {
    use engram::index::{self, IndexOptions};
    use engram::store::{Store, StoreOptions};
    let open = |dir: &Path| {
        Store::open(dir, StoreOptions::default(), engram::projections()).expect("open store")
    };
    let mut all: Vec<std::path::PathBuf> = ignore::WalkBuilder::new(staged)
        .standard_filters(false)
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .map(|e| e.into_path())
        .collect();
    all.sort();
    let repo = super::common::bench_dir("index-wal-batches");
    let dir = super::common::bench_dir("index-wal");
    let store = open(dir.path());
    let tracker = dir.path().join("tracker.db");
    let wal_path = dir.path().join("tracker.db-wal");
    let reader = rusqlite::Connection::open(&tracker).expect("open tracker");
    reader
        .execute_batch("BEGIN; SELECT count(*) FROM sqlite_schema;")
        .expect("hold a read transaction");
    let start = parse(&wal_path);
    let opts = IndexOptions::default();
    let mut batches = Vec::new();
    let t = std::time::Instant::now();
    for group in all.chunks(batch_files.max(1)) {
        for f in group {
            let to = repo
                .path()
                .join(f.strip_prefix(staged).expect("under staged"));
            std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
            std::fs::hard_link(f, &to).expect("link");
        }
        let from = std::fs::metadata(&wal_path).map_or(0, |m| m.len());
        index::index(&store, repo.path(), &opts).expect("index");
        let to = std::fs::metadata(&wal_path).map_or(0, |m| m.len());
        batches.push(frames_between(&wal_path, start.page_size, from, to));
    }
    let held = t.elapsed().as_secs_f64();
    let end = parse(&wal_path);
    assert_eq!(
        (start.salt, start.page_size),
        (end.salt, end.page_size),
        "the WAL restarted during the run"
    );
    reader.execute_batch("COMMIT").expect("end read");
    let probe = rusqlite::Connection::open(&tracker).expect("open tracker");
    let owners = page_owners(&probe);
    let sizes = btree_sizes(&probe);
    let page_count: u64 = probe
        .query_row("PRAGMA page_count", [], |r| r.get(0))
        .expect("page_count");
    let (chunks, symbols): (i64, i64) = probe
        .query_row(
            "SELECT (SELECT count(*) FROM code_chunks), (SELECT count(*) FROM code_symbols)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("counts");
    drop(probe);
    drop(store);
    println!(
        "index-wal: {files} files, {lines} lines, {mb:.1} MB -> {chunks} chunks, {symbols} symbols; {} batches of {batch_files} files, {} commits, {held:.2} s with checkpoints held back",
        batches.len(),
        end.txns.len() - start.txns.len(),
    );
    report(
        start.page_size,
        &batches,
        &owners,
        &sizes,
        page_count * start.page_size,
    );
    let dir = super::common::bench_dir("index-wal");
    let store = open(dir.path());
    let t = std::time::Instant::now();
    index::index(&store, staged, &opts).expect("index");
    let wall = t.elapsed().as_secs_f64();
    println!(
        "  cold index of all {files} files as usual: {wall:.2} s, {:.0} lines/s",
        lines as f64 / wall
    );
}
