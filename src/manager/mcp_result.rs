//! What an external MCP tool's result means as context: plain text, or JSON with a
//! path, lines and a score, read into [`ExternalHit`]s.
//!
//! Accepted JSON: a list of objects, an object holding such a list under `hits`,
//! `results`, `items`, `matches` or `result` (engram's own `code_search` answers
//! `{"hits": […]}`; the Python SDK wraps a returned list as `{"result": […]}`), or
//! one object. Of each object it reads the text (`text`, `content`, `snippet`,
//! `body`, `code`), the path (`path`, `file`, `uri`), the lines (`start_line` and
//! `end_line`, `line`, or `lines` as `"10-20"`, `[10, 20]` or `12`) and `score`.
//! Anything else is text. Pure; the result is still untrusted (the gate sanitises,
//! caps and flags it later) and only shaped here.

use serde_json::{Map, Value};

use super::ExternalHit;

/// The hits in a tool's result: its structured content when it has any, else each
/// text part (JSON when it parses as one of the accepted shapes, else plain text).
pub fn hits(texts: &[String], structured: Option<&Value>) -> Vec<ExternalHit> {
    if let Some(found) = structured.and_then(from_json) {
        return found;
    }
    let mut out = Vec::new();
    for t in texts {
        match serde_json::from_str::<Value>(t)
            .ok()
            .as_ref()
            .and_then(from_json)
        {
            Some(found) => out.extend(found),
            None if t.trim().is_empty() => {}
            None => out.push(ExternalHit {
                text: t.clone(),
                ..ExternalHit::default()
            }),
        }
    }
    out
}

/// Hits from one JSON value, `None` when it is no accepted shape.
fn from_json(v: &Value) -> Option<Vec<ExternalHit>> {
    match v {
        Value::Array(items) => Some(items.iter().filter_map(one).collect()),
        Value::Object(o) => {
            for k in ["hits", "results", "items", "matches", "result"] {
                if let Some(inner) = o.get(k) {
                    if let Some(found) = from_json(inner) {
                        return Some(found);
                    }
                }
            }
            one(v).map(|h| vec![h])
        }
        _ => None,
    }
}

/// One hit from an object with some text; a bare string is a hit of text alone.
fn one(v: &Value) -> Option<ExternalHit> {
    let o = match v {
        Value::String(s) if !s.trim().is_empty() => {
            return Some(ExternalHit {
                text: s.clone(),
                ..ExternalHit::default()
            })
        }
        Value::Object(o) => o,
        _ => return None,
    };
    let text = first_str(o, &["text", "content", "snippet", "body", "code"])?;
    let (start_line, end_line) = lines(o);
    Some(ExternalHit {
        text,
        path: first_str(o, &["path", "file", "uri"]),
        start_line,
        end_line,
        score: o
            .get("score")
            .and_then(Value::as_f64)
            .filter(|s| s.is_finite()),
    })
}

fn first_str(o: &Map<String, Value>, keys: &[&str]) -> Option<String> {
    keys.iter()
        .filter_map(|k| o.get(*k).and_then(Value::as_str))
        .find(|s| !s.trim().is_empty())
        .map(String::from)
}

fn lines(o: &Map<String, Value>) -> (Option<u64>, Option<u64>) {
    let num = |k: &str| o.get(k).and_then(Value::as_u64);
    if let Some(a) = num("start_line") {
        return (Some(a), num("end_line"));
    }
    if let Some(a) = num("line") {
        return (Some(a), None);
    }
    match o.get("lines") {
        Some(Value::Number(n)) => (n.as_u64(), None),
        Some(Value::Array(a)) => (
            a.first().and_then(Value::as_u64),
            a.get(1).and_then(Value::as_u64),
        ),
        Some(Value::String(s)) => {
            let mut parts = s.splitn(2, '-').map(|p| p.trim().parse::<u64>().ok());
            (parts.next().flatten(), parts.next().flatten())
        }
        _ => (None, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_json_lists_and_engram_hits_are_read() {
        let plain = hits(&["just some words".into(), "  ".into()], None);
        assert_eq!(plain.len(), 1);
        assert_eq!(plain[0].text, "just some words");
        assert_eq!(plain[0].path, None);

        let engram = json!({"hits": [
            {"path": "src/a.rs", "start_line": 3, "end_line": 9, "score": 0.5,
             "snippet": "fn a", "text": "fn a() {}", "source": "[source: src/a.rs:3-9]"}
        ], "degraded": false});
        let h = hits(&[engram.to_string()], None);
        assert_eq!(h.len(), 1);
        assert_eq!(
            (
                h[0].path.as_deref(),
                h[0].start_line,
                h[0].end_line,
                h[0].score
            ),
            (Some("src/a.rs"), Some(3), Some(9), Some(0.5))
        );
        assert_eq!(h[0].text, "fn a() {}");

        let sdk = json!({"result": [
            {"file": "docs/x.md", "lines": "4-6", "content": "x"},
            {"path": "y.md", "lines": [7, 8], "text": "y"},
            {"path": "z.md", "line": 2, "text": "z"},
            {"path": "no-text.md"}
        ]});
        let h = hits(&[], Some(&sdk));
        let got: Vec<_> = h
            .iter()
            .map(|h| (h.path.clone().unwrap_or_default(), h.start_line, h.end_line))
            .collect();
        assert_eq!(
            got,
            [
                ("docs/x.md".to_string(), Some(4), Some(6)),
                ("y.md".to_string(), Some(7), Some(8)),
                ("z.md".to_string(), Some(2), None)
            ]
        );
        // JSON that is no hit shape is text.
        let h = hits(&["42".into(), "{\"a\": 1}".into()], None);
        assert_eq!(h.len(), 2);
        assert_eq!(h[1].text, "{\"a\": 1}");
    }
}
