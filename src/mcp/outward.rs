//! The tools' reach outward: `code_search` and `enrich_prompt` with
//! `providers: true` also ask the configured external MCP servers, through the
//! manager, beside the store.
//!
//! What those servers return is untrusted: it reaches the caller only as gate
//! blocks (sanitised, capped, flagged, attributed `[source: NAME: path:line]`), with
//! a note for each provider that was late or failed. Nothing here stores it. The
//! work is the manager's (`external_search`, `enrich_prompt_with`); this file only
//! shapes the answer.

use std::sync::Arc;

use serde_json::{json, Value};

use super::args::err;
use super::handlers::{Engine, ToolResult};
use super::shape;
use crate::gate::{json_len, Block};
use crate::manager::{Enriched, ExternalProvider, ProviderNote};
use crate::search::{self, SearchOptions};

impl Engine {
    /// The same engine asking `providers` when a call wants them.
    pub fn with_external(mut self, providers: Vec<Arc<dyn ExternalProvider>>) -> Engine {
        self.manager.external = providers;
        self
    }

    /// `code_search` over the store and the external providers at once: the store's
    /// hits under `hits` and theirs under `external`, each within half the total
    /// cap, and a note per provider under `providers`.
    pub(super) fn search_with_providers(&self, query: &str, opts: SearchOptions) -> ToolResult {
        let top_k = opts.top_k;
        let (local, outside) = std::thread::scope(|s| {
            let outside = s.spawn(|| self.manager.external_search(query, top_k));
            let local = search::search(self.memories.store(), query, &opts);
            (local, outside.join().unwrap_or_default())
        });
        let r = local.map_err(err)?;
        let mut half = self.gate.clone();
        half.caps.total_bytes /= 2;
        let mut budget = half.budget();
        let hits = shape::hits(&r.hits, &mut budget);
        let mut v = shape::listed("hits", hits, &budget);
        v["degraded"] = json!(r.degraded);
        if let Some(space) = &r.vector_space {
            v["vector_space"] = json!(space);
        }
        let items = outside
            .lists
            .into_iter()
            .flatten()
            .map(|i| (i.attribution, i.text))
            .collect();
        let external: Vec<Value> = half
            .blocks(items)
            .into_iter()
            .map(|b| {
                let mut e = json!({"source": b.attribution, "text": b.text});
                if !b.flags.is_empty() {
                    e["flags"] = json!(b.flags);
                }
                if b.truncated {
                    e["truncated"] = json!(true);
                }
                e
            })
            .collect();
        v["external"] = json!(external);
        v["providers"] = json!(outside.notes);
        Ok(v)
    }

    /// `enrich_prompt`, asking the external providers too when `providers` is set;
    /// the whole reply, JSON included, within `budget` bytes (see [`enriched_reply`]).
    pub(super) fn enrich_with(&self, prompt: &str, budget: usize, providers: bool) -> ToolResult {
        if budget < MIN_BUDGET {
            return Err(format!(
                "budget {budget} is too small: the reply's JSON alone needs about {MIN_BUDGET} bytes; give at least that"
            ));
        }
        let e = self
            .manager
            .enrich_prompt_with(&self.gate.repo, prompt, budget, providers)
            .map_err(err)?;
        Ok(enriched_reply(&e, budget.saturating_sub(CALL_MARKS)))
    }
}

/// The smallest `budget` a reply with a context can keep to.
pub(super) const MIN_BUDGET: usize = 256;

/// Room left in a budget for what the call layer adds to any reply
/// (`"redacted_secrets": N`).
pub(super) const CALL_MARKS: usize = 32;

/// `enrich_prompt`'s reply, as JSON at most `max_bytes` long: `context` (the blocks
/// under their attributions, then the providers' notes), `blocks` (each block's
/// attribution, flags and whether it was cut; its text is in `context` once, not
/// twice), `flagged`, and `providers` when asked. Blocks that do not fit are left
/// out from the end (the last one that partly fits is cut), and the reply says so:
/// `"truncated": true, "omitted": N`.
pub(super) fn enriched_reply(e: &Enriched, max_bytes: usize) -> Value {
    let notes: Vec<String> = e.providers.iter().filter_map(ProviderNote::line).collect();
    let build = |blocks: &[Block], cut: Option<&str>| -> Value {
        let mut context = String::new();
        let mut flagged: Vec<&str> = Vec::new();
        let mut listed = Vec::with_capacity(blocks.len());
        for (i, b) in blocks.iter().enumerate() {
            let last = i + 1 == blocks.len();
            let text = match cut {
                Some(t) if last => t,
                _ => b.text.trim_end(),
            };
            context.push_str(&b.attribution);
            if !b.flags.is_empty() {
                context.push_str(&format!(" [flagged: {}]", b.flags.join(", ")));
            }
            context.push('\n');
            context.push_str(text);
            context.push_str("\n\n");
            flagged.extend(b.flags.iter().copied());
            listed.push(json!({"attribution": b.attribution, "flags": b.flags,
                "truncated": b.truncated || (last && cut.is_some())}));
        }
        for line in &notes {
            context.push_str(line);
            context.push('\n');
        }
        flagged.sort();
        flagged.dedup();
        let mut v = json!({"context": context, "blocks": listed, "flagged": flagged});
        if !e.providers.is_empty() {
            v["providers"] = json!(e.providers);
        }
        v
    };
    let all = &e.blocks[..];
    // The first `whole` blocks, then `cut` (a prefix of the next one's text) if any,
    // marked with what was left out.
    let reply = |whole: usize, cut: Option<&str>| -> Value {
        let shown = whole + usize::from(cut.is_some());
        let mut v = build(&all[..shown], cut);
        if shown < all.len() || cut.is_some() {
            v["truncated"] = json!(true);
            v["omitted"] = json!(all.len() - shown);
        }
        v
    };
    let v = reply(all.len(), None);
    if json_len(&v) <= max_bytes {
        return v;
    }
    // The most whole blocks that fit, then as much of the next as fits.
    let mut whole = all.len();
    while whole > 0 && json_len(&reply(whole, None)) > max_bytes {
        whole -= 1;
    }
    let Some(next) = all.get(whole) else {
        return reply(whole, None);
    };
    let text = next.text.trim_end();
    let boundary = |mut at: usize| {
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        at
    };
    let (mut lo, mut hi) = (0usize, text.len());
    while lo < hi {
        let mid = boundary((lo + hi).div_ceil(2));
        if mid > lo && json_len(&reply(whole, Some(&text[..mid]))) <= max_bytes {
            lo = mid;
        } else {
            hi = (lo + hi).div_ceil(2) - 1;
        }
    }
    // A block cut to a few bytes says nothing; it is left out instead.
    if lo >= MIN_CUT_BLOCK {
        reply(whole, Some(&text[..lo]))
    } else {
        reply(whole, None)
    }
}

/// The fewest bytes of a block's text worth returning cut.
const MIN_CUT_BLOCK: usize = 80;

#[cfg(test)]
mod tests {
    use super::*;

    fn block(i: usize, len: usize) -> Block {
        Block {
            attribution: format!("[source: src/f{i}.rs:1-40]"),
            text: "let s = \"quoted\";\n".repeat(len / 18),
            flags: Vec::new(),
            truncated: false,
        }
    }

    #[test]
    fn the_reply_fits_its_budget_and_fills_it() {
        let e = Enriched {
            context: String::new(),
            blocks: (0..4).map(|i| block(i, 1900)).collect(),
            flagged: Vec::new(),
            providers: Vec::new(),
        };
        for max in [300, 1000, 4000, 8000, 20000] {
            let v = enriched_reply(&e, max);
            let len = json_len(&v);
            assert!(len <= max, "{max}: {len}");
            if max < 9000 {
                assert!(len + 200 > max, "{max}: only {len} used: {v}");
                assert_eq!(v["truncated"], true);
            }
            let listed = v["blocks"].as_array().unwrap().len();
            let omitted = v.get("omitted").and_then(Value::as_u64).unwrap_or(0) as usize;
            assert_eq!(listed + omitted, 4, "{max}: {v}");
        }
    }
}
