//! The seed conformance suite: `tests/mcp/seed_conformance.py` drives `engram serve
//! --tools all,compat` with the official Python MCP SDK and sends every seed's own
//! tool calls unchanged (see that script). Afterwards the audit trail holds the
//! `user_id` the Kagura calls gave, and the store verifies.

use std::process::Command;

#[path = "support/python_mcp.rs"]
mod python_mcp;
use python_mcp::{audit_events, run_client, write};

#[test]
fn every_seed_call_goes_in_unchanged() {
    let repo = tempfile::tempdir().unwrap();
    write(
        repo.path(),
        "src/http.rs",
        "/// Parse an HTTP request line.\npub fn parse_request(line: &str) -> Option<(String, String)> {\n    let mut it = line.split(' ');\n    Some((it.next()?.to_string(), it.next()?.to_string()))\n}\n",
    );
    write(repo.path(), "src/lib.rs", "pub mod http;\n");
    write(
        repo.path(),
        "src/danger.py",
        "def run(user_input):\n    result = eval(user_input)\n    return result\n",
    );
    let store = tempfile::tempdir().unwrap();
    run_client("seed_conformance.py", &[store.path(), repo.path()]);
    let events = audit_events(store.path(), repo.path());
    assert!(
        events
            .iter()
            .any(|e| e["op"] == "coding_record_error" && e["user_id"] == "kiyota"),
        "the Kagura user_id is not in the audit trail"
    );
    let verify = Command::new(env!("CARGO_BIN_EXE_engram"))
        .arg("--store")
        .arg(store.path())
        .arg("verify")
        .output()
        .unwrap();
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
}
