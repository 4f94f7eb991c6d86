//! The HTTP server's bearer tokens: the tokens file (TOML, `[[tokens]]` with a name,
//! the token's SHA-256, the repositories it may reach and when it was made), adding,
//! listing and revoking entries, and [`TokenSource`], the file as a running server
//! sees it: re-read when it changed, so new and revoked tokens take effect without a
//! restart.
//!
//! A token itself is never stored, listed or logged: only its hash, and an id made
//! of the hash's first hex digits (which says nothing usable about the token).
//! Repositories are kept as the names they were given (see [`crate::gate::RepoNames`]);
//! the server resolves them against what it serves on every request.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::store::StoreError;

/// Hex digits of a token's hash that make its id.
const ID_DIGITS: usize = 12;

/// One token as stored: never the token itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenEntry {
    pub name: String,
    /// Hex SHA-256 of the token.
    pub sha256: String,
    /// Names of the repositories it may reach (any name a served repository answers
    /// to; a path is kept as its canonical root); `*` for any.
    pub repos: Vec<String>,
    /// When it was made (epoch milliseconds); absent in files written before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_ms: Option<u64>,
}

impl TokenEntry {
    /// The id `token list` shows and `token revoke` takes.
    pub fn id(&self) -> &str {
        self.sha256.get(..ID_DIGITS).unwrap_or(&self.sha256)
    }

    fn info(&self) -> TokenInfo {
        TokenInfo {
            id: self.id().to_string(),
            name: self.name.clone(),
            repos: self.repos.clone(),
            created_ms: self.created_ms,
        }
    }
}

/// What may be shown of a token: never its secret or hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TokenInfo {
    pub id: String,
    pub name: String,
    pub repos: Vec<String>,
    pub created_ms: Option<u64>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenFile {
    #[serde(default)]
    tokens: Vec<TokenEntry>,
}

/// What went wrong with the tokens file, and what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    /// The file could not be read when it had to be.
    #[error("{}: {source}; create tokens with `engram token new`", path.display())]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Reading the file failed for another reason than its absence.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file is not the TOML `engram token` writes.
    #[error("{}: {message}", path.display())]
    Parse { path: PathBuf, message: String },
    /// An entry's `sha256` is not 64 hex digits.
    #[error("{}: token {name:?} has no valid sha256", path.display())]
    BadHash { path: PathBuf, name: String },
    /// `revoke` before any token was made.
    #[error("{}: no tokens file yet", path.display())]
    Missing { path: PathBuf },
    /// `revoke` of an id (or name) no entry has.
    #[error("no token with id {id:?}; `engram token list` shows the ids")]
    NoSuchToken { id: String },
    /// `revoke` of a name several entries share.
    #[error("{id:?} is the name of several tokens; revoke one by its id (`engram token list`)")]
    SharedName { id: String },
    /// Rewriting the file failed (its lock, a write, the rename).
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn parse(path: &Path, text: &str) -> Result<TokenFile, TokenFileError> {
    toml::from_str(text).map_err(|e| TokenFileError::Parse {
        path: path.to_path_buf(),
        message: e.message().to_string(),
    })
}

/// The tokens a server accepts.
#[derive(Debug, Clone, Default)]
pub struct Tokens {
    entries: Vec<(TokenEntry, [u8; 32])>,
}

/// Hex SHA-256 of a token, as the tokens file stores it.
pub fn hash_token(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub(super) fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Equal bytes, in time that does not depend on where they differ.
pub(super) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Rewrite the tokens file under its lock (see [`crate::store::update_small_file`]):
/// two `engram token` commands at once both land, and a crash never leaves a
/// truncated file.
fn update<T>(
    path: &Path,
    change: impl FnOnce(&mut TokenFile) -> Result<T, TokenFileError>,
) -> Result<T, TokenFileError> {
    // The rewrite speaks `StoreError`: a refusal of ours is kept here, typed, and
    // crosses it only as a message.
    let mut refused = None;
    let mut out = None;
    let written = crate::store::update_small_file(path, |current| {
        let changed = match current {
            Some(t) => parse(path, &t),
            None => Ok(TokenFile::default()),
        }
        .and_then(|mut file| change(&mut file).map(|v| (file, v)));
        match changed {
            Ok((file, v)) => {
                out = Some(v);
                toml::to_string(&file).map_err(|e| StoreError::Invalid(e.to_string()))
            }
            Err(e) => {
                let message = e.to_string();
                refused = Some(e);
                Err(StoreError::Invalid(message))
            }
        }
    });
    if let Some(e) = refused {
        return Err(e);
    }
    written?;
    out.ok_or_else(|| StoreError::Invalid("the tokens file was not updated".into()).into())
}

impl Tokens {
    /// Read the tokens file.
    pub fn load(path: &Path) -> Result<Tokens, TokenFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| TokenFileError::Unreadable {
            path: path.to_path_buf(),
            source,
        })?;
        Tokens::from_text(path, &text)
    }

    fn from_text(path: &Path, text: &str) -> Result<Tokens, TokenFileError> {
        let mut entries = Vec::new();
        for t in parse(path, text)?.tokens {
            let hash: [u8; 32] = unhex(&t.sha256)
                .and_then(|v| v.try_into().ok())
                .ok_or_else(|| TokenFileError::BadHash {
                    path: path.to_path_buf(),
                    name: t.name.clone(),
                })?;
            entries.push((t, hash));
        }
        Ok(Tokens { entries })
    }

    /// Append a new entry for `token` to the tokens file (created if missing).
    pub fn add(
        path: &Path,
        name: &str,
        token: &str,
        repos: Vec<String>,
        created_ms: u64,
    ) -> Result<TokenInfo, TokenFileError> {
        update(path, |file| {
            let entry = TokenEntry {
                name: name.to_string(),
                sha256: hash_token(token),
                repos,
                created_ms: Some(created_ms),
            };
            let info = entry.info();
            file.tokens.push(entry);
            Ok(info)
        })
    }

    /// Every token in the file (none when it does not exist yet).
    pub fn list(path: &Path) -> Result<Vec<TokenInfo>, TokenFileError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Ok(parse(path, &text)?
                .tokens
                .iter()
                .map(TokenEntry::info)
                .collect()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(source) => Err(TokenFileError::Io {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    /// Remove the token whose id is `id` (or, failing that, the one token named
    /// `id`); returns what it was.
    pub fn revoke(path: &Path, id: &str) -> Result<TokenInfo, TokenFileError> {
        if !path.exists() {
            return Err(TokenFileError::Missing {
                path: path.to_path_buf(),
            });
        }
        update(path, |file| {
            let by_id: Vec<usize> = (0..file.tokens.len())
                .filter(|&i| file.tokens[i].id() == id)
                .collect();
            let by_name: Vec<usize> = (0..file.tokens.len())
                .filter(|&i| file.tokens[i].name == id)
                .collect();
            let i = match (by_id.as_slice(), by_name.as_slice()) {
                ([i], _) | ([], [i]) => *i,
                ([], []) => return Err(TokenFileError::NoSuchToken { id: id.to_string() }),
                _ => return Err(TokenFileError::SharedName { id: id.to_string() }),
            };
            Ok(file.tokens.remove(i).info())
        })
    }

    /// The entry of a presented token. Every entry is compared, so the time taken
    /// says nothing about which (if any) matched.
    pub fn check(&self, presented: &str) -> Option<&TokenEntry> {
        let h = Sha256::digest(presented.as_bytes());
        let mut found = None;
        for (entry, hash) in &self.entries {
            if constant_time_eq(&h, hash) && found.is_none() {
                found = Some(entry);
            }
        }
        found
    }
}

/// What tells a changed file from the one read: its size, modification time and
/// (on Unix) inode and change time, since `token new`/`revoke` replace the file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    inode: u64,
    ctime: (i64, i64),
}

fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let (inode, ctime) = {
        use std::os::unix::fs::MetadataExt;
        (m.ino(), (m.ctime(), m.ctime_nsec()))
    };
    #[cfg(not(unix))]
    let (inode, ctime) = (0, (0, 0));
    Some(Stamp {
        len: m.len(),
        modified: m.modified().ok(),
        inode,
        ctime,
    })
}

/// The tokens file as a running server sees it: checked on every request (one
/// `stat`), read again when it changed. A file that is gone or cannot be read
/// accepts no token until it is fixed (it fails closed).
#[derive(Debug)]
pub struct TokenSource {
    path: PathBuf,
    state: Mutex<(Option<Stamp>, Arc<Tokens>)>,
}

impl TokenSource {
    /// The tokens file at `path`, which must be readable now.
    pub fn open(path: &Path) -> Result<TokenSource, TokenFileError> {
        let before = stamp(path);
        let tokens = Tokens::load(path)?;
        Ok(TokenSource {
            path: path.to_path_buf(),
            state: Mutex::new((before, Arc::new(tokens))),
        })
    }

    /// The tokens as the file holds them now.
    pub fn current(&self) -> Arc<Tokens> {
        let now = stamp(&self.path);
        let mut state = match self.state.lock() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        };
        if state.0 == now {
            return state.1.clone();
        }
        // The stamp is taken before reading: a change during the read is seen (and
        // read) at the next request.
        let tokens = match now {
            None => {
                tracing::warn!(
                    "tokens file {} is gone: no token is accepted",
                    self.path.display()
                );
                Tokens::default()
            }
            Some(_) => match Tokens::load(&self.path) {
                Ok(t) => {
                    tracing::info!(
                        "tokens file {} changed: {} tokens",
                        self.path.display(),
                        t.entries.len()
                    );
                    t
                }
                Err(e) => {
                    tracing::error!("{e}: no token is accepted until it is fixed");
                    Tokens::default()
                }
            },
        };
        *state = (now, Arc::new(tokens));
        state.1.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_added_listed_revoked_and_seen_without_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.toml");
        assert!(Tokens::list(&path).unwrap().is_empty());
        let a = Tokens::add(&path, "ci", "secret-a", vec!["acme/widgets".into()], 5).unwrap();
        let source = TokenSource::open(&path).unwrap();
        assert!(source.current().check("secret-a").is_some());
        assert!(source.current().check("secret-b").is_none());
        let b = Tokens::add(&path, "ci", "secret-b", vec!["*".into()], 6).unwrap();
        assert!(source.current().check("secret-b").is_some());
        let listed = Tokens::list(&path).unwrap();
        assert_eq!(listed, [a.clone(), b.clone()]);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("secret-a") && a.id.len() == ID_DIGITS);
        // A name two tokens share is refused; the id is not.
        let shared = Tokens::revoke(&path, "ci").unwrap_err();
        assert!(matches!(&shared, TokenFileError::SharedName { id } if id == "ci"));
        assert!(shared.to_string().contains("several"));
        let unknown = Tokens::revoke(&path, "nope").unwrap_err();
        assert!(matches!(unknown, TokenFileError::NoSuchToken { .. }));
        assert!(unknown.to_string().contains("token list"));
        assert_eq!(Tokens::revoke(&path, &a.id).unwrap(), a);
        assert!(source.current().check("secret-a").is_none());
        assert!(source.current().check("secret-b").is_some());
        assert_eq!(Tokens::revoke(&path, "ci").unwrap(), b);
        assert!(source.current().check("secret-b").is_none());
        // A broken or missing file accepts nothing (and recovers when fixed).
        Tokens::add(&path, "x", "secret-c", vec![], 7).unwrap();
        assert!(source.current().check("secret-c").is_some());
        std::fs::write(&path, "not toml [").unwrap();
        assert!(source.current().check("secret-c").is_none());
        std::fs::remove_file(&path).unwrap();
        assert!(source.current().check("secret-c").is_none());
        Tokens::add(&path, "x", "secret-c", vec![], 8).unwrap();
        assert!(source.current().check("secret-c").is_some());
    }
}
