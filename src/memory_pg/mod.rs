//! The team backend: memories on PostgreSQL with pgvector, behind the same
//! [`MemoryBackend`](crate::memory::MemoryBackend) trait as the local store.
//!
//! It owns the connection to one database ([`PgDatabase`]: a pool of connections and
//! the small tokio runtime that drives them), the schema and its versioned migrations
//! (`migrations/*.sql`, embedded; applied only by [`PgDatabase::migrate`], that is
//! `engram db migrate`), and one repository's view of the memories ([`PgMemories`]),
//! which also keeps its audit trail (`memory::AuditLog`) and loaded pattern sets'
//! definitions (`memory::PatternSetBackend`).
//! What an entry is, how it is validated, redacted, embedded and exported is the
//! memory layer's: this module stores and finds what that layer builds, and must
//! never decide it differently. It never touches a local store or the code index.
//!
//! Isolation is the database's: every transaction sets `engram.repo`, and row-level
//! security (forced, so the tables' owner is bound too) hides every other
//! repository's rows. Concurrency is by construction: versions, error frequencies and
//! note entries are incremented or claimed by single statements under row locks, and
//! a call returns only after its transaction committed.

mod backend;
mod rows;
mod schema;
pub mod tls;

use std::future::Future;
use std::path::Path;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, PoolError, RecyclingMethod};
use tokio_postgres::error::SqlState;

use crate::embed::Embedder;
use crate::memory::{AnchorSource, MemoryError, Result};

pub use backend::{PgRedactReport, PgStoredSecret};
pub use schema::{Migration, SchemaStatus, MIGRATIONS, SCHEMA_VERSION};
pub use tls::{SslMode, TlsSettings};

/// How long opening a connection may take before the call fails (PostgreSQL down or
/// unreachable): calls fail fast rather than hang.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long one statement may run on the server (`statement_timeout`, set on every
/// connection) before the server cancels it; a call whose transaction attempt has
/// no answer within this and a short grace more is abandoned by the client
/// (a server that hangs without dropping the connection): [`MemoryError::TimedOut`].
/// An import, one transaction however large, is abandoned only when it writes no
/// entry for that long. The default; [`PgDatabase::connect_with_timeout`] sets
/// another (the CLI's `database_statement_timeout_ms` setting).
pub const STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);
/// The least `hnsw.ef_search` a recall's vector candidates are searched with (the
/// `database_ef_search` setting's default); a recall asks the index for twice the
/// candidates it fetches (80 for top 10) when that is more. HNSW's recall@10 against
/// exact search falls as memories grow: over 100K, 0.83 at 80 and 0.91 to 0.93 at
/// 150, for a vector query about 1.5 times as slow (bench memory_pg).
pub const EF_SEARCH: u32 = 150;
/// The largest `hnsw.ef_search` pgvector accepts.
pub const MAX_EF_SEARCH: u32 = 1000;
/// How much longer than the statement timeout the client waits for an attempt.
const DEADLINE_GRACE: Duration = Duration::from_secs(2);
/// How long a call waits for a free pooled connection.
const WAIT_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections per database (per process).
const POOL_SIZE: usize = 16;
/// How often a transaction is retried after a serialization failure or deadlock.
const RETRIES: usize = 8;

/// One PostgreSQL database: its connection pool and the runtime driving it. Shared
/// by every repository's [`PgMemories`] on it.
pub struct PgDatabase {
    runtime: Option<tokio::runtime::Runtime>,
    pool: Pool,
    server: String,
    /// The server's statement timeout on these connections.
    statement_timeout: Duration,
    /// The URL's `sslmode`.
    ssl_mode: SslMode,
}

impl std::fmt::Debug for PgDatabase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgDatabase")
            .field("server", &self.server)
            .finish()
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        // Never block (this may run inside another runtime): connections close as
        // their tasks are dropped.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// `host:port/database` of a connection configuration (never the password).
fn describe(cfg: &tokio_postgres::Config) -> String {
    let host = match cfg.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
        #[cfg(unix)]
        Some(tokio_postgres::config::Host::Unix(p)) => p.display().to_string(),
        None => "localhost".into(),
    };
    let port = cfg.get_ports().first().copied().unwrap_or(5432);
    let db = cfg.get_dbname().or(cfg.get_user()).unwrap_or("postgres");
    format!("postgres {host}:{port}/{db}")
}

impl PgDatabase {
    /// Prepare connections to the database at `url` (`postgres://USER:PASS@HOST:PORT/DB`
    /// or a `key=value` string). Nothing is connected yet: the first call connects,
    /// and fails within [`CONNECT_TIMEOUT`] when the server is not there.
    ///
    /// TLS follows the URL's libpq `sslmode` (`disable`, `prefer` — the default —,
    /// `require`, `verify-ca`, `verify-full`) and `sslrootcert` (see [`tls`]); an
    /// unusable root file is an error here, before any connection.
    pub fn connect(url: &str) -> Result<Arc<PgDatabase>> {
        PgDatabase::connect_with(url, STATEMENT_TIMEOUT, None)
    }

    /// [`PgDatabase::connect`] with another statement timeout (at least a
    /// millisecond): the server cancels a statement running longer, and the client
    /// abandons a transaction attempt with no answer after it and a short grace.
    pub fn connect_with_timeout(url: &str, statement_timeout: Duration) -> Result<Arc<PgDatabase>> {
        PgDatabase::connect_with(url, statement_timeout, None)
    }

    /// [`PgDatabase::connect_with_timeout`] with a root certificate file to trust
    /// when the URL names none (its own `sslrootcert` wins): the
    /// `database_sslrootcert` setting.
    pub fn connect_with(
        url: &str,
        statement_timeout: Duration,
        sslrootcert: Option<&Path>,
    ) -> Result<Arc<PgDatabase>> {
        let statement_timeout = statement_timeout.max(Duration::from_millis(1));
        let (url, mut tls) =
            tls::split(url).map_err(|e| MemoryError::Invalid(format!("database_url: {e}")))?;
        if tls.root_cert.is_none() {
            tls.root_cert = sslrootcert.map(Path::to_path_buf);
        }
        let mut cfg = tokio_postgres::Config::from_str(&url).map_err(|e| {
            MemoryError::Invalid(format!(
                "database_url is not a PostgreSQL connection string ({e}); expected postgres://USER:PASSWORD@HOST:PORT/DATABASE"
            ))
        })?;
        if cfg.get_connect_timeout().is_none() {
            cfg.connect_timeout(CONNECT_TIMEOUT);
        }
        cfg.application_name("engram");
        // The server's own limit, after any options the URL gives.
        let options = format!(
            "{} -c statement_timeout={}",
            cfg.get_options().unwrap_or(""),
            statement_timeout.as_millis()
        );
        cfg.options(options.trim());
        cfg.ssl_mode(tls.mode.for_client());
        let server = describe(&cfg);
        let connector = tls::connector(&tls)
            .map_err(|e| MemoryError::Invalid(format!("database_url (TLS to {server}): {e}")))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("engram-pg")
            .enable_all()
            .build()
            .map_err(|e| MemoryError::Invalid(format!("no runtime for {server}: {e}")))?;
        let manager = Manager::from_config(
            cfg,
            connector,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(WAIT_TIMEOUT))
            .create_timeout(Some(CONNECT_TIMEOUT + Duration::from_secs(2)))
            .recycle_timeout(Some(CONNECT_TIMEOUT))
            .build()
            .map_err(|e| MemoryError::Invalid(format!("{server}: {e}")))?;
        Ok(Arc::new(PgDatabase {
            runtime: Some(runtime),
            pool,
            server,
            statement_timeout,
            ssl_mode: tls.mode,
        }))
    }

    /// `postgres host:port/database`, for messages.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The `sslmode` connections are made with.
    pub fn ssl_mode(&self) -> SslMode {
        self.ssl_mode
    }

    /// Whether the server sees one of these connections encrypted (`pg_stat_ssl`):
    /// the TLS version and cipher (`TLSv1.3 TLS_AES_256_GCM_SHA384`), or `None` for
    /// plain text.
    pub fn session_tls(&self) -> Result<Option<String>> {
        self.block_on_deadline(async {
            let client = self.client().await?;
            let row = client
                .query_one(
                    "SELECT ssl, version, cipher FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                    &[],
                )
                .await
                .map_err(|e| self.error(e))?;
            let ssl: bool = row.get(0);
            let version: Option<String> = row.get(1);
            let cipher: Option<String> = row.get(2);
            Ok(ssl.then(|| {
                format!(
                    "{} {}",
                    version.unwrap_or_default(),
                    cipher.unwrap_or_default()
                )
                .trim()
                .to_string()
            }))
        })?
    }

    /// Run `fut` on this database's runtime and wait for it. Safe from any thread:
    /// from inside another runtime (a `spawn_blocking` closure, even an async task) it
    /// runs on a helper thread instead of nesting runtimes.
    pub(crate) fn block_on<F: Future + Send>(&self, fut: F) -> F::Output
    where
        F::Output: Send,
    {
        let rt = self.runtime.as_ref().expect("runtime lives until drop");
        if tokio::runtime::Handle::try_current().is_err() {
            return rt.block_on(fut);
        }
        std::thread::scope(|s| {
            s.spawn(|| rt.block_on(fut))
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
        })
    }

    /// How long the client waits for one transaction attempt.
    pub fn deadline(&self) -> Duration {
        self.statement_timeout + DEADLINE_GRACE
    }

    /// [`PgDatabase::block_on`] within [`PgDatabase::deadline`]: a server that does
    /// not answer in time (hung, unreachable without the connection dropping) is a
    /// [`MemoryError::TimedOut`], and the attempt is dropped (its connection with it).
    pub(crate) fn block_on_deadline<F: Future + Send>(&self, fut: F) -> Result<F::Output>
    where
        F::Output: Send,
    {
        self.block_on_within(self.deadline(), fut)
    }

    /// [`PgDatabase::block_on_deadline`] with a deadline of `after` instead.
    pub(crate) fn block_on_within<F: Future + Send>(
        &self,
        after: Duration,
        fut: F,
    ) -> Result<F::Output>
    where
        F::Output: Send,
    {
        self.block_on(async move { tokio::time::timeout(after, fut).await })
            .map_err(|_| MemoryError::TimedOut {
                server: self.server.clone(),
                after,
            })
    }

    /// [`PgDatabase::block_on`] until `fut` makes no [`Progress`] for `after`: for an
    /// attempt whose statements are many (an import, one transaction however large),
    /// which may run for hours on a large file or a distant server and is abandoned
    /// only when the server stops answering — no entry written within `after`, the
    /// same wait a single statement gets — never for its size.
    pub(crate) fn block_on_while_progressing<F: Future + Send>(
        &self,
        after: Duration,
        progress: &Progress,
        fut: F,
    ) -> Result<F::Output>
    where
        F::Output: Send,
    {
        progress.tick();
        self.block_on(async move {
            let mut fut = std::pin::pin!(fut);
            loop {
                let now = std::time::Instant::now();
                let until = progress.last() + after;
                if until <= now {
                    return None;
                }
                if let Ok(out) = tokio::time::timeout(until - now, &mut fut).await {
                    return Some(out);
                }
                // The wait ran out; the attempt may have moved on meanwhile.
            }
        })
        .ok_or_else(|| MemoryError::TimedOut {
            server: self.server.clone(),
            after,
        })
    }

    /// A pooled connection; a typed [`MemoryError::Unavailable`] naming the server
    /// when none can be had.
    pub(crate) async fn client(&self) -> Result<deadpool_postgres::Object> {
        self.pool.get().await.map_err(|e| self.pool_error(e))
    }

    fn pool_error(&self, e: PoolError) -> MemoryError {
        match e {
            PoolError::Backend(e) => self.error(e),
            PoolError::Timeout(t) => MemoryError::Unavailable {
                server: self.server.clone(),
                reason: format!("no connection within the time allowed ({t:?})"),
            },
            other => MemoryError::Unavailable {
                server: self.server.clone(),
                reason: other.to_string(),
            },
        }
    }

    /// A client error as a memory error: connection failures are
    /// [`MemoryError::Unavailable`], statements the server refused
    /// [`MemoryError::Backend`].
    pub(crate) fn error(&self, e: tokio_postgres::Error) -> MemoryError {
        let unavailable = |reason: String| MemoryError::Unavailable {
            server: self.server.clone(),
            reason,
        };
        match e.as_db_error() {
            Some(db) => {
                let code = db.code().code();
                // 57014: cancelled, here by the statement timeout.
                if code == "57014" {
                    return MemoryError::TimedOut {
                        server: self.server.clone(),
                        after: self.statement_timeout,
                    };
                }
                // Class 08: connection exception; 57P01-57P03: shutting down,
                // crashed, not yet accepting connections.
                if code.starts_with("08") || ["57P01", "57P02", "57P03"].contains(&code) {
                    unavailable(db.message().to_string())
                } else {
                    MemoryError::Backend {
                        server: self.server.clone(),
                        reason: format!("{} ({code})", db.message()),
                    }
                }
            }
            None => {
                // A certificate the TLS check refused: its own words say what and why.
                if let Some(refused) = tls::refusal(&e) {
                    return unavailable(refused);
                }
                let mut reason = e.to_string();
                let mut source = std::error::Error::source(&e);
                while let Some(s) = source {
                    reason.push_str(&format!(": {s}"));
                    source = s.source();
                }
                if reason.contains("server does not support TLS") {
                    reason.push_str(&format!(
                        " (database_url asks for sslmode={}; use sslmode=prefer or disable for a server without TLS)",
                        self.ssl_mode
                    ));
                }
                unavailable(reason)
            }
        }
    }

    /// The schema version of the database and what migrations it lacks.
    pub fn status(&self) -> Result<SchemaStatus> {
        self.block_on_deadline(schema::status(self))?
    }

    /// Apply every migration the database lacks, in order, in one transaction (others
    /// migrating at the same time wait); refuses a database whose schema is newer
    /// than this build's. Returns the migrations applied.
    pub fn migrate(&self) -> Result<Vec<&'static Migration>> {
        self.block_on(schema::migrate(self))
    }

    /// Fails unless the database's schema is exactly this build's: a newer one is
    /// refused (upgrade engram), an older one needs `engram db migrate`.
    pub fn check_schema(&self) -> Result<()> {
        self.block_on_deadline(schema::check(self))?
    }

    /// The memories of repository `repo` in this database, embedded with `embedder`
    /// (the same as the local store's, so one query vector searches both). Checks the
    /// schema version first.
    pub fn memories(
        self: &Arc<Self>,
        repo: &str,
        embedder: Arc<dyn Embedder>,
    ) -> Result<PgMemories> {
        PgMemories::open(self.clone(), repo, embedder)
    }
}

/// When a long attempt last moved on (wrote an entry): what
/// [`PgDatabase::block_on_while_progressing`] watches. Clones share the mark.
#[derive(Debug, Clone)]
pub(crate) struct Progress {
    start: std::time::Instant,
    /// Milliseconds from `start` to the last mark.
    last_ms: Arc<AtomicU64>,
}

impl Progress {
    pub(crate) fn new() -> Progress {
        Progress {
            start: std::time::Instant::now(),
            last_ms: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Mark progress now.
    pub(crate) fn tick(&self) {
        let ms = self.start.elapsed().as_millis().min(u64::MAX as u128) as u64;
        self.last_ms.fetch_max(ms, Ordering::Relaxed);
    }

    fn last(&self) -> std::time::Instant {
        self.start + Duration::from_millis(self.last_ms.load(Ordering::Relaxed))
    }
}

/// Whether a statement failed only because of a concurrent transaction (serialization
/// failure, deadlock): the transaction is retried.
fn is_retryable(e: &tokio_postgres::Error) -> bool {
    matches!(
        e.code(),
        Some(c) if *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED
    )
}

/// Whether the database's pgvector is at least `version` (major, minor).
async fn pgvector_at_least(db: &PgDatabase, version: (u32, u32)) -> Result<bool> {
    let client = db.client().await?;
    let row = client
        .query_opt(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'",
            &[],
        )
        .await
        .map_err(|e| db.error(e))?;
    let Some(row) = row else {
        return Err(MemoryError::Backend {
            server: db.server.clone(),
            reason: "the pgvector extension is not installed in this database".into(),
        });
    };
    let v: String = row.get(0);
    let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let found = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    Ok(found >= version)
}

/// One repository's memories in a PostgreSQL database.
pub struct PgMemories {
    db: Arc<PgDatabase>,
    repo: String,
    embedder: Arc<dyn Embedder>,
    /// pgvector 0.8 or later: filtered nearest-neighbour queries scan the HNSW index
    /// on until they have enough rows (`hnsw.iterative_scan`).
    iterative_scan: bool,
    /// The least `hnsw.ef_search` of a vector query ([`EF_SEARCH`] unless
    /// [`PgMemories::with_ef_search`] set another).
    ef_search: u32,
    /// Computes the anchors of what is written (the local code index's), when set.
    anchors: Option<Arc<dyn AnchorSource>>,
}

impl std::fmt::Debug for PgMemories {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgMemories")
            .field("server", &self.db.server)
            .field("repo", &self.repo)
            .finish()
    }
}

impl PgMemories {
    /// The memories of `repo` in `db`; see [`PgDatabase::memories`].
    pub fn open(
        db: Arc<PgDatabase>,
        repo: &str,
        embedder: Arc<dyn Embedder>,
    ) -> Result<PgMemories> {
        if repo.trim().is_empty() || repo.len() > 256 || repo.chars().any(char::is_control) {
            return Err(MemoryError::Invalid(format!(
                "repository name {repo:?} must be 1 to 256 bytes without control characters"
            )));
        }
        db.check_schema()?;
        let iterative_scan = db.block_on_deadline(pgvector_at_least(&db, (0, 8)))??;
        let m = PgMemories {
            db,
            repo: repo.to_string(),
            embedder,
            iterative_scan,
            ef_search: EF_SEARCH,
            anchors: None,
        };
        m.db.block_on(m.ensure_vector_index())?;
        Ok(m)
    }

    /// Anchor every memory written or updated with `source` (the code index of the
    /// repository's local store, `stale::LocalCodeAnchors`), as the local store does
    /// with its own anchorer. Without one, a memory keeps the anchors it is given.
    pub fn with_anchors(mut self, source: Arc<dyn AnchorSource>) -> PgMemories {
        self.anchors = Some(source);
        self
    }

    /// Search the HNSW index with `hnsw.ef_search` at least `ef_search` (1 to
    /// [`MAX_EF_SEARCH`]; the `database_ef_search` setting): higher finds more of the
    /// exact nearest neighbours, slower. A recall still asks for twice the candidates
    /// it fetches when that is more, up to [`MAX_EF_SEARCH`].
    pub fn with_ef_search(mut self, ef_search: u32) -> Result<PgMemories> {
        if !(1..=MAX_EF_SEARCH).contains(&ef_search) {
            return Err(MemoryError::Invalid(format!(
                "ef_search {ef_search}: expected 1 to {MAX_EF_SEARCH} (pgvector's range for hnsw.ef_search)"
            )));
        }
        self.ef_search = ef_search;
        Ok(self)
    }

    /// The repository these memories belong to.
    pub fn repo(&self) -> &str {
        &self.repo
    }

    /// The database they are in.
    pub fn database(&self) -> &Arc<PgDatabase> {
        &self.db
    }

    /// The embedder that makes their vectors.
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }
}
