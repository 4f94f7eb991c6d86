//! Checking a known model's files against their pinned sizes and sha256 every time the
//! model is loaded, not only when it is fetched: a directory that holds another model's
//! files (all-MiniLM-L6-v2's weights under `embedder = "bge-small"`), a truncated copy
//! or a file edited by hand is refused, naming the file and the model.
//!
//! Owns the check and its cache. Hashing all-MiniLM-L6-v2's 90 MB of weights costs
//! tens of milliseconds, and a CLI search is a new process each time, so a full hash
//! per load would be most of a search's budget. What was chosen: a file is hashed once,
//! and the result is remembered in a small sidecar file in the model directory
//! (`.engram-verified.json`), keyed by the file's device, inode, size, mtime and ctime.
//! Any write to the file, or its replacement by another (a copy, a rename over it),
//! changes at least one of those — ctime in particular cannot be set back by user
//! tools — so a later load re-hashes exactly the files that changed and otherwise pays
//! one `stat` per file and one small read. (The one change it can miss: bytes
//! rewritten in place at the same size within the file system's timestamp tick, a few
//! milliseconds, of the hashing.) The sidecar guards against mistakes (a wrong
//! directory, a bad copy), not against someone who can write the model directory:
//! they could edit the sidecar as easily as the weights. When the sidecar cannot be
//! written (a read-only directory), the result is remembered for the process only.
//!
//! It reads the model's files and writes only the sidecar; it never loads the model.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::models::{KnownModel, ModelFile};
use super::NeuralError;

/// The sidecar's file name in a model directory.
pub const SIDECAR: &str = ".engram-verified.json";

/// What identifies one version of a file on disk, without reading it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Stamp {
    len: u64,
    /// Nanoseconds since the epoch (JSON numbers: i64, good until 2262).
    mtime_ns: i64,
    ctime_ns: i64,
    dev: u64,
    ino: u64,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let ns = |s: i64, n: i64| s.saturating_mul(1_000_000_000).saturating_add(n);
            Stamp {
                len: meta.len(),
                mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
                ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
                dev: meta.dev(),
                ino: meta.ino(),
            }
        }
        #[cfg(not(unix))]
        {
            let mtime_ns = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
            Stamp {
                len: meta.len(),
                mtime_ns,
                ctime_ns: 0,
                dev: 0,
                ino: 0,
            }
        }
    }
}

/// One file known to have had a sha256 when it had a stamp.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Verified {
    sha256: String,
    // Nested, not `#[serde(flatten)]`: flattening buffers numbers, and with
    // serde_json's `arbitrary_precision` (which another feature of the build may turn
    // on) the buffered numbers no longer read back as integers.
    stamp: Stamp,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Sidecar {
    /// By the file's path in the model's layout (`1_Pooling/config.json`).
    files: BTreeMap<String, Verified>,
}

/// Files this process has already hashed, by full path: for directories where the
/// sidecar cannot be written.
static SEEN: Mutex<Vec<(PathBuf, Verified)>> = Mutex::new(Vec::new());

/// Check every pinned file of `model` in `dir`: present, of the pinned size, with the
/// pinned sha256. Files the model does not pin are not checked (nor is anything else in
/// the directory). The first wrong or missing file is the error.
pub fn verify(model: &KnownModel, dir: &Path) -> Result<(), NeuralError> {
    let sidecar_path = dir.join(SIDECAR);
    let mut sidecar: Sidecar = std::fs::read(&sidecar_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let mut learned = false;
    let result = model
        .files
        .iter()
        .try_for_each(|file| check(model, dir, file, &mut sidecar, &mut learned));
    if learned {
        // Best effort: without the sidecar the next process hashes again, nothing worse.
        let _ = write_sidecar(&sidecar_path, &sidecar);
    }
    result
}

/// One pinned file: its size, then its sha256 unless the sidecar or this process
/// already vouches for this version of it. What is learned goes into `sidecar`.
fn check(
    model: &KnownModel,
    dir: &Path,
    file: &ModelFile,
    sidecar: &mut Sidecar,
    learned: &mut bool,
) -> Result<(), NeuralError> {
    let Some(want) = file.sha256 else {
        return Ok(());
    };
    let path = dir.join(file.path);
    let bad = |reason: String| NeuralError::Integrity {
        model: model.name.to_string(),
        dir: dir.to_path_buf(),
        file: file.path.to_string(),
        reason,
    };
    let meta = std::fs::metadata(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => bad("it is missing".into()),
        _ => bad(format!("it cannot be read: {e}")),
    })?;
    if meta.len() != file.bytes {
        return Err(bad(format!(
            "it has {} bytes, {}'s has {}",
            meta.len(),
            model.name,
            file.bytes
        )));
    }
    let stamp = Stamp::of(&meta);
    let known = |v: &Verified| v.sha256 == want && v.stamp == stamp;
    if sidecar.files.get(file.path).is_some_and(known) {
        return Ok(());
    }
    let v = match seen(&path, &known) {
        Some(v) => v,
        None => {
            let got = sha256_of(&path).map_err(|e| bad(format!("it cannot be read: {e}")))?;
            if got != want {
                return Err(bad(format!(
                    "its sha256 is {got}, {}'s is {want}",
                    model.name
                )));
            }
            let v = Verified { sha256: got, stamp };
            remember(&path, &v);
            v
        }
    };
    sidecar.files.insert(file.path.to_string(), v);
    *learned = true;
    Ok(())
}

/// True when the pinned files of `model` in `dir` are all present with the pinned
/// sizes (a `stat` each; no hashing): what choosing a default embedder may ask.
pub fn looks_complete(model: &KnownModel, dir: &Path) -> bool {
    !model.files.is_empty()
        && model.files.iter().all(|f: &ModelFile| {
            std::fs::metadata(dir.join(f.path)).is_ok_and(|m| m.is_file() && m.len() == f.bytes)
        })
}

fn seen(path: &Path, known: &impl Fn(&Verified) -> bool) -> Option<Verified> {
    SEEN.lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .find(|(p, v)| p == path && known(v))
        .map(|(_, v)| v.clone())
}

fn remember(path: &Path, v: &Verified) {
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    seen.retain(|(p, _)| p != path);
    seen.push((path.to_path_buf(), v.clone()));
}

/// Written beside itself and renamed over, so a reader never sees half a sidecar.
fn write_sidecar(path: &Path, sidecar: &Sidecar) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let text = serde_json::to_vec_pretty(sidecar).map_err(std::io::Error::other)?;
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// The sha256 of the file at `path`, lowercase hex.
pub fn sha256_of(path: &Path) -> std::io::Result<String> {
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h)?;
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leak<T>(v: T) -> &'static T {
        Box::leak(Box::new(v))
    }

    fn model(files: &[(&'static str, &[u8])]) -> &'static KnownModel {
        let files: Vec<ModelFile> = files
            .iter()
            .map(|(path, body)| ModelFile {
                path,
                bytes: body.len() as u64,
                sha256: Some(Box::leak(
                    Sha256::digest(body)
                        .iter()
                        .map(|b| format!("{b:02x}"))
                        .collect::<String>()
                        .into_boxed_str(),
                )),
            })
            .collect();
        leak(KnownModel {
            name: "tiny",
            aliases: &[],
            repo: "org/tiny",
            revision: "main",
            dimensions: 4,
            files: Box::leak(files.into_boxed_slice()),
        })
    }

    #[test]
    fn right_files_pass_and_are_remembered_wrong_ones_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let m = model(&[("config.json", b"{}"), ("1_Pooling/config.json", b"pool")]);
        std::fs::write(dir.path().join("config.json"), b"{}").unwrap();
        let err = verify(m, dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("1_Pooling/config.json")
                && err.contains("tiny")
                && err.contains("missing"),
            "{err}"
        );
        std::fs::create_dir(dir.path().join("1_Pooling")).unwrap();
        std::fs::write(dir.path().join("1_Pooling/config.json"), b"pool").unwrap();
        verify(m, dir.path()).unwrap();
        let sidecar: Sidecar =
            serde_json::from_slice(&std::fs::read(dir.path().join(SIDECAR)).unwrap()).unwrap();
        assert_eq!(sidecar.files.len(), 2);

        // Same size, other bytes (a new file put in its place): the stamp changed, so
        // it is hashed again and refused.
        std::fs::write(dir.path().join("new"), b"[]").unwrap();
        std::fs::rename(dir.path().join("new"), dir.path().join("config.json")).unwrap();
        let err = verify(m, dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("config.json") && err.contains("sha256"),
            "{err}"
        );
        // Another size is refused without hashing.
        std::fs::write(dir.path().join("config.json"), b"{ }").unwrap();
        let err = verify(m, dir.path()).unwrap_err().to_string();
        assert!(err.contains("3 bytes, tiny's has 2"), "{err}");
        std::fs::write(dir.path().join("config.json"), b"{}").unwrap();
        verify(m, dir.path()).unwrap();
        assert!(looks_complete(m, dir.path()));
    }

    #[test]
    fn a_stale_sidecar_entry_does_not_vouch_for_a_changed_file() {
        let dir = tempfile::tempdir().unwrap();
        let m = model(&[("config.json", b"{}")]);
        std::fs::write(dir.path().join("config.json"), b"{}").unwrap();
        verify(m, dir.path()).unwrap();
        // Replace the file by rename (a new inode), same length.
        std::fs::write(dir.path().join("other"), b"[]").unwrap();
        std::fs::rename(dir.path().join("other"), dir.path().join("config.json")).unwrap();
        assert!(verify(m, dir.path()).is_err());
        // A sidecar that is not JSON is ignored, not an error.
        std::fs::write(dir.path().join("config.json"), b"{}").unwrap();
        std::fs::write(dir.path().join(SIDECAR), b"garbage").unwrap();
        verify(m, dir.path()).unwrap();
    }
}
