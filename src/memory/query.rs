//! Code-aware tokens for the keyword index, and safe FTS5 queries from user text.
//!
//! User text never reaches FTS5 as query syntax: it is cut into word tokens and each is
//! quoted, so `"`, `*`, `NEAR`, `-` or `OR` in a query are plain words.

pub use crate::text::split_identifier;

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

/// An FTS5 MATCH expression for free user text: every word and sub-word quoted, any
/// of them may match (BM25 ranks documents with more of them higher). `None` when the
/// text has no word at all.
pub fn fts_query(user: &str) -> Option<String> {
    let mut terms: Vec<String> = Vec::new();
    for word in user.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() {
            continue;
        }
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
    for word in user.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() {
            continue;
        }
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
        assert_eq!(fts_all_query("a \"b\" a").unwrap(), r#""a" AND "b""#);
        assert_eq!(fts_all_query(" -*() "), None);
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
        assert_eq!(split_identifier("sha256sum"), ["sha", "256", "sum"]);
    }

    #[test]
    fn query_syntax_in_user_text_is_quoted() {
        let q = fts_query("NEAR(\"a\" b) OR -c*").unwrap();
        assert_eq!(q, "\"near\" OR \"a\" OR \"b\" OR \"or\" OR \"c\"");
        assert_eq!(fts_query("  ***  "), None);
    }
}
