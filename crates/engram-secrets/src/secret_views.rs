//! Decoded readings of a text, so that secrets hidden by an encoding are found: the
//! redactor scans each reading and maps what it finds back onto the original bytes.
//!
//! This module owns two decodings and the offset maps between a reading and its
//! source:
//! - backslash escapes (`\n`, `\r`, `\t`, `\"`, `\'`, `\\`, `\/`), as in JSON strings
//!   and code literals: `"{\"password\": \"…\"}"` reads as `{"password": "…"}`, and a
//!   key whose line breaks are escaped reads with real ones;
//! - percent-encoding (`%XX` of an ASCII character), as in URL queries:
//!   `?credential=%2F%2Fnpm…%3A_authToken%3D…` reads as `//npm…:_authToken=…`.
//!
//! Readings compose (a JSON string inside a JSON string, an escaped key inside a URL)
//! up to [`MAX_DEPTH`] decodings deep. A span found in a reading maps to the whole
//! run of source bytes its characters came from, escapes included, so the redaction
//! covers the encoded secret entirely (the side to err on where an encoding hides the
//! boundaries). Non-ASCII bytes are copied as they are, so every reading is UTF-8.

/// Most decodings applied one after another to reach a reading.
pub const MAX_DEPTH: usize = 3;

/// A decoded reading of a source text.
#[derive(Debug, Clone)]
pub struct View {
    pub text: String,
    /// `origin[i]`: offset in the source of the first byte that byte `i` of `text`
    /// came from; `origin[text.len()]` is the source's length.
    origin: Vec<usize>,
}

impl View {
    /// The source range behind `start..end` of the reading.
    pub fn source_span(&self, start: usize, end: usize) -> (usize, usize) {
        let end = end.min(self.text.len());
        let start = start.min(end);
        (self.origin[start], self.origin[end])
    }

    /// This reading decoded once more, its offsets still pointing into the source.
    fn then(&self, next: View) -> View {
        let origin = next.origin.iter().map(|&o| self.origin[o]).collect();
        View {
            text: next.text,
            origin,
        }
    }
}

/// Every decoded reading of `text` (not `text` itself), each different from the
/// others: empty when `text` holds no escape and no percent-encoding.
pub fn views(text: &str) -> Vec<View> {
    let mut out: Vec<View> = Vec::new();
    let mut frontier: Vec<Option<View>> = vec![None];
    for _ in 0..MAX_DEPTH {
        let mut next = Vec::new();
        for from in &frontier {
            let src = from.as_ref().map_or(text, |v| v.text.as_str());
            for decoded in [unescape(src), percent_decode(src)].into_iter().flatten() {
                let view = match from {
                    Some(v) => v.then(decoded),
                    None => decoded,
                };
                if view.text != text && !out.iter().any(|v| v.text == view.text) {
                    out.push(view.clone());
                    next.push(Some(view));
                }
            }
        }
        if next.is_empty() {
            break;
        }
        frontier = next;
    }
    out
}

fn build(src: &str, decode: impl Fn(&[u8], usize) -> Option<(u8, usize)>) -> Option<View> {
    let b = src.as_bytes();
    let mut text = Vec::with_capacity(b.len());
    let mut origin = Vec::with_capacity(b.len() + 1);
    let mut changed = false;
    let mut i = 0;
    while i < b.len() {
        match decode(b, i) {
            Some((byte, width)) => {
                text.push(byte);
                origin.push(i);
                i += width;
                changed = true;
            }
            None => {
                text.push(b[i]);
                origin.push(i);
                i += 1;
            }
        }
    }
    origin.push(b.len());
    if !changed {
        return None;
    }
    // Only ASCII bytes replace ASCII escapes, so the reading stays UTF-8.
    String::from_utf8(text)
        .ok()
        .map(|text| View { text, origin })
}

/// `src` with its backslash escapes decoded, or `None` when it has none.
pub fn unescape(src: &str) -> Option<View> {
    if !src.contains('\\') {
        return None;
    }
    build(src, |b, i| {
        if b[i] != b'\\' {
            return None;
        }
        let byte = match b.get(i + 1)? {
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            c @ (b'"' | b'\'' | b'\\' | b'/') => *c,
            _ => return None,
        };
        Some((byte, 2))
    })
}

/// `src` with its `%XX` escapes of ASCII characters decoded, or `None` when it has
/// none.
pub fn percent_decode(src: &str) -> Option<View> {
    if !src.contains('%') {
        return None;
    }
    build(src, |b, i| {
        if b[i] != b'%' {
            return None;
        }
        let hex = |c: u8| (c as char).to_digit(16);
        let v = hex(*b.get(i + 1)?)? * 16 + hex(*b.get(i + 2)?)?;
        (v < 0x80).then_some((v as u8, 3))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_decode_and_map_back_to_whole_escapes() {
        let src = r#"{"msg": "password = \"Zk5Hc9Jd0Pa6\"\nnext"}"#;
        let v = unescape(src).unwrap();
        assert_eq!(v.text, "{\"msg\": \"password = \"Zk5Hc9Jd0Pa6\"\nnext\"}");
        let at = v.text.find("Zk5").unwrap();
        let (s, e) = v.source_span(at - 1, at + 13);
        assert_eq!(&src[s..e], r#"\"Zk5Hc9Jd0Pa6\""#);
    }

    #[test]
    fn percent_escapes_decode_and_compose_with_backslashes() {
        let src = "x?c=%2F%2Fh%2F%3A_authToken%3DAb%2B%5Cn1";
        let all = views(src);
        let p = all
            .iter()
            .find(|v| v.text.contains("//h/:_authToken=Ab+"))
            .unwrap();
        let at = p.text.find("Ab+").unwrap();
        assert_eq!(
            p.source_span(at, at + 3),
            (src.find("Ab").unwrap(), src.find("%5C").unwrap())
        );
        assert!(all.iter().any(|v| v.text.ends_with("Ab+\n1")), "{all:?}");
        assert!(views("no escapes here").is_empty());
        assert!(percent_decode("100%").is_none() && percent_decode("%zz").is_none());
        assert!(
            percent_decode("%C3%A9").is_none(),
            "non-ASCII stays encoded"
        );
    }
}
