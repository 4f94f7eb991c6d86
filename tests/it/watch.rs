//! `engram index --watch` as a real child process: files created, edited and deleted
//! while it runs are searchable (or gone) without another command.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

struct Watcher {
    child: Child,
    lines: mpsc::Receiver<Value>,
}

impl Watcher {
    fn start(store: &Path, repo: &Path) -> Watcher {
        let mut child = Command::new(env!("CARGO_BIN_EXE_engram"))
            .arg("--store")
            .arg(store)
            .args(["--json", "index", "--watch"])
            .arg(repo)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn engram index --watch");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        Watcher { child, lines }
    }

    /// The next JSON line, failing the test after 20 s.
    fn next(&self) -> Value {
        self.lines
            .recv_timeout(Duration::from_secs(20))
            .expect("engram index --watch printed nothing within 20 s")
    }

    /// Wait for a pass whose report satisfies `done`.
    fn until(&self, done: impl Fn(&Value) -> bool) -> Value {
        loop {
            let v = self.next();
            if done(&v) {
                return v;
            }
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn search(store: &Path, query: &str) -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_engram"))
        .arg("--store")
        .arg(store)
        .args(["--json", "search", "--keyword-only", query])
        .output()
        .expect("run engram search");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    v["hits"]
        .as_array()
        .expect("hits")
        .iter()
        .filter_map(|h| h["path"].as_str().map(String::from))
        .collect()
}

#[test]
fn watch_reindexes_created_edited_and_deleted_files() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(repo.path().join("first.rs"), "fn zebrafish_count() {}\n").unwrap();
    let store = tempfile::tempdir().unwrap();
    let w = Watcher::start(store.path(), repo.path());
    let initial = w.next();
    assert_eq!(initial["files_indexed"], 1, "{initial}");
    assert!(w.next()["watching"].is_string());

    std::fs::write(
        repo.path().join("second.py"),
        "def brand_new_thing():\n    pass\n",
    )
    .unwrap();
    w.until(|v| v["files_indexed"] == 1);
    assert_eq!(search(store.path(), "brand_new_thing"), ["second.py"]);

    std::fs::write(repo.path().join("first.rs"), "fn quokka_total() {}\n").unwrap();
    w.until(|v| v["files_indexed"] == 1);
    assert_eq!(search(store.path(), "quokka"), ["first.rs"]);
    assert!(search(store.path(), "zebrafish").is_empty());

    std::fs::remove_file(repo.path().join("second.py")).unwrap();
    w.until(|v| v["files_deleted"] == 1);
    assert!(search(store.path(), "brand_new_thing").is_empty());

    // Changes under .git never start a pass: nothing is printed for them.
    std::fs::create_dir_all(repo.path().join(".git")).unwrap();
    std::fs::write(repo.path().join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    if let Ok(v) = w.lines.recv_timeout(Duration::from_secs(2)) {
        panic!("a change under .git started a pass: {v}");
    }
}
