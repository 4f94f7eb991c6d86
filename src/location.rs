//! Where a repository's store lives by default.
//!
//! One store per repository, under `$ENGRAM_HOME` or the XDG data directory
//! (`$XDG_DATA_HOME/engram`, else `~/.local/share/engram`), in `repos/<slug>-<hash>/`.
//! The hash is of the repository's identity — its normalised `origin` remote URL when
//! it has one (so two clones share a store), else its canonical path — and the slug is
//! the last path component, for people reading the directory. Pure path logic: this
//! module never creates anything.

use std::path::{Path, PathBuf};

use crate::key::hash64;

/// The data directory engram keeps stores under.
pub fn data_home() -> Option<PathBuf> {
    if let Some(h) = std::env::var_os("ENGRAM_HOME").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(h));
    }
    if let Some(x) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(x).join("engram"));
    }
    std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(|h| PathBuf::from(h).join(".local/share/engram"))
}

/// The root of the git repository containing `start` (the nearest ancestor with a
/// `.git`), or `None`.
pub fn repo_root(start: &Path) -> Option<PathBuf> {
    let start = start.canonicalize().ok()?;
    start
        .ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

/// The identity a repository's store is keyed by.
pub fn repo_identity(root: &Path) -> String {
    origin_url(root)
        .map(|u| normalise_remote(&u))
        .unwrap_or_else(|| {
            root.canonicalize()
                .unwrap_or_else(|_| root.to_path_buf())
                .display()
                .to_string()
        })
}

/// The default store directory for the repository containing `start` (or for `start`
/// itself when it is in none).
pub fn default_store_dir(start: &Path) -> Option<PathBuf> {
    Some(store_dir_in(&data_home()?, start))
}

/// The store directory for the repository containing `start`, under data directory
/// `home` (for a home set in the configuration rather than the environment).
pub fn store_dir_in(home: &Path, start: &Path) -> PathBuf {
    let root = repo_root(start)
        .unwrap_or_else(|| start.canonicalize().unwrap_or_else(|_| start.to_path_buf()));
    let identity = repo_identity(&root);
    let slug: String = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "root".into())
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .take(48)
        .collect();
    home.join("repos")
        .join(format!("{slug}-{:016x}", hash64(&identity)))
}

/// `origin`'s URL from `.git/config`, if any.
fn origin_url(root: &Path) -> Option<String> {
    remotes(root)
        .into_iter()
        .find(|(name, _)| name == "origin")
        .map(|(_, url)| url)
}

/// Every remote's URL in `.git/config` of the repository at `root`, as
/// `(remote name, url)` in the file's order; empty when there is none (or no such
/// file: a worktree's `.git` file is not followed).
pub fn remotes(root: &Path) -> Vec<(String, String)> {
    let Ok(config) = std::fs::read_to_string(root.join(".git/config")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut remote: Option<String> = None;
    for line in config.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            remote = t
                .strip_prefix("[remote \"")
                .and_then(|r| r.strip_suffix("\"]"))
                .map(String::from);
        } else if let Some(name) = &remote {
            if let Some(v) = t.strip_prefix("url") {
                if let Some(v) = v.trim_start().strip_prefix('=') {
                    out.push((name.clone(), v.trim().to_string()));
                }
            }
        }
    }
    out
}

/// `git@host:owner/repo.git`, `https://user@host/owner/repo/` and `ssh://git@host/owner/repo`
/// all become `host/owner/repo`.
pub fn normalise_remote(url: &str) -> String {
    let mut u = url.trim().to_string();
    if let Some(i) = u.find("://") {
        u = u[i + 3..].to_string();
    } else if let Some((userhost, path)) = u.split_once(':') {
        if !userhost.contains('/') {
            u = format!("{userhost}/{path}");
        }
    }
    if let Some((before, after)) = u.split_once('@') {
        if !before.contains('/') {
            u = after.to_string();
        }
    }
    let u = u.trim_end_matches('/');
    let u = u.strip_suffix(".git").unwrap_or(u);
    u.to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_remote_is_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        std::fs::write(
            dir.path().join(".git/config"),
            "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = https://github.com/acme/widgets.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n[remote \"fork\"]\n\turl=git@github.com:me/widgets.git\n",
        )
        .unwrap();
        assert_eq!(
            remotes(dir.path()),
            [
                (
                    "origin".into(),
                    "https://github.com/acme/widgets.git".into()
                ),
                ("fork".into(), "git@github.com:me/widgets.git".into())
            ]
        );
        assert_eq!(
            origin_url(dir.path()).as_deref(),
            Some("https://github.com/acme/widgets.git")
        );
        assert!(remotes(&dir.path().join("none")).is_empty());
    }

    #[test]
    fn remotes_of_one_repository_normalise_alike() {
        let want = "example.com/owner/repo";
        for u in [
            "git@example.com:owner/repo.git",
            "https://example.com/owner/repo",
            "https://user@example.com/owner/repo.git/",
            "ssh://git@example.com/owner/repo.git",
        ] {
            assert_eq!(normalise_remote(u), want, "{u}");
        }
    }
}
