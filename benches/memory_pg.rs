//! The team backend (memories on PostgreSQL + pgvector) against the local store, in
//! one run, each figure printed beside the settings it was measured with:
//!
//! - recall latency p50/p99 over N memories (100K; `ENGRAM_BENCH_N=1000000` for 1M):
//!   hybrid recall (keyword + vector, fused) on both backends, vector candidates
//!   alone (HNSW on PostgreSQL, the local store's flat scan), and keyword alone;
//! - write throughput (memories/s) with one writer and with 8 threads, on both
//!   backends, over a smaller number of writes;
//! - recall@10 of the HNSW index against exact search (the same query vectors,
//!   ordered by `<=>` with index scans disabled).
//!
//! Setup is bulk loading: the N memories are imported (JSONL, the same ids on both
//! backends) into a database of their own, created for the run and dropped after it,
//! and the HNSW index is built once the rows are in.
//!
//! `cargo bench --bench memory_pg`, with `ENGRAM_BENCH_DATABASE_URL` naming a
//! PostgreSQL server with pgvector (`tools/postgres.sh start` prints one);
//! `ENGRAM_BENCH_QUICK=1` shrinks the sizes; `ENGRAM_BENCH=recall,write,accuracy`
//! picks parts.

mod common;
use common::{bench_dir, quick, wanted};

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use engram::embed::{default_embedder, EmbedError, Embedder};
use engram::memory::{Memories, Memory, MemoryBackend, MemoryFilter};
use engram::memory_pg::{PgDatabase, PgMemories, EF_SEARCH};
use engram::store::{Durability, StoreOptions};
use pgvector::Vector;

const WORDS: &[&str] = &[
    "cache",
    "timeout",
    "retry",
    "token",
    "session",
    "index",
    "parser",
    "schema",
    "deploy",
    "billing",
    "webhook",
    "migration",
    "latency",
    "queue",
    "lock",
    "auth",
    "vector",
    "search",
    "memory",
    "config",
];
const TASKS: &[&str] = &["debug", "refactor", "optimize", "implement_feature"];
const CONTEXTS: &[&str] = &["auth", "billing", "api", "infra", "data"];
/// Queries per latency figure.
const QUERIES: usize = 200;
/// The HNSW index of the built-in embedder's dimension (as the migration makes it).
const HNSW_INDEX: &str = "CREATE INDEX engram_memory_vectors_hnsw_256 ON engram_memory_vectors
    USING hnsw ((embedding::vector(256)) vector_cosine_ops) WHERE dims = 256";

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[(self.next() % xs.len() as u64) as usize]
    }
}

/// The built-in embedder's name and dimensions, answering all-zero vectors: recall
/// through it is keyword only.
struct NoVectors {
    name: String,
}
impl Embedder for NoVectors {
    fn name(&self) -> &str {
        &self.name
    }
    fn dimensions(&self) -> usize {
        256
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(vec![vec![0.0; 256]; texts.len()])
    }
}

fn memory_text(rng: &mut Rng, i: usize) -> Memory {
    let text: Vec<&str> = (0..12).map(|_| rng.pick(WORDS)).collect();
    let mut m = Memory::new(format!("{} #{i}", text.join(" ")));
    m.task = Some(rng.pick(TASKS).into());
    m.contexts = vec![rng.pick(CONTEXTS).into()];
    m.tags = vec![rng.pick(WORDS).into()];
    m
}

fn query(q: usize) -> String {
    format!(
        "{} {}",
        WORDS[q % WORDS.len()],
        WORDS[(q * 7 + 3) % WORDS.len()]
    )
}

fn percentiles(times: &mut [Duration]) -> (f64, f64) {
    times.sort();
    let p = |q: f64| times[((times.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e3;
    (p(0.5), p(0.99))
}

/// `url` with its database name replaced by `db` (URL or key=value form).
fn with_database(url: &str, db: &str) -> String {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let (base, query) = match url.split_once('?') {
            Some((b, q)) => (b, format!("?{q}")),
            None => (url, String::new()),
        };
        let scheme_end = base.find("://").map(|i| i + 3).unwrap_or(0);
        let host_part = match base[scheme_end..].find('/') {
            Some(i) => &base[..scheme_end + i],
            None => base,
        };
        format!("{host_part}/{db}{query}")
    } else {
        format!("{url} dbname={db}")
    }
}

/// A plain client for what the backend does not expose (index management, the
/// exact-search baseline), on a small runtime of its own.
struct Sql {
    rt: tokio::runtime::Runtime,
    client: tokio_postgres::Client,
}

impl Sql {
    fn connect(url: &str) -> Sql {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let client = rt.block_on(async {
            let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
                .await
                .expect("connect to ENGRAM_BENCH_DATABASE_URL");
            tokio::spawn(async move {
                let _ = conn.await;
            });
            client
        });
        Sql { rt, client }
    }

    fn batch(&self, sql: &str) -> Result<(), tokio_postgres::Error> {
        self.rt.block_on(self.client.batch_execute(sql))
    }

    /// The ids nearest `qv` among `repo`'s vectors, as the backend's vector
    /// candidates query asks for them, with `settings` (SET LOCAL statements) first.
    fn nearest(
        &self,
        repo: &str,
        embedder: &str,
        qv: &[f32],
        k: i64,
        settings: &str,
    ) -> Vec<String> {
        self.query_nearest(repo, embedder, qv, k, settings, "")
    }

    /// The plan PostgreSQL chooses for [`Sql::nearest`], one line per node.
    fn plan(&self, repo: &str, embedder: &str, qv: &[f32], k: i64, settings: &str) -> Vec<String> {
        self.query_nearest(repo, embedder, qv, k, settings, "EXPLAIN ")
    }

    fn query_nearest(
        &self,
        repo: &str,
        embedder: &str,
        qv: &[f32],
        k: i64,
        settings: &str,
        prefix: &str,
    ) -> Vec<String> {
        self.rt.block_on(async {
            self.client.batch_execute("BEGIN").await.expect("begin");
            self.client
                .execute("SELECT set_config('engram.repo', $1, true)", &[&repo])
                .await
                .expect("repo");
            self.client.batch_execute(settings).await.expect("settings");
            let rows = self
                .client
                .query(
                    &format!(
                        "{prefix}SELECT v.id FROM engram_memory_vectors v
                         JOIN engram_memories m ON m.repo = v.repo AND m.id = v.id
                         WHERE v.repo = $1 AND v.embedder = $2 AND v.dims = 256
                         ORDER BY v.embedding::vector(256) <=> $3::vector(256)
                         LIMIT $4"
                    ),
                    &[&repo, &embedder, &Vector::from(qv.to_vec()), &k],
                )
                .await
                .expect("nearest");
            self.client.batch_execute("COMMIT").await.expect("commit");
            rows.iter().map(|r| r.get(0)).collect()
        })
    }
}

/// Import `jsonl` into `pg` in slices of `per` lines (one transaction each).
fn import_slices(pg: &PgMemories, jsonl: &Path, per: usize, dir: &Path) {
    let text = std::fs::read_to_string(jsonl).expect("read jsonl");
    let lines: Vec<&str> = text.lines().collect();
    for (i, chunk) in lines.chunks(per).enumerate() {
        let part = dir.join(format!("slice-{i}.jsonl"));
        std::fs::write(&part, chunk.join("\n") + "\n").expect("write slice");
        pg.import_file(&part).expect("import slice");
        std::fs::remove_file(&part).ok();
    }
}

fn throughput(label: &str, settings: &str, writes: usize, backend: Arc<dyn MemoryBackend>) {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let texts: Vec<Memory> = (0..writes).map(|i| memory_text(&mut rng, i)).collect();
    let half = writes / 2;
    let s = Instant::now();
    for m in &texts[..half] {
        backend.write(m.clone()).expect("write");
    }
    let one = half as f64 / s.elapsed().as_secs_f64();
    let rest: Arc<Vec<Memory>> = Arc::new(texts[half..].to_vec());
    let s = Instant::now();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let (backend, rest) = (backend.clone(), rest.clone());
            std::thread::spawn(move || {
                for m in rest.iter().skip(t).step_by(8) {
                    backend.write(m.clone()).expect("write");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("writer");
    }
    let eight = rest.len() as f64 / s.elapsed().as_secs_f64();
    println!(
        "write {label:<10} 1 writer {one:>8.0} memories/s   8 threads {eight:>8.0} memories/s   ({half} + {} writes; {settings})",
        rest.len()
    );
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let url = match std::env::var("ENGRAM_BENCH_DATABASE_URL") {
        Ok(u) if !u.trim().is_empty() => u,
        _ => {
            println!(
                "memory_pg: ENGRAM_BENCH_DATABASE_URL is not set; this benchmark needs a PostgreSQL \
                 server with pgvector. Start one with `tools/postgres.sh start` and run\n  \
                 ENGRAM_BENCH_DATABASE_URL=$(tools/postgres.sh start | tail -n1) cargo bench --bench memory_pg"
            );
            return;
        }
    };
    let n: usize = std::env::var("ENGRAM_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick() { 10_000 } else { 100_000 });
    let writes: usize = if quick() { 400 } else { 4_000 };

    // A database of the run's own, so its index holds only the bench's vectors.
    let db_name = format!("engram_bench_{}", std::process::id());
    let admin = Sql::connect(&url);
    admin
        .batch(&format!("CREATE DATABASE {db_name}"))
        .expect("CREATE DATABASE (the role needs CREATEDB)");
    let bench_url = with_database(&url, &db_name);
    let sql = Sql::connect(&bench_url);
    let embedder = default_embedder();
    let embedder_name = embedder.name().to_string();
    let db = PgDatabase::connect(&bench_url).expect("connect");
    db.migrate().expect("migrate");
    let version: String = sql.rt.block_on(async {
        sql.client
            .query_one(
                "SELECT current_setting('server_version') || ', pgvector ' || extversion
                 FROM pg_extension WHERE extname = 'vector'",
                &[],
            )
            .await
            .expect("version")
            .get(0)
    });
    println!("# memory_pg: PostgreSQL {version}, database {db_name} (dropped at the end)");
    println!("embedder {embedder_name}; N = {n} memories; {QUERIES} queries per figure; top 10");

    let dir = bench_dir("memory-pg");
    let jsonl = dir.path().join("m.jsonl");
    {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut f = std::io::BufWriter::new(std::fs::File::create(&jsonl).expect("jsonl"));
        for i in 0..n {
            let mut m = memory_text(&mut rng, i);
            m.id = format!("mem:{:08x}", i as u32);
            writeln!(f, "{}", serde_json::to_string(&m).expect("json")).expect("write");
        }
    }

    let repo = "bench-recall";
    let mut pg: Option<PgMemories> = None;
    let mut local: Option<Memories> = None;
    if wanted("recall") || wanted("accuracy") {
        println!("\n## bulk load ({n} memories)");
        let l = Memories::open_with(
            dir.path().join("store"),
            StoreOptions {
                durability: Durability::Never,
                create: true,
                ..StoreOptions::default()
            },
        )
        .expect("open local");
        let s = Instant::now();
        l.import_file(&jsonl).expect("import local");
        println!(
            "local store: imported in {:.1} s (durability never)",
            s.elapsed().as_secs_f64()
        );
        sql.batch("DROP INDEX engram_memory_vectors_hnsw_256")
            .expect("drop index");
        let p = db
            .memories(repo, Arc::new(default_embedder()))
            .expect("open pg");
        let s = Instant::now();
        import_slices(&p, &jsonl, 10_000, dir.path());
        println!(
            "postgres: imported in {:.1} s (slices of 10000, one transaction each, no HNSW index)",
            s.elapsed().as_secs_f64()
        );
        let s = Instant::now();
        sql.batch(&format!(
            "SET maintenance_work_mem = '1GB'; {HNSW_INDEX}; ANALYZE"
        ))
        .expect("build index");
        println!(
            "postgres: HNSW index built in {:.1} s (m 16, ef_construction 64: pgvector's defaults; maintenance_work_mem 1GB)",
            s.elapsed().as_secs_f64()
        );
        pg = Some(p);
        local = Some(l);
    }

    let queries: Vec<String> = (0..QUERIES).map(query).collect();
    let qvs: Vec<Vec<f32>> = embedder
        .embed(&queries.iter().map(String::as_str).collect::<Vec<_>>())
        .expect("embed queries");

    if let (true, Some(pg), Some(local)) = (wanted("recall"), &pg, &local) {
        println!("\n## recall latency over {n} memories (top 10, no filter)");
        let keyword_pg = db
            .memories(
                repo,
                Arc::new(NoVectors {
                    name: embedder_name.clone(),
                }),
            )
            .expect("open pg keyword-only");
        let filter = MemoryFilter::default();
        let fetch = 40; // recall's candidates per source for top 10
        let mut t: [Vec<Duration>; 6] = Default::default();
        for (q, qv) in queries.iter().zip(&qvs) {
            let s = Instant::now();
            let hits = MemoryBackend::recall(pg, q, &filter, 10).expect("recall pg");
            t[0].push(s.elapsed());
            assert!(!hits.is_empty());
            let s = Instant::now();
            let hits = MemoryBackend::recall(local, q, &filter, 10).expect("recall local");
            t[1].push(s.elapsed());
            assert!(!hits.is_empty());
            let s = Instant::now();
            let ids = sql.nearest(
                repo,
                &embedder_name,
                qv,
                fetch * 2,
                "SET LOCAL hnsw.ef_search = 80; SET LOCAL hnsw.iterative_scan = strict_order",
            );
            t[2].push(s.elapsed());
            assert!(!ids.is_empty());
            let s = Instant::now();
            let found = local
                .store()
                .vector_search(&embedder_name, qv, (fetch * 2) as usize)
                .expect("flat scan");
            t[3].push(s.elapsed());
            assert!(!found.is_empty());
            let s = Instant::now();
            MemoryBackend::recall(&keyword_pg, q, &filter, 10).expect("keyword pg");
            t[4].push(s.elapsed());
            let s = Instant::now();
            local
                .recall_filtered(q, &filter, 10)
                .expect("keyword local");
            t[5].push(s.elapsed());
        }
        let labels = [
            ("hybrid   postgres", "MemoryBackend::recall: tsvector + HNSW (ef_search database_ef_search's default), fused, one transaction"),
            ("hybrid   local   ", "MemoryBackend::recall: SQLite FTS + flat vector scan, fused"),
            ("vector   postgres", "HNSW, 80 candidates, ef_search 80, iterative scan strict_order: the backend's vector query alone"),
            ("vector   local   ", "flat SIMD scan of every vector, 80 candidates"),
            ("keyword  postgres", "MemoryBackend::recall with all-zero query vectors: tsvector GIN"),
            ("keyword  local   ", "Memories::recall_filtered: SQLite FTS"),
        ];
        for ((label, how), times) in labels.iter().zip(t.iter_mut()) {
            let (p50, p99) = percentiles(times);
            println!("recall {label}  p50 {p50:>7.2} ms  p99 {p99:>7.2} ms   ({how})");
        }
    }

    if let (true, Some(pg)) = (wanted("accuracy"), &pg) {
        println!("\n## recall@10 of HNSW against exact search ({QUERIES} queries, {n} vectors)");
        for (what, settings) in [
            ("HNSW", "SET LOCAL hnsw.ef_search = 80"),
            (
                "exact",
                "SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off",
            ),
        ] {
            let plan = sql.plan(repo, &embedder_name, &qvs[0], 10, settings);
            let nodes: Vec<&str> = plan
                .iter()
                .map(|l| l.trim().trim_start_matches("->").trim())
                .filter(|l| {
                    !l.starts_with("Sort Key")
                        && !l.starts_with("Presorted")
                        && !l.starts_with("Filter")
                        && !l.starts_with("Order By")
                        && !l.starts_with("Index Cond")
                        && !l.starts_with("Hash Cond")
                        && !l.starts_with("Join Filter")
                })
                .map(|l| l.split("  (").next().unwrap_or(l))
                .collect();
            println!("plan ({what}): {}", nodes.join(" / "));
        }
        let exact: Vec<Vec<String>> = qvs
            .iter()
            .map(|qv| {
                sql.nearest(
                    repo,
                    &embedder_name,
                    qv,
                    10,
                    "SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off",
                )
            })
            .collect();
        println!(
            "exact: ORDER BY <=> with index scans off; HNSW m 16, ef_construction 64; latency: \
             the backend's vector query (80 candidates for top 10, iterative scan strict_order) \
             at that ef_search; recall default {EF_SEARCH} (database_ef_search), 80 before it"
        );
        // Every ef_search in turn for each query, so load on the machine falls on all
        // alike; latency ratios are against ef_search 80 (recall's before the setting).
        const EFS: [i64; 10] = [40, 80, 100, 120, 140, 150, 160, 200, 300, 400];
        let mut found = [0usize; EFS.len()];
        let mut total = [0usize; EFS.len()];
        let mut times: [Vec<Duration>; EFS.len()] = Default::default();
        for (qv, exact) in qvs.iter().zip(&exact) {
            for (i, ef) in EFS.iter().enumerate() {
                let approx = sql.nearest(
                    repo,
                    &embedder_name,
                    qv,
                    10,
                    &format!("SET LOCAL hnsw.ef_search = {ef}"),
                );
                total[i] += exact.len();
                found[i] += approx.iter().filter(|id| exact.contains(id)).count();
                let s = Instant::now();
                let ids = sql.nearest(
                    repo,
                    &embedder_name,
                    qv,
                    80,
                    &format!(
                        "SET LOCAL hnsw.ef_search = {ef}; SET LOCAL hnsw.iterative_scan = strict_order"
                    ),
                );
                times[i].push(s.elapsed());
                assert!(!ids.is_empty());
            }
        }
        let base = percentiles(&mut times[1]);
        for (i, ef) in EFS.iter().enumerate() {
            let (p50, p99) = percentiles(&mut times[i]);
            println!(
                "ef_search {ef:>4}  recall@10 {:.3}  vector query p50 {p50:>7.2} ms  p99 {p99:>7.2} ms  ({:.2}x / {:.2}x ef_search 80's){}",
                found[i] as f64 / total[i].max(1) as f64,
                p50 / base.0,
                p99 / base.1,
                if *ef == i64::from(EF_SEARCH) { "  recall's default" } else { "" }
            );
        }

        // Whole recalls, at ef_search 80 (a floor of 1: twice the 40 candidates) and
        // at the default, alternately.
        let at_80 = db
            .memories(repo, Arc::new(default_embedder()))
            .expect("open pg")
            .with_ef_search(1)
            .expect("ef_search 1");
        let filter = MemoryFilter::default();
        let mut t: [Vec<Duration>; 2] = Default::default();
        for q in &queries {
            for (i, b) in [&at_80, pg].into_iter().enumerate() {
                let s = Instant::now();
                let hits = MemoryBackend::recall(b, q, &filter, 10).expect("recall pg");
                t[i].push(s.elapsed());
                assert!(!hits.is_empty());
            }
        }
        let (b50, b99) = percentiles(&mut t[0]);
        let (d50, d99) = percentiles(&mut t[1]);
        println!(
            "recall hybrid postgres  ef_search 80: p50 {b50:>7.2} ms  p99 {b99:>7.2} ms;  \
             ef_search {EF_SEARCH} (default): p50 {d50:>7.2} ms  p99 {d99:>7.2} ms  ({:.2}x / {:.2}x)",
            d50 / b50,
            d99 / b99
        );
    }

    if wanted("write") {
        println!("\n## write throughput");
        let w = db
            .memories("bench-write", Arc::new(default_embedder()))
            .expect("open pg write");
        throughput(
            "postgres",
            "one transaction per write, acknowledged after COMMIT (synchronous_commit on); pool of 16",
            writes,
            Arc::new(w),
        );
        let l = Memories::open_with(
            dir.path().join("store-write"),
            StoreOptions {
                create: true,
                ..StoreOptions::default()
            },
        )
        .expect("open local write");
        throughput(
            "local",
            "durability always: fsync before each acknowledgement, group commit",
            writes,
            Arc::new(l),
        );
    }

    drop(pg);
    drop(local);
    drop(db);
    drop(sql);
    if let Err(e) = admin.batch(&format!("DROP DATABASE {db_name} WITH (FORCE)")) {
        println!("could not drop {db_name}: {e}");
    }
}
