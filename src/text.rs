//! Code-aware words: how identifiers are cut into the words people search for.
//!
//! Shared by the keyword index, the embedder and symbol lookup so that all three agree
//! on what a word is. Pure functions; no I/O and no allocation beyond the words.

/// Split an identifier into its words: `parseHTTPRequest` → parse, http, request;
/// `parse_http_request` and `parse-http-request` likewise; `base64Encode` → base64,
/// encode.
pub fn split_identifier(word: &str) -> Vec<String> {
    if is_one_word(word) {
        return if word.is_empty() {
            Vec::new()
        } else {
            vec![word.to_string()]
        };
    }
    let mut parts = Vec::new();
    for piece in word.split(|c: char| !c.is_alphanumeric()) {
        let chars: Vec<char> = piece.chars().collect();
        let mut start = 0;
        for i in 1..chars.len() {
            let (prev, cur) = (chars[i - 1], chars[i]);
            let next_lower = chars.get(i + 1).is_some_and(|c| c.is_lowercase());
            let boundary = (prev.is_lowercase() && cur.is_uppercase())
                || (prev.is_uppercase() && cur.is_uppercase() && next_lower)
                // Digits stay with the word before them (`base64`, `utf8`, `sha256`:
                // a lone `64` would match half of all code); a capital after digits
                // starts a word (`Http2Server` → http2, server).
                || (prev.is_ascii_digit() && cur.is_uppercase());
            if boundary {
                parts.push(chars[start..i].iter().collect::<String>().to_lowercase());
                start = i;
            }
        }
        if start < chars.len() {
            parts.push(chars[start..].iter().collect::<String>().to_lowercase());
        }
    }
    parts.retain(|p| !p.is_empty());
    parts
}

/// Whether [`split_identifier`] would return `word` itself: ASCII lower-case letters
/// and digits only, so there is no separator and no case change to split at. Most
/// words of prose and code are, and this answers without allocating.
pub fn is_one_word(word: &str) -> bool {
    word.bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::{is_one_word, split_identifier};

    #[test]
    fn one_words_split_to_themselves() {
        for w in ["parse", "utf8", "x", "http2", "a1b2"] {
            assert!(is_one_word(w));
            assert_eq!(split_identifier(w), [w]);
        }
        for w in ["Parse", "parse_http", "é", "a-b"] {
            assert!(!is_one_word(w), "{w}");
        }
        assert!(split_identifier("").is_empty());
    }

    #[test]
    fn digits_stay_with_their_word() {
        assert_eq!(split_identifier("base64Encode"), ["base64", "encode"]);
        assert_eq!(split_identifier("Http2Server"), ["http2", "server"]);
        assert_eq!(split_identifier("utf8"), ["utf8"]);
        assert_eq!(
            split_identifier("parseHTTPRequest"),
            ["parse", "http", "request"]
        );
        assert_eq!(split_identifier("sha_256"), ["sha", "256"]);
    }
}
