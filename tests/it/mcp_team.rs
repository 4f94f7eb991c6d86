//! The MCP server on the team backend: two `engram serve --http` processes with one
//! `database_url` (the server `tools/postgres.sh start` starts,
//! `ENGRAM_TEST_DATABASE_URL`), each serving two repositories, driven by the official
//! MCP SDK (`tests/mcp/team_client.py`): memories written through one server are
//! found through the other, and the other repository sees none of them.

use http_server::Killed;
use std::path::Path;
use std::process::Command;

use crate::support::http_server;
use crate::support::pg;

/// `engram` with `ENGRAM_HOME` (a store per repository), run in `cwd`.
fn engram_home(home: &Path, cwd: &Path, env: &[(&str, &str)], args: &[&str]) -> serde_json::Value {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_engram"));
    cmd.arg("--json")
        .args(args)
        .current_dir(cwd)
        .env("ENGRAM_HOME", home)
        .env_remove("ENGRAM_STORE")
        .env_remove("ENGRAM_DATABASE_URL");
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

/// `engram serve --http` on a free port for repositories `a` and `b`, on `url`; the
/// server and its base URL.
fn serve(home: &Path, tokens: &str, url: &str, a: &Path, b: &Path) -> (Killed, String) {
    let (server, _, base) = http_server::start(
        Command::new(env!("CARGO_BIN_EXE_engram"))
            .args(["--json", "serve", "--http", "127.0.0.1:0", "--repo"])
            .arg(a)
            .arg("--repo")
            .arg(b)
            .env("ENGRAM_HOME", home)
            .env_remove("ENGRAM_STORE")
            .env("ENGRAM_TOKENS_FILE", tokens)
            .env("ENGRAM_DATABASE_URL", url),
    );
    (server, base)
}

#[test]
fn two_http_servers_share_one_database_and_repositories_stay_apart() {
    let url = pg::url();
    pg::database(); // migrated
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    std::fs::write(
        a.path().join("alpha.py"),
        "def only_in_alpha():\n    return 'alpha'\n",
    )
    .unwrap();
    std::fs::write(
        b.path().join("beta.py"),
        "def only_in_beta():\n    return 1\n",
    )
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    let etc = tempfile::tempdir().unwrap();
    let tokens = etc.path().join("tokens.toml");
    let tokens = tokens.to_str().unwrap();
    let env = [("ENGRAM_TOKENS_FILE", tokens)];
    engram_home(home.path(), a.path(), &env, &["index", "."]);
    engram_home(home.path(), b.path(), &env, &["index", "."]);
    let name = |dir: &Path| {
        engram_home(home.path(), dir, &env, &["token", "new", "--name", "probe"])["repos"][0]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (name_a, name_b) = (name(a.path()), name(b.path()));
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

    let (_one, base_1) = serve(home.path(), tokens, &url, a.path(), b.path());
    let (_two, base_2) = serve(home.path(), tokens, &url, a.path(), b.path());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/team_client.py");
    let out = Command::new("python3")
        .arg(script)
        .args([
            &base_1,
            &base_2,
            &name_a,
            &name_b,
            both["token"].as_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "team client failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // Nothing went to the local stores: the CLI without database_url finds none.
    let local = engram_home(home.path(), a.path(), &[], &["list"]);
    assert!(
        !serde_json::to_string(&local)
            .unwrap()
            .contains("quokkafish"),
        "{local}"
    );
}
