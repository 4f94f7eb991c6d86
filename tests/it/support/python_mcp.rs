//! Running the Python MCP SDK clients of `tests/mcp/` against the built `engram`, and
//! reading what they left in the store: shared by the MCP end-to-end tests.

// Each test uses the helpers it needs.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Write `text` to `root/rel`, creating directories.
pub fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().expect("a file under root")).expect("mkdir");
    std::fs::write(p, text).expect("write");
}

/// Run `tests/mcp/<script>` with the engram binary and `args`; panic with its output
/// unless it succeeds.
pub fn run_client(script: &str, args: &[&Path]) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp")
        .join(script);
    let out = Command::new("python3")
        .arg(&path)
        .arg(env!("CARGO_BIN_EXE_engram"))
        .args(args)
        .output()
        .expect("python3 runs (tools/setup.sh test installs the MCP SDK)");
    assert!(
        out.status.success(),
        "{script} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The store's audit events, as `engram audit --json` prints them.
pub fn audit_events(store: &Path, repo: &Path) -> Vec<Value> {
    let audit = Command::new(env!("CARGO_BIN_EXE_engram"))
        .arg("--store")
        .arg(store)
        .args(["--json", "audit"])
        .current_dir(repo)
        .output()
        .expect("run engram audit");
    assert!(
        audit.status.success(),
        "{}",
        String::from_utf8_lossy(&audit.stderr)
    );
    let v: Value = serde_json::from_slice(&audit.stdout).expect("audit JSON");
    v["events"].as_array().expect("events").clone()
}
