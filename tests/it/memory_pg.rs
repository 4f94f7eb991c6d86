//! The PostgreSQL backend under load, across repositories, across schema versions and
//! across a server restart, against the real server `tools/postgres.sh start` starts
//! (`ENGRAM_TEST_DATABASE_URL`; without it these tests fail, saying how to start one).
//! The fault test starts and stops a server of its own.

use pg::Raw;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use engram::embed::default_embedder;
use engram::memory::{ErrorReport, Memory, MemoryBackend, MemoryError, MemoryFilter};
use engram::memory_pg::{PgDatabase, SCHEMA_VERSION};

use crate::support::pg;

/// The test server's URL with another database name.
fn url_for_database(db: &str) -> String {
    let url = pg::url();
    let (base, _) = url.rsplit_once('/').unwrap();
    format!("{base}/{db}")
}

const TABLES: &[&str] = &[
    "engram_memories",
    "engram_memory_versions",
    "engram_memory_vectors",
    "engram_memory_edges",
    "engram_notes",
    "engram_error_counts",
];

// ---------------------------------------------------------------------------------

#[test]
fn two_servers_and_eight_clients_lose_and_duplicate_nothing() {
    const THREADS: usize = 8;
    const ROUNDS: usize = 20;
    let url = pg::url();
    pg::database(); // migrated
    let repo = pg::unique_repo("concurrency");
    // Two "servers": two databases handles, two pools, two runtimes.
    let servers: Vec<_> = (0..2)
        .map(|_| {
            PgDatabase::connect(&url)
                .unwrap()
                .memories(&repo, Arc::new(default_embedder()))
                .unwrap()
        })
        .collect();
    let shared = servers[0].write(Memory::new("shared v1")).unwrap();
    let error = |t: usize, i: usize| ErrorReport {
        error_type: "RaceError".into(),
        message: format!("lost update {t} at step {i}"),
        ..Default::default()
    };

    let frequencies = Mutex::new(Vec::new());
    let versions = Mutex::new(Vec::new());
    let notes_written = Mutex::new(BTreeSet::new());
    let written = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let b = &servers[t % 2];
            let (frequencies, versions, notes_written, written, shared) =
                (&frequencies, &versions, &notes_written, &written, &shared);
            s.spawn(move || {
                for i in 0..ROUNDS {
                    let e = b.record_error(&error(t, i), &[], None).unwrap();
                    frequencies
                        .lock()
                        .unwrap()
                        .push(e.metadata["frequency"].as_u64().unwrap());
                    let u = b
                        .update(&shared.id, Memory::new(format!("shared by {t} at {i}")))
                        .unwrap();
                    versions.lock().unwrap().push(u.version);
                    let value = format!("note by {t} at {i}");
                    b.note_set("shared-note", &value, None).unwrap();
                    notes_written.lock().unwrap().insert(value);
                    let m = b.write(Memory::new(format!("memory {t}/{i}"))).unwrap();
                    written.lock().unwrap().push((m.id, m.text));
                }
            });
        }
    });
    let n = (THREADS * ROUNDS) as u64;
    let b = &servers[1];

    // Error frequency: one entry, counted once per record, each count returned once.
    let errors = b
        .list_filtered(
            &MemoryFilter {
                kind: Some("error".into()),
                ..Default::default()
            },
            100,
            0,
        )
        .unwrap();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].metadata["frequency"], n);
    let mut f = frequencies.into_inner().unwrap();
    f.sort();
    assert_eq!(f, (1..=n).collect::<Vec<_>>());
    let eh: Vec<u64> = b
        .history(&errors[0].id)
        .unwrap()
        .iter()
        .map(|m| m.version)
        .collect();
    assert_eq!(eh, (1..=n).collect::<Vec<_>>());

    // Versions: contiguous, no gap, no duplicate, each returned once.
    let history: Vec<u64> = b
        .history(&shared.id)
        .unwrap()
        .iter()
        .map(|m| m.version)
        .collect();
    assert_eq!(history, (1..=n + 1).collect::<Vec<_>>());
    let mut v = versions.into_inner().unwrap();
    v.sort();
    assert_eq!(v, (2..=n + 1).collect::<Vec<_>>());
    let last = b.get(&shared.id).unwrap().unwrap();
    assert_eq!(last.version, n + 1);

    // Notes: one entry, one version per set, its value one that was written (the last
    // version's).
    let notes = b.note_list().unwrap();
    assert_eq!(notes.len(), 1);
    let note = b.note_get("shared-note").unwrap().unwrap();
    assert!(notes_written.into_inner().unwrap().contains(&note.text));
    let nh = b.history(&note.id).unwrap();
    assert_eq!(
        nh.iter().map(|m| m.version).collect::<Vec<_>>(),
        (1..=n).collect::<Vec<_>>()
    );
    assert_eq!(nh.last().unwrap().text, note.text);

    // Memories: every acknowledged one there once, nothing more.
    let written = written.into_inner().unwrap();
    let ids: BTreeSet<&String> = written.iter().map(|(id, _)| id).collect();
    assert_eq!(ids.len(), written.len());
    for (id, text) in &written {
        assert_eq!(&servers[0].get(id).unwrap().unwrap().text, text);
    }
    assert_eq!(b.count().unwrap(), n + 3);
    let mut out = Vec::new();
    assert_eq!(b.export(&mut out).unwrap(), n + 3);
}

#[test]
fn another_repositorys_rows_are_invisible_even_to_a_query_without_where() {
    let url = pg::url();
    let db = pg::database();
    let (a_name, b_name) = (pg::unique_repo("iso-a"), pg::unique_repo("iso-b"));
    let a = db.memories(&a_name, Arc::new(default_embedder())).unwrap();
    let b = db.memories(&b_name, Arc::new(default_embedder())).unwrap();
    let m = a.write(Memory::new("repository A's secret plan")).unwrap();
    a.update(&m.id, Memory::new("repository A's plan, v2"))
        .unwrap();
    a.note_set("owner", "team A", None).unwrap();
    let s = a.start_session("A's session", &[]).unwrap();
    a.record_error(
        &ErrorReport {
            error_type: "AError".into(),
            message: "only A".into(),
            session: Some(s.id.clone()),
            ..Default::default()
        },
        &[],
        None,
    )
    .unwrap();

    // Through the backend: B sees nothing of A.
    assert_eq!(b.count().unwrap(), 0);
    assert_eq!(b.get(&m.id).unwrap(), None);
    assert!(b.history(&m.id).unwrap().is_empty());
    assert_eq!(b.note_get("owner").unwrap(), None);
    assert!(b
        .recall("secret plan", &MemoryFilter::default(), 10)
        .unwrap()
        .is_empty());
    assert!(b.related(&s.id, 3).unwrap().is_empty());
    assert!(!b.forget(&m.id).unwrap());
    assert!(matches!(
        b.update(&m.id, Memory::new("hijack")),
        Err(MemoryError::NotFound(_))
    ));

    // Through a plain connection as the application role, which row-level security
    // binds (neither superuser nor BYPASSRLS).
    let raw = Raw::connect_to(&url);
    assert_eq!(
        raw.count(
            "SELECT count(*) FROM pg_roles WHERE rolname = current_user AND (rolsuper OR rolbypassrls)"
        ),
        0,
        "the test role must be subject to row-level security"
    );
    let quote = |s: &str| s.replace('\'', "''");
    for table in TABLES {
        raw.try_batch(&format!(
            "BEGIN; SELECT set_config('engram.repo', '{}', true)",
            quote(&b_name)
        ))
        .unwrap();
        assert_eq!(
            raw.count(&format!("SELECT count(*) FROM {table}")),
            0,
            "{table}"
        );
        assert_eq!(
            raw.count(&format!(
                "SELECT count(*) FROM {table} WHERE repo = '{}'",
                quote(&a_name)
            )),
            0,
            "{table}"
        );
        raw.try_batch("COMMIT").unwrap();
        // No setting at all: nothing either.
        assert_eq!(
            raw.count(&format!("SELECT count(*) FROM {table}")),
            0,
            "{table}"
        );
        // A's own setting sees A's rows.
        raw.try_batch(&format!(
            "BEGIN; SELECT set_config('engram.repo', '{}', true)",
            quote(&a_name)
        ))
        .unwrap();
        assert!(
            raw.count(&format!("SELECT count(*) FROM {table}")) > 0,
            "{table}"
        );
        raw.try_batch("COMMIT").unwrap();
    }
    // Nor can B's setting write or change A's rows.
    raw.try_batch(&format!(
        "BEGIN; SELECT set_config('engram.repo', '{}', true)",
        quote(&b_name)
    ))
    .unwrap();
    let denied = raw.try_batch(&format!(
        "INSERT INTO engram_memories (repo, id, kind, text, version, created_ms, updated_ms, doc, tsv)
         VALUES ('{}', 'mem:00000001', 'memory', 'x', 1, 0, 0, '{{}}', ''::tsvector)",
        quote(&a_name)
    ));
    let e = denied.expect_err("a row of A written under B's setting");
    assert_eq!(e.code().map(|c| c.code()), Some("42501"), "{e}");
    raw.try_batch("ROLLBACK").unwrap();
    raw.try_batch(&format!(
        "BEGIN; SELECT set_config('engram.repo', '{}', true);
         UPDATE engram_memories SET text = 'hijacked';
         DELETE FROM engram_memory_versions;
         COMMIT",
        quote(&b_name)
    ))
    .unwrap();
    assert_eq!(
        a.get(&m.id).unwrap().unwrap().text,
        "repository A's plan, v2"
    );
    assert_eq!(a.history(&m.id).unwrap().len(), 2);
}

#[test]
fn the_schema_is_migrated_explicitly_and_a_newer_one_is_refused() {
    let name = pg::unique_repo("schema").replace('-', "_");
    let raw = Raw::connect_to(&pg::url());
    raw.try_batch(&format!("CREATE DATABASE {name}")).unwrap();
    let url = url_for_database(&name);
    {
        let db = PgDatabase::connect(&url).unwrap();
        let st = db.status().unwrap();
        assert_eq!((st.current, st.expected), (0, SCHEMA_VERSION));
        let every: Vec<&str> = engram::memory_pg::MIGRATIONS
            .iter()
            .map(|m| m.name)
            .collect();
        assert_eq!(st.pending, every);
        assert_eq!(every[..2], ["0001_memories", "0002_audit"]);
        let err = db
            .memories("r", Arc::new(default_embedder()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("engram db migrate"), "{err}");
        let applied = db.migrate().unwrap();
        assert_eq!(applied.len(), MIGRATIONS_LEN);
        assert!(
            db.migrate().unwrap().is_empty(),
            "migrating twice applies nothing"
        );
        let st = db.status().unwrap();
        assert_eq!(st.current, SCHEMA_VERSION);
        assert!(st.pending.is_empty());
        let m = db.memories("r", Arc::new(default_embedder())).unwrap();
        m.remember("works", &[], None).unwrap();

        // A newer engram migrated it further: this one refuses to use it.
        let raw_db = Raw::connect_to(&url);
        raw_db
            .try_batch(&format!(
                "INSERT INTO engram_schema_migrations (version, name) VALUES ({}, 'from_the_future')",
                SCHEMA_VERSION + 1
            ))
            .unwrap();
        let err = db
            .memories("r", Arc::new(default_embedder()))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("newer") && err.contains("upgrade engram"),
            "{err}"
        );
        let err = db.migrate().unwrap_err().to_string();
        assert!(err.contains("newer"), "{err}");
    }
    raw.try_batch(&format!("DROP DATABASE {name} WITH (FORCE)"))
        .unwrap();
}

const MIGRATIONS_LEN: usize = engram::memory_pg::MIGRATIONS.len();

#[test]
fn calls_from_async_code_and_spawn_blocking_do_not_nest_runtimes() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let m = Arc::new(pg::memories("async"));
        let m2 = m.clone();
        let id = tokio::task::spawn_blocking(move || m2.remember("from spawn_blocking", &[], None))
            .await
            .unwrap()
            .unwrap()
            .id;
        // Even straight from an async task (blocking it, but never panicking).
        assert_eq!(m.get(&id).unwrap().unwrap().text, "from spawn_blocking");
        // Dropping the backend inside a runtime does not panic either.
        let own = PgDatabase::connect(&pg::url()).unwrap();
        assert!(own.status().unwrap().pending.is_empty());
        drop(own);
    });
}

/// Stops the fault test's server however the test ends.
struct Server(std::path::PathBuf);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = std::process::Command::new("bash")
            .arg(pg::script())
            .arg("stop")
            .arg(&self.0)
            .output();
    }
}

#[test]
fn postgres_down_fails_fast_and_clearly_then_recovers_with_every_acknowledged_write() {
    pg::url(); // the same requirement as every test here
    let dir = tempfile::tempdir().unwrap();
    let url = pg::postgres_sh("start", dir.path());
    let server = Server(dir.path().to_path_buf());
    let db = PgDatabase::connect(&url).unwrap();
    db.migrate().unwrap();
    let m = Arc::new(db.memories("fault", Arc::new(default_embedder())).unwrap());

    // A writer that keeps going through the outage.
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(Mutex::new(Vec::<String>::new()));
    let failures = Arc::new(Mutex::new(Vec::<(Duration, String)>::new()));
    let writer = {
        let (m, stop, acked, failures) = (m.clone(), stop.clone(), acked.clone(), failures.clone());
        std::thread::spawn(move || {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                match m.write(Memory::new(format!("write {i}"))) {
                    Ok(w) => acked.lock().unwrap().push(w.id),
                    Err(e) => {
                        failures.lock().unwrap().push((t.elapsed(), e.to_string()));
                        std::thread::sleep(Duration::from_millis(50));
                    }
                }
                i += 1;
            }
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        !acked.lock().unwrap().is_empty(),
        "no write before the outage"
    );

    pg::postgres_sh("stop", dir.path());
    // While it is down: a clear, typed error naming the server, fast.
    let port = url.rsplit_once(':').unwrap().1.split('/').next().unwrap();
    for _ in 0..3 {
        let t = Instant::now();
        let err = m.write(Memory::new("while down")).unwrap_err();
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "took {:?}",
            t.elapsed()
        );
        assert!(matches!(err, MemoryError::Unavailable { .. }), "{err:?}");
        let text = err.to_string();
        assert!(
            text.contains("unreachable") && text.contains(&format!("127.0.0.1:{port}")),
            "{text}"
        );
        assert!(!text.contains(url.split('@').next().unwrap().rsplit(':').next().unwrap()));
    }
    assert!(m.get("mem:00000000").is_err());
    std::thread::sleep(Duration::from_millis(300));

    // Back up (same port): calls work again by themselves.
    assert_eq!(pg::postgres_sh("start", dir.path()), url);
    let t = Instant::now();
    let back = loop {
        match m.write(Memory::new("after the restart")) {
            Ok(w) => break w,
            Err(e) if t.elapsed() < Duration::from_secs(10) => {
                eprintln!("not yet: {e}");
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("still failing 10 s after the restart: {e}"),
        }
    };
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();

    let failures = failures.lock().unwrap().clone();
    assert!(!failures.is_empty(), "the writer never saw the outage");
    for (took, e) in &failures {
        assert!(
            *took < Duration::from_secs(5),
            "a failure took {took:?}: {e}"
        );
        assert!(
            e.contains("unreachable") || e.contains("memory backend"),
            "{e}"
        );
    }
    // Every acknowledged write is there, whole (its version row too).
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() >= 2);
    for id in acked.iter().chain(std::iter::once(&back.id)) {
        assert!(m.get(id).unwrap().is_some(), "{id} acknowledged but lost");
        assert_eq!(m.history(id).unwrap().len(), 1, "{id}");
    }
    // Nothing half-written: every memory present has its version.
    let all = m
        .list_filtered(&MemoryFilter::default(), 100_000, 0)
        .unwrap();
    assert!(all.len() > acked.len());
    for x in &all {
        assert_eq!(m.history(&x.id).unwrap().len(), 1, "{}", x.id);
    }
    drop(m);
    drop(db);
    drop(server);
}

#[test]
fn engram_db_migrate_and_status_name_the_server_never_the_password() {
    let url = pg::url();
    let password = url
        .split('@')
        .next()
        .unwrap()
        .rsplit(':')
        .next()
        .unwrap()
        .to_string();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "").unwrap();
    let engram = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_engram"))
            .args(args)
            .env("ENGRAM_DATABASE_URL", &url)
            .env("ENGRAM_CONFIG", &config)
            .env_remove("ENGRAM_STORE")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!stdout.contains(&password) && !stderr.contains(&password));
        (out.status.code(), stdout, stderr)
    };
    let (code, out, err) = engram(&["db", "migrate"]);
    assert_eq!(code, Some(0), "{out}{err}");
    let (code, out, err) = engram(&["--json", "db", "status"]);
    assert_eq!(code, Some(0), "{out}{err}");
    let status: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(status["current"], SCHEMA_VERSION);
    assert!(status["server"]
        .as_str()
        .unwrap()
        .starts_with("postgres 127.0.0.1:"));
    let (_, out, _) = engram(&["config", "show"]);
    assert!(
        out.contains("database_url") && out.contains(":***@"),
        "{out}"
    );
}

#[test]
fn with_database_url_set_the_memory_commands_use_the_team_backend() {
    let url = pg::url();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "").unwrap();
    // The repository is named after the store directory it would use locally.
    let store = dir.path().join(pg::unique_repo("cli"));
    let engram = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_engram"))
            .arg("--store")
            .arg(&store)
            .args(args)
            .env("ENGRAM_DATABASE_URL", &url)
            .env("ENGRAM_CONFIG", &config)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "engram {args:?}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    };
    let id = engram(&[
        "remember",
        "team memories live in postgres",
        "--tag",
        "team",
    ]);
    let id = id.trim();
    assert!(engram(&["get", id]).contains("team memories live in postgres"));
    let recall: serde_json::Value =
        serde_json::from_str(&engram(&["--json", "recall", "postgres memories"])).unwrap();
    assert_eq!(recall["hits"][0]["key"], id);
    for n in 1..=2 {
        let e: serde_json::Value = serde_json::from_str(&engram(&[
            "--json",
            "error",
            "record",
            "--type",
            "IoError",
            "--message",
            &format!("disk {n} full"),
        ]))
        .unwrap();
        assert_eq!(e["metadata"]["frequency"], n);
    }
    engram(&["note", "set", "owner", "team"]);
    assert_eq!(engram(&["note", "get", "owner"]).trim(), "team");
    assert_eq!(engram(&["export"]).lines().count(), 3);
    // Nothing was written locally.
    assert!(!store.exists());
    // The same repository through the library holds them.
    let b = pg::database()
        .memories(
            store.file_name().unwrap().to_str().unwrap(),
            Arc::new(default_embedder()),
        )
        .unwrap();
    assert_eq!(b.count().unwrap(), 3);
}

/// A TCP proxy to `target` that forwards both ways until `frozen` is set, then
/// swallows everything while keeping the connections open: a server that hangs
/// without dropping the connection.
fn freezing_proxy(target: String, frozen: Arc<AtomicBool>) -> std::net::SocketAddr {
    freezing_proxy_counting(target, frozen, Arc::new(AtomicU64::new(0)))
}

/// [`freezing_proxy`], adding the bytes it forwards (both ways) to `forwarded`.
fn freezing_proxy_counting(
    target: String,
    frozen: Arc<AtomicBool>,
    forwarded: Arc<AtomicU64>,
) -> std::net::SocketAddr {
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Ok(server) = TcpStream::connect(&target) else {
                continue;
            };
            for (mut from, mut to) in [
                (client.try_clone().unwrap(), server.try_clone().unwrap()),
                (server, client),
            ] {
                let (frozen, forwarded) = (frozen.clone(), forwarded.clone());
                std::thread::spawn(move || {
                    let mut buf = [0u8; 16 * 1024];
                    loop {
                        match from.read(&mut buf) {
                            Ok(0) | Err(_) => return,
                            Ok(n) if !frozen.load(Ordering::SeqCst) => {
                                if to.write_all(&buf[..n]).is_err() {
                                    return;
                                }
                                forwarded.fetch_add(n as u64, Ordering::SeqCst);
                            }
                            Ok(_) => {}
                        }
                    }
                });
            }
        }
    });
    addr
}

#[test]
fn a_server_that_stops_answering_fails_the_call_with_a_timeout() {
    pg::database(); // migrated
    let url = pg::url();
    // host:port of the test server, from postgres://USER:PASS@HOST:PORT/DB.
    let after_at = url.rsplit_once('@').expect("a URL with user@host").1;
    let target = after_at.split(['/', '?']).next().unwrap().to_string();
    let frozen = Arc::new(AtomicBool::new(false));
    let proxy = freezing_proxy(target.clone(), frozen.clone());
    let proxied = url.replacen(&target, &proxy.to_string(), 1);
    let db = PgDatabase::connect_with_timeout(&proxied, Duration::from_millis(500)).unwrap();
    let m = db
        .memories(&pg::unique_repo("hang"), Arc::new(default_embedder()))
        .unwrap();
    let written = m
        .write(Memory::new("written before the server hung"))
        .unwrap();
    frozen.store(true, Ordering::SeqCst);
    let start = Instant::now();
    let err = m.get(&written.id).unwrap_err();
    assert!(matches!(err, MemoryError::TimedOut { .. }), "{err:?}");
    assert!(err.to_string().contains("did not answer"), "{err}");
    assert!(
        start.elapsed() < db.deadline() + Duration::from_secs(5),
        "took {:?}",
        start.elapsed()
    );
    assert!(db.deadline() >= Duration::from_millis(500));
}

/// An import is one transaction of many statements (batches sized to fit the
/// statement timeout). It runs as long as it keeps writing entries, so a large
/// import on a short statement timeout completes
/// instead of being taken for a hung server (before, any import over the timeout plus
/// 2 s failed with `TimedOut`, which made 1M-memory loads impossible); each statement
/// still has the server's timeout.
#[test]
fn a_large_import_outlasts_the_per_call_deadline_without_timing_out() {
    let db = PgDatabase::connect_with_timeout(&pg::url(), Duration::from_millis(100)).unwrap();
    assert_eq!(db.deadline(), Duration::from_millis(2100));
    let m = db
        .memories(&pg::unique_repo("big-import"), Arc::new(default_embedder()))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("many.jsonl");
    // Enough entries that writing them takes longer than the deadline on any machine
    // this runs on (a 100 ms statement timeout keeps batches to tens of entries).
    let n = 4_000;
    let lines: Vec<String> = (0..n)
        .map(|i| {
            serde_json::json!({"id": format!("mem:{i:08x}"), "text": format!("imported memory number {i} about caching")})
                .to_string()
        })
        .collect();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let start = Instant::now();
    let report = m.import_file(&file).unwrap();
    let took = start.elapsed();
    assert_eq!(report.imported, n);
    assert_eq!(m.count().unwrap(), n);
    println!(
        "imported {n} in {took:?} (deadline per call {:?})",
        db.deadline()
    );
}

/// An import through a server that stops answering midway is given up once no entry
/// was written for the deadline (statement timeout + 2 s), not after a time that grows
/// with the file, and leaves nothing of itself behind (one transaction).
#[test]
fn an_import_whose_server_stops_answering_midway_times_out_and_writes_nothing() {
    pg::database(); // migrated
    let url = pg::url();
    let after_at = url.rsplit_once('@').expect("a URL with user@host").1;
    let target = after_at.split(['/', '?']).next().unwrap().to_string();
    let frozen = Arc::new(AtomicBool::new(false));
    let forwarded = Arc::new(AtomicU64::new(0));
    let proxy = freezing_proxy_counting(target.clone(), frozen.clone(), forwarded.clone());
    let proxied = url.replacen(&target, &proxy.to_string(), 1);
    let db = PgDatabase::connect_with_timeout(&proxied, Duration::from_millis(500)).unwrap();
    let repo = pg::unique_repo("import-hang");
    let m = db.memories(&repo, Arc::new(default_embedder())).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("many.jsonl");
    // Far more than is written before the freeze.
    let n = 20_000;
    let lines: Vec<String> = (0..n)
        .map(|i| {
            serde_json::json!({"id": format!("mem:{i:08x}"), "text": format!("imported memory number {i} about caching")})
                .to_string()
        })
        .collect();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    // Freeze once the import's transaction is well under way: some hundreds of
    // entries sent (a kilobyte or more each, with its vector).
    let opened = forwarded.load(Ordering::SeqCst);
    let watcher = {
        let (frozen, forwarded) = (frozen.clone(), forwarded.clone());
        std::thread::spawn(move || loop {
            if forwarded.load(Ordering::SeqCst) > opened + 1_000_000 {
                frozen.store(true, Ordering::SeqCst);
                return Instant::now();
            }
            std::thread::sleep(Duration::from_millis(5));
        })
    };
    let err = m.import_file(&file).unwrap_err();
    let ended = Instant::now();
    let froze = watcher.join().unwrap();
    assert!(matches!(err, MemoryError::TimedOut { .. }), "{err:?}");
    let waited = ended - froze;
    // The deadline runs from the last batch written, not from the freeze: the batch
    // in flight then started at most one statement timeout (500 ms) before it.
    assert!(
        waited >= db.deadline() - Duration::from_millis(600)
            && waited < db.deadline() + Duration::from_secs(3),
        "given up {waited:?} after the server stopped answering (deadline {:?})",
        db.deadline()
    );
    // Nothing of it was committed.
    frozen.store(false, Ordering::SeqCst);
    let fresh = pg::database()
        .memories(&repo, Arc::new(default_embedder()))
        .unwrap();
    assert_eq!(fresh.count().unwrap(), 0);
}
