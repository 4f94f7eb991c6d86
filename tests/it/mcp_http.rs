//! `engram serve --http` on 127.0.0.1 with real bearer tokens, driven by plain HTTP
//! requests and the official MCP SDK (`tests/mcp/http_client.py`): repositories
//! reached by any of their names, tokens made and revoked while the server runs.

use std::path::Path;
use std::process::Command;

use crate::support::http_server;

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
    let parent = tempfile::tempdir().unwrap();
    let repo = parent.path().join("widgets");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::write(
        repo.join(".git/config"),
        "[remote \"origin\"]\n\turl = https://github.com/acme/widgets.git\n",
    )
    .unwrap();
    std::fs::write(
        repo.join("src/http.rs"),
        "/// Parse a request.\npub fn parse_request(line: &str) -> usize { line.len() }\n",
    )
    .unwrap();
    let store = tempfile::tempdir().unwrap();
    let etc = tempfile::tempdir().unwrap();
    let tokens = etc.path().join("tokens.toml");
    let env = [("ENGRAM_TOKENS_FILE", tokens.as_path())];
    engram(store.path(), &repo, &env, &["index", "."]);
    let mine = engram(store.path(), &repo, &env, &["token", "new", "--name", "me"]);
    let other = engram(
        store.path(),
        &repo,
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
    let (server, _, base) = http_server::start(
        Command::new(env!("CARGO_BIN_EXE_engram"))
            .arg("--store")
            .arg(store.path())
            .args(["--json", "serve", "--http", "127.0.0.1:0", "--repo"])
            .arg(&repo)
            .env("ENGRAM_TOKENS_FILE", &tokens)
            .env("ENGRAM_WEBHOOK_SECRET", secret),
    );

    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/http_client.py");
    // The client also makes and revokes tokens with `engram token` while the server
    // runs, on the same tokens file.
    let out = Command::new("python3")
        .arg(script)
        .args([
            &base,
            &repo_name,
            &token,
            other["token"].as_str().unwrap(),
            secret,
        ])
        .arg(&repo)
        .arg(env!("CARGO_BIN_EXE_engram"))
        .arg(store.path())
        .env("ENGRAM_TOKENS_FILE", &tokens)
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

/// `engram` with `ENGRAM_HOME` (a store per repository, no `--store`), run in `cwd`.
fn engram_home(home: &Path, cwd: &Path, env: &[(&str, &Path)], args: &[&str]) -> serde_json::Value {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_engram"));
    cmd.arg("--json")
        .args(args)
        .current_dir(cwd)
        .env("ENGRAM_HOME", home)
        .env_remove("ENGRAM_STORE");
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
fn one_http_server_serves_several_repositories_each_behind_its_own_tokens() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    std::fs::write(
        a.path().join("alpha.py"),
        "def only_in_alpha():\n    return 'alpha'\n",
    )
    .unwrap();
    std::fs::write(
        b.path().join("beta.py"),
        "def only_in_beta():\n    return 'beta'\n",
    )
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    let etc = tempfile::tempdir().unwrap();
    let tokens = etc.path().join("tokens.toml");
    let env = [("ENGRAM_TOKENS_FILE", tokens.as_path())];
    engram_home(home.path(), a.path(), &env, &["index", "."]);
    engram_home(home.path(), b.path(), &env, &["index", "."]);
    let token_a = engram_home(
        home.path(),
        a.path(),
        &env,
        &["token", "new", "--name", "a"],
    );
    let token_b = engram_home(
        home.path(),
        b.path(),
        &env,
        &["token", "new", "--name", "b"],
    );
    let (name_a, name_b) = (
        token_a["repos"][0].as_str().unwrap().to_string(),
        token_b["repos"][0].as_str().unwrap().to_string(),
    );
    assert_ne!(name_a, name_b);
    let both = engram_home(
        home.path(),
        a.path(),
        &env,
        &[
            "token",
            "new",
            "--name",
            "both",
            &format!("--repo={name_a}"),
            &format!("--repo={name_b}"),
        ],
    );

    let secret = "webhook-secret-for-tests";
    // Aliases: `bee` names B alone, `shared` both (a collision, warned about at start).
    let aliases = format!("bee={name_b},shared={name_a},shared={name_b}");
    let log = etc.path().join("server.log");
    let (server, listening, base) = http_server::start_logging(
        Command::new(env!("CARGO_BIN_EXE_engram"))
            .args(["--json", "serve", "--http", "127.0.0.1:0", "--repo"])
            .arg(a.path())
            .arg("--repo")
            .arg(b.path())
            .env("ENGRAM_HOME", home.path())
            .env_remove("ENGRAM_STORE")
            .env("ENGRAM_TOKENS_FILE", &tokens)
            .env("ENGRAM_WEBHOOK_SECRET", secret)
            .env("ENGRAM_ALIASES", &aliases)
            .env_remove("RUST_LOG"),
        std::fs::File::create(&log).unwrap().into(),
    );
    let mut served: Vec<&str> = listening["repos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    served.sort();
    let mut expected = vec![name_a.as_str(), name_b.as_str()];
    expected.sort();
    assert_eq!(served, expected);

    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/mcp/multi_repo_client.py"
    );
    let out = Command::new("python3")
        .arg(script)
        .args([
            &base,
            &name_a,
            &name_b,
            token_a["token"].as_str().unwrap(),
            both["token"].as_str().unwrap(),
            secret,
        ])
        .arg(b.path())
        .output()
        .unwrap();
    drop(server);
    assert!(
        out.status.success(),
        "multi-repository client failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // The collision was reported at start, naming both repositories.
    let log = std::fs::read_to_string(&log).unwrap();
    let warned = log
        .lines()
        .find(|l| l.contains("\"shared\""))
        .unwrap_or_else(|| panic!("no warning about the shared name in:\n{log}"));
    assert!(
        warned.contains(&name_a) && warned.contains(&name_b) && warned.contains("ambiguous"),
        "{warned}"
    );

    // Several repositories with one --store is refused, with what to do instead.
    let store = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_engram"))
        .arg("--store")
        .arg(store.path())
        .args(["serve", "--http", "127.0.0.1:0", "--repo"])
        .arg(a.path())
        .arg("--repo")
        .arg(b.path())
        .env("ENGRAM_TOKENS_FILE", &tokens)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("ENGRAM_HOME"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
