//! Running the built `engram` binary on a store, for the CLI end-to-end tests.

// Each test uses the helpers it needs.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// `engram --store STORE ARGS…`, with no `ENGRAM_STORE` from the environment.
pub fn engram(store: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_engram"))
        .arg("--store")
        .arg(store)
        .args(args)
        .env_remove("ENGRAM_STORE")
        .output()
        .expect("run engram")
}

/// `engram … --json`, which must succeed and print JSON.
pub fn ok_json(store: &Path, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = engram(store, &all);
    assert!(
        out.status.success(),
        "engram {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "engram {args:?}: not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// A finished command's stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}
