//! Running the built `engram` binary on a store, locally or on the team database, for
//! the team-mode end-to-end tests; the team database is `support::pg`'s.

// Each test uses the helpers it needs.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// `engram --store STORE --json ARGS…` with no user configuration, on the team
/// database when `team` is set: (success, JSON output, stderr).
pub fn engram(store: &Path, team: bool, args: &[&str]) -> (bool, Value, String) {
    let home = store.parent().unwrap().join("home");
    let mut c = Command::new(env!("CARGO_BIN_EXE_engram"));
    c.arg("--store").arg(store).arg("--json").args(args);
    for (k, _) in std::env::vars() {
        if k.starts_with("ENGRAM_") {
            c.env_remove(k);
        }
    }
    c.env("HOME", &home).env("XDG_CONFIG_HOME", &home);
    if team {
        c.env("ENGRAM_DATABASE_URL", super::pg::url());
    }
    let out = c.output().expect("run engram");
    (
        out.status.success(),
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// [`engram`], which must succeed.
pub fn ok(store: &Path, team: bool, args: &[&str]) -> Value {
    let (done, v, err) = engram(store, team, args);
    assert!(done, "engram {args:?} failed: {err}");
    v
}
