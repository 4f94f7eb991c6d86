//! The seed conformance suite: `tests/mcp/seed_conformance.py` drives `engram serve
//! --tools all,compat` with the official Python MCP SDK and sends every seed's own
//! tool calls unchanged (see that script). Afterwards the audit trail holds the
//! `user_id` the Kagura calls gave, and the store verifies. The repository is a git
//! checkout named `widgets` with the remote `acme/widgets`, so the seeds' `repo` and
//! `project_id` are tried as every name it answers to.

use std::process::Command;

use python_mcp::{audit_events, run_client, write};

use crate::support::python_mcp;

#[test]
fn every_seed_call_goes_in_unchanged() {
    let parent = tempfile::tempdir().unwrap();
    let repo = parent.path().join("widgets");
    write(
        &repo,
        ".git/config",
        "[core]\n\trepositoryformatversion = 0\n[remote \"origin\"]\n\turl = https://github.com/acme/widgets.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n",
    );
    write(
        &repo,
        "src/http.rs",
        "/// Parse an HTTP request line.\npub fn parse_request(line: &str) -> Option<(String, String)> {\n    let mut it = line.split(' ');\n    Some((it.next()?.to_string(), it.next()?.to_string()))\n}\n",
    );
    write(&repo, "src/lib.rs", "pub mod http;\n");
    write(
        &repo,
        "src/danger.py",
        "def run(user_input):\n    result = eval(user_input)\n    return result\n",
    );
    let store = tempfile::tempdir().unwrap();
    // A directory beside it, which the server does not serve.
    let foreign = parent.path().join("gadgets");
    write(&foreign, "README.md", "not served\n");
    run_client("seed_conformance.py", &[store.path(), &repo, &foreign]);
    let events = audit_events(store.path(), &repo);
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
