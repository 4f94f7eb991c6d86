//! `engram serve` under hostile calls from a real MCP client (the official Python SDK,
//! see `tests/mcp/adversarial.py`): every string argument of every tool replaced by
//! FTS5 and SQL syntax, traversal paths, control characters and another repository's
//! paths and words. Nothing of the other repository comes back, the server stays up,
//! no secret reaches the disk, and the store verifies afterwards.

use std::path::Path;
use std::process::Command;

use python_mcp::{run_client, write};

use crate::support::python_mcp;

/// Every file under `dir`, read whole.
fn all_bytes(dir: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(all_bytes(&p));
        } else if let Ok(b) = std::fs::read(&p) {
            out.extend(b);
        }
    }
    out
}

#[test]
fn hostile_arguments_reach_nothing_they_should_not() {
    let repo_a = tempfile::tempdir().unwrap();
    let repo_b = tempfile::tempdir().unwrap();
    write(
        repo_a.path(),
        "src/http.rs",
        "/// Parse an HTTP request line.\npub fn parse_request(line: &str) -> Option<&str> {\n    line.split(' ').next()\n}\n",
    );
    write(repo_a.path(), "src/lib.rs", "pub mod http;\n");
    write(
        repo_b.path(),
        "src/secret.rs",
        "pub fn b_secret() -> &'static str {\n    \"b-secret-body zebracanary7731\"\n}\n",
    );
    #[cfg(unix)]
    std::os::unix::fs::symlink(repo_b.path(), repo_a.path().join("escape")).unwrap();
    let store_a = tempfile::tempdir().unwrap();
    let store_b = tempfile::tempdir().unwrap();
    run_client(
        "adversarial.py",
        &[store_a.path(), repo_a.path(), store_b.path(), repo_b.path()],
    );

    // The secret sent in an argument is nowhere in store A: not in the log, the
    // tracker or the audit trail.
    let bytes = all_bytes(store_a.path());
    assert!(!bytes.windows(20).any(|w| w == b"AKIAHNHEOABTCPM7PCMI"));
    // Store A holds nothing of repository B.
    assert!(!bytes.windows(13).any(|w| w == b"b-secret-body"));
    for store in [store_a.path(), store_b.path()] {
        let verify = Command::new(env!("CARGO_BIN_EXE_engram"))
            .arg("--store")
            .arg(store)
            .arg("verify")
            .output()
            .unwrap();
        assert!(
            verify.status.success(),
            "{}",
            String::from_utf8_lossy(&verify.stdout)
        );
    }
}
