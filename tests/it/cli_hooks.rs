//! `engram hooks`: Claude Code's settings written and taken out again, and the hook
//! commands fed the JSON Claude Code sends on stdin (its documented hook input).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

/// A repository (with `.git`) and a home for its store, settings and config.
struct Repo {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
}

impl Repo {
    fn new() -> Repo {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("shop");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/cart.rs"), "pub fn total() -> u32 { 3 }\n").unwrap();
        let home = tmp.path().join("home");
        Repo {
            _tmp: tmp,
            root,
            home,
        }
    }

    /// `engram ARGS…` in the repository, `stdin` given to it.
    fn engram(&self, args: &[&str], stdin: Option<&Value>) -> Output {
        let mut child = Command::new(env!("CARGO_BIN_EXE_engram"))
            .args(args)
            .current_dir(&self.root)
            .env("HOME", &self.home)
            .env("ENGRAM_HOME", self.home.join("engram"))
            .env("XDG_CONFIG_HOME", self.home.join("config"))
            .env_remove("ENGRAM_STORE")
            .env_remove("ENGRAM_CONFIG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = child.stdin.take().unwrap();
        if let Some(v) = stdin {
            input.write_all(v.to_string().as_bytes()).unwrap();
        }
        drop(input);
        child.wait_with_output().unwrap()
    }

    fn ok(&self, args: &[&str], stdin: Option<&Value>) -> String {
        let out = self.engram(args, stdin);
        assert!(
            out.status.success(),
            "engram {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        serde_json::from_str(&self.ok(&all, None)).unwrap()
    }

    fn settings_path(&self) -> PathBuf {
        self.root.join(".claude/settings.json")
    }

    fn settings(&self) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.settings_path()).unwrap()).unwrap()
    }

    /// The hook input Claude Code sends for `event`, with `extra` fields.
    fn input(&self, event: &str, extra: Value) -> Value {
        let mut v = json!({
            "session_id": "8f2c1a9e-5b7d-4e3f-9a61-0c2d4b6e8f10",
            "transcript_path": self.home.join(".claude/projects/shop/8f2c.jsonl"),
            "cwd": self.root,
            "hook_event_name": event,
        });
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        v
    }
}

/// Every hook command in `settings`, by event.
fn commands(settings: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (event, groups) in settings["hooks"].as_object().into_iter().flatten() {
        for g in groups.as_array().unwrap() {
            for h in g["hooks"].as_array().unwrap() {
                out.push((event.clone(), h["command"].as_str().unwrap().to_string()));
            }
        }
    }
    out
}

#[test]
fn install_is_idempotent_and_uninstall_restores_the_users_settings() {
    let repo = Repo::new();
    let original = json!({
        "model": "opus",
        "permissions": {"allow": ["Bash(cargo test:*)"]},
        "hooks": {
            "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo ran"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]
        }
    });
    std::fs::create_dir_all(repo.root.join(".claude")).unwrap();
    std::fs::write(repo.settings_path(), original.to_string()).unwrap();

    // --print shows the result and writes nothing.
    let printed: Value =
        serde_json::from_str(&repo.ok(&["hooks", "install", "--print"], None)).unwrap();
    assert_eq!(repo.settings(), original);
    repo.ok(&["hooks", "install"], None);
    assert_eq!(repo.settings(), printed);
    repo.ok(&["hooks", "install"], None);
    let s = repo.settings();
    assert_eq!(s, printed, "installing twice changed the settings");
    let ours: Vec<_> = commands(&s)
        .into_iter()
        .filter(|(_, c)| c.starts_with("engram "))
        .collect();
    assert_eq!(
        ours,
        vec![
            (
                "PostToolUse".to_string(),
                "engram hooks run PostToolUse".to_string()
            ),
            ("SessionEnd".into(), "engram hooks run SessionEnd".into()),
            (
                "SessionStart".into(),
                "engram hooks run SessionStart".into()
            ),
        ]
    );
    let edits = s["hooks"]["PostToolUse"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["matcher"] == "Edit|Write|MultiEdit")
        .expect("a PostToolUse entry for edits");
    assert_eq!(edits["hooks"][0]["type"], "command");
    assert_eq!(s["model"], "opus");
    assert_eq!(s["hooks"]["Stop"], original["hooks"]["Stop"]);

    repo.ok(&["hooks", "uninstall"], None);
    assert_eq!(repo.settings(), original);
    let again = repo.json(&["hooks", "uninstall"]);
    assert_eq!(again["removed"], 0);
    assert_eq!(repo.settings(), original);

    // A fresh repository: the file is made, and emptied of engram again.
    let fresh = Repo::new();
    fresh.ok(&["hooks", "install"], None);
    assert_eq!(commands(&fresh.settings()).len(), 3);
    fresh.ok(&["hooks", "uninstall"], None);
    assert_eq!(fresh.settings(), json!({}));

    // --user writes ~/.claude/settings.json, not the repository's.
    fresh.ok(&["hooks", "install", "--user"], None);
    let user: Value = serde_json::from_str(
        &std::fs::read_to_string(fresh.home.join(".claude/settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(commands(&user).len(), 3);
    assert_eq!(fresh.settings(), json!({}));

    // A settings file that is not JSON is refused, and left as it was.
    std::fs::write(fresh.settings_path(), "{ \"model\": ").unwrap();
    let out = fresh.engram(&["hooks", "install"], None);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not valid JSON"));
    assert_eq!(
        std::fs::read_to_string(fresh.settings_path()).unwrap(),
        "{ \"model\": "
    );
}

#[test]
fn the_hooks_record_a_claude_code_session_from_its_stdin() {
    let repo = Repo::new();
    repo.ok(
        &[
            "remember",
            "cart totals are in cents",
            "--insight",
            "pitfall",
        ],
        None,
    );

    let start = repo.input("SessionStart", json!({"source": "startup"}));
    let context = repo.ok(&["hooks", "run", "SessionStart"], Some(&start));
    let id = context
        .split_whitespace()
        .find(|w| w.starts_with("mem:"))
        .unwrap_or_else(|| panic!("no session id in {context}"))
        .to_string();
    assert!(context.contains("cart totals are in cents"), "{context}");

    // An edit and a new file (absolute paths, as Claude Code sends them), a tool
    // that changes nothing, and a file outside the repository.
    let file = repo.root.join("src/cart.rs");
    let edit = repo.input(
        "PostToolUse",
        json!({
            "tool_name": "Edit",
            "tool_input": {"file_path": file, "old_string": "3", "new_string": "4\n"},
            "tool_response": {"filePath": file, "success": true}
        }),
    );
    repo.ok(&["hooks", "run", "PostToolUse"], Some(&edit));
    let new_file = repo.root.join("src/tax.rs");
    std::fs::write(&new_file, "pub fn rate() -> u32 { 7 }\n").unwrap();
    let write = repo.input(
        "PostToolUse",
        json!({
            "tool_name": "Write",
            "tool_input": {"file_path": new_file, "content": "pub fn rate() -> u32 { 7 }\n"},
            "tool_response": {"type": "create", "filePath": new_file}
        }),
    );
    repo.ok(&["hooks", "run", "PostToolUse"], Some(&write));
    let bash = repo.input(
        "PostToolUse",
        json!({"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_response": {}}),
    );
    repo.ok(&["hooks", "run", "PostToolUse"], Some(&bash));
    let outside = repo.input(
        "PostToolUse",
        json!({"tool_name": "Write", "tool_input": {"file_path": "/tmp/elsewhere.txt", "content": "x"}}),
    );
    repo.ok(&["hooks", "run", "PostToolUse"], Some(&outside));

    let changes = repo.json(&["list", "--kind", "file_change"]);
    let mut found: Vec<(String, String, String)> = changes["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            assert_eq!(m["session"], id.as_str(), "{m}");
            (
                m["metadata"]["path"].as_str().unwrap().to_string(),
                m["metadata"]["action"].as_str().unwrap().to_string(),
                m["metadata"]["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    found.sort();
    assert_eq!(
        found,
        vec![
            (
                "src/cart.rs".into(),
                "edit".into(),
                "Edit by Claude Code".into()
            ),
            (
                "src/tax.rs".into(),
                "create".into(),
                "Write by Claude Code".into()
            ),
        ],
        "{changes}"
    );

    // SessionEnd ends it with its summary; a second end finds nothing open.
    let end = repo.input("SessionEnd", json!({"reason": "logout"}));
    let summary = repo.ok(&["hooks", "run", "SessionEnd"], Some(&end));
    assert!(
        summary.contains("src/cart.rs") && summary.contains("src/tax.rs"),
        "{summary}"
    );
    let session = repo.json(&["get", &id]);
    assert_eq!(session["metadata"]["status"], "ended", "{session}");
    assert_eq!(repo.ok(&["hooks", "run", "SessionEnd"], Some(&end)), "");

    // An edit after the end opens a new session for the same conversation.
    repo.ok(&["hooks", "run", "PostToolUse"], Some(&edit));
    let sessions = repo.json(&["list", "--kind", "session", "--tag", "claude-code"]);
    assert_eq!(
        sessions["memories"].as_array().unwrap().len(),
        2,
        "{sessions}"
    );

    // Input that is not Claude Code's is refused clearly.
    let out = repo.engram(
        &["hooks", "run", "PostToolUse"],
        Some(&json!({"cwd": repo.root})),
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("session_id"));
}
