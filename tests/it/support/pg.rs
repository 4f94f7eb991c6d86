//! The PostgreSQL server the memory_pg tests use: the one `tools/postgres.sh start`
//! started, named by `ENGRAM_TEST_DATABASE_URL` (tools/test.sh sets it). Without it the
//! tests fail, saying how to start one: they are never skipped.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use engram::embed::default_embedder;
use engram::memory_pg::{PgDatabase, PgMemories};

/// The test server's URL; panics with the way to start one when it is not set.
pub fn url() -> String {
    match std::env::var("ENGRAM_TEST_DATABASE_URL") {
        Ok(u) if !u.trim().is_empty() => u,
        _ => panic!(
            "ENGRAM_TEST_DATABASE_URL is not set: these tests need a PostgreSQL server with pgvector. \
             Start one with `tools/postgres.sh start` and export the URL it prints last \
             (export ENGRAM_TEST_DATABASE_URL=$(tools/postgres.sh start | tail -n1)); tools/test.sh does both."
        ),
    }
}

/// The test database, migrated once per test binary.
pub fn database() -> Arc<PgDatabase> {
    static DB: OnceLock<Arc<PgDatabase>> = OnceLock::new();
    DB.get_or_init(|| {
        let db = PgDatabase::connect(&url()).expect("connect to the test database");
        db.migrate().expect("migrate the test database");
        db
    })
    .clone()
}

/// A repository name no other test (or earlier run) uses.
pub fn unique_repo(label: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "test-{label}-{}-{nanos}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// The memories of a fresh repository in the test database.
pub fn memories(label: &str) -> PgMemories {
    database()
        .memories(&unique_repo(label), Arc::new(default_embedder()))
        .expect("open a repository in the test database")
}

/// `tools/postgres.sh`.
pub fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/postgres.sh")
}

/// Run `tools/postgres.sh CMD DIR`; its last line of output.
pub fn postgres_sh(cmd: &str, dir: &Path) -> String {
    let out = std::process::Command::new("bash")
        .arg(script())
        .arg(cmd)
        .arg(dir)
        .output()
        .expect("run tools/postgres.sh");
    assert!(
        out.status.success(),
        "tools/postgres.sh {cmd} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap_or("")
        .to_string()
}

/// A plain client of the test server as the URL's role (bound by row-level
/// security), on a runtime of its own.
pub struct Raw {
    rt: tokio::runtime::Runtime,
    client: tokio_postgres::Client,
}

impl Raw {
    pub fn connect() -> Raw {
        Raw::connect_to(&url())
    }

    /// A plain client of the database at `url`.
    pub fn connect_to(url: &str) -> Raw {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let client = rt.block_on(async {
            let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(conn);
            client
        });
        Raw { rt, client }
    }

    /// Run `sql` (statements, no results) outside any repository; the error is the
    /// caller's to judge (a statement row-level security must refuse).
    #[allow(dead_code)]
    pub fn try_batch(&self, sql: &str) -> Result<(), tokio_postgres::Error> {
        self.rt.block_on(self.client.batch_execute(sql))
    }

    /// One statement returning a count, on this connection as it is (inside whatever
    /// transaction and `engram.repo` setting the caller opened).
    #[allow(dead_code)]
    pub fn count(&self, sql: &str) -> i64 {
        self.rt
            .block_on(self.client.query_one(sql, &[]))
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .get(0)
    }

    /// Run `sql` (statements, no results) outside any repository.
    pub fn batch(&self, sql: &str) {
        self.rt
            .block_on(self.client.batch_execute(sql))
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// `sql` (one statement returning a count, or an UPDATE/DELETE: rows touched) in
    /// a transaction whose `engram.repo` is `repo` (none when `None`).
    pub fn under(&self, repo: Option<&str>, sql: &str) -> i64 {
        self.rt.block_on(async {
            self.client.batch_execute("BEGIN").await.unwrap();
            if let Some(r) = repo {
                self.client
                    .execute("SELECT set_config('engram.repo', $1, true)", &[&r])
                    .await
                    .unwrap();
            }
            let n = if sql.starts_with("SELECT") {
                self.client.query_one(sql, &[]).await.unwrap().get(0)
            } else {
                self.client.execute(sql, &[]).await.unwrap() as i64
            };
            self.client.batch_execute("COMMIT").await.unwrap();
            n
        })
    }
}
