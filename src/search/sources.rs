//! The ranked lists a query gets from each source: symbol names, chunk and memory
//! keywords (BM25), and nearest vectors. [`super::search`] fuses them.
//!
//! Owns: asking each source for its candidates and turning them into keys of the
//! kind the search returns. Must never: fuse, filter by path or language beyond what
//! a source's own query does, or write.

use std::sync::Arc;

use super::{fresh_first, HitKind, SearchError, SearchOptions, MIN_VECTOR_SIMILARITY};
use crate::embed::{is_zero, Embedder};
use crate::index;
use crate::memory::MemoryFilter;
use crate::search::{FusionWeights, RankedList};
use crate::store::Store;

/// What a query asks of the sources.
pub(super) struct Sources {
    /// Code may be a hit.
    pub code: bool,
    /// Memories may be a hit.
    pub memories: bool,
    /// Candidates asked of each source.
    pub fetch: usize,
    /// Hits the caller wants.
    pub top_k: usize,
}

/// The keyword sources' lists, and the code named exactly as the query.
pub(super) struct KeywordLists {
    pub lists: Vec<RankedList>,
    /// Code named exactly as the query (a symbol's name or qualified name): first,
    /// ahead of any agreement of the lists (a query naming a symbol is the strongest
    /// evidence).
    pub named: Vec<String>,
    /// Among `named`, the ones in the query's case, which go before the others.
    pub named_same_case: Vec<String>,
}

/// Symbol, chunk-keyword and memory-keyword lists for `query`.
pub(super) fn keyword_lists(
    store: &Store,
    query: &str,
    opts: &SearchOptions,
    src: &Sources,
    weights: &FusionWeights,
) -> Result<KeywordLists, SearchError> {
    let (code, memories, fetch, top_k) = (src.code, src.memories, src.fetch, src.top_k);
    let mut lists = Vec::new();
    let mut named: Vec<String> = Vec::new();
    let mut named_same_case: Vec<String> = Vec::new();
    if code {
        // Symbols whose names (or signatures, docs) hold the query's words; as chunks,
        // unless symbols themselves were asked for.
        // Symbol names back up the other sources: their any-word query (costly over
        // common words) runs only when no symbol holds every word.
        let mut syms = index::symbol_ranked(store, query, 1, fetch)?;
        let as_symbols = opts.kind == Some(HitKind::Symbol);
        if !as_symbols {
            // A Markdown heading is prose, not a name: counted here, at a name's
            // weight, headings that share a word with the question took the first
            // place from code (localization eval, held out: a document first for 0.6%
            // of queries before Markdown sections, 22.5% after). Sections still come
            // through the keyword and vector lists, and as symbols when asked for.
            syms.retain(|(key, _)| !is_section(key));
        }
        let chunks = if as_symbols {
            Vec::new()
        } else {
            let symbol_keys: Vec<String> = syms.iter().map(|(k, _)| k.clone()).collect();
            index::chunks_of_symbols(store, &symbol_keys)?
        };
        let mut keys = Vec::with_capacity(syms.len());
        for (i, (key, score)) in syms.into_iter().enumerate() {
            let same_case = score == index::NAMED_SAME_CASE;
            let exact = same_case || score == index::NAMED_OTHER_CASE;
            let key = if as_symbols {
                key
            } else {
                match chunks.get(i).cloned().flatten() {
                    Some(chunk) if !keys.contains(&chunk) => chunk,
                    _ => continue,
                }
            };
            if exact {
                named.push(key.clone());
            }
            if same_case {
                named_same_case.push(key.clone());
            }
            keys.push(key);
        }
        lists.push(RankedList {
            keys,
            weight: weights.symbol,
        });
    }
    if code && opts.kind != Some(HitKind::Symbol) {
        let keys = index::keyword_ranked(store, query, opts.lang.as_deref(), top_k, fetch)?;
        lists.push(RankedList {
            keys: keys.into_iter().map(|(k, _)| k).collect(),
            weight: weights.keyword,
        });
    }
    if memories {
        let mut mems = crate::memory::keyword_ranked(store, query, &opts.memory_filter, fetch)?;
        fresh_first(store, &mut mems)?;
        lists.push(RankedList {
            keys: mems.into_iter().map(|(k, _)| k).collect(),
            weight: weights.keyword,
        });
    }
    Ok(KeywordLists {
        lists,
        named,
        named_same_case,
    })
}

/// The vector list, and why there is none when the embedder failed.
#[derive(Default)]
pub(super) struct VectorList {
    pub list: Option<RankedList>,
    /// Set when the embedder failed and the search goes on with keywords only.
    pub degraded: Option<String>,
    /// Set when the vectors came from another embedder than the configured one.
    pub space: Option<String>,
}

/// The nearest vectors to `query`'s embedding under `embedder`, weighted `weight`.
pub(super) fn vector_list(
    store: &Store,
    query: &str,
    opts: &SearchOptions,
    embedder: &Arc<dyn Embedder>,
    src: &Sources,
    weight: f64,
) -> Result<VectorList, SearchError> {
    let (code, memories, fetch) = (src.code, src.memories, src.fetch);
    let mut out = VectorList::default();
    let qv = match embedder.embed(&[query]) {
        Ok(mut v) => v.pop().unwrap_or_default(),
        Err(e) => {
            tracing::warn!("vector search skipped: {e}");
            out.degraded = Some(format!("keyword only: {e}"));
            return Ok(out);
        }
    };
    if qv.is_empty() || is_zero(&qv) {
        return Ok(out);
    }
    if embedder.name() != opts.embedder.name() {
        out.space = Some(embedder.name().to_string());
    }
    let found = store.vector_search(embedder.name(), &qv, fetch * 2)?;
    let mut found: Vec<(String, f64)> = found
        .into_iter()
        .filter(|m| m.score >= MIN_VECTOR_SIMILARITY)
        .map(|m| (m.key, f64::from(m.score)))
        .collect();
    fresh_first(store, &mut found)?;
    let mut keys: Vec<String> = found
        .into_iter()
        .map(|(k, _)| k)
        .filter(|k| {
            (code && opts.kind != Some(HitKind::Symbol) && k.starts_with("chunk:"))
                || (memories && k.starts_with("mem:"))
        })
        .collect();
    // Keyword candidates are filtered in their query; vector ones here, all in one
    // query, so no hit is checked one by one.
    if memories && opts.memory_filter != MemoryFilter::default() {
        let mem: Vec<String> = keys
            .iter()
            .filter(|k| k.starts_with("mem:"))
            .cloned()
            .collect();
        let allowed: std::collections::HashSet<String> =
            crate::memory::filter_ids(store, &mem, &opts.memory_filter)?
                .into_iter()
                .collect();
        keys.retain(|k| !k.starts_with("mem:") || allowed.contains(k));
    }
    out.list = Some(RankedList { keys, weight });
    Ok(out)
}

/// Whether a `sym:` key names a Markdown section (`sym:PATH#NAME:section:START:END`).
fn is_section(key: &str) -> bool {
    key.rsplit(':').nth(2) == Some("section")
}
