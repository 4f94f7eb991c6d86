//! Code-aware tokens for the keyword index, safe FTS5 queries from user text, and the
//! one BM25 statement every full-text table is ranked with.
//!
//! User text never reaches FTS5 as query syntax: it is cut into word tokens and each is
//! quoted, so `"`, `*`, `NEAR`, `-` or `OR` in a query are plain words. Pure text: this
//! module builds strings and never opens, reads or runs anything.

use std::borrow::Cow;

use crate::text::{is_one_word, split_ascii_identifier, split_identifier};

/// The text as indexed: the original, then the sub-words of every compound
/// identifier, so `parseHttpRequest` is found by `parse http request` and by itself.
/// Borrowed when there is nothing to add, which is most prose.
pub fn index_text(text: &str) -> Cow<'_, str> {
    let mut extra = String::new();
    if text.is_ascii() {
        // Split without allocating: the general split (a `Vec<char>` and two
        // `String`s per part) was 12% of the committing thread's time in a two-thread
        // code index.
        let mut parts = Vec::new();
        let mut add = |word: &str| {
            split_ascii_identifier(word, &mut parts);
            if parts.len() > 1 {
                for part in &parts {
                    extra.push(' ');
                    extra.extend(
                        word.as_bytes()[part.clone()]
                            .iter()
                            .map(|b| b.to_ascii_lowercase() as char),
                    );
                }
            }
        };
        // The same words as the general split below (an ASCII byte is its own char):
        // runs of letters, digits, `_` and `-`, each split if it holds an upper-case
        // letter, `_` or `-`. Only those bytes can start work, so the scan jumps from
        // one to the next, 32 bytes at a time where there is none (most of prose);
        // this runs on every memory on the tracker's applying thread, which bounds an
        // import.
        let bytes = text.as_bytes();
        let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
        let mut from = 0;
        while let Some(at) = next_splittable(&bytes[from..]).map(|i| from + i) {
            let start = bytes[..at]
                .iter()
                .rposition(|&b| !is_word(b))
                .map_or(0, |i| i + 1);
            let end = bytes[at..]
                .iter()
                .position(|&b| !is_word(b))
                .map_or(bytes.len(), |i| at + i);
            // ASCII, so any byte range is a whole str.
            if let Some(word) = text.get(start..end) {
                add(word);
            }
            from = end;
        }
    } else {
        let mut add = |word: &str| {
            let parts = split_identifier(word);
            if parts.len() > 1 {
                for p in parts {
                    extra.push(' ');
                    extra.push_str(&p);
                }
            }
        };
        for word in text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-')) {
            if !is_one_word(word) {
                add(word);
            }
        }
    }
    if extra.is_empty() {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(format!("{text}\n{extra}"))
    }
}

/// The position of the first byte of `bytes` that may make its word split: an
/// upper-case ASCII letter, `_` or `-`. Tested 32 bytes at a time without an early
/// exit, which the compiler turns into a few vector compares.
fn next_splittable(bytes: &[u8]) -> Option<usize> {
    let splittable = |b: u8| b.wrapping_sub(b'A') < 26 || b == b'_' || b == b'-';
    let mut blocks = bytes.chunks_exact(32);
    let mut base = 0;
    for block in blocks.by_ref() {
        if block.iter().fold(false, |any, &b| any | splittable(b)) {
            return block.iter().position(|&b| splittable(b)).map(|i| base + i);
        }
        base += 32;
    }
    blocks
        .remainder()
        .iter()
        .position(|&b| splittable(b))
        .map(|i| base + i)
}

/// Words so common in queries that matching them finds everything: dropped from a
/// query that has other words (and kept when they are all it has).
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "how", "i", "in",
    "is", "it", "of", "on", "or", "that", "the", "this", "to", "we", "what", "when", "where",
    "which", "why", "with", "you",
];

/// The words of user text that a query uses.
fn query_words(user: &str) -> Vec<&str> {
    let words: Vec<&str> = user
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let content: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| !STOP_WORDS.contains(&w.to_lowercase().as_str()))
        .collect();
    if content.is_empty() {
        words
    } else {
        content
    }
}

/// An FTS5 MATCH expression for free user text: every word and sub-word quoted, any
/// of them may match (BM25 ranks documents with more of them higher). `None` when the
/// text has no word at all.
pub fn fts_query(user: &str) -> Option<String> {
    let mut terms: Vec<String> = Vec::new();
    for word in query_words(user) {
        let lower = word.to_lowercase();
        for t in std::iter::once(lower).chain(split_identifier(word)) {
            let quoted = format!("\"{}\"", t.replace('"', "\"\""));
            if !terms.contains(&quoted) {
                terms.push(quoted);
            }
        }
    }
    (!terms.is_empty()).then(|| terms.join(" OR "))
}

/// An FTS5 MATCH expression that needs every word of the user text: a compound
/// identifier matches as itself or as all its sub-words (`parseHttpRequest` finds
/// `parse_http_request`). Far more selective than [`fts_query`], so much cheaper to
/// rank; callers try it first and fall back to the any-word query for more hits.
pub fn fts_all_query(user: &str) -> Option<String> {
    let quote = |t: &str| format!("\"{}\"", t.replace('"', "\"\""));
    let mut clauses: Vec<String> = Vec::new();
    for word in query_words(user) {
        let parts = split_identifier(word);
        let whole = quote(&word.to_lowercase());
        let clause = if parts.len() > 1 {
            let all: Vec<String> = parts.iter().map(|p| quote(p)).collect();
            format!("({whole} OR ({}))", all.join(" AND "))
        } else {
            whole
        };
        if !clauses.contains(&clause) {
            clauses.push(clause);
        }
    }
    (!clauses.is_empty()).then(|| clauses.join(" AND "))
}

/// One BM25-ranked FTS5 query: the statement the code, symbol and memory indexes
/// are all searched with, written once.
///
/// [`Bm25::sql`] selects `id` and the BM25 score as `rank` (lower is better, so
/// callers negate it into a score where higher is better), best first, at most a
/// limit. Its parameters, in order: the MATCH expression (from [`fts_query`] or
/// [`fts_all_query`]), then those of `filter`.
///
/// The score is `bm25_top`, which the store registers on every tracker connection
/// (its `fts_rank` module): FTS5's `bm25()` for every row that can be among the best
/// `limit`, without reading the length of the rows that cannot, and with the phrases'
/// row counts kept between queries while the database is unchanged.
#[derive(Debug, Clone, Copy)]
pub struct Bm25<'a> {
    /// The FTS5 table.
    pub table: &'a str,
    /// Column weights, in the table's column order.
    pub weights: &'a [f64],
    /// What a hit returns (`rowid`, `r.key` …).
    pub id: &'a str,
    /// Joins after the table (`JOIN records r ON …`), or empty.
    pub join: &'a str,
    /// More conditions, each starting with ` AND `, with `?` parameters; or empty.
    pub filter: &'a str,
    /// Tie-breaks after the rank (`, m.updated_ms DESC`), or empty.
    pub then_by: &'a str,
}

impl Bm25<'_> {
    /// The statement for the best `limit` rows; see the type's doc. The limit is
    /// written into the statement, since the ranking function needs it too.
    pub fn sql(&self, limit: usize) -> String {
        let weights: Vec<String> = self.weights.iter().map(|w| format!("{w:?}")).collect();
        let limit = limit.clamp(1, i64::MAX as usize);
        format!(
            // The store's `fts_rank::BM25_TOP`, which every tracker connection carries.
            "SELECT {id}, bm25_top({table}, {limit}, '{table}', ?1, {weights}) AS rank \
             FROM {table} {join} WHERE {table} MATCH ?1{filter} ORDER BY rank{then_by} LIMIT {limit}",
            id = self.id,
            table = self.table,
            weights = weights.join(", "),
            join = self.join,
            filter = self.filter,
            then_by = self.then_by,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_all_words_query_accepts_an_identifier_or_its_parts() {
        assert_eq!(
            fts_all_query("parseHttpRequest body").unwrap(),
            r#"("parsehttprequest" OR ("parse" AND "http" AND "request")) AND "body""#
        );
        assert_eq!(fts_all_query("x \"b\" x").unwrap(), r#""x" AND "b""#);
        assert_eq!(fts_all_query(" -*() "), None);
        // Stop words go unless they are all there is.
        assert_eq!(
            fts_all_query("retry with backoff").unwrap(),
            r#""retry" AND "backoff""#
        );
        assert_eq!(fts_query("the").unwrap(), r#""the""#);
    }

    #[test]
    fn ascii_text_indexes_as_the_char_split_does() {
        // The ASCII fast path must find the same words as the general one: the same
        // text with one non-ASCII word appended goes the general way.
        for text in [
            "plain words only",
            "call parseHttpRequest then retry_with_backoff; see Http2Server.",
            "x-ray UPPER a_b c--d __init__ 9lives",
        ] {
            let fast = index_text(text);
            let with_accent = format!("{text} é");
            let slow = index_text(&with_accent);
            let slow_extra = slow.split_once('\n').map(|(_, e)| e);
            let fast_extra = fast.split_once('\n').map(|(_, e)| e);
            assert_eq!(fast_extra, slow_extra, "{text}");
        }
        assert!(matches!(index_text("plain words"), Cow::Borrowed(_)));
        assert_eq!(index_text("see parseHttp"), "see parseHttp\n parse http");
    }

    proptest::proptest! {
        /// The ASCII path's jumps (32 bytes at a time, back to a word's start) find
        /// every word the general split finds, wherever in a block it falls.
        #[test]
        fn the_ascii_path_splits_what_the_general_one_does(
            text in "[a-zA-Z0-9_ .;:()\\-]{0,300}"
        ) {
            let fast = index_text(&text);
            let with_accent = format!("{text} é");
            let slow = index_text(&with_accent);
            let fast_extra = fast.split_once('\n').map(|(_, e)| e.to_string());
            let slow_extra = slow.split_once('\n').map(|(_, e)| e.to_string());
            proptest::prop_assert_eq!(fast_extra, slow_extra);
        }
    }

    #[test]
    fn identifiers_split_into_words() {
        assert_eq!(
            split_identifier("parseHttpRequest"),
            ["parse", "http", "request"]
        );
        assert_eq!(
            split_identifier("parseHTTPRequest"),
            ["parse", "http", "request"]
        );
        assert_eq!(
            split_identifier("parse_http_request"),
            ["parse", "http", "request"]
        );
        assert_eq!(
            split_identifier("kebab-case-name"),
            ["kebab", "case", "name"]
        );
        assert_eq!(split_identifier("sha256sum"), ["sha256sum"]);
    }

    #[test]
    fn one_bm25_statement_for_every_table() {
        let q = Bm25 {
            table: "memories_fts",
            weights: &[1.0, 2.0],
            id: "m.id",
            join: "JOIN memories m ON m.seq = memories_fts.rowid",
            filter: " AND m.updated_ms >= ?",
            then_by: ", m.updated_ms DESC",
        };
        assert_eq!(
            q.sql(40),
            "SELECT m.id, bm25_top(memories_fts, 40, 'memories_fts', ?1, 1.0, 2.0) AS rank \
             FROM memories_fts JOIN memories m ON m.seq = memories_fts.rowid \
             WHERE memories_fts MATCH ?1 AND m.updated_ms >= ? \
             ORDER BY rank, m.updated_ms DESC LIMIT 40"
        );
    }

    #[test]
    fn query_syntax_in_user_text_is_quoted() {
        let q = fts_query("NEAR(\"x\" b) AND -c*").unwrap();
        assert_eq!(q, "\"near\" OR \"x\" OR \"b\" OR \"c\"");
        let q = fts_query("OR NOT").unwrap();
        assert_eq!(
            q, "\"not\"",
            "\"or\" is a stop word, \"not\" is a plain word"
        );
        assert_eq!(fts_query("  ***  "), None);
    }
}
