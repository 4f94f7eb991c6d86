//! Pattern-set definitions on PostgreSQL ([`PatternSetBackend`] for [`PgMemories`]):
//! the repository's rows of `engram_pattern_sets` (schema 3), one JSON definition per
//! set as the memory layer builds it, each call one transaction acknowledged after
//! COMMIT. Compiling and scanning stay local.

use serde_json::Value;
use tokio_postgres::types::Json;

use super::tx::Ahead;
use crate::memory::{PatternSetBackend, Result};
use crate::memory_pg::PgMemories;

impl PatternSetBackend for PgMemories {
    fn put_pattern_definition(&self, slug: &str, definition: &Value) -> Result<()> {
        self.run(Ahead::new(), |_| async move {
            let mut client = self.client().await?;
            let tx = self.begin(&mut client).await?;
            tx.execute(
                "INSERT INTO engram_pattern_sets (repo, name, definition)
                 VALUES ($1, $2, $3)
                 ON CONFLICT (repo, name) DO UPDATE
                 SET definition = EXCLUDED.definition, updated_at = now()",
                &[&self.repo, &slug, &Json(definition)],
            )
            .await
            .map_err(|e| self.pg(e))?;
            self.commit(tx).await?;
            Ok(())
        })
    }

    fn get_pattern_definition(&self, slug: &str) -> Result<Option<Value>> {
        self.read(|| async {
            let mut client = self.client().await?;
            let tx = self.begin(&mut client).await?;
            let row = tx
                .query_opt(
                    "SELECT definition FROM engram_pattern_sets WHERE repo = $1 AND name = $2",
                    &[&self.repo, &slug],
                )
                .await
                .map_err(|e| self.pg(e))?;
            self.commit(tx).await?;
            Ok(row.map(|r| r.get::<_, Json<Value>>(0).0))
        })
    }

    fn list_pattern_definitions(&self) -> Result<Vec<(String, Value)>> {
        self.read(|| async {
            let mut client = self.client().await?;
            let tx = self.begin(&mut client).await?;
            let rows = tx
                .query(
                    "SELECT name, definition FROM engram_pattern_sets WHERE repo = $1
                     ORDER BY name COLLATE \"C\"",
                    &[&self.repo],
                )
                .await
                .map_err(|e| self.pg(e))?;
            self.commit(tx).await?;
            Ok(rows
                .iter()
                .map(|r| (r.get(0), r.get::<_, Json<Value>>(1).0))
                .collect())
        })
    }

    fn delete_pattern_definition(&self, slug: &str) -> Result<bool> {
        self.run(Ahead::new(), |_| async {
            let mut client = self.client().await?;
            let tx = self.begin(&mut client).await?;
            let n = tx
                .execute(
                    "DELETE FROM engram_pattern_sets WHERE repo = $1 AND name = $2",
                    &[&self.repo, &slug],
                )
                .await
                .map_err(|e| self.pg(e))?;
            self.commit(tx).await?;
            Ok(n > 0)
        })
    }
}
