//! Helpers of `tests/it/mcp_providers.rs`: repositories with a config file of
//! `[[mcp_providers]]`, the Python test server's tables, running `engram` there, and
//! checking that the servers engram started are gone.

// Each test uses the helpers it needs.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::python_mcp::write;

/// The Python MCP server the tests start (`tests/mcp/provider_server.py`).
pub fn server_script() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/provider_server.py").to_string()
}

/// A `[[mcp_providers]]` table for the Python server in `mode`, recording its PIDs
/// in `pids`.
pub fn stdio_provider(name: &str, mode: &str, tool: &str, extra: &str, pids: &Path) -> String {
    format!(
        "[[mcp_providers]]\nname = {name:?}\ncommand = [\"python3\", {:?}, {mode:?}, {:?}]\ntool = {tool:?}\n{extra}\n",
        server_script(),
        pids.display().to_string()
    )
}

/// A repository, its store and its config file.
pub struct Repo {
    pub root: tempfile::TempDir,
    pub store: tempfile::TempDir,
    pub config: PathBuf,
}

/// A repository with one indexed file and a config file holding `providers`.
pub fn repo(file: &str, text: &str, providers: &str) -> Repo {
    let root = tempfile::tempdir().unwrap();
    write(root.path(), file, text);
    let store = tempfile::tempdir().unwrap();
    let config = root.path().join("engram.toml");
    std::fs::write(&config, providers).unwrap();
    let r = Repo {
        root,
        store,
        config,
    };
    let out = r.engram(&["index", "."], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    r
}

impl Repo {
    pub fn engram(&self, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_engram"));
        cmd.arg("--store")
            .arg(self.store.path())
            .arg("--config")
            .arg(&self.config)
            .args(args)
            .current_dir(self.root.path())
            .env_remove("ENGRAM_STORE")
            .env_remove("ENGRAM_CONFIG");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    }

    pub fn json(&self, args: &[&str], env: &[(&str, &str)]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self.engram(&all, env);
        assert!(
            out.status.success(),
            "engram {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
    }

    /// Whether any file of the store holds `needle`.
    pub fn store_holds(&self, needle: &str) -> bool {
        fn walk(dir: &Path, needle: &[u8]) -> bool {
            std::fs::read_dir(dir).unwrap().any(|e| {
                let p = e.unwrap().path();
                if p.is_dir() {
                    walk(&p, needle)
                } else {
                    let bytes = std::fs::read(&p).unwrap_or_default();
                    bytes.windows(needle.len()).any(|w| w == needle)
                }
            })
        }
        walk(self.store.path(), needle.as_bytes())
    }
}

/// The note about `provider` in an answer's `providers`.
pub fn note<'a>(v: &'a Value, provider: &str) -> &'a Value {
    v["providers"]
        .as_array()
        .and_then(|ns| ns.iter().find(|n| n["provider"] == provider))
        .unwrap_or_else(|| panic!("no note for {provider}: {v}"))
}

/// Every process whose PID is in `pids` has exited (zombies count as exited).
pub fn all_gone(pids: &Path) -> bool {
    let text = std::fs::read_to_string(pids).unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let alive: Vec<&str> = text
            .lines()
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .map(|s| !s.contains(") Z "))
                    .unwrap_or(false)
            })
            .collect();
        if alive.is_empty() {
            return true;
        }
        if Instant::now() > deadline {
            eprintln!("still running: {alive:?}");
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A child process killed and reaped when dropped.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
