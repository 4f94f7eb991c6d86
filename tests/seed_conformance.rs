//! The seed conformance suite: `tests/mcp/seed_conformance.py` drives `engram serve
//! --tools all,compat` with the official Python MCP SDK and sends every seed's own
//! tool calls unchanged (see that script). Afterwards the audit trail holds the
//! `user_id` the Kagura calls gave, and the store verifies.

use std::path::Path;
use std::process::Command;

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

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
    let bin = env!("CARGO_BIN_EXE_engram");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/seed_conformance.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(bin)
        .arg(store.path())
        .arg(repo.path())
        .output()
        .expect("python3 runs (tools/setup.sh installs the MCP SDK)");
    assert!(
        out.status.success(),
        "seed conformance failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    let audit = Command::new(bin)
        .arg("--store")
        .arg(store.path())
        .args(["--json", "audit"])
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert!(
        audit.status.success(),
        "{}",
        String::from_utf8_lossy(&audit.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&audit.stdout).unwrap();
    let events = v["events"].as_array().unwrap();
    assert!(
        events
            .iter()
            .any(|e| e["op"] == "coding_record_error" && e["user_id"] == "kiyota"),
        "the Kagura user_id is not in the audit trail"
    );
    let verify = Command::new(bin)
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
