//! Fitting a reply into a byte budget, JSON included: what a caller's `budget` or a
//! list's size cap promises is the length of the JSON text the agent receives, not
//! of the texts inside it.
//!
//! Two shapes: a reply with one long text (cut at a character boundary, escapes
//! counted) and a reply listing items (items left out from the end, counted). Both
//! say what they cut (`truncated`, `omitted`). Nothing here sanitises or reads the
//! store; the values given are already what may leave the process.

use serde_json::{json, Value};

/// The length of `v` as compact JSON: what a tool's reply is sent as.
pub fn json_len(v: &Value) -> usize {
    serde_json::to_string(v).map_or(0, |s| s.len())
}

/// The length of `s` inside a JSON string (its escapes counted, quotes not).
fn escaped_len(s: &str) -> usize {
    json_len(&Value::String(s.to_string())).saturating_sub(2)
}

/// The longest prefix of `s` (at a character boundary) whose JSON escape is at most
/// `room` bytes.
fn prefix_within(s: &str, room: usize) -> &str {
    let mut used = 0;
    for (i, c) in s.char_indices() {
        let mut buf = [0u8; 4];
        let n = escaped_len(c.encode_utf8(&mut buf));
        if used + n > room {
            return &s[..i];
        }
        used += n;
    }
    s
}

/// Cut the string under `field` of the object `v` so that `v` as JSON is at most
/// `max_bytes`, marking it `"truncated": true` when it cut. Returns whether it cut;
/// when even an empty text does not fit, the text is emptied.
pub fn fit_text(v: &mut Value, field: &str, max_bytes: usize) -> bool {
    if json_len(v) <= max_bytes {
        return false;
    }
    let Some(text) = v.get(field).and_then(Value::as_str).map(String::from) else {
        return false;
    };
    v["truncated"] = json!(true);
    let over = json_len(v).saturating_sub(max_bytes);
    let room = escaped_len(&text).saturating_sub(over);
    v[field] = json!(prefix_within(&text, room));
    true
}

/// Cut the array under `field` of the object `v` to at most `limit` items and so
/// that `v` as JSON is at most `max_bytes`, dropping items from the end. When it
/// cut, `v` says so: `"truncated": true` and `"omitted"` (the items left out, added
/// to any count already there). Returns how many it left out.
pub fn fit_list(v: &mut Value, field: &str, limit: Option<usize>, max_bytes: usize) -> usize {
    let Some(items) = v.get_mut(field).and_then(Value::as_array_mut) else {
        return 0;
    };
    let mut omitted = 0;
    if let Some(limit) = limit {
        if items.len() > limit {
            omitted = items.len() - limit;
            items.truncate(limit);
        }
    }
    let before = v.get("omitted").and_then(Value::as_u64).unwrap_or(0) as usize;
    let mark = |v: &mut Value, omitted: usize| {
        if omitted > 0 {
            v["truncated"] = json!(true);
            v["omitted"] = json!(before + omitted);
        }
    };
    mark(v, omitted);
    let total = json_len(v);
    if total <= max_bytes {
        return omitted;
    }
    // What the marks will add once more items are gone: at most this much.
    let marks = if omitted == 0 {
        json_len(&json!({"truncated": true, "omitted": usize::MAX}))
    } else {
        20
    };
    let sizes: Vec<usize> = v[field]
        .as_array()
        .map(|a| a.iter().map(|i| json_len(i) + 1).collect())
        .unwrap_or_default();
    let mut size = total + marks;
    let mut keep = sizes.len();
    while keep > 0 && size > max_bytes {
        keep -= 1;
        size -= sizes[keep];
    }
    if let Some(items) = v[field].as_array_mut() {
        omitted += items.len() - keep;
        items.truncate(keep);
    }
    mark(v, omitted);
    omitted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_is_cut_to_the_budget_escapes_counted() {
        let text = "line \"one\"\n".repeat(100) + "é€😀";
        for max in [60, 200, 517, 1000] {
            let mut v = json!({"context": text, "flags": ["x"]});
            let cut = fit_text(&mut v, "context", max);
            assert!(cut, "{max}");
            assert!(json_len(&v) <= max, "{max}: {}", json_len(&v));
            assert!(
                json_len(&v) + 12 > max,
                "{max}: cut too much: {}",
                json_len(&v)
            );
            assert_eq!(v["truncated"], true);
            assert!(text.starts_with(v["context"].as_str().unwrap()));
        }
        let mut small = json!({"context": "short"});
        assert!(!fit_text(&mut small, "context", 100));
        assert_eq!(small, json!({"context": "short"}));
    }

    #[test]
    fn a_list_is_cut_to_its_limit_and_its_bytes_and_says_so() {
        let items: Vec<Value> = (0..50)
            .map(|i| json!({"key": format!("k{i}"), "text": "x".repeat(100)}))
            .collect();
        let mut v = json!({"matches": items.clone()});
        assert_eq!(fit_list(&mut v, "matches", Some(20), 1 << 20), 30);
        assert_eq!(v["matches"].as_array().unwrap().len(), 20);
        assert_eq!(
            (v["truncated"].clone(), v["omitted"].clone()),
            (json!(true), json!(30))
        );

        let mut v = json!({"matches": items.clone()});
        let left_out = fit_list(&mut v, "matches", None, 2000);
        let kept = v["matches"].as_array().unwrap().len();
        assert!(json_len(&v) <= 2000, "{}", json_len(&v));
        assert_eq!(kept + left_out, 50);
        assert!(kept > 10, "kept only {kept}");
        assert_eq!(v["omitted"], left_out);

        let mut whole = json!({"matches": items[..3].to_vec()});
        assert_eq!(fit_list(&mut whole, "matches", Some(5), 1 << 20), 0);
        assert!(whole.get("truncated").is_none() && whole.get("omitted").is_none());
    }
}
