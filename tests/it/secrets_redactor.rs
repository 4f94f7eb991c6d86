//! The secrets corpus through the redactor alone, in process, over many seeds.
//!
//! `secrets_corpus.rs` proves no secret reaches the disk through the binary and its
//! ways in, one seed per run (two minutes). This test feeds the same kinds × contexts
//! straight to `Redactor::builtin()` — each instance alone, and every kind of one
//! context joined as `remember` and `note set` send them — for many seeds in a few
//! seconds, and fails on any run of 8 characters (10 for hex) of a secret's sensitive
//! part left in the output, case-insensitively. It is where a leak is found fast; the
//! store test is where it is proved gone.
//!
//! Seeds: `ENGRAM_SECRETS_SEED` (default random) and the next `ENGRAM_SECRETS_ROUNDS`
//! (default 40).

use std::collections::HashSet;

use contexts::CONTEXTS;
use engram::patterns::Redactor;
use secrets::{generate, mask, window_len, Rng, Secret, KINDS};

use crate::support::contexts;
use crate::support::secrets;

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|s| s.parse().expect("a u64"))
}

/// The first window of `secret`'s sensitive parts still in `out`, masked.
fn leaked(out: &str, secret: &Secret) -> Option<String> {
    let out = out.to_ascii_lowercase();
    for frag in &secret.sensitive {
        let n = window_len(frag);
        let windows: HashSet<&[u8]> = out.as_bytes().windows(n).collect();
        let lower = frag.to_ascii_lowercase();
        if lower.as_bytes().windows(n).any(|w| windows.contains(w)) {
            return Some(mask(frag));
        }
    }
    None
}

#[test]
fn the_redactor_leaves_no_window_of_any_secret_in_any_context() {
    let base = env_u64("ENGRAM_SECRETS_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
    });
    let rounds = env_u64("ENGRAM_SECRETS_ROUNDS").unwrap_or(40);
    let r = Redactor::builtin().expect("builtin rules compile");
    let mut leaks = Vec::new();
    for seed in base..base + rounds {
        let mut rng = Rng::new(seed);
        for ctx in CONTEXTS {
            let mut group: Vec<(Secret, String)> = Vec::new();
            for kind in KINDS {
                let s = generate(kind, &mut rng);
                let text = (ctx.render)(&s, "canary");
                let out = r.redact(&text).expect("redact").text;
                if let Some(m) = leaked(&out, &s) {
                    if std::env::var_os("ENGRAM_SECRETS_SHOW").is_some() {
                        eprintln!("---- {} | {}\n{out}", kind.name, ctx.name);
                    }
                    leaks.push(format!("seed {seed} | {} | {} | {m}", kind.name, ctx.name));
                }
                group.push((s, text));
            }
            let joined: Vec<&str> = group.iter().map(|(_, t)| t.as_str()).collect();
            let out = r.redact(&joined.join("\n\n")).expect("redact").text;
            for (s, _) in &group {
                if let Some(m) = leaked(&out, s) {
                    leaks.push(format!(
                        "seed {seed} | {} | {} joined | {m}",
                        s.kind, ctx.name
                    ));
                }
            }
        }
    }
    assert!(
        leaks.is_empty(),
        "{} leaks over seeds {base}..{}:\n{}",
        leaks.len(),
        base + rounds,
        leaks.join("\n")
    );
}
