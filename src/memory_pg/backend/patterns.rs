//! Pattern-set definitions on PostgreSQL ([`PatternSetStore`] for [`PgMemories`]):
//! the repository's rows of `engram_pattern_sets` (schema 3), one per set, each call
//! one transaction acknowledged after COMMIT. Compiling and scanning stay local.

use tokio_postgres::types::Json;

use super::tx::Ahead;
use crate::memory::MemoryError;
use crate::memory_pg::PgMemories;
use crate::patterns::{PatternError, PatternSet, PatternSetStore};

fn decode(name: &str, Json(v): Json<serde_json::Value>) -> Result<PatternSet, PatternError> {
    serde_json::from_value(v)
        .map_err(|e| PatternError::Invalid(format!("stored set pat:{name} is unreadable: {e}")))
}

impl PatternSetStore for PgMemories {
    fn put_pattern_set(&self, set: &PatternSet) -> Result<(), PatternError> {
        let definition = serde_json::to_value(set)
            .map_err(|e| PatternError::Invalid(format!("pattern set: {e}")))?;
        let name = set.slug().to_string();
        self.run(Ahead::new(), |_| {
            let (name, definition) = (&name, &definition);
            async move {
                let mut client = self.client().await?;
                let tx = self.begin(&mut client).await?;
                tx.execute(
                    "INSERT INTO engram_pattern_sets (repo, name, definition)
                     VALUES ($1, $2, $3)
                     ON CONFLICT (repo, name) DO UPDATE
                     SET definition = EXCLUDED.definition, updated_at = now()",
                    &[&self.repo, name, &Json(definition)],
                )
                .await
                .map_err(|e| self.pg(e))?;
                self.commit(tx).await?;
                Ok(())
            }
        })
        .map_err(PatternError::from)
    }

    fn get_pattern_set(&self, slug: &str) -> Result<Option<PatternSet>, PatternError> {
        let found: Option<Json<serde_json::Value>> = self.read(|| async {
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
            Ok(row.map(|r| r.get(0)))
        })?;
        found.map(|d| decode(slug, d)).transpose()
    }

    fn list_pattern_sets(&self) -> Result<Vec<PatternSet>, PatternError> {
        let rows: Vec<(String, Json<serde_json::Value>)> = self.read(|| async {
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
            Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        })?;
        rows.into_iter().map(|(name, d)| decode(&name, d)).collect()
    }

    fn delete_pattern_set(&self, slug: &str) -> Result<bool, PatternError> {
        let n = self
            .read(|| async {
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
                Ok(n)
            })
            .map_err(|e: MemoryError| PatternError::from(e))?;
        Ok(n > 0)
    }
}
