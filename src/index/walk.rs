//! Walking a repository: which files are indexed and why the others are not.
//!
//! Honours `.gitignore`, `.ignore`, global git excludes and `.engramignore`, skips
//! hidden files, and never yields secrets files (`.env*`, keys, keystores, credential
//! stores), binaries or files over the size limit — each skip is counted by reason.
//! Unreadable entries and symlink loops are reported and skipped, never fatal.
//!
//! Each file is named by its stored path: the repository-relative path with any
//! secret in it redacted (`patterns::redact_path`), a pure function of the real
//! path, so every run names a file alike; only `abs` holds the real one, to read it.

use std::path::{Path, PathBuf};

use crate::patterns::{redact_path, PatternError};

/// A file to index.
#[derive(Debug, Clone)]
pub struct WalkedFile {
    /// The stored path: repository-relative, `/`-separated, secrets redacted.
    pub rel: String,
    /// The real path, to read the file by; never stored.
    pub abs: PathBuf,
    pub size: u64,
    pub mtime_ms: u64,
}

/// Why files were not indexed.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Skipped {
    pub secret_file: u64,
    pub too_large: u64,
    pub unreadable: u64,
}

impl Skipped {
    pub fn total(&self) -> u64 {
        self.secret_file + self.too_large + self.unreadable
    }
}

/// File names that hold credentials by convention; never read.
pub fn is_secrets_file(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.starts_with(".env")
        || n.starts_with("id_rsa")
        || n.starts_with("id_ed25519")
        || n.starts_with("id_ecdsa")
        || n.starts_with("id_dsa")
        || n.starts_with("credentials")
        || [
            ".npmrc",
            ".pypirc",
            ".netrc",
            "_netrc",
            ".git-credentials",
            ".htpasswd",
        ]
        .contains(&n.as_str())
        || [
            ".pem",
            ".key",
            ".p12",
            ".pfx",
            ".keystore",
            ".jks",
            ".asc",
            ".gpg",
            ".kdbx",
        ]
        .iter()
        .any(|ext| n.ends_with(ext))
}

/// Walk `root`; files over `max_bytes` are skipped. Fails only when the secret
/// rules cannot be had.
pub fn walk(root: &Path, max_bytes: u64) -> Result<(Vec<WalkedFile>, Skipped), PatternError> {
    let mut files = Vec::new();
    let mut skipped = Skipped::default();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(true)
        .git_ignore(true)
        .git_global(true)
        .git_exclude(true)
        .require_git(false)
        .follow_links(false)
        .add_custom_ignore_filename(".engramignore")
        .build();
    for entry in walker {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!("skipping: {e}");
                skipped.unreadable += 1;
                continue;
            }
        };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let name = entry.file_name().to_string_lossy();
        if is_secrets_file(&name) {
            skipped.secret_file += 1;
            continue;
        }
        let meta = match entry.metadata() {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!("skipping {}: {e}", entry.path().display());
                skipped.unreadable += 1;
                continue;
            }
        };
        if meta.len() > max_bytes {
            skipped.too_large += 1;
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let rel = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        let stored = match redact_path(&rel)? {
            std::borrow::Cow::Borrowed(_) => None,
            std::borrow::Cow::Owned(stored) => Some(stored),
        };
        let rel = stored.unwrap_or(rel);
        let mtime_ms = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        files.push(WalkedFile {
            rel,
            abs: entry.path().to_path_buf(),
            size: meta.len(),
            mtime_ms,
        });
    }
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok((files, skipped))
}

/// The language of a path, by extension (for filters and chunking).
pub fn language(path: &str) -> &'static str {
    let ext = path
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "rs" => "rust",
        "py" | "pyi" => "python",
        "go" => "go",
        "js" | "mjs" | "cjs" | "jsx" => "javascript",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "tsx",
        "java" => "java",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" => "cpp",
        "cs" => "csharp",
        "rb" => "ruby",
        "php" => "php",
        "md" | "markdown" => "markdown",
        "toml" => "toml",
        "yaml" | "yml" => "yaml",
        "json" => "json",
        "sh" | "bash" | "zsh" => "shell",
        "sql" => "sql",
        _ => "text",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_files_are_recognised() {
        for n in [
            ".env",
            ".env.local",
            "server.pem",
            "id_rsa",
            "id_ed25519.pub",
            "credentials.json",
            "a.p12",
            ".npmrc",
            ".netrc",
            "app.keystore",
        ] {
            assert!(is_secrets_file(n), "{n}");
        }
        for n in ["main.rs", "environment.md", "keys.rs", "README"] {
            assert!(!is_secrets_file(n), "{n}");
        }
    }
}
