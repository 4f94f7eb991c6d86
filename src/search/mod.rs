//! One query across code and memories: keyword, vector and symbol candidates fused by
//! reciprocal rank, filtered, optionally boosted, and returned with where each hit is.
//!
//! Sources: BM25 over chunks (`index`), BM25 over memories (`memory`), nearest vectors
//! of the query's embedding (`store`'s vector cache, which holds chunks and memories in
//! one space per embedder) and symbol names. Each gives a ranked list; [`fuse`] merges
//! them by rank. For a file question one more list joins, the code linked by calls to
//! the best fused hits ([`GraphSignal`]), and the lists are fused again. This layer
//! reads only; it never writes the store.

mod fuse;
mod resolve;
mod sources;
mod weights;

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;

use serde::Serialize;

pub use fuse::{fuse, fuse_with, lift, RankedList, K as RRF_K};
pub use weights::{FusionWeights, GraphSignal, SEARCH_K};

use sources::{keyword_lists, vector_list, KeywordLists, Sources};

use crate::embed::{default_embedder, Embedder};
use crate::index::IndexError;
use crate::memory::{MemoryError, MemoryFilter};
use crate::stale::Staleness;
use crate::store::{Store, StoreError};

/// What can go wrong while searching.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error(transparent)]
    Memory(#[from] MemoryError),
    #[error(transparent)]
    Stale(#[from] crate::stale::StaleError),
    #[error("{0}")]
    Invalid(String),
}

/// What a hit is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HitKind {
    /// A whole indexed file (the best of its chunks stands for it).
    File,
    /// A parsed symbol (function, class …).
    Symbol,
    /// A chunk of an indexed file.
    Chunk,
    /// A memory (`mem:` entry of any kind: memory, note, error, decision …).
    Memory,
}

impl HitKind {
    /// The name used in options and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            HitKind::File => "file",
            HitKind::Symbol => "symbol",
            HitKind::Chunk => "chunk",
            HitKind::Memory => "memory",
        }
    }
}

impl FromStr for HitKind {
    type Err = SearchError;
    fn from_str(s: &str) -> Result<Self, SearchError> {
        Ok(match s {
            "file" => HitKind::File,
            "symbol" => HitKind::Symbol,
            "chunk" => HitKind::Chunk,
            "memory" => HitKind::Memory,
            other => {
                return Err(SearchError::Invalid(format!(
                    "kind {other:?} is not one of file, symbol, chunk, memory"
                )))
            }
        })
    }
}

/// How to search. [`SearchOptions::default`] searches everything, hybrid, top 10.
#[derive(Clone)]
pub struct SearchOptions {
    pub top_k: usize,
    /// Only hits of this kind.
    pub kind: Option<HitKind>,
    /// Only code of this language (`rust`, `python` …); excludes memories.
    pub lang: Option<String>,
    /// Only code whose path matches this glob (`src/**/*.rs`); excludes memories.
    pub path_glob: Option<String>,
    /// The file the user is in: hits in it, and then in its directory, rank higher.
    pub near: Option<String>,
    /// Rank recently changed files and recently updated memories higher.
    pub boost_recent: bool,
    /// Which memories may be hits.
    pub memory_filter: MemoryFilter,
    /// Skip the vector source (keyword and symbols only).
    pub keyword_only: bool,
    /// Embeds the query; must be the embedder the store's vectors were made with.
    pub embedder: Arc<dyn Embedder>,
    /// Other embedders whose vectors search may use while `embedder`'s are
    /// incomplete (a switch of embedder under way): see [`SearchResults::vector_space`].
    /// The built-in `hash-v2-*` embedders need not be listed; they are made by name.
    pub fallback_embedders: Vec<Arc<dyn Embedder>>,
    /// How much each source counts in the fusion; `None`: engram's choice for the
    /// query ([`FusionWeights::for_query`]).
    pub weights: Option<FusionWeights>,
    /// The graph signal (code linked by calls to the best hits); `None`: engram's
    /// choice ([`GraphSignal::for_kind`]). For measuring it; not a user setting.
    #[doc(hidden)]
    pub graph: Option<GraphSignal>,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            top_k: 10,
            kind: None,
            lang: None,
            path_glob: None,
            near: None,
            boost_recent: false,
            memory_filter: MemoryFilter::default(),
            keyword_only: false,
            embedder: Arc::new(default_embedder()),
            fallback_embedders: Vec::new(),
            weights: None,
            graph: None,
        }
    }
}

impl std::fmt::Debug for SearchOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchOptions")
            .field("top_k", &self.top_k)
            .field("kind", &self.kind)
            .field("lang", &self.lang)
            .field("path_glob", &self.path_glob)
            .field("near", &self.near)
            .field("boost_recent", &self.boost_recent)
            .field("memory_filter", &self.memory_filter)
            .field("keyword_only", &self.keyword_only)
            .field("embedder", &self.embedder.name())
            .field(
                "fallback_embedders",
                &self
                    .fallback_embedders
                    .iter()
                    .map(|e| e.name())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// One result. Code hits carry a path and 1-based inclusive lines; memory hits carry
/// their text instead.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchHit {
    /// `chunk:…`, `file:…`, `sym:…` or `mem:…`.
    pub key: String,
    pub kind: HitKind,
    pub path: Option<String>,
    pub start_line: Option<u64>,
    pub end_line: Option<u64>,
    pub symbol: Option<String>,
    /// The signature of the symbol a code hit is (or is part of), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// Fused score (reciprocal-rank sum, plus the best such sum for code named exactly
    /// as the query; after boosts); higher is better.
    pub score: f64,
    /// What best shows why this is a hit: for code the lines around the line with
    /// the most query words (at most six lines, 800 characters), for a memory that
    /// line alone (at most 200 characters).
    pub snippet: String,
    /// A memory's full text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// A memory hit's anchors whose code changed since it was written (empty when
    /// fresh; absent on code hits). See [`mark_stale`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stale: Option<Vec<Staleness>>,
}

/// Fill `stale` on the memory hits among `hits` (one query). Ranking uses it: a
/// stale memory goes after fresh ones of equal relevance (`fresh_first`, and the
/// final order's tie-break).
pub fn mark_stale<'a>(
    store: &Store,
    hits: impl IntoIterator<Item = &'a mut SearchHit>,
) -> Result<(), SearchError> {
    let mut mems: Vec<&mut SearchHit> = hits
        .into_iter()
        .filter(|h| h.kind == HitKind::Memory)
        .collect();
    let ids: Vec<String> = mems.iter().map(|h| h.key.clone()).collect();
    let mut marks = crate::stale::of_memories(store, &ids)?;
    for h in &mut mems {
        h.stale = Some(marks.remove(&h.key).unwrap_or_default());
    }
    Ok(())
}

/// Within each run of equal scores of a source's ranked list (equal relevance), put
/// fresh memories before stale ones, keeping the order otherwise.
fn fresh_first(store: &Store, ranked: &mut [(String, f64)]) -> Result<(), SearchError> {
    let ids: Vec<String> = ranked
        .iter()
        .filter(|(k, _)| k.starts_with("mem:"))
        .map(|(k, _)| k.clone())
        .collect();
    let stale = crate::stale::stale_ids(store, &ids)?;
    if stale.is_empty() {
        return Ok(());
    }
    let same = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0);
    let mut start = 0;
    while start < ranked.len() {
        let mut end = start + 1;
        while end < ranked.len() && same(ranked[start].1, ranked[end].1) {
            end += 1;
        }
        // A stable sort on one flag: fresh (false) first.
        ranked[start..end].sort_by_key(|(k, _)| stale.contains(k));
        start = end;
    }
    Ok(())
}

/// The hits, and why the search was less than hybrid if it was.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SearchResults {
    pub hits: Vec<SearchHit>,
    /// Set when a source failed and the search went on without it (for example the
    /// embedder was unavailable and only keywords were used).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
    /// Set when the vector list came from another embedder's vectors than the
    /// configured one's: the name of that embedder. The configured embedder's vectors
    /// cover fewer keys (a switch of embedder is under way: `engram index` re-embeds),
    /// so search used the most complete space it can embed a query for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector_space: Option<String>,
}

/// The embedder whose vectors the vector list should come from: the configured one,
/// unless another embedder that search can make (a built-in one, or one of
/// `opts.fallback_embedders`) has more live vectors in the store — then the one of
/// those with the most. One read of the tracker's per-embedder counts.
fn vector_space(store: &Store, opts: &SearchOptions) -> Result<Arc<dyn Embedder>, SearchError> {
    let configured = opts.embedder.name();
    let spaces = store.vector_spaces()?;
    let own = spaces
        .iter()
        .find(|s| s.embedder == configured)
        .map_or(0, |s| s.count);
    // Most vectors first.
    for space in spaces.iter().filter(|s| s.count > own) {
        if space.embedder == configured {
            continue;
        }
        let usable = opts
            .fallback_embedders
            .iter()
            .find(|e| e.name() == space.embedder)
            .cloned()
            .or_else(|| crate::embed::builtin_embedder(&space.embedder))
            .filter(|e| e.dimensions() == space.dim as usize);
        if let Some(e) = usable {
            return Ok(e);
        }
    }
    Ok(opts.embedder.clone())
}

/// Nearest vectors below this cosine similarity are not hits: the nearest
/// neighbours of a query that matches nothing are noise, not answers. (Unrelated
/// texts sit near 0 with the hashed embedder; real paraphrases well above this.)
const MIN_VECTOR_SIMILARITY: f32 = 0.1;

/// Search `store` for `query`; see the module documentation.
pub fn search(
    store: &Store,
    query: &str,
    opts: &SearchOptions,
) -> Result<SearchResults, SearchError> {
    let top_k = opts.top_k.clamp(1, 1000);
    let filter = resolve::Filter::new(opts)?;
    let code = matches!(
        opts.kind,
        None | Some(HitKind::Chunk | HitKind::File | HitKind::Symbol)
    );
    let memories = matches!(opts.kind, None | Some(HitKind::Memory))
        && opts.lang.is_none()
        && opts.path_glob.is_none();
    // Candidates per source: enough that filters and fusion have room to work, and
    // for files enough chunks that a file's further matches count (`FILE_EVIDENCE`).
    let fetch = if opts.path_glob.is_some() || opts.kind == Some(HitKind::File) {
        top_k * 20
    } else {
        (top_k * 4).max(40)
    };

    // The vector space: the configured embedder's, or while a switch of embedder is
    // under way the most complete one search can embed the query for.
    let embedder = if opts.keyword_only {
        opts.embedder.clone()
    } else {
        vector_space(store, opts)?
    };
    let weights = opts
        .weights
        .unwrap_or_else(|| FusionWeights::for_query(query, embedder.name()));
    let sources = Sources {
        code,
        memories,
        fetch,
        top_k,
    };
    // The vector list (embedding the query, scanning the cache) needs nothing from
    // the keyword lists: it runs on its own thread meanwhile, so a query costs about
    // the longer of the two rather than their sum.
    let want_vectors = !opts.keyword_only && weights.vector > 0.0;
    let (keyword, vectors) = std::thread::scope(|scope| {
        let vectors = want_vectors.then(|| {
            let (embedder, sources) = (&embedder, &sources);
            scope.spawn(move || vector_list(store, query, opts, embedder, sources, weights.vector))
        });
        let keyword = keyword_lists(store, query, opts, &sources, &weights);
        let vectors = vectors.map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        (keyword, vectors)
    });
    let KeywordLists {
        mut lists,
        named,
        named_same_case,
    } = keyword?;
    let (mut degraded, mut vector_space) = (None, None);
    if let Some(vectors) = vectors {
        let vectors = vectors?;
        degraded = vectors.degraded;
        vector_space = vectors.space;
        lists.extend(vectors.list);
    }
    let mut fused = fuse_with(&lists, SEARCH_K);
    lift(&mut fused, &named);
    lift(&mut fused, &named_same_case);
    let graph = opts
        .graph
        .unwrap_or_else(|| GraphSignal::for_kind(opts.kind));
    if code && graph.weight > 0.0 && opts.kind != Some(HitKind::Symbol) {
        let seeds: Vec<String> = fused
            .iter()
            .map(|(k, _)| k)
            .filter(|k| k.starts_with("chunk:"))
            .take(graph.seeds)
            .cloned()
            .collect();
        if !seeds.is_empty() {
            let keys =
                crate::index::graph::linked_chunks(store, &seeds, graph.min_confidence, fetch)?;
            lists.push(RankedList {
                keys,
                weight: graph.weight,
            });
            fused = fuse_with(&lists, SEARCH_K);
            lift(&mut fused, &named);
            lift(&mut fused, &named_same_case);
        }
    }
    let hits = resolve::hits(store, query, &fused, opts, &filter, top_k)?;
    Ok(SearchResults {
        hits,
        degraded,
        vector_space,
    })
}

/// The directory part of a repository-relative path (`""` at the root).
fn parent_dir(path: &str) -> &str {
    Path::new(path)
        .parent()
        .and_then(|p| p.to_str())
        .unwrap_or("")
}
