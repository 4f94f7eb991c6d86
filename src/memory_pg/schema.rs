//! The schema's versions: the migrations embedded in the binary, the table that
//! records which were applied (`engram_schema_migrations`), applying them, and the
//! check every opener makes.

use deadpool_postgres::GenericClient;
use serde::Serialize;

use super::PgDatabase;
use crate::memory::{MemoryError, Result};

/// One migration: applied once, in order, never edited once released.
#[derive(Debug, Serialize)]
pub struct Migration {
    pub version: i32,
    pub name: &'static str,
    #[serde(skip)]
    pub sql: &'static str,
}

/// Every migration of this build, oldest first.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "0001_memories",
        sql: include_str!("migrations/0001_memories.sql"),
    },
    Migration {
        version: 2,
        name: "0002_audit",
        sql: include_str!("migrations/0002_audit.sql"),
    },
    Migration {
        version: 3,
        name: "0003_pattern_sets",
        sql: include_str!("migrations/0003_pattern_sets.sql"),
    },
];

/// The schema version this build reads and writes.
pub const SCHEMA_VERSION: i32 = MIGRATIONS[MIGRATIONS.len() - 1].version;

/// Where a database's schema stands.
#[derive(Debug, Clone, Serialize)]
pub struct SchemaStatus {
    /// `postgres host:port/database`.
    pub server: String,
    /// The newest migration applied (0: none).
    pub current: i32,
    /// This build's ([`SCHEMA_VERSION`]).
    pub expected: i32,
    /// Migrations this build has that the database lacks.
    pub pending: Vec<String>,
}

/// An advisory lock key shared by everything that changes the schema.
const SCHEMA_LOCK: i64 = 0x656e_6772_616d_0001;

const CREATE_TABLE: &str = "CREATE TABLE IF NOT EXISTS engram_schema_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now())";

/// The newest applied version, 0 when the table is not there.
async fn current<C: GenericClient>(db: &PgDatabase, client: &C) -> Result<i32> {
    let exists: bool = client
        .query_one(
            "SELECT to_regclass('engram_schema_migrations') IS NOT NULL",
            &[],
        )
        .await
        .map_err(|e| db.error(e))?
        .get(0);
    if !exists {
        return Ok(0);
    }
    let v: Option<i32> = client
        .query_one("SELECT max(version) FROM engram_schema_migrations", &[])
        .await
        .map_err(|e| db.error(e))?
        .get(0);
    Ok(v.unwrap_or(0))
}

fn newer(db: &PgDatabase, current: i32) -> MemoryError {
    MemoryError::Backend {
        server: db.server.clone(),
        reason: format!(
            "the database schema is version {current}, newer than this engram's ({SCHEMA_VERSION}); upgrade engram: it does not use a schema it does not know"
        ),
    }
}

pub(super) async fn status(db: &PgDatabase) -> Result<SchemaStatus> {
    let client = db.client().await?;
    let current = current(db, &client).await?;
    Ok(SchemaStatus {
        server: db.server.clone(),
        current,
        expected: SCHEMA_VERSION,
        pending: MIGRATIONS
            .iter()
            .filter(|m| m.version > current)
            .map(|m| m.name.to_string())
            .collect(),
    })
}

pub(super) async fn check(db: &PgDatabase) -> Result<()> {
    let client = db.client().await?;
    let current = current(db, &client).await?;
    if current > SCHEMA_VERSION {
        return Err(newer(db, current));
    }
    if current < SCHEMA_VERSION {
        return Err(MemoryError::Backend {
            server: db.server.clone(),
            reason: format!(
                "the database schema is version {current}, this engram needs {SCHEMA_VERSION}: run `engram db migrate`"
            ),
        });
    }
    Ok(())
}

pub(super) async fn migrate(db: &PgDatabase) -> Result<Vec<&'static Migration>> {
    let mut client = db.client().await?;
    let tx = client.transaction().await.map_err(|e| db.error(e))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
        .await
        .map_err(|e| db.error(e))?;
    // Quietly: IF NOT EXISTS and the extension's notices are not news. A migration
    // may build indexes over many rows: no statement timeout.
    tx.batch_execute("SET LOCAL client_min_messages = warning; SET LOCAL statement_timeout = 0")
        .await
        .map_err(|e| db.error(e))?;
    tx.batch_execute(CREATE_TABLE)
        .await
        .map_err(|e| db.error(e))?;
    let current = current(db, &tx).await?;
    if current > SCHEMA_VERSION {
        return Err(newer(db, current));
    }
    let mut applied = Vec::new();
    for m in MIGRATIONS.iter().filter(|m| m.version > current) {
        tx.batch_execute(m.sql).await.map_err(|e| {
            let e = db.error(e);
            MemoryError::Backend {
                server: db.server.clone(),
                reason: format!("migration {} failed, nothing applied: {e}", m.name),
            }
        })?;
        tx.execute(
            "INSERT INTO engram_schema_migrations (version, name) VALUES ($1, $2)",
            &[&m.version, &m.name],
        )
        .await
        .map_err(|e| db.error(e))?;
        applied.push(m);
    }
    tx.commit().await.map_err(|e| db.error(e))?;
    Ok(applied)
}

/// Hold the schema lock for the rest of transaction `tx` (index creation at open).
pub(super) async fn lock(db: &PgDatabase, tx: &deadpool_postgres::Transaction<'_>) -> Result<()> {
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
        .await
        .map_err(|e| db.error(e))?;
    Ok(())
}
