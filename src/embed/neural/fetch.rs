//! Downloading a known model's files (feature `model-fetch`): what `engram model fetch
//! NAME` runs.
//!
//! Owns getting each pinned file of a [`KnownModel`] from
//! `BASE/REPO/resolve/REVISION/PATH` with `reqwest`, checking its size and sha256
//! while it streams, and moving it into place only when both match, so a model
//! directory never holds a partial or altered file. Files already present with the
//! right checksum are not fetched again. It never loads a model and never writes
//! outside the destination directory; a model without pinned checksums is refused.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::models::{self, KnownModel, ModelFile};

/// Where the files of known models are published.
pub const DEFAULT_BASE_URL: &str = "https://huggingface.co";

/// What can go wrong fetching a model.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("unknown model {0:?}; known: {known}", known = models::names())]
    Unknown(String),
    #[error("{0}: no pinned files and checksums in this build; put its files in a directory by hand and set model_dir")]
    NotPinned(&'static str),
    #[error("{url}: {reason}")]
    Http { url: String, reason: String },
    #[error("{url}: HTTP status {status}")]
    Status { url: String, status: u16 },
    #[error("{url}: expected {want} bytes with sha256 {want_sha}, got {got} bytes with sha256 {got_sha}; nothing was kept")]
    Mismatch {
        url: String,
        want: u64,
        want_sha: &'static str,
        got: u64,
        got_sha: String,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// One file's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fetched {
    /// Downloaded and checked.
    Downloaded { path: &'static str, bytes: u64 },
    /// Already present with the right checksum.
    Present { path: &'static str },
}

/// Fetch the known model `name` into `root/NAME` from `base_url` (normally
/// [`DEFAULT_BASE_URL`]); `progress` hears each file as it is done. Returns the model
/// directory and what was done per file.
pub fn fetch_model(
    name: &str,
    root: &Path,
    base_url: &str,
    mut progress: impl FnMut(&Fetched),
) -> Result<(PathBuf, Vec<Fetched>), FetchError> {
    let model = models::find(name).ok_or_else(|| FetchError::Unknown(name.into()))?;
    fetch_known(model, root, base_url, &mut progress)
}

fn fetch_known(
    model: &'static KnownModel,
    root: &Path,
    base_url: &str,
    progress: &mut impl FnMut(&Fetched),
) -> Result<(PathBuf, Vec<Fetched>), FetchError> {
    if model.files.is_empty() || model.files.iter().any(|f| f.sha256.is_none()) {
        return Err(FetchError::NotPinned(model.name));
    }
    let dir = root.join(model.name);
    let client = reqwest::blocking::Client::builder()
        .connect_timeout(Duration::from_secs(20))
        .timeout(Duration::from_secs(900))
        .build()
        .map_err(|e| FetchError::Http {
            url: base_url.into(),
            reason: e.to_string(),
        })?;
    let mut done = Vec::new();
    for file in model.files {
        let outcome = fetch_file(&client, model, file, &dir, base_url)?;
        progress(&outcome);
        done.push(outcome);
    }
    Ok((dir, done))
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> FetchError + '_ {
    move |source| FetchError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The size and sha256 of the file at `path`, if it can be read.
fn digest_of(path: &Path) -> Option<(u64, String)> {
    let mut f = std::fs::File::open(path).ok()?;
    let mut h = Sha256::new();
    let n = std::io::copy(&mut f, &mut h).ok()?;
    Some((n, hex(&h.finalize())))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn fetch_file(
    client: &reqwest::blocking::Client,
    model: &KnownModel,
    file: &ModelFile,
    dir: &Path,
    base_url: &str,
) -> Result<Fetched, FetchError> {
    let want_sha = file.sha256.unwrap_or_default();
    let dest = dir.join(file.path);
    if digest_of(&dest).is_some_and(|(n, sha)| n == file.bytes && sha == want_sha) {
        return Ok(Fetched::Present { path: file.path });
    }
    let parent = dest.parent().unwrap_or(dir);
    std::fs::create_dir_all(parent).map_err(io(parent))?;
    let url = format!(
        "{}/{}/resolve/{}/{}",
        base_url.trim_end_matches('/'),
        model.repo,
        model.revision,
        file.path
    );
    let http = |e: reqwest::Error| FetchError::Http {
        url: url.clone(),
        reason: e.to_string(),
    };
    let mut response = client.get(&url).send().map_err(http)?;
    if !response.status().is_success() {
        return Err(FetchError::Status {
            url,
            status: response.status().as_u16(),
        });
    }
    let mut partial = dest.clone().into_os_string();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    let result = (|| {
        let mut out = std::fs::File::create(&partial).map_err(io(&partial))?;
        let (mut h, mut n, mut buf) = (Sha256::new(), 0u64, vec![0u8; 1 << 16]);
        loop {
            let got = response.read(&mut buf).map_err(|e| FetchError::Http {
                url: url.clone(),
                reason: e.to_string(),
            })?;
            if got == 0 {
                break;
            }
            n += got as u64;
            // Stop early rather than store more than the pinned size.
            if n > file.bytes {
                break;
            }
            h.update(&buf[..got]);
            out.write_all(&buf[..got]).map_err(io(&partial))?;
        }
        let sha = hex(&h.finalize());
        if n != file.bytes || sha != want_sha {
            return Err(FetchError::Mismatch {
                url: url.clone(),
                want: file.bytes,
                want_sha,
                got: n,
                got_sha: sha,
            });
        }
        out.sync_all().map_err(io(&partial))?;
        std::fs::rename(&partial, &dest).map_err(io(&dest))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    result.map(|()| Fetched::Downloaded {
        path: file.path,
        bytes: file.bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::io::BufRead;
    use std::net::TcpListener;

    /// A plain HTTP/1.1 server on 127.0.0.1 serving `files` by URL path, for `n`
    /// requests, then it stops.
    fn serve(
        files: HashMap<String, Vec<u8>>,
        n: usize,
    ) -> (String, std::thread::JoinHandle<Vec<String>>) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let handle = std::thread::spawn(move || {
            let mut asked = Vec::new();
            for stream in listener.incoming().take(n) {
                let mut stream = stream.expect("accept");
                let mut reader = std::io::BufReader::new(stream.try_clone().expect("clone"));
                let mut line = String::new();
                reader.read_line(&mut line).expect("request line");
                let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
                loop {
                    let mut h = String::new();
                    if reader.read_line(&mut h).expect("header") <= 2 {
                        break;
                    }
                }
                let reply = match files.get(&path) {
                    Some(body) => {
                        let mut r = format!(
                            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                            body.len()
                        )
                        .into_bytes();
                        r.extend_from_slice(body);
                        r
                    }
                    None => {
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                            .to_vec()
                    }
                };
                stream.write_all(&reply).expect("reply");
                asked.push(path);
            }
            asked
        });
        (base, handle)
    }

    fn leak(s: String) -> &'static str {
        Box::leak(s.into_boxed_str())
    }

    fn model_of(files: &[(&'static str, &[u8])], tamper: Option<usize>) -> &'static KnownModel {
        let files: Vec<ModelFile> = files
            .iter()
            .enumerate()
            .map(|(i, (path, body))| ModelFile {
                path,
                bytes: body.len() as u64,
                sha256: Some(if tamper == Some(i) {
                    leak("0".repeat(64))
                } else {
                    leak(hex(&Sha256::digest(body)))
                }),
            })
            .collect();
        Box::leak(Box::new(KnownModel {
            name: "tiny",
            aliases: &[],
            repo: "org/tiny",
            revision: "abc",
            dimensions: 4,
            files: Box::leak(files.into_boxed_slice()),
        }))
    }

    fn fetch_all(model: &KnownModel, root: &Path, base: &str) -> Result<Vec<Fetched>, FetchError> {
        let client = reqwest::blocking::Client::new();
        let dir = root.join(model.name);
        model
            .files
            .iter()
            .map(|f| fetch_file(&client, model, f, &dir, base))
            .collect()
    }

    #[test]
    fn files_are_checked_and_kept_only_when_they_match() {
        let bodies: [(&'static str, &[u8]); 2] = [
            ("config.json", b"{\"hidden_size\": 4}"),
            (
                "1_Pooling/config.json",
                b"{\"pooling_mode_cls_token\": true}",
            ),
        ];
        let served: HashMap<String, Vec<u8>> = bodies
            .iter()
            .map(|(p, b)| (format!("/org/tiny/resolve/abc/{p}"), b.to_vec()))
            .collect();
        let root = tempfile::tempdir().expect("tempdir");

        // Right checksums: both downloaded, then a second run finds them present
        // without asking the server.
        let (base, server) = serve(served.clone(), 2);
        let model = model_of(&bodies, None);
        let got = fetch_all(model, root.path(), &base).expect("fetch");
        assert_eq!(
            got,
            [
                Fetched::Downloaded {
                    path: "config.json",
                    bytes: 18
                },
                Fetched::Downloaded {
                    path: "1_Pooling/config.json",
                    bytes: 32
                },
            ]
        );
        assert_eq!(server.join().expect("server").len(), 2);
        let dir = root.path().join("tiny");
        assert_eq!(
            std::fs::read(dir.join("1_Pooling/config.json")).unwrap(),
            bodies[1].1
        );
        let again = fetch_all(model, root.path(), "http://127.0.0.1:9").expect("no network needed");
        assert!(again.iter().all(|f| matches!(f, Fetched::Present { .. })));

        // A file whose checksum does not match is not kept, nor is its partial copy.
        let other = tempfile::tempdir().expect("tempdir");
        let (base, server) = serve(served, 1);
        let err = fetch_all(model_of(&bodies, Some(0)), other.path(), &base).unwrap_err();
        assert!(matches!(err, FetchError::Mismatch { .. }), "{err}");
        server.join().expect("server");
        let left: Vec<_> = std::fs::read_dir(other.path().join("tiny"))
            .unwrap()
            .collect();
        assert!(left.is_empty(), "{left:?}");

        // A missing file is the server's status, named with its URL.
        let (base, server) = serve(HashMap::new(), 1);
        let err = fetch_all(model, tempfile::tempdir().unwrap().path(), &base).unwrap_err();
        assert!(
            matches!(err, FetchError::Status { status: 404, .. }),
            "{err}"
        );
        server.join().expect("server");
    }

    #[test]
    fn unpinned_and_unknown_models_are_refused_before_any_request() {
        let root = tempfile::tempdir().expect("tempdir");
        let unpinned: &'static KnownModel = Box::leak(Box::new(KnownModel {
            files: Box::leak(Box::new([ModelFile {
                path: "config.json",
                bytes: 2,
                sha256: None,
            }])),
            ..*model_of(&[], None)
        }));
        let err =
            fetch_known(unpinned, root.path(), "http://127.0.0.1:9", &mut |_| {}).unwrap_err();
        assert!(matches!(err, FetchError::NotPinned("tiny")), "{err}");
        let err = fetch_model("nope", root.path(), "http://127.0.0.1:9", |_| {}).unwrap_err();
        assert!(matches!(err, FetchError::Unknown(_)), "{err}");
    }
}
