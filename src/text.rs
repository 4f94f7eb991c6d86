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

/// [`split_identifier`] of an ASCII word without allocating: the byte ranges of its
/// parts, in order, which lower-cased are the words `split_identifier` returns. For
/// the embedder, which reads every identifier of every chunk; a non-ASCII word must
/// go through `split_identifier` (its case rules are Unicode's, not bytes').
pub fn split_ascii_identifier(word: &str, parts: &mut Vec<std::ops::Range<usize>>) {
    parts.clear();
    debug_assert!(word.is_ascii(), "split_ascii_identifier({word:?})");
    let b = word.as_bytes();
    let mut piece = 0;
    while piece <= b.len() {
        // A piece is a run of letters and digits, as `split_identifier`'s pieces are.
        let end = piece
            + b[piece..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric())
                .count();
        let mut start = piece;
        for i in piece + 1..end {
            let (prev, cur) = (b[i - 1], b[i]);
            let next_lower = i + 1 < end && b[i + 1].is_ascii_lowercase();
            // The same three boundaries as `split_identifier`.
            let boundary = (prev.is_ascii_lowercase() && cur.is_ascii_uppercase())
                || (prev.is_ascii_uppercase() && cur.is_ascii_uppercase() && next_lower)
                || (prev.is_ascii_digit() && cur.is_ascii_uppercase());
            if boundary {
                parts.push(start..i);
                start = i;
            }
        }
        if start < end {
            parts.push(start..end);
        }
        piece = end + 1;
    }
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
    use super::{is_one_word, split_ascii_identifier, split_identifier};

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

    /// Every ASCII word of up to six characters over letters of both cases, a digit
    /// and two separators splits into the same parts both ways.
    #[test]
    fn the_ascii_split_agrees_with_split_identifier() {
        const ALPHABET: &[u8] = b"aB1_-";
        let mut parts = Vec::new();
        let mut word = Vec::new();
        let mut checked = 0;
        for len in 0..=6u32 {
            for mut n in 0..ALPHABET.len().pow(len) {
                word.clear();
                for _ in 0..len {
                    word.push(ALPHABET[n % ALPHABET.len()]);
                    n /= ALPHABET.len();
                }
                let w = std::str::from_utf8(&word).expect("ascii");
                split_ascii_identifier(w, &mut parts);
                let ours: Vec<String> = parts.iter().map(|r| w[r.clone()].to_lowercase()).collect();
                assert_eq!(ours, split_identifier(w), "{w:?}");
                checked += 1;
            }
        }
        assert_eq!(checked, (0..=6).map(|l| 5usize.pow(l)).sum::<usize>());
        for w in [
            "parseHTTPRequest2",
            "XMLHttpRequest",
            "__init__",
            "getHTTP2Server",
            "IOError",
            "ABCDef",
        ] {
            split_ascii_identifier(w, &mut parts);
            let ours: Vec<String> = parts.iter().map(|r| w[r.clone()].to_lowercase()).collect();
            assert_eq!(ours, split_identifier(w), "{w:?}");
        }
    }
}
