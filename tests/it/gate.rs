//! The security gate from outside: sanitising fixtures (`tests/fixtures/sanitize.json`,
//! shared with any client that wants them), properties of sanitising and capping on
//! arbitrary text, paths confined to the repository root against hostile spellings,
//! and secrets redacted from arguments.

#![cfg(feature = "index")]

use std::sync::Arc;

use engram::gate::{redact_secrets, sanitize, Caps, Gate, RepoNames, Repository};
use proptest::prelude::*;

#[test]
fn sanitising_fixtures() {
    let raw = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/sanitize.json"
    ))
    .unwrap();
    let cases: Vec<serde_json::Value> = serde_json::from_str(&raw).unwrap();
    assert!(cases.len() >= 20);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let got = sanitize(case["input"].as_str().unwrap());
        assert_eq!(got.text, case["text"].as_str().unwrap(), "{name}: text");
        let want: Vec<&str> = case["flags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .collect();
        assert_eq!(got.flags, want, "{name}: flags");
    }
}

proptest! {
    #[test]
    fn sanitised_text_has_no_controls_and_is_stable(s in "\\PC*|[\\x00-\\x7f\\u{80}-\\u{9f}\\u{200b}\\u{202e}\\u{e0041}]*") {
        let once = sanitize(&s);
        prop_assert!(once.text.len() <= s.len());
        prop_assert!(once.text.chars().all(|c| !c.is_control() || c == '\n' || c == '\t'));
        let hidden = |c: char| {
            ('\u{E0000}'..='\u{E007F}').contains(&c) || ('\u{202A}'..='\u{202E}').contains(&c) || c == '\u{200B}'
        };
        prop_assert!(!once.text.chars().any(hidden));
        let twice = sanitize(&once.text);
        prop_assert_eq!(&twice.text, &once.text);
        prop_assert_eq!(twice.stripped, 0);
    }

    #[test]
    fn blocks_never_exceed_the_caps(texts in prop::collection::vec("\\PC{0,300}", 0..20),
                                    chunk in 1usize..200, total in 1usize..1000) {
        let g = Gate::new("r", None, vec![], Caps { chunk_bytes: chunk, total_bytes: total });
        let items = texts.iter().enumerate()
            .map(|(i, t)| (format!("[memory: mem:{i:08x}]"), t.clone())).collect();
        let blocks = g.blocks(items);
        let used: usize = blocks.iter().map(|b| b.attribution.len() + 2 + b.text.len()).sum();
        prop_assert!(used <= total);
        for b in &blocks {
            prop_assert!(b.text.len() <= chunk);
        }
        let mut budget = g.budget();
        let mut taken = 0;
        for t in &texts {
            match budget.take(t) {
                Some(c) => { prop_assert!(c.text.len() <= chunk); taken += c.text.len(); }
                None => break,
            }
        }
        prop_assert!(taken <= total);
    }
}

#[test]
fn hostile_paths_stay_inside_the_root() {
    let root = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("src/deep")).unwrap();
    std::fs::write(root.path().join("src/a.rs"), "x").unwrap();
    std::fs::write(other.path().join("secret.rs"), "x").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::symlink;
        symlink(other.path(), root.path().join("out")).unwrap();
        // A chain: in -> src/deep/hop -> ../../out -> other.
        symlink("../../out", root.path().join("src/deep/hop")).unwrap();
        symlink(other.path().join("secret.rs"), root.path().join("link.rs")).unwrap();
        symlink("src/a.rs", root.path().join("fine.rs")).unwrap();
    }
    let g = Gate::new("r", Some(root.path().into()), vec![], Caps::default());
    let canon = root.path().canonicalize().unwrap();
    for good in [
        "src/a.rs",
        "./src/a.rs",
        "src/deep/../a.rs",
        "src/new/file.rs",
    ] {
        assert!(g.confine(good).unwrap().starts_with(&canon), "{good}");
    }
    let inside = format!("{}/src/a.rs", canon.display());
    assert!(g.confine(&inside).is_ok());
    #[cfg(unix)]
    assert!(g.confine("fine.rs").is_ok());
    let outside_abs = other.path().join("secret.rs").display().to_string();
    let mut bad = vec![
        "..".to_string(),
        "../x".into(),
        "src/../../x".into(),
        "/etc/passwd".into(),
        outside_abs,
        "%2e%2e/x".into(),
        "%2E%2E%2Fx".into(),
        "src/%2e%2e/%2e%2e/x".into(),
        "..%2f..%2fetc%2fpasswd".into(),
        "%2fetc%2fpasswd".into(),
        "src/a.rs\0.txt".into(),
        "src/a.rs%00".into(),
        "%zz".into(),
    ];
    if cfg!(unix) {
        bad.extend([
            "out/secret.rs".into(),
            "out".into(),
            "src/deep/hop/secret.rs".into(),
            "link.rs".into(),
            "out/not-yet.rs".into(),
        ]);
    }
    for p in &bad {
        assert!(g.confine(p).is_err(), "{p:?} was let through");
    }
    // Recorded paths come back repository-relative; leaving the root is refused.
    assert_eq!(g.relative("src/a.rs").unwrap(), "src/a.rs");
    assert_eq!(g.relative(&inside).unwrap(), "src/a.rs");
    assert_eq!(g.relative("src/gone.rs").unwrap(), "src/gone.rs");
    assert!(g.relative("../x").is_err() && g.relative("/etc/passwd").is_err());
    assert!(g.relative(".").is_err());
    // Without a root, only plain relative paths.
    let rootless = Gate::new("r", None, vec![], Caps::default());
    assert!(rootless.confine("src/a.rs").is_err());
    assert_eq!(rootless.relative("src/a.rs").unwrap(), "src/a.rs");
    for p in ["../x", "/etc/passwd", "%2e%2e/x"] {
        assert!(rootless.relative(p).is_err(), "{p}");
    }
}

#[test]
fn repositories_outside_the_scope_are_refused() {
    let g = Gate::new("repo-a", None, vec![], Caps::default());
    assert!(g.check_repo("repo-a").is_ok());
    for other in [
        "repo-b",
        "",
        "repo-a/..",
        "../repo-a",
        "REPO-A",
        "*",
        "repo-a\0",
    ] {
        assert!(g.check_repo(other).is_err(), "{other:?}");
    }
    let g = Gate::new("repo-a", None, vec!["repo-b".into()], Caps::default());
    assert!(g.check_repo("repo-b").is_ok() && g.check_repo("repo-c").is_err());
}

#[test]
fn repositories_are_reached_by_their_names_and_only_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("one/app"), dir.path().join("two/app"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let names = Arc::new(RepoNames::new(vec![
        Repository {
            store: "app-1".into(),
            root: Some(a.clone()),
            remotes: vec!["acme/app".into()],
            aliases: vec![],
        },
        Repository {
            store: "app-2".into(),
            root: Some(b.clone()),
            remotes: vec![],
            aliases: vec!["bee".into()],
        },
    ]));
    let g = Gate::new("app-1", Some(a.clone()), vec![], Caps::default()).with_names(names.clone());
    for ok in ["app-1", "acme/app", a.to_str().unwrap()] {
        assert!(g.check_repo(ok).is_ok(), "{ok}");
    }
    // Another served repository, by any of its names, is out of scope and its
    // names are not listed.
    for foreign in ["app-2", "bee", b.to_str().unwrap(), "nope"] {
        let msg = g.check_repo(foreign).unwrap_err().to_string();
        let listed = msg.split("name it as one of: ").nth(1).unwrap_or("");
        assert!(
            listed.contains("app-1") && listed.contains("acme/app"),
            "{msg}"
        );
        assert!(
            !listed.contains("app-2") && !listed.contains("bee"),
            "{msg}"
        );
    }
    // A shared name names this repository, and counts the other without naming it.
    let msg = g.check_repo("app").unwrap_err().to_string();
    assert!(msg.contains("ambiguous") && msg.contains("app-1"), "{msg}");
    assert!(msg.contains("1 other") && !msg.contains("app-2"), "{msg}");
    // The allowed list widens the scope to the other repository's names too.
    let g = Gate::new("app-1", Some(a), vec!["app-2".into()], Caps::default()).with_names(names);
    assert!(g.check_repo("bee").is_ok());
    let msg = g.check_repo("app").unwrap_err().to_string();
    assert!(msg.contains("app-1 and app-2"), "{msg}");
}

#[test]
fn secrets_never_pass() {
    for (text, n) in [
        ("aws AKIAHNHEOABTCPM7PCMI", 1),
        (
            // A token of one repeated character is filler, not a secret: a random one.
            "gh ghp_R7k2QmX9vLp4Tz8WcN3bHj6YdF1sGa5Ue0Kq and AKIAHNHEOABTCPM7PCMI",
            2,
        ),
        ("nothing to see", 0),
    ] {
        let (red, found) = redact_secrets(text).unwrap();
        assert_eq!(found, n, "{text}");
        assert!(!red.contains("AKIAHNHEOABTCPM7PCMI") && !red.contains("ghp_R7k2"));
    }
}
