//! `engram serve --http` on 127.0.0.1 with real bearer tokens, driven by plain HTTP
//! requests and the official MCP SDK (`tests/mcp/http_client.py`).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn engram(store: &Path, cwd: &Path, env: &[(&str, &Path)], args: &[&str]) -> serde_json::Value {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_engram"));
    cmd.arg("--store")
        .arg(store)
        .arg("--json")
        .args(args)
        .current_dir(cwd);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "engram {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn http_server_needs_tokens_checks_webhooks_and_serves_the_tools() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(repo.path().join("src")).unwrap();
    std::fs::write(
        repo.path().join("src/http.rs"),
        "/// Parse a request.\npub fn parse_request(line: &str) -> usize { line.len() }\n",
    )
    .unwrap();
    let store = tempfile::tempdir().unwrap();
    let etc = tempfile::tempdir().unwrap();
    let tokens = etc.path().join("tokens.toml");
    let env = [("ENGRAM_TOKENS_FILE", tokens.as_path())];
    engram(store.path(), repo.path(), &env, &["index", "."]);
    let mine = engram(
        store.path(),
        repo.path(),
        &env,
        &["token", "new", "--name", "me"],
    );
    let other = engram(
        store.path(),
        repo.path(),
        &env,
        &[
            "token",
            "new",
            "--name",
            "them",
            "--repo",
            "some-other-repo",
        ],
    );
    let token = mine["token"].as_str().unwrap().to_string();
    let repo_name = mine["repos"][0].as_str().unwrap().to_string();
    // The file holds hashes, never the tokens.
    let file = std::fs::read_to_string(&tokens).unwrap();
    assert!(!file.contains(&token) && file.contains("sha256"));

    let secret = "webhook-secret-for-tests";
    let mut child = Command::new(env!("CARGO_BIN_EXE_engram"))
        .arg("--store")
        .arg(store.path())
        .args(["--json", "serve", "--http", "127.0.0.1:0", "--repo"])
        .arg(repo.path())
        .env("ENGRAM_TOKENS_FILE", &tokens)
        .env("ENGRAM_WEBHOOK_SECRET", secret)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let server = Killed(child);
    let mut first = String::new();
    BufReader::new(stdout).read_line(&mut first).unwrap();
    let listening: serde_json::Value =
        serde_json::from_str(&first).unwrap_or_else(|e| panic!("{e}: {first}"));
    let base = format!("http://{}", listening["listening"].as_str().unwrap());

    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/http_client.py");
    let out = Command::new("python3")
        .arg(script)
        .args([
            &base,
            &repo_name,
            &token,
            other["token"].as_str().unwrap(),
            secret,
        ])
        .arg(repo.path())
        .output()
        .unwrap();
    drop(server);
    assert!(
        out.status.success(),
        "HTTP client failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
