//! How much each ranked list counts in the fusion, per query.
//!
//! Owns: the weights of the symbol, keyword and vector lists, and the rule that picks
//! them from a query's shape and the embedder. Must never: look at the store (the
//! choice is made before any list is fetched).

/// The reciprocal-rank constant of search's fusion (`weight / (SEARCH_K + rank)`).
///
/// Not the usual 60: the symbol and keyword lists of a query in words are any-word
/// lists, 40 deep, and with 60 a chunk that three lists hold around rank 20 outranks the
/// keyword list's first hit that the others lack (rank 1 counts 1/61, rank 20 1/80).
/// With 5 a list's top few decide unless other lists agree near their own tops. Chosen
/// on the tune half of the search eval (over 3, 5, 10, 20, 60, with the weights below
/// and stemmed keyword tables): doc queries 0.435 at 60 to 0.481 MRR@10, paraphrases
/// 0.106 to 0.108 (noise).
pub const SEARCH_K: f64 = 5.0;

/// How much each source's ranks count in the fusion (reciprocal rank fusion: a list
/// adds `weight / (K + rank)` to each key it holds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FusionWeights {
    /// Symbols whose names, signatures or docs hold the query's words. A query naming
    /// a symbol is the strongest evidence there is.
    pub symbol: f64,
    /// Keyword (BM25) lists over code chunks and memories.
    pub keyword: f64,
    /// Nearest vectors to the query's embedding.
    pub vector: f64,
}

impl Default for FusionWeights {
    /// The fixed weights engram used before they depended on the query's shape.
    fn default() -> Self {
        FusionWeights {
            symbol: 1.2,
            keyword: 1.0,
            vector: 0.8,
        }
    }
}

impl FusionWeights {
    /// The weights engram uses for `query` when none are given: chosen on the tune
    /// half of the search eval (benches/search_eval.rs, third-party code), per query
    /// shape and kind of embedder.
    ///
    /// - A query shaped like an identifier (`parse_http_request`, `getQueryData`,
    ///   `Session.request`) is answered by names and words; the vector list only
    ///   pulls other code in front of the named one, so it does not count.
    /// - A query in words (a doc sentence, a paraphrase) keeps the symbol list (docs
    ///   and signatures hold its words) and the keyword list, and counts the vector
    ///   list as much as the embedder has earned: the built-in hashed embedder's list
    ///   0.4 of keywords (tune-half best over 0.2, 0.4, 0.8, 1.2, with [`SEARCH_K`] as
    ///   with 60), a neural or HTTP embedder's twice as much as keywords (all-MiniLM-L6-v2,
    ///   tune-half best of the mean MRR@10 over the three query types, over 0.4 to 4:
    ///   0.538 at 1.0, 0.543 at 2.0, flat from 1.5 to 2.0; paraphrases 0.129 to 0.156,
    ///   doc sentences 0.494 to 0.480; held out, paraphrases 0.204 to 0.232 and doc
    ///   sentences 0.508 to 0.465, so a trade, not shown a net gain). Measured with
    ///   MiniLM only: an HTTP embedder gets the same weight unmeasured. A static token
    ///   table (`static-…`, distilled from MiniLM) is no learned encoder: its list
    ///   counts 0.5 of keywords (tune-half best of the mean over the three query types,
    ///   over 0.2 to 2.0, for the best tables, `static-minilm-tok-256-df3` and
    ///   `-tok-128-df`; at 2.0 doc sentences fell from 0.472 to 0.390;
    ///   tools/search-eval/README.md).
    pub fn for_query(query: &str, embedder_name: &str) -> FusionWeights {
        let builtin = embedder_name.starts_with("hash-");
        let table = embedder_name.starts_with("static-");
        if looks_like_identifier(query) {
            FusionWeights {
                symbol: 1.2,
                keyword: 1.0,
                vector: 0.0,
            }
        } else if builtin {
            FusionWeights {
                symbol: 1.2,
                keyword: 1.0,
                vector: 0.4,
            }
        } else if table {
            FusionWeights {
                symbol: 1.2,
                keyword: 1.0,
                vector: 0.5,
            }
        } else {
            FusionWeights {
                symbol: 1.2,
                keyword: 1.0,
                vector: 2.0,
            }
        }
    }
}

/// The graph signal: one more list in the fusion, the chunks linked by calls (one step,
/// either way) to the best chunks of the fused keyword, symbol and vector lists
/// (`index::graph::linked_chunks`), then fused again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GraphSignal {
    /// How much the linked list's ranks count; 0 leaves it out (no graph reads).
    pub weight: f64,
    /// How many of the fused list's best chunks are followed.
    pub seeds: usize,
    /// Only edges at least this sure.
    pub min_confidence: crate::index::graph::Confidence,
}

impl Default for GraphSignal {
    /// Off.
    fn default() -> Self {
        GraphSignal {
            weight: 0.0,
            seeds: 5,
            min_confidence: crate::index::graph::Confidence::Imported,
        }
    }
}

impl GraphSignal {
    /// The signal engram uses when none is given: on for a file-level question
    /// (`kind: file`), weight 1.5 and 5 seeds at `imported` or better, off otherwise.
    /// Chosen on the tune half of the localization eval (commit messages against the
    /// files they changed; weights 0.3 to 3.0, 1 to 5 seeds); held out, files ranked
    /// with it went from Acc@1 0.348 to 0.366 and MRR@10 0.496 to 0.508. For chunk
    /// and symbol hits it stays off: on the search eval (function retrieval) it moved
    /// doc-sentence queries' MRR@10 from 0.429 to 0.382 (benches/RESULTS.md,
    /// "localize_eval").
    pub fn for_kind(kind: Option<super::HitKind>) -> GraphSignal {
        if kind == Some(super::HitKind::File) {
            GraphSignal {
                weight: 1.5,
                ..GraphSignal::default()
            }
        } else {
            GraphSignal::default()
        }
    }
}

/// One token with the marks of code: `_`, `.`, `::`, `#`, `$`, `/`, or a lower-case
/// letter followed by a capital (camelCase). A single plain word (`retry`) is not:
/// its synonyms are what the vector list is for.
fn looks_like_identifier(query: &str) -> bool {
    let q = query.trim();
    if q.is_empty() || q.chars().any(char::is_whitespace) {
        return false;
    }
    let marked = q.contains(['_', '.', '#', '$', '/']) || q.contains("::");
    let camel = q
        .as_bytes()
        .windows(2)
        .any(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase());
    marked || camel
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_told_from_words() {
        for q in [
            "parse_http_request",
            "getQueryData",
            "Session.request",
            "std::mem",
            "a/b.rs",
            "$el",
        ] {
            assert!(looks_like_identifier(q), "{q}");
        }
        for q in [
            "retry",
            "Retry",
            "parse http request",
            "URL",
            "",
            "  ",
            "remove a user",
        ] {
            assert!(!looks_like_identifier(q), "{q}");
        }
    }

    #[test]
    fn vectors_count_for_words_and_more_for_a_learned_embedder() {
        let id = FusionWeights::for_query("getQueryData", "minilm");
        assert_eq!(id.vector, 0.0);
        let hashed = FusionWeights::for_query("fetch the query data", "hash-v2-256");
        let neural = FusionWeights::for_query("fetch the query data", "minilm");
        assert!(hashed.vector > 0.0 && neural.vector > hashed.vector);
        assert_eq!(hashed.symbol, neural.symbol);
        let table = FusionWeights::for_query("fetch the query data", "static-minilm-tok-256-df3");
        assert!(table.vector > 0.0 && table.vector < neural.vector);
        assert_eq!(
            FusionWeights::for_query("getQueryData", "static-minilm-tok-256-df3").vector,
            0.0
        );
    }
}
