//! The names of the repositories `engram serve` serves: what each answers to (its
//! store's name, root, folder, git remotes, the `aliases` setting), gathered into one
//! [`RepoNames`] shared by every repository's gate; names two of them share are
//! warned about at start. Also how `engram token new --repo` keeps a name.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use engram::gate::{remote_name, RepoNames, Repository};

/// What the repository at `root`, kept in store `store`, answers to before aliases.
pub fn repository(store: &str, root: &Path) -> Repository {
    let mut remotes: Vec<String> = Vec::new();
    for (_, url) in engram::location::remotes(root) {
        if let Some(name) = remote_name(&url) {
            if !remotes.contains(&name) {
                remotes.push(name);
            }
        }
    }
    Repository {
        store: store.to_string(),
        root: Some(root.to_path_buf()),
        remotes,
        aliases: Vec::new(),
    }
}

/// Every served repository's names with the `aliases` setting applied: a plain
/// alias names the one repository served (with several it is ignored, with a
/// warning); `NAME=REPO` names the repository REPO (any of its other names) is.
/// Names two repositories share are warned about: they are refused as ambiguous.
pub fn table(mut repos: Vec<Repository>, aliases: &[String]) -> RepoNames {
    let plain = RepoNames::new(repos.clone());
    for a in aliases {
        match a.split_once('=') {
            Some((alias, target)) => match plain.resolve(target.trim()) {
                Ok(store) => {
                    if let Some(r) = repos.iter_mut().find(|r| r.store == store) {
                        r.aliases.push(alias.trim().to_string());
                    }
                }
                Err(e) => tracing::warn!("alias {a:?} is ignored: {e}"),
            },
            None if repos.len() == 1 => repos[0].aliases.push(a.clone()),
            None => tracing::warn!(
                "alias {a:?} is ignored: with several repositories served, write NAME=REPO"
            ),
        }
    }
    let names = RepoNames::new(repos);
    for c in names.collisions() {
        tracing::warn!(
            "repositories {} all answer to {:?}: that name is refused as ambiguous; use a store name or path",
            c.repos.join(" and "),
            c.name
        );
    }
    names
}

/// A `--repo` of `token new` as the tokens file keeps it: a path (`.`, `..`, one
/// starting with `/`, `./`, `../` or `~`, or an existing directory) becomes its
/// repository's canonical root; any other name is kept as given, for the server to
/// resolve.
pub fn token_repo(arg: &str) -> Result<String> {
    let pathish = arg == "."
        || arg == ".."
        || ["/", "./", "../", "~"].iter().any(|p| arg.starts_with(p))
        || Path::new(arg).is_dir();
    if !pathish {
        anyhow::ensure!(
            !arg.is_empty() && !arg.contains('\0'),
            "--repo {arg:?} is no repository name"
        );
        return Ok(arg.to_string());
    }
    let path = match arg.strip_prefix('~') {
        Some(rest) => {
            let home = std::env::var_os("HOME").context("~ in --repo needs HOME")?;
            PathBuf::from(home).join(rest.trim_start_matches('/'))
        }
        None => PathBuf::from(arg),
    };
    let real = path
        .canonicalize()
        .with_context(|| format!("--repo {arg:?}: no such directory"))?;
    anyhow::ensure!(real.is_dir(), "--repo {arg:?} is not a directory");
    let root = engram::location::repo_root(&real).unwrap_or(real);
    Ok(root.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served(store: &str, root: &Path) -> Repository {
        Repository {
            store: store.into(),
            root: Some(root.to_path_buf()),
            ..Repository::default()
        }
    }

    #[test]
    fn aliases_name_one_repository_or_the_one_they_point_at() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("alpha"), dir.path().join("beta"));
        std::fs::create_dir_all(a.join(".git")).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        std::fs::write(
            a.join(".git/config"),
            "[remote \"origin\"]\n\turl = git@github.com:acme/alpha.git\n[remote \"up\"]\n\turl = https://github.com/acme/alpha\n",
        )
        .unwrap();
        let alpha = repository("s-a", &a);
        assert_eq!(alpha.remotes, ["acme/alpha"]);
        let one = table(vec![alpha.clone()], &["api".into()]);
        assert_eq!(one.resolve("api"), Ok("s-a"));
        assert_eq!(one.resolve("acme/alpha"), Ok("s-a"));
        let two = table(
            vec![alpha, served("s-b", &b)],
            &[
                "plain".into(),
                "bee=beta".into(),
                "both=s-a".into(),
                "both=s-b".into(),
                "lost=nowhere".into(),
            ],
        );
        assert_eq!(two.resolve("bee"), Ok("s-b"));
        for unknown in ["plain", "lost"] {
            assert!(two.resolve(unknown).is_err(), "{unknown}");
        }
        let collided: Vec<String> = two.collisions().into_iter().map(|c| c.name).collect();
        assert_eq!(collided, ["both"]);
    }

    #[test]
    fn token_repositories_keep_names_and_make_paths_canonical() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("widgets");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        let real = root.canonicalize().unwrap().display().to_string();
        let sub = root.join("src").display().to_string();
        assert_eq!(token_repo(&sub).unwrap(), real);
        assert_eq!(token_repo(&format!("{sub}/..")).unwrap(), real);
        for name in ["acme/widgets", "widgets-store", "*"] {
            assert_eq!(token_repo(name).unwrap(), name);
        }
        assert!(token_repo(&format!("{real}/missing")).is_err());
        assert!(token_repo("").is_err());
    }
}
