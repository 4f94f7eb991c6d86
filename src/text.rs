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

/// [`split_identifier`] of an ASCII word, written into `out` without allocating:
/// when the word has more than one part, each part lower-cased and preceded by a
/// space; nothing otherwise. Returns whether anything was written. `ranges` is
/// scratch space, kept by the caller across words.
///
/// The index's writer runs this on every word of every chunk and memory it applies;
/// the general split (a `Vec<char>` and two `String`s per part) was 12% of that
/// thread's time in a two-thread code index.
pub fn push_ascii_parts(word: &[u8], ranges: &mut Vec<(usize, usize)>, out: &mut String) -> bool {
    debug_assert!(word.is_ascii());
    ranges.clear();
    let mut piece_start = 0;
    for end in word
        .iter()
        .enumerate()
        .filter(|(_, b)| !b.is_ascii_alphanumeric())
        .map(|(i, _)| i)
        .chain(std::iter::once(word.len()))
    {
        let piece = &word[piece_start..end];
        let mut start = 0;
        for i in 1..piece.len() {
            let (prev, cur) = (piece[i - 1], piece[i]);
            let next_lower = piece.get(i + 1).is_some_and(u8::is_ascii_lowercase);
            let boundary = (prev.is_ascii_lowercase() && cur.is_ascii_uppercase())
                || (prev.is_ascii_uppercase() && cur.is_ascii_uppercase() && next_lower)
                || (prev.is_ascii_digit() && cur.is_ascii_uppercase());
            if boundary {
                ranges.push((piece_start + start, piece_start + i));
                start = i;
            }
        }
        if start < piece.len() {
            ranges.push((piece_start + start, piece_start + piece.len()));
        }
        piece_start = end + 1;
    }
    if ranges.len() < 2 {
        return false;
    }
    for &(from, to) in ranges.iter() {
        out.push(' ');
        out.extend(
            word[from..to]
                .iter()
                .map(|b| b.to_ascii_lowercase() as char),
        );
    }
    true
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
    use super::{is_one_word, push_ascii_parts, split_identifier};

    #[test]
    fn ascii_parts_are_the_general_split() {
        // Every word of up to 5 bytes over an alphabet with each class of byte the
        // split looks at, and random longer ones.
        const ALPHABET: &[u8] = b"aZ9_-.B";
        let mut words: Vec<Vec<u8>> = vec![Vec::new()];
        for len in 1..=5 {
            let mut n = 0usize;
            while n < ALPHABET.len().pow(len) {
                let mut w = Vec::new();
                let mut k = n;
                for _ in 0..len {
                    w.push(ALPHABET[k % ALPHABET.len()]);
                    k /= ALPHABET.len();
                }
                words.push(w);
                n += 1;
            }
        }
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            let len = 6 + (seed % 20) as usize;
            let w: Vec<u8> = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    b"abcXYZ019_-:."[(seed % 13) as usize]
                })
                .collect();
            words.push(w);
        }
        let mut ranges = Vec::new();
        for w in &words {
            let text = std::str::from_utf8(w).unwrap();
            let parts = split_identifier(text);
            let mut fast = String::new();
            let wrote = push_ascii_parts(w, &mut ranges, &mut fast);
            let general: String = if parts.len() > 1 {
                parts.iter().map(|p| format!(" {p}")).collect()
            } else {
                String::new()
            };
            assert_eq!(fast, general, "{text:?}");
            assert_eq!(wrote, parts.len() > 1, "{text:?}");
        }
    }

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
