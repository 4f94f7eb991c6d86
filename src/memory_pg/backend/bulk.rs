//! Importing in batches: which of a batch's ids exist, asked in one query, and the
//! batch's memories, versions, edges, vectors, notes and error counts written with
//! one statement each (arrays unnested server-side), all in the caller's transaction.
//!
//! It writes exactly the rows an insert-or-replace of each entry followed by
//! [`PgMemories::after_write`] would, in the same order of `seq`; it never decides
//! ids, versions or counts (the import does), and never commits.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use deadpool_postgres::Transaction;
use pgvector::Vector;
use tokio_postgres::types::Json;

use super::tx::{i64_of, Ahead, TxResult};
use crate::memory::{self, ImportReport, Memory};
use crate::memory_pg::rows::{self, memory_from_row, MEMORY_COLUMNS};
use crate::memory_pg::PgMemories;

/// The most entries a batch takes: about a megabyte of parameters a statement, a
/// round trip's latency shared by that many entries.
const MAX_BATCH: usize = 1000;
/// The entries of an import's first batch, before any has been timed.
const FIRST_BATCH: usize = 50;

/// How many entries an import's next batch takes: as many as the batches so far
/// say fit in a quarter of the statement timeout (one statement writes a whole batch
/// into a table, and a statement the server cancels ends the import), growing at
/// most fourfold a batch, [`MAX_BATCH`] at most.
pub(super) struct Sizer {
    size: usize,
    budget: Duration,
}

impl Sizer {
    pub(super) fn new(statement_timeout: Duration) -> Sizer {
        Sizer {
            size: FIRST_BATCH,
            budget: statement_timeout / 4,
        }
    }

    pub(super) fn next(&self) -> usize {
        self.size
    }

    /// A batch of `n` entries took `elapsed`.
    pub(super) fn took(&mut self, n: usize, elapsed: Duration) {
        let per = elapsed.as_secs_f64() / n.max(1) as f64;
        let fit = if per > 0.0 {
            (self.budget.as_secs_f64() / per) as usize
        } else {
            MAX_BATCH
        };
        self.size = fit.clamp(1, n.max(1) * 4).min(MAX_BATCH);
    }
}

/// What an import has written so far, across its batches.
#[derive(Default)]
pub(super) struct Imported {
    /// Every id written: those rows exist now, whatever the database held before.
    taken: HashSet<String>,
    /// The id each legacy id was given.
    legacy: HashMap<String, String>,
}

/// What the import knows of the rows its ids may land on: the memories as they were
/// before the batch being resolved, by id (`None`: no such memory). Ids the import
/// has written itself are the import's to track, not this.
#[derive(Default)]
pub(super) struct Known(HashMap<String, Option<Memory>>);

impl PgMemories {
    /// Import `batch` (entries with the legacy ids theirs derive from) as the one
    /// import transaction `tx` goes on: ids given, derived or drawn, `replaced`
    /// counted, exactly as entry by entry; the rows written with one statement per
    /// table (two when an id comes twice: the first is written before the second).
    pub(super) async fn import_batch(
        &self,
        tx: &Transaction<'_>,
        ahead: &Ahead,
        batch: &[(Memory, Option<String>)],
        done: &mut Imported,
        report: &mut ImportReport,
    ) -> TxResult<()> {
        let mut known = Known::default();
        // Random ids are drawn ahead, to be probed with the rest.
        let mut drawn: Vec<String> = Vec::new();
        let mut probe: Vec<String> = Vec::new();
        for (m, legacy_of) in batch {
            if m.id.is_empty() {
                let id = memory::random_id()?;
                probe.push(id.clone());
                drawn.push(id);
            } else if let Some(old) = legacy_of {
                if !done.legacy.contains_key(old) {
                    probe.push(memory::derived_id(old, 0));
                }
            } else {
                probe.push(m.id.clone());
            }
        }
        probe.retain(|id| !done.taken.contains(id));
        self.probe(tx, &mut known, probe).await?;
        let mut drawn = drawn.into_iter();
        let mut pending: Vec<(Memory, Option<Vec<f32>>)> = Vec::new();
        let mut pending_ids: HashSet<String> = HashSet::new();
        for (m, legacy_of) in batch {
            let mut m = m.clone();
            if m.id.is_empty() {
                let mut next = drawn.next();
                m.id = loop {
                    let id = match next.take() {
                        Some(id) => id,
                        None => memory::random_id()?,
                    };
                    if !done.taken.contains(&id) && self.known(tx, &mut known, &id).await?.is_none()
                    {
                        break id;
                    }
                };
            } else {
                if let Some(old) = legacy_of {
                    m.id = match done.legacy.get(old) {
                        Some(id) => id.clone(),
                        None => self.legacy_slot(tx, &mut known, &done.taken, old).await?,
                    };
                    done.legacy.insert(old.clone(), m.id.clone());
                }
                if done.taken.contains(&m.id) || self.known(tx, &mut known, &m.id).await?.is_some()
                {
                    report.replaced += 1;
                }
            }
            done.taken.insert(m.id.clone());
            let vector = self.vector_for(ahead, &m)?;
            if !pending_ids.insert(m.id.clone()) {
                self.upsert_batch(tx, &pending).await?;
                pending.clear();
                pending_ids = HashSet::from([m.id.clone()]);
            }
            pending.push((m, vector));
            report.imported += 1;
        }
        self.upsert_batch(tx, &pending).await
    }

    /// Learn which of `ids` exist, in one query.
    pub(super) async fn probe(
        &self,
        tx: &Transaction<'_>,
        known: &mut Known,
        ids: Vec<String>,
    ) -> TxResult<()> {
        let ids: Vec<String> = ids
            .into_iter()
            .filter(|id| !known.0.contains_key(id))
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        if ids.is_empty() {
            return Ok(());
        }
        let sql = format!(
            "SELECT {MEMORY_COLUMNS} FROM engram_memories m WHERE m.repo = $1 AND m.id = ANY($2)"
        );
        let found = tx
            .query(&sql, &[&self.repo, &ids])
            .await
            .map_err(|e| self.pg(e))?;
        for id in ids {
            known.0.insert(id, None);
        }
        for row in &found {
            let m = memory_from_row(row)?;
            known.0.insert(m.id.clone(), Some(m));
        }
        Ok(())
    }

    /// The memory `id` as it was before the batch: from what [`PgMemories::probe`]
    /// learnt, else asked on its own (an id no probe foresaw: a re-rolled one).
    pub(super) async fn known<'k>(
        &self,
        tx: &Transaction<'_>,
        known: &'k mut Known,
        id: &str,
    ) -> TxResult<Option<&'k Memory>> {
        if !known.0.contains_key(id) {
            let m = self.fetch(tx, id, false).await?;
            known.0.insert(id.to_string(), m);
        }
        Ok(known.0.get(id).and_then(Option::as_ref))
    }

    /// Insert or replace every memory of `batch` as it is (an import), with its
    /// vector, as one upsert and [`PgMemories::after_write`] each would. Ids in
    /// `batch` are distinct (one statement cannot update a row twice).
    pub(super) async fn upsert_batch(
        &self,
        tx: &Transaction<'_>,
        batch: &[(Memory, Option<Vec<f32>>)],
    ) -> TxResult<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let pg = |e| self.pg(e);
        let ms: Vec<&Memory> = batch.iter().map(|(m, _)| m).collect();
        let ids: Vec<&str> = ms.iter().map(|m| m.id.as_str()).collect();
        let texts: Vec<&str> = ms.iter().map(|m| m.text.as_str()).collect();
        let versions: Vec<i64> = ms.iter().map(|m| i64_of(m.version)).collect();
        let created: Vec<i64> = ms.iter().map(|m| i64_of(m.created_ms)).collect();
        let updated: Vec<i64> = ms.iter().map(|m| i64_of(m.updated_ms)).collect();
        let docs: Vec<Json<serde_json::Value>> = ms.iter().map(|m| rows::doc(m)).collect();
        let seqs = self
            .upsert_rows(tx, &ms, &ids, &texts, &versions, &created, &updated, &docs)
            .await?;

        tx.execute(
            "INSERT INTO engram_memory_versions (repo, id, version, text, created_ms, updated_ms, seq, doc)
             SELECT $1, r.id, r.version, r.text, r.created_ms, r.updated_ms, r.seq, r.doc
             FROM unnest($2::text[], $3::int8[], $4::text[], $5::int8[], $6::int8[], $7::int8[], $8::json[])
               AS r(id, version, text, created_ms, updated_ms, seq, doc)
             ON CONFLICT (repo, id, version) DO UPDATE SET text = excluded.text,
               created_ms = excluded.created_ms, updated_ms = excluded.updated_ms,
               seq = excluded.seq, doc = excluded.doc",
            &[&self.repo, &ids, &versions, &texts, &created, &updated, &seqs, &docs],
        )
        .await
        .map_err(pg)?;

        tx.execute(
            "DELETE FROM engram_memory_edges WHERE repo = $1 AND owner = ANY($2)",
            &[&self.repo, &ids],
        )
        .await
        .map_err(pg)?;
        let (mut src, mut rel, mut dst, mut owner) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for m in &ms {
            for (s, r, d) in rows::edges(m) {
                src.push(s);
                rel.push(r);
                dst.push(d);
                owner.push(m.id.as_str());
            }
        }
        if !src.is_empty() {
            tx.execute(
                "INSERT INTO engram_memory_edges (repo, src, rel, dst, owner)
                 SELECT $1, e.s, e.r, e.d, e.o
                 FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) AS e(s, r, d, o)
                 ON CONFLICT DO NOTHING",
                &[&self.repo, &src, &rel, &dst, &owner],
            )
            .await
            .map_err(pg)?;
        }

        let embedder = self.embedder.name().to_string();
        let (mut with, mut dims, mut vectors, mut without) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (m, v) in batch {
            match v {
                Some(v) => {
                    with.push(m.id.as_str());
                    dims.push(v.len() as i32);
                    vectors.push(Vector::from(v.clone()));
                }
                None => without.push(m.id.as_str()),
            }
        }
        if !with.is_empty() {
            tx.execute(
                "INSERT INTO engram_memory_vectors (repo, id, embedder, dims, embedding)
                 SELECT $1, r.id, $2, r.dims, r.embedding
                 FROM unnest($3::text[], $4::int4[], $5::vector[]) AS r(id, dims, embedding)
                 ON CONFLICT (repo, id, embedder) DO UPDATE SET dims = excluded.dims,
                   embedding = excluded.embedding",
                &[&self.repo, &embedder, &with, &dims, &vectors],
            )
            .await
            .map_err(pg)?;
        }
        if !without.is_empty() {
            tx.execute(
                "DELETE FROM engram_memory_vectors WHERE repo = $1 AND id = ANY($2) AND embedder = $3",
                &[&self.repo, &without, &embedder],
            )
            .await
            .map_err(pg)?;
        }

        self.upsert_holders(tx, &ms).await
    }

    /// The memories' rows (insert or replace, `seq` drawn in batch order); their
    /// `seq`s in batch order.
    #[allow(clippy::too_many_arguments)]
    async fn upsert_rows(
        &self,
        tx: &Transaction<'_>,
        ms: &[&Memory],
        ids: &[&str],
        texts: &[&str],
        versions: &[i64],
        created: &[i64],
        updated: &[i64],
        docs: &[Json<serde_json::Value>],
    ) -> TxResult<Vec<i64>> {
        let kinds: Vec<&str> = ms.iter().map(|m| m.kind.as_str()).collect();
        let tasks: Vec<Option<&str>> = ms.iter().map(|m| m.task.as_deref()).collect();
        // Lists of lists as JSON: a PostgreSQL array of arrays must be rectangular.
        let list = |f: fn(&Memory) -> &Vec<String>| -> Vec<Json<&Vec<String>>> {
            ms.iter().map(|m| Json(f(m))).collect()
        };
        let (insights, contexts, tags) = (
            list(|m| &m.insights),
            list(|m| &m.contexts),
            list(|m| &m.tags),
        );
        let sessions: Vec<Option<&str>> = ms.iter().map(|m| m.session.as_deref()).collect();
        let (tsv_text, tsv_tags): (Vec<String>, Vec<String>) =
            ms.iter().map(|m| rows::tsv_texts(m)).unzip();
        let list_sql = |c: &str| format!("ARRAY(SELECT json_array_elements_text(r.{c}))");
        let sql = format!(
            "INSERT INTO engram_memories (repo, id, kind, text, task, insights, contexts, tags,
               session, version, created_ms, updated_ms, doc, tsv)
             SELECT $1, r.id, r.kind, r.text, r.task, {}, {}, {}, r.session, r.version,
               r.created_ms, r.updated_ms, r.doc, {}
             FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::json[], $7::json[],
               $8::json[], $9::text[], $10::int8[], $11::int8[], $12::int8[], $13::json[],
               $14::text[], $15::text[])
               WITH ORDINALITY AS r(id, kind, text, task, insights, contexts, tags, session,
                 version, created_ms, updated_ms, doc, t, g, ord)
             ORDER BY r.ord
             ON CONFLICT (repo, id) DO UPDATE SET kind = excluded.kind, text = excluded.text,
               task = excluded.task, insights = excluded.insights, contexts = excluded.contexts,
               tags = excluded.tags, session = excluded.session, version = excluded.version,
               created_ms = excluded.created_ms, updated_ms = excluded.updated_ms,
               doc = excluded.doc, tsv = excluded.tsv, seq = nextval('engram_write_seq')
             RETURNING id, seq",
            list_sql("insights"),
            list_sql("contexts"),
            list_sql("tags"),
            rows::tsv_of("r.t", "r.g"),
        );
        let found = tx
            .query(
                &sql,
                &[
                    &self.repo, &ids, &kinds, &texts, &tasks, &insights, &contexts, &tags,
                    &sessions, &versions, &created, &updated, &docs, &tsv_text, &tsv_tags,
                ],
            )
            .await
            .map_err(|e| self.pg(e))?;
        let by_id: HashMap<String, i64> = found.iter().map(|r| (r.get(0), r.get(1))).collect();
        ids.iter()
            .map(|id| {
                by_id.get(*id).copied().ok_or_else(|| {
                    crate::memory::MemoryError::Invalid(format!("{id}: the batch wrote no row"))
                        .into()
                })
            })
            .collect()
    }

    /// The notes and error signatures the memories hold, the later entry winning
    /// where two name the same one (as one-at-a-time upserts leave it).
    async fn upsert_holders(&self, tx: &Transaction<'_>, ms: &[&Memory]) -> TxResult<()> {
        let mut notes: HashMap<&str, &str> = HashMap::new();
        let mut errors: HashMap<&str, (&str, i64)> = HashMap::new();
        for m in ms {
            if m.kind == "note" {
                if let Some(name) = rows::meta_str(m, "name") {
                    notes.insert(name, &m.id);
                }
            }
            if m.kind == "error" {
                if let Some(sig) = rows::meta_str(m, "signature") {
                    errors.insert(sig, (&m.id, i64_of(rows::error_frequency(m))));
                }
            }
        }
        if !notes.is_empty() {
            let (names, ids): (Vec<&str>, Vec<&str>) = notes.into_iter().unzip();
            tx.execute(
                "INSERT INTO engram_notes (repo, name, id)
                 SELECT $1, r.name, r.id FROM unnest($2::text[], $3::text[]) AS r(name, id)
                 ON CONFLICT (repo, name) DO UPDATE SET id = excluded.id",
                &[&self.repo, &names, &ids],
            )
            .await
            .map_err(|e| self.pg(e))?;
        }
        if !errors.is_empty() {
            let mut sigs = Vec::new();
            let mut ids = Vec::new();
            let mut freqs = Vec::new();
            for (sig, (id, f)) in errors {
                sigs.push(sig);
                ids.push(id);
                freqs.push(f);
            }
            tx.execute(
                "INSERT INTO engram_error_counts (repo, signature, id, frequency)
                 SELECT $1, r.s, r.id, r.f FROM unnest($2::text[], $3::text[], $4::int8[]) AS r(s, id, f)
                 ON CONFLICT (repo, signature) DO UPDATE SET id = excluded.id,
                   frequency = excluded.frequency",
                &[&self.repo, &sigs, &ids, &freqs],
            )
            .await
            .map_err(|e| self.pg(e))?;
        }
        Ok(())
    }
}
