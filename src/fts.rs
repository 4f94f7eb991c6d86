//! Code-aware tokens for the keyword index, and safe FTS5 queries from user text.
//!
//! User text never reaches FTS5 as query syntax: it is cut into word tokens and each is
//! quoted, so `"`, `*`, `NEAR`, `-` or `OR` in a query are plain words.

use crate::text::split_identifier;

/// The text as indexed: the original, then the sub-words of every compound
/// identifier, so `parseHttpRequest` is found by `parse http request` and by itself.
pub fn index_text(text: &str) -> String {
    let mut extra = String::new();
    for word in text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-')) {
        let parts = split_identifier(word);
        if parts.len() > 1 {
            for p in parts {
                extra.push(' ');
                extra.push_str(&p);
            }
        }
    }
    if extra.is_empty() {
        text.to_string()
    } else {
        format!("{text}\n{extra}")
    }
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
