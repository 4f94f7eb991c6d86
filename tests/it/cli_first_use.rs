//! First use of the `engram` binary: a read on a store that does not exist, the
//! first search of a repository that was never indexed, and `engram index`'s
//! progress bar (on a terminal only).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use engram_cli::{engram, ok_json, stderr};

use crate::support::engram_cli;

/// A read command on a named store that does not exist says so, with what to run,
/// and creates nothing; a write creates the store.
#[test]
fn a_read_command_on_a_missing_store_fails_and_creates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("nowhere");
    for args in [
        &["list"][..],
        &["search", "parse"],
        &["recall", "parse"],
        &["symbol", "parse"],
        &["stats"],
        &["note", "list"],
    ] {
        let out = engram(&store, args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = stderr(&out);
        assert!(
            err.contains(&format!("no store at {}", store.display()))
                && err.contains("engram index")
                && err.contains("engram remember"),
            "{args:?}: {err}"
        );
        assert!(!store.exists(), "{args:?} created the store");
    }
    ok_json(&store, &["remember", "the first memory makes the store"]);
    assert_eq!(ok_json(&store, &["list"])["total"], 1);
    // A named store is searched as it is, saying when no code was ever indexed in it.
    let out = engram(&store, &["search", "first memory", "--kind", "chunk"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no code is indexed in") && stderr(&out).contains("engram index"),
        "{}",
        stderr(&out)
    );
}

/// In a repository that was never indexed, the first `engram search` (its own
/// store, none named) indexes it and then answers.
#[test]
fn the_first_search_in_a_fresh_repository_indexes_it() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("books");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::write(
        repo.join("src/ledger.py"),
        "def reconcile_ledger(entries):\n    \"\"\"Reconcile ledger entries against the bank.\"\"\"\n    return sorted(entries)\n",
    )
    .unwrap();
    let search = || {
        Command::new(env!("CARGO_BIN_EXE_engram"))
            .args(["--json", "search", "reconcile ledger entries"])
            .current_dir(repo.join("src"))
            .env("ENGRAM_HOME", tmp.path().join("home"))
            .env("XDG_CONFIG_HOME", tmp.path().join("config"))
            .env_remove("ENGRAM_STORE")
            .env_remove("ENGRAM_CONFIG")
            .output()
            .unwrap()
    };
    let out = search();
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["hits"][0]["path"], "src/ledger.py", "{v}");
    // Piped: no progress bar on stderr.
    assert!(!stderr(&out).contains("indexing"), "{}", stderr(&out));
    // The store is the repository's, under ENGRAM_HOME, and now indexed.
    let stores: Vec<_> = std::fs::read_dir(tmp.path().join("home/repos"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        stores.len() == 1 && stores[0].starts_with("books-"),
        "{stores:?}"
    );
    let again = search();
    let v: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(v["hits"][0]["path"], "src/ledger.py", "{v}");
}

/// `engram index` draws files done / found on a terminal's stderr, and nothing when
/// stderr is a pipe.
#[test]
fn index_shows_a_progress_bar_on_a_terminal_only() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    for n in 0..300 {
        std::fs::write(
            repo.join(format!("m{n:03}.py")),
            format!("def helper_{n}(x):\n    return x + {n}\n"),
        )
        .unwrap();
    }
    let index = |store: &Path| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_engram"));
        cmd.arg("--store")
            .arg(store)
            .args(["index", "--threads", "1"])
            .arg(&repo)
            .env_remove("ENGRAM_STORE")
            .env("TERM", "xterm");
        cmd
    };
    let on_terminal = pty::stderr_of(index(&tmp.path().join("a")));
    let bar = regex::Regex::new(r"indexing .*\] \d+/300 files").unwrap();
    assert!(
        bar.is_match(&on_terminal),
        "no bar on a terminal: {on_terminal:?}"
    );

    let piped = index(&tmp.path().join("b")).output().unwrap();
    assert!(piped.status.success(), "{}", stderr(&piped));
    assert_eq!(stderr(&piped), "", "progress written to a pipe");
    let report: Value =
        serde_json::from_slice(&engram(&tmp.path().join("b"), &["--json", "stats"]).stdout)
            .unwrap();
    assert!(report["records"].as_u64().unwrap() > 300, "{report}");
}

/// A pseudo-terminal for a child's stderr, without a crate for it.
mod pty {
    use std::fs::File;
    use std::io::Read;
    use std::os::fd::FromRawFd;
    use std::process::{Command, Stdio};

    /// Run `cmd` with stderr on a new pseudo-terminal; what it wrote there.
    pub fn stderr_of(mut cmd: Command) -> String {
        // SAFETY: plain libc calls on a descriptor this function owns; ptsname_r
        // writes at most the buffer's length.
        let (master, slave) = unsafe {
            let fd = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
            assert!(fd >= 0, "posix_openpt");
            assert_eq!(libc::grantpt(fd), 0, "grantpt");
            assert_eq!(libc::unlockpt(fd), 0, "unlockpt");
            let mut name = [0 as libc::c_char; 128];
            assert_eq!(libc::ptsname_r(fd, name.as_mut_ptr(), name.len()), 0);
            let path = std::ffi::CStr::from_ptr(name.as_ptr())
                .to_str()
                .unwrap()
                .to_string();
            (
                File::from_raw_fd(fd),
                File::options().read(true).write(true).open(path).unwrap(),
            )
        };
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::from(slave))
            .spawn()
            .unwrap();
        // The child holds the only slave descriptor once the command (which keeps
        // the parent's copy) is gone, so reading ends with EIO when it exits.
        drop(cmd);
        let reader = std::thread::spawn(move || {
            let mut master = master;
            let mut all = Vec::new();
            let mut buf = [0u8; 4096];
            while let Ok(n) = master.read(&mut buf) {
                if n == 0 {
                    break;
                }
                all.extend_from_slice(&buf[..n]);
            }
            String::from_utf8_lossy(&all).into_owned()
        });
        assert!(child.wait().unwrap().success());
        reader.join().unwrap()
    }
}
