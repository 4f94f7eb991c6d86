//! Reading what a model said, without trusting it: scores in any of the forms models
//! write them (JSON, `Score: 0.8`, `85%`, `7/10`), JSON objects inside prose or code
//! fences, and fenced Markdown.
//!
//! This module owns the parsing of model text only. It must never panic on any input
//! and never return a score outside 0 to 1 (`tests/it/llm_parse.rs` checks both with
//! arbitrary text).

use serde_json::{Map, Value};

/// `x` as a score: clamped into 0 to 1; `None` for NaN.
pub fn unit(x: f64) -> Option<f64> {
    if x.is_nan() {
        None
    } else {
        Some(x.clamp(0.0, 1.0))
    }
}

/// A score at the start of `s`: `0.8`, `.8`, `85%`, `7/10`, optionally after spaces,
/// `*` (Markdown bold), `:` or `=`. Anything above 1 that is not a percentage or a
/// fraction is clamped to 1.
pub fn read_score(s: &str) -> Option<f64> {
    let s = s.trim_start_matches(|c: char| c.is_whitespace() || matches!(c, '*' | ':' | '=' | '"'));
    let end = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.'))
        .map_or(s.len(), |(i, _)| i);
    let number = s[..end].trim_end_matches('.');
    if number.is_empty() || number.chars().filter(|c| *c == '.').count() > 1 {
        return None;
    }
    let x: f64 = number.parse().ok()?;
    let rest = s[end..].trim_start();
    let x = if rest.starts_with('%') {
        x / 100.0
    } else if let Some(d) = rest.strip_prefix('/') {
        let d = read_plain(d.trim_start())?;
        if d > 0.0 {
            x / d
        } else {
            return None;
        }
    } else {
        x
    };
    unit(x)
}

fn read_plain(s: &str) -> Option<f64> {
    let end = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.'))
        .map_or(s.len(), |(i, _)| i);
    s[..end].trim_end_matches('.').parse().ok()
}

/// The score after the first `label` (ASCII, any case) in `text`.
pub fn score_after(text: &str, label: &str) -> Option<f64> {
    let lower = text.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find(label) {
        let at = from + i + label.len();
        if let Some(x) = read_score(&text[at..]) {
            return Some(x);
        }
        from = at;
    }
    None
}

/// `text` without a code fence around it (```` ```markdown … ``` ````).
pub fn strip_fences(text: &str) -> &str {
    let t = text.trim();
    let Some(rest) = t.strip_prefix("```") else {
        return t;
    };
    let body = rest.split_once('\n').map_or("", |(_, b)| b);
    body.trim_end().strip_suffix("```").unwrap_or(body).trim()
}

/// The first JSON value in `text` opening with `open` (`{` or `[`) that parses, found
/// between the first `open` and the last matching close.
fn json_between(text: &str, open: char, close: char) -> Option<Value> {
    let start = text.find(open)?;
    let end = text.rfind(close)?;
    if end <= start {
        return None;
    }
    serde_json::from_str(&text[start..=end]).ok()
}

/// The JSON object in a model's answer (bare, fenced, or inside prose).
pub fn json_object(text: &str) -> Option<Map<String, Value>> {
    match json_between(text, '{', '}') {
        Some(Value::Object(m)) => Some(m),
        _ => None,
    }
}

/// A string field of an object, the first of `names` present.
pub fn field_str(m: &Map<String, Value>, names: &[&str]) -> Option<String> {
    names.iter().find_map(|n| match m.get(*n) {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_string()),
        _ => None,
    })
}

/// A score field of an object (number or text), the first of `names` present.
pub fn field_score(m: &Map<String, Value>, names: &[&str]) -> Option<f64> {
    names.iter().find_map(|n| match m.get(*n) {
        Some(Value::Number(x)) => x.as_f64().and_then(unit),
        Some(Value::String(s)) => read_score(s),
        _ => None,
    })
}

/// A list of strings field (an array, or one string).
pub fn field_list(m: &Map<String, Value>, names: &[&str]) -> Vec<String> {
    for n in names {
        match m.get(*n) {
            Some(Value::Array(items)) => {
                return items
                    .iter()
                    .filter_map(|i| match i {
                        Value::String(s) => Some(s.trim().to_string()),
                        Value::Object(o) => field_str(o, &["text", "solution", "description"]),
                        _ => None,
                    })
                    .filter(|s| !s.is_empty())
                    .collect()
            }
            Some(Value::String(s)) if !s.trim().is_empty() => return vec![s.trim().to_string()],
            _ => {}
        }
    }
    Vec::new()
}

/// The item number a JSON entry names (`1`, `"3"`, `"Memory 2"`), 1-based.
fn item_number(v: &Value) -> Option<usize> {
    match v {
        Value::Number(n) => n.as_u64().and_then(|n| usize::try_from(n).ok()),
        Value::String(s) => {
            let digits: String = s
                .chars()
                .skip_while(|c| !c.is_ascii_digit())
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().ok()
        }
        _ => None,
    }
}

/// The score and reason a model gave each of `n` items (numbered from 1 in the
/// question): `None` where it gave none. Reads a JSON array (or an object holding
/// one) of `{"id"|"index"|"memory": k, "score": x, "reason": "…"}`, else lines like
/// `Memory 2: Score: 0.8 Reason: …` (with one item, a bare `Score:` counts).
pub fn parse_scores(text: &str, n: usize) -> Vec<Option<(f64, String)>> {
    let mut out: Vec<Option<(f64, String)>> = vec![None; n];
    if n == 0 {
        return out;
    }
    let array = match json_between(text, '[', ']') {
        Some(Value::Array(a)) => Some(a),
        _ => json_object(text).and_then(|o| {
            o.values()
                .find_map(|v| v.as_array().cloned())
                .or_else(|| Some(vec![Value::Object(o)]))
        }),
    };
    if let Some(items) = array {
        for (pos, item) in items.iter().enumerate() {
            let Value::Object(o) = item else { continue };
            let k = ["id", "index", "memory", "n", "item", "number"]
                .iter()
                .find_map(|f| o.get(*f).and_then(item_number))
                .unwrap_or(pos + 1);
            let Some(score) = field_score(o, &["score", "relevance", "relevance_score"]) else {
                continue;
            };
            let reason = field_str(o, &["reason", "reasoning", "explanation"]).unwrap_or_default();
            if let Some(slot) = k.checked_sub(1).and_then(|i| out.get_mut(i)) {
                *slot = Some((score, reason));
            }
        }
        if out.iter().any(Option::is_some) {
            return out;
        }
    }
    let mut current: Option<usize> = None;
    for line in text.lines() {
        let lower = line.to_ascii_lowercase();
        let score_at = lower.find("score");
        if let Some(m) = lower.find("memory").or_else(|| lower.find("item")) {
            if score_at.is_none_or(|s| m < s) {
                let after = &line[m..];
                let digits: String = after
                    .chars()
                    .skip_while(|c| !c.is_ascii_digit())
                    .take_while(char::is_ascii_digit)
                    .collect();
                if let Ok(k) = digits.parse::<usize>() {
                    current = Some(k);
                }
            }
        }
        let target = current.or((n == 1).then_some(1));
        let Some(slot) = target
            .and_then(|k| k.checked_sub(1))
            .and_then(|i| out.get_mut(i))
        else {
            continue;
        };
        if let Some(s) = score_at {
            if let Some(x) = read_score(&line[s + "score".len()..]) {
                let reason = slot.take().map(|(_, r)| r).unwrap_or_default();
                *slot = Some((x, reason));
            }
        }
        if let Some(r) = lower.find("reason") {
            let text = line[r + "reason".len()..]
                .trim_start_matches(|c: char| c.is_alphabetic())
                .trim_start_matches(|c: char| c.is_whitespace() || matches!(c, ':' | '*' | '-'))
                .trim();
            if let Some((_, reason)) = slot.as_mut() {
                if reason.is_empty() {
                    *reason = text.to_string();
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_in_the_forms_models_write_them() {
        assert_eq!(read_score(" 0.8"), Some(0.8));
        assert_eq!(read_score("**: .5"), Some(0.5));
        assert_eq!(read_score("85%"), Some(0.85));
        assert_eq!(read_score("7/10"), Some(0.7));
        assert_eq!(read_score("7/0"), None);
        assert_eq!(read_score("12"), Some(1.0));
        assert_eq!(read_score("high"), None);
        assert_eq!(read_score("1.2.3"), None);
        let lines =
            "Memory 1: Score: 0.9 Reason: exact match\nMemory 2: Score: 0.1\nReason: unrelated";
        let s = parse_scores(lines, 3);
        assert_eq!(s[0], Some((0.9, "exact match".into())));
        assert_eq!(s[1], Some((0.1, "unrelated".into())));
        assert_eq!(s[2], None);
        let json = "Here:\n```json\n[{\"id\": 2, \"score\": 0.7, \"reason\": \"ok\"}, {\"id\": \"Memory 1\", \"score\": \"40%\"}]\n```";
        let s = parse_scores(json, 2);
        assert_eq!(s[1], Some((0.7, "ok".into())));
        assert_eq!(s[0], Some((0.4, String::new())));
        assert_eq!(
            parse_scores("Score: 0.75\nReason: yes", 1)[0],
            Some((0.75, "yes".into()))
        );
        assert_eq!(strip_fences("```markdown\n# A\n```"), "# A");
        let o = json_object("Sure! {\"solution\": \"x\", \"confidence\": 0.9} done").unwrap();
        assert_eq!(field_score(&o, &["confidence"]), Some(0.9));
    }
}
