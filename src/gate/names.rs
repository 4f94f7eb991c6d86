//! The names a caller may give a served repository, and which repository each means.
//!
//! A repository is reachable by its store's name, its absolute root path (any path
//! that canonicalises to it), `.` when the server serves exactly one repository, the
//! root's folder name, each git remote as `owner/name`, and the aliases set for it.
//! A name two served repositories share is ambiguous: it is refused naming both,
//! never given to either. This module only maps names to store names; whether the
//! caller may reach the repository is [`super::Gate::check_repo`]'s decision. It never
//! reads `.git/config` itself (the caller passes the remotes it found) and never
//! opens a store.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// What a served repository may be called, as given by whoever serves it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Repository {
    /// The store's name (its directory's name); audit and scope use it.
    pub store: String,
    /// The repository root, when the server has one.
    pub root: Option<PathBuf>,
    /// Its git remotes as `owner/name` (see [`remote_name`]).
    pub remotes: Vec<String>,
    /// Further names set in the configuration.
    pub aliases: Vec<String>,
}

/// Which kind of name matched (for listing names to a caller).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum NameKind {
    Store,
    Path,
    Folder,
    Remote,
    Alias,
}

/// A name that does not pick out exactly one served repository.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("no repository on this server is called {0:?}")]
    Unknown(String),
    #[error("{name:?} names several repositories on this server ({}); use a store name", repos.join(", "))]
    Ambiguous { name: String, repos: Vec<String> },
}

/// Two or more served repositories answering to one name (reported at start).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collision {
    pub name: String,
    /// Their store names, sorted.
    pub repos: Vec<String>,
}

/// Every served repository's names.
#[derive(Debug, Clone, Default)]
pub struct RepoNames {
    repos: Vec<Known>,
}

#[derive(Debug, Clone)]
struct Known {
    store: String,
    /// Canonical root.
    root: Option<PathBuf>,
    names: Vec<(NameKind, String)>,
}

impl Known {
    fn new(r: Repository) -> Known {
        let root = r
            .root
            .map(|p| p.canonicalize().unwrap_or(p))
            .filter(|p| p.is_absolute());
        let mut names = vec![(NameKind::Store, r.store.clone())];
        if let Some(root) = &root {
            names.push((NameKind::Path, root.display().to_string()));
            if let Some(folder) = root.file_name() {
                names.push((NameKind::Folder, folder.to_string_lossy().into_owned()));
            }
        }
        for remote in r.remotes {
            names.push((NameKind::Remote, remote.to_lowercase()));
        }
        for alias in r.aliases {
            names.push((NameKind::Alias, alias));
        }
        // Empty names never match (a caller's "" is refused).
        names.retain(|(_, n)| !n.is_empty());
        let mut seen = BTreeSet::new();
        names.retain(|(_, n)| seen.insert(n.clone()));
        Known {
            store: r.store,
            root,
            names,
        }
    }

    /// Whether `name` (not a path) is one of this repository's names. Remotes
    /// compare without case, as the hosts treat them; everything else exactly.
    fn answers_to(&self, name: &str) -> bool {
        self.names.iter().any(|(kind, n)| match kind {
            NameKind::Path => false,
            NameKind::Remote => n.eq_ignore_ascii_case(name),
            _ => n == name,
        })
    }
}

impl RepoNames {
    /// The names of the repositories a server serves.
    pub fn new(repos: Vec<Repository>) -> RepoNames {
        RepoNames {
            repos: repos.into_iter().map(Known::new).collect(),
        }
    }

    /// The store name `name` means, or why it means none.
    pub fn resolve(&self, name: &str) -> Result<&str, NameError> {
        let unknown = || NameError::Unknown(name.to_string());
        if name.is_empty() || name.contains('\0') {
            return Err(unknown());
        }
        let matches: Vec<&Known> = if name == "." || name == "./" {
            // The one repository, and only when there is exactly one.
            match self.repos.as_slice() {
                [only] => vec![only],
                [] => vec![],
                several => several.iter().collect(),
            }
        } else if Path::new(name).is_absolute() {
            // Compared as the file system sees it, so `..`, `//` and links resolve;
            // a path that does not exist is no repository.
            let Ok(real) = Path::new(name).canonicalize() else {
                return Err(unknown());
            };
            self.repos
                .iter()
                .filter(|k| k.root.as_deref() == Some(real.as_path()))
                .collect()
        } else {
            self.repos.iter().filter(|k| k.answers_to(name)).collect()
        };
        match matches.as_slice() {
            [] => Err(unknown()),
            [one] => Ok(one.store.as_str()),
            several => Err(NameError::Ambiguous {
                name: name.to_string(),
                repos: several.iter().map(|k| k.store.clone()).collect(),
            }),
        }
    }

    /// The names that reach `store` unambiguously, best first (`.` included when it is
    /// the only repository); empty for a store not served.
    pub fn names_of(&self, store: &str) -> Vec<String> {
        let Some(k) = self.repos.iter().find(|k| k.store == store) else {
            return Vec::new();
        };
        let mut out: Vec<String> = k
            .names
            .iter()
            .filter(|(_, n)| self.resolve(n).is_ok_and(|s| s == store))
            .map(|(_, n)| n.clone())
            .collect();
        if self.repos.len() == 1 {
            out.push(".".into());
        }
        out
    }

    /// Every name two or more served repositories answer to.
    pub fn collisions(&self) -> Vec<Collision> {
        let mut out: Vec<Collision> = Vec::new();
        for k in &self.repos {
            for (_, name) in &k.names {
                if out.iter().any(|c| c.name == *name) {
                    continue;
                }
                if let Err(NameError::Ambiguous { mut repos, .. }) = self.resolve(name) {
                    repos.sort();
                    out.push(Collision {
                        name: name.clone(),
                        repos,
                    });
                }
            }
        }
        out
    }

    /// The store names served.
    pub fn stores(&self) -> impl Iterator<Item = &str> {
        self.repos.iter().map(|k| k.store.as_str())
    }
}

/// A git remote URL as `owner/name`: the path after the host, without `.git` or a
/// trailing `/` (`https://github.com/acme/widgets.git` and
/// `git@github.com:acme/widgets.git` both give `acme/widgets`; a deeper path such as
/// GitLab's subgroups is kept whole). `None` for a URL with no path or a local path.
pub fn remote_name(url: &str) -> Option<String> {
    let u = url.trim();
    let path = if let Some(i) = u.find("://") {
        let rest = &u[i + 3..];
        if u[..i].eq_ignore_ascii_case("file") {
            return None;
        }
        rest.split_once('/')?.1
    } else {
        // scp-like `user@host:owner/name`; a local path has `/` before any `:`.
        let (host, path) = u.split_once(':')?;
        if host.is_empty() || host.contains('/') {
            return None;
        }
        path
    };
    let path = path.trim_matches('/');
    let path = path
        .strip_suffix(".git")
        .unwrap_or(path)
        .trim_end_matches('/');
    let parts: Vec<&str> = path.split('/').collect();
    if parts.len() < 2
        || parts
            .iter()
            .any(|p| p.is_empty() || *p == "." || *p == "..")
    {
        return None;
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(store: &str, root: Option<&Path>, remotes: &[&str], aliases: &[&str]) -> Repository {
        Repository {
            store: store.into(),
            root: root.map(Path::to_path_buf),
            remotes: remotes.iter().map(|s| s.to_string()).collect(),
            aliases: aliases.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn remotes_become_owner_and_name() {
        for url in [
            "https://github.com/acme/widgets.git",
            "https://github.com/acme/widgets",
            "https://user@github.com/acme/widgets.git/",
            "git@github.com:acme/widgets.git",
            "ssh://git@github.com:22/acme/widgets.git",
            "github.com:acme/widgets",
        ] {
            assert_eq!(remote_name(url).as_deref(), Some("acme/widgets"), "{url}");
        }
        assert_eq!(
            remote_name("https://gitlab.com/group/sub/proj.git").as_deref(),
            Some("group/sub/proj")
        );
        for url in [
            "",
            "/srv/git/widgets.git",
            "../widgets",
            "file:///srv/git/acme/widgets.git",
            "https://github.com/widgets",
            "https://github.com/",
            "git@github.com:../x",
        ] {
            assert_eq!(remote_name(url), None, "{url}");
        }
    }

    #[test]
    fn one_repository_answers_to_every_name() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("widgets");
        std::fs::create_dir_all(root.join("src")).unwrap();
        let names = RepoNames::new(vec![repo(
            "repo-2ea6",
            Some(&root),
            &["acme/widgets"],
            &["w"],
        )]);
        let canonical = root.canonicalize().unwrap();
        let via_dots = format!("{}/src/../", canonical.display());
        for name in [
            "repo-2ea6",
            ".",
            "./",
            "widgets",
            "acme/widgets",
            "ACME/Widgets",
            "w",
            canonical.to_str().unwrap(),
            via_dots.as_str(),
        ] {
            assert_eq!(names.resolve(name), Ok("repo-2ea6"), "{name}");
        }
        let sub = canonical.join("src");
        let missing = canonical.join("nope");
        for bad in [
            "",
            "REPO-2EA6",
            "Widgets",
            "widgets/",
            "src",
            "../widgets",
            "widgets\0",
            "*",
            sub.to_str().unwrap(),
            missing.to_str().unwrap(),
            "/",
        ] {
            assert!(
                matches!(names.resolve(bad), Err(NameError::Unknown(_))),
                "{bad:?}"
            );
        }
        assert_eq!(
            names.names_of("repo-2ea6"),
            [
                "repo-2ea6",
                canonical.to_str().unwrap(),
                "widgets",
                "acme/widgets",
                "w",
                "."
            ]
        );
        assert!(names.collisions().is_empty());
    }

    #[test]
    fn without_a_root_only_names_reach() {
        let names = RepoNames::new(vec![repo("store", None, &[], &[])]);
        assert_eq!(names.resolve("store"), Ok("store"));
        assert_eq!(names.resolve("."), Ok("store"));
        for bad in ["/", "/tmp", "store/..", "../store"] {
            assert!(names.resolve(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn shared_names_are_refused_naming_both() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("one/app"), dir.path().join("two/app"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        let names = RepoNames::new(vec![
            repo("app-1", Some(&a), &["acme/app"], &["shared"]),
            repo("app-2", Some(&b), &["Acme/App"], &["shared", "two"]),
        ]);
        for name in ["app", "acme/app", "shared", "."] {
            match names.resolve(name) {
                Err(NameError::Ambiguous { repos, .. }) => {
                    assert_eq!(repos, ["app-1", "app-2"], "{name}")
                }
                other => panic!("{name}: {other:?}"),
            }
        }
        let msg = names.resolve("app").unwrap_err().to_string();
        assert!(msg.contains("app-1") && msg.contains("app-2"), "{msg}");
        assert_eq!(names.resolve("app-2"), Ok("app-2"));
        assert_eq!(names.resolve("two"), Ok("app-2"));
        assert_eq!(names.resolve(b.to_str().unwrap()), Ok("app-2"));
        let collided: Vec<String> = names.collisions().into_iter().map(|c| c.name).collect();
        assert_eq!(collided, ["app", "acme/app", "shared"]);
        // What is listed to a caller is only what works.
        let listed = names.names_of("app-1");
        assert!(listed.contains(&"app-1".to_string()));
        assert!(!listed
            .iter()
            .any(|n| n == "app" || n == "shared" || n == "."));
    }
}
