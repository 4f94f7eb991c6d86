//! Finding leaks of the secrets corpus in raw bytes: every file under a directory,
//! and which instances have a run of 8 characters (10 for hex) of a sensitive part
//! in any of them, case-insensitively, in one pass per window length.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use super::secrets::window_len;

/// Every file under `root`, with its path relative to `base`.
pub fn files_under(root: &Path, base: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    let Ok(rd) = std::fs::read_dir(root) else {
        return;
    };
    for e in rd {
        let p = e.unwrap().path();
        if p.is_dir() {
            files_under(&p, base, out);
        } else if let Ok(bytes) = std::fs::read(&p) {
            let rel = p.strip_prefix(base).unwrap().display().to_string();
            out.push((rel, bytes));
        }
    }
}

fn pack(w: &[u8]) -> u128 {
    w.iter()
        .fold(0u128, |v, b| v << 8 | b.to_ascii_lowercase() as u128)
}

/// What leaked: instance index → (files, windows found).
pub type Leaks = BTreeMap<usize, (BTreeSet<String>, usize)>;

/// Every instance (by index into `sensitive`, its sensitive parts) with a window of
/// 8 characters (10 for hex) of a sensitive part somewhere in `files`,
/// case-insensitively.
pub fn find_leaks(sensitive: &[&[String]], files: &[(String, Vec<u8>)]) -> Leaks {
    // Window length → packed lowercased window → instances holding it.
    let mut windows: BTreeMap<usize, HashMap<u128, Vec<u32>>> = BTreeMap::new();
    for (n, frags) in sensitive.iter().enumerate() {
        for frag in frags.iter() {
            let len = window_len(frag);
            let map = windows.entry(len).or_default();
            for w in frag.as_bytes().windows(len) {
                let v = map.entry(pack(w)).or_default();
                if v.last() != Some(&(n as u32)) {
                    v.push(n as u32);
                }
            }
        }
    }
    let mut leaks = Leaks::new();
    for (name, bytes) in files {
        for (&len, map) in &windows {
            if bytes.len() < len {
                continue;
            }
            let mask: u128 = if len == 16 {
                u128::MAX
            } else {
                (1u128 << (8 * len)) - 1
            };
            let mut v = pack(&bytes[..len - 1]);
            for &b in &bytes[len - 1..] {
                v = (v << 8 | b.to_ascii_lowercase() as u128) & mask;
                if let Some(hits) = map.get(&v) {
                    for &h in hits {
                        let e = leaks.entry(h as usize).or_default();
                        e.0.insert(name.clone());
                        e.1 += 1;
                    }
                }
            }
        }
    }
    leaks
}
