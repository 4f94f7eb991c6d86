//! Indexing a repository and searching it: secrets never reach the store, re-indexing
//! is incremental and equals a fresh index, bad files are skipped and counted.

use std::collections::BTreeMap;
use std::path::Path;

use engram::index::{self, IndexOptions, SecretAction};
use engram::patterns::builtin;
use engram::search::{search, SearchHit, SearchOptions};
use engram::store::{Store, StoreOptions};

fn open(dir: &Path) -> Store {
    Store::open(dir, StoreOptions::default(), engram::projections()).unwrap()
}

fn path(hit: &SearchHit) -> &str {
    hit.path.as_deref().expect("a code hit has a path")
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// Every file under `dir`, read raw.
fn raw_bytes(dir: &Path) -> Vec<u8> {
    let mut all = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            all.extend(raw_bytes(&p));
        } else {
            all.extend(std::fs::read(&p).unwrap());
        }
    }
    all
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn no_secret_reaches_the_store_and_each_is_counted() {
    let repo = tempfile::tempdir().unwrap();
    let store_dir = tempfile::tempdir().unwrap();
    let secrets: Vec<&str> = builtin::FIXTURES
        .iter()
        .filter(|f| f.0 == "secrets")
        .map(|f| f.2)
        .collect();
    let mut source = String::from("def handler():\n    return 1\n");
    for (i, s) in secrets.iter().enumerate() {
        source.push_str(&format!("value_{i} = {s}\n"));
    }
    write(repo.path(), "app/config.py", &source);
    write(
        repo.path(),
        ".env",
        "DATABASE_URL=postgres://u:pw123456@h/db\n",
    );
    write(
        repo.path(),
        "keys/server.pem",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n",
    );
    let store = open(store_dir.path());
    let report = index::index(&store, repo.path(), &IndexOptions::default()).unwrap();
    assert_eq!(report.files_indexed, 1);
    // keys/server.pem; .env is hidden, so the walk never yields it at all.
    assert_eq!(report.skipped_secret_files, 1);
    let counted: u64 = report.redactions.values().sum();
    assert!(counted >= secrets.len() as u64, "{:?}", report.redactions);
    drop(store);
    let raw = raw_bytes(store_dir.path());
    for s in &secrets {
        // The distinctive part of each fixture (after any `key = ` prefix).
        let tail = s
            .rsplit(['=', ' ', ':'])
            .next()
            .unwrap_or(s)
            .trim_matches(|c| c == '"' || c == '\'');
        if tail.len() >= 12 {
            assert!(
                !contains(&raw, tail.as_bytes()),
                "secret {tail:?} reached the store"
            );
        }
    }
    assert!(!contains(&raw, b"pw123456"));
    let store = open(store_dir.path());
    let hits = search(
        &store,
        "handler",
        &SearchOptions {
            top_k: 5,
            ..Default::default()
        },
    )
    .unwrap()
    .hits;
    assert_eq!(path(&hits[0]), "app/config.py");
    // The file's chunks (one per symbol, the header its own) hold the redaction.
    let body: String = (0..20)
        .filter_map(|i| store.get(&format!("chunk:app/config.py:{i}")).unwrap())
        .map(|r| String::from_utf8(r.body).unwrap())
        .collect();
    assert!(body.contains("[REDACTED:aws_access_key]"), "{body}");

    // Excluding instead of redacting drops the chunk.
    let other = tempfile::tempdir().unwrap();
    let store = open(other.path());
    let opts = IndexOptions {
        secret_action: SecretAction::Exclude,
        ..IndexOptions::default()
    };
    let r = index::index(&store, repo.path(), &opts).unwrap();
    // The chunks of app/config.py that held a fixture secret are left out; the ones
    // that held none (a function of its own, with symbol chunks) are kept whole.
    assert!(r.chunks_excluded >= 1);
    for i in 0..20 {
        if let Some(rec) = store.get(&format!("chunk:app/config.py:{i}")).unwrap() {
            let text = String::from_utf8(rec.body).unwrap();
            assert!(
                !text.contains("REDACTED"),
                "an excluded chunk was kept: {text}"
            );
        }
    }
}

fn snapshot(store: &Store) -> BTreeMap<String, Vec<u8>> {
    let keys: Vec<String> = store
        .with_tracker(|db| {
            let mut stmt = db
                .prepare("SELECT key FROM records WHERE key LIKE 'chunk:%' OR key LIKE 'file:%'")?;
            let rows = stmt.query_map([], |r| r.get(0))?;
            Ok(rows.collect::<rusqlite::Result<Vec<String>>>()?)
        })
        .unwrap();
    keys.into_iter()
        .map(|k| {
            let r = store.get(&k).unwrap().unwrap();
            let mut meta = r.meta.clone();
            meta.remove("mtime_ms");
            (k, [serde_json::to_vec(&meta).unwrap(), r.body].concat())
        })
        .collect()
}

#[test]
fn reindexing_after_edits_equals_a_fresh_index() {
    let repo = tempfile::tempdir().unwrap();
    let long: String = (0..200)
        .map(|i| format!("fn f{i}() -> u32 {{ {i} }}\n"))
        .collect();
    write(repo.path(), "src/a.rs", &long);
    write(repo.path(), "src/b.rs", "fn b() {}\n");
    write(repo.path(), "docs/c.md", "# Title\n\ntext\n");
    let store_dir = tempfile::tempdir().unwrap();
    let store = open(store_dir.path());
    let first = index::index(&store, repo.path(), &IndexOptions::default()).unwrap();
    assert_eq!(first.files_indexed, 3);
    let again = index::index(&store, repo.path(), &IndexOptions::default()).unwrap();
    assert_eq!((again.files_indexed, again.files_unchanged), (0, 3));

    // Edit (shorter, so chunks disappear), add, delete, rename.
    write(repo.path(), "src/a.rs", "fn only() {}\n");
    write(repo.path(), "src/new.rs", "fn fresh_function() {}\n");
    std::fs::remove_file(repo.path().join("src/b.rs")).unwrap();
    std::fs::rename(
        repo.path().join("docs/c.md"),
        repo.path().join("docs/moved.md"),
    )
    .unwrap();
    let r = index::index(&store, repo.path(), &IndexOptions::default()).unwrap();
    assert_eq!((r.files_indexed, r.files_deleted), (3, 2), "{r:?}");

    let fresh_dir = tempfile::tempdir().unwrap();
    let fresh = open(fresh_dir.path());
    index::index(&fresh, repo.path(), &IndexOptions::default()).unwrap();
    assert_eq!(snapshot(&store), snapshot(&fresh));
    let hits = search(
        &store,
        "fresh function",
        &SearchOptions {
            top_k: 3,
            ..Default::default()
        },
    )
    .unwrap()
    .hits;
    assert_eq!(path(&hits[0]), "src/new.rs");
    assert!(search(
        &store,
        "f150",
        &SearchOptions {
            top_k: 3,
            ..Default::default()
        }
    )
    .unwrap()
    .hits
    .is_empty());
    assert!(engram::store::verify(store_dir.path()).unwrap().is_sound());
}

#[test]
fn bad_files_are_skipped_and_counted_and_queries_are_plain_text() {
    let repo = tempfile::tempdir().unwrap();
    write(repo.path(), "ok.rs", "fn parse_http_request() {}\n");
    std::fs::write(repo.path().join("blob.bin"), [0u8, 1, 2, 3, 0, 255]).unwrap();
    std::fs::write(repo.path().join("latin1.txt"), [b'c', b'a', 0xe9, b'\n']).unwrap();
    std::fs::write(repo.path().join("big.log"), vec![b'x'; 2 << 20]).unwrap();
    write(repo.path(), "ignored/skip.rs", "fn secret_sauce() {}\n");
    write(repo.path(), ".gitignore", "ignored/\n");
    write(repo.path(), ".engramignore", "*.tmp\n");
    write(repo.path(), "scratch.tmp", "fn scratch() {}\n");
    #[cfg(unix)]
    std::os::unix::fs::symlink(repo.path(), repo.path().join("loop")).unwrap();
    let store_dir = tempfile::tempdir().unwrap();
    let store = open(store_dir.path());
    let r = index::index(&store, repo.path(), &IndexOptions::default()).unwrap();
    assert_eq!(r.files_indexed, 1, "{r:?}");
    assert_eq!((r.skipped_binary, r.skipped_too_large), (2, 1), "{r:?}");
    let q = |s: &str| {
        search(
            &store,
            s,
            &SearchOptions {
                top_k: 5,
                ..Default::default()
            },
        )
        .unwrap()
        .hits
    };
    assert_eq!(path(&q("parse http request")[0]), "ok.rs");
    assert_eq!(path(&q("parseHttpRequest")[0]), "ok.rs");
    // Ignored files were never indexed: no hit of any kind comes from them.
    for (query, file) in [
        ("secret_sauce", "ignored/skip.rs"),
        ("scratch", "scratch.tmp"),
    ] {
        assert!(
            q(query).iter().all(|h| path(h) != file),
            "{file} was indexed"
        );
    }
    assert!(store.get("file:ignored/skip.rs").unwrap().is_none());
    assert!(store.get("file:scratch.tmp").unwrap().is_none());
    for hostile in [
        "\"unbalanced",
        "NEAR(a b)",
        "a* OR -b",
        "col:umn",
        ")))",
        "",
    ] {
        let _ = q(hostile); // no FTS5 syntax error
    }
    assert!(search(
        &store,
        "x",
        &SearchOptions {
            top_k: 5,
            path_glob: Some("[".into()),
            ..Default::default()
        }
    )
    .is_err());
    assert!(index::index(
        &store,
        &repo.path().join("missing"),
        &IndexOptions::default()
    )
    .is_err());
}

#[test]
fn huge_files_and_absurdly_deep_trees_are_skipped_not_fatal() {
    let repo = tempfile::tempdir().unwrap();
    write(repo.path(), "top.rs", "fn top_level_marker() {}\n");
    // 50 MiB of text: over the size limit, skipped without being read.
    let f = std::fs::File::create(repo.path().join("huge.txt")).unwrap();
    f.set_len(50 << 20).unwrap();
    // 10,000 nested directories: far past PATH_MAX, so made relative to a directory
    // descriptor (Python's os.mkdir with dir_fd), one level at a time.
    let status = std::process::Command::new("python3")
        .arg("-c")
        .arg(
            "import os, sys\n\
             fd = os.open(sys.argv[1], os.O_RDONLY)\n\
             for _ in range(10000):\n\
             \x20   os.mkdir('d', dir_fd=fd)\n\
             \x20   nfd = os.open('d', os.O_RDONLY, dir_fd=fd)\n\
             \x20   os.close(fd)\n\
             \x20   fd = nfd\n\
             f = os.open('deep.rs', os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)\n\
             os.write(f, b'fn deep() {}\\n')\n",
        )
        .arg(repo.path())
        .status()
        .unwrap();
    assert!(status.success());
    let store_dir = tempfile::tempdir().unwrap();
    let store = open(store_dir.path());
    let r = index::index(&store, repo.path(), &IndexOptions::default()).unwrap();
    assert_eq!(r.skipped_too_large, 1, "{r:?}");
    assert!(store.get("file:top.rs").unwrap().is_some());
    // Whatever part of the deep tree the walk could reach, the run completed and the
    // store is sound.
    assert!(engram::store::verify(store_dir.path()).unwrap().is_sound());
    let again = index::index(&store, repo.path(), &IndexOptions::default()).unwrap();
    assert_eq!(again.files_indexed, 0, "{again:?}");
}

/// Issue 40: a token used as a file name, or a directory named by a key id, was stored
/// verbatim: paths are keys, metadata and snippet headers. Now a path goes through
/// the redactor too, into a stored form that every run derives alike from the real
/// one, so an edited file is re-indexed in place, not duplicated.
#[test]
fn secrets_in_file_and_directory_names_never_reach_the_store_and_reindexing_finds_them() {
    const TOKEN: &str = "ghp_Zq8wLr2TmV9xKc4YpB7nJd3HsF6gQa1Ue5Wi";
    const KEY_ID: &str = "AKIAQ3EGRT7WXYZ2PLMN";
    let repo = tempfile::tempdir().unwrap();
    write(
        repo.path(),
        &format!("notes/{TOKEN}.txt"),
        "the quarterly billing checklist\n",
    );
    write(
        repo.path(),
        &format!("keys/{KEY_ID}/deploy.md"),
        "# Deploy steps\n\nrotate the staging credentials\n",
    );
    write(repo.path(), "src/lib.rs", "pub fn answer() -> u32 { 42 }\n");
    let store_dir = tempfile::tempdir().unwrap();
    let store = open(store_dir.path());
    let opts = IndexOptions::default();
    let first = index::index(&store, repo.path(), &opts).unwrap();
    assert_eq!(first.files_indexed, 3, "{first:?}");
    let found = |store: &Store, query: &str| -> Vec<String> {
        let hits = search(
            store,
            query,
            &SearchOptions {
                top_k: 3,
                ..Default::default()
            },
        )
        .unwrap()
        .hits;
        hits.iter().map(|h| path(h).to_string()).collect()
    };
    let billing = found(&store, "quarterly billing checklist");
    assert!(
        billing[0].starts_with("notes/[REDACTED:github_token~") && billing[0].ends_with("].txt"),
        "{billing:?}"
    );
    let deploy = found(&store, "rotate staging credentials");
    assert!(deploy[0].ends_with("]/deploy.md"), "{deploy:?}");

    // Unchanged: nothing re-read. Edited: re-indexed in place, not added beside.
    let again = index::index(&store, repo.path(), &opts).unwrap();
    assert_eq!((again.files_indexed, again.files_unchanged), (0, 3));
    write(
        repo.path(),
        &format!("notes/{TOKEN}.txt"),
        "the yearly invoicing runbook\n",
    );
    let edited = index::index(&store, repo.path(), &opts).unwrap();
    assert_eq!(
        (edited.files_indexed, edited.files_deleted),
        (1, 0),
        "{edited:?}"
    );
    let files: u64 = store
        .with_tracker(|db| {
            Ok(db.query_row("SELECT count(*) FROM code_files", [], |r| {
                r.get::<_, i64>(0)
            })? as u64)
        })
        .unwrap();
    assert_eq!(files, 3);
    assert_eq!(found(&store, "yearly invoicing runbook")[0], billing[0]);
    let body = store
        .get(&format!("chunk:{}:0", billing[0]))
        .unwrap()
        .map(|r| String::from_utf8(r.body).unwrap())
        .unwrap_or_default();
    assert!(
        body.contains("yearly") && !body.contains("quarterly"),
        "{body}"
    );

    // Removed: its records go.
    std::fs::remove_dir_all(repo.path().join("keys")).unwrap();
    let removed = index::index(&store, repo.path(), &opts).unwrap();
    assert_eq!(removed.files_deleted, 1, "{removed:?}");
    drop(store);

    let raw = raw_bytes(store_dir.path());
    for secret in [TOKEN, KEY_ID] {
        for piece in secret.as_bytes().windows(10) {
            assert!(
                !contains(&raw, piece),
                "{:?} of a secret path reached the store",
                String::from_utf8_lossy(piece)
            );
        }
    }
    assert!(engram::store::verify(store_dir.path()).unwrap().is_sound());
}

/// A path row of the secret allowlists (`[[path]]`) applies where the index found the
/// file, and only to its rules: the WHATWG URL test data keeps its userinfo test
/// vector, the same line in any other file is redacted, and a token beside it in the
/// test data is redacted all the same.
#[test]
fn a_path_row_of_the_allowlists_applies_only_to_its_files_and_rules() {
    let repo = tempfile::tempdir().unwrap();
    let store_dir = tempfile::tempdir().unwrap();
    let vector = r#"    "href": "https://user:pass%5B%7F@foo/bar","#;
    let token = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8";
    let text = format!("[\n  {{\n{vector}\n    \"note\": \"{token}\"\n  }}\n]\n");
    write(repo.path(), "tests/urltestdata.json", &text);
    write(repo.path(), "app/links.json", &text);
    let store = open(store_dir.path());
    let report = index::index(&store, repo.path(), &IndexOptions::default()).unwrap();
    assert_eq!(report.files_indexed, 2);
    let body = |rel: &str| -> String {
        (0..10)
            .filter_map(|i| store.get(&format!("chunk:{rel}:{i}")).unwrap())
            .map(|r| String::from_utf8(r.body).unwrap())
            .collect()
    };
    let test_data = body("tests/urltestdata.json");
    assert!(test_data.contains("user:pass%5B%7F@foo"), "{test_data}");
    assert!(!test_data.contains(token) && test_data.contains("[REDACTED:github_token]"));
    let other = body("app/links.json");
    assert!(!other.contains("pass%5B%7F"), "{other}");
    assert!(
        other.contains("[REDACTED:database_url_password]"),
        "{other}"
    );
    assert_eq!(report.redactions.get("database_url_password"), Some(&1));
}

#[test]
fn the_graph_signal_brings_in_code_the_best_hits_call_and_are_called_by() {
    use engram::index::graph::Confidence;
    use engram::search::{GraphSignal, HitKind};
    let repo = tempfile::tempdir().unwrap();
    write(
        repo.path(),
        "shop/orders.py",
        "from shop.tally import tally_rows\n\n\ndef checkout_cart(cart):\n    \"\"\"Checkout the cart.\"\"\"\n    n = tally_rows(cart.items)\n    return n\n",
    );
    // Shares no word with the query: only the call from `checkout_cart` links it.
    write(
        repo.path(),
        "shop/tally.py",
        "def tally_rows(rows):\n    return len(rows)\n",
    );
    write(
        repo.path(),
        "shop/views.py",
        "from shop.orders import checkout_cart\n\n\ndef on_button(request):\n    return checkout_cart(request.session)\n",
    );
    write(
        repo.path(),
        "shop/misc.py",
        "def format_banner(text):\n    return text.upper()\n",
    );
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    index::index(&store, repo.path(), &IndexOptions::default()).unwrap();
    let files = |graph: Option<GraphSignal>| -> Vec<String> {
        let opts = SearchOptions {
            kind: Some(HitKind::File),
            graph,
            ..SearchOptions::default()
        };
        search(&store, "checkout cart", &opts)
            .unwrap()
            .hits
            .iter()
            .map(|h| path(h).to_string())
            .collect()
    };
    let signal = |weight| {
        Some(GraphSignal {
            weight,
            seeds: 3,
            min_confidence: Confidence::Imported,
        })
    };
    let without = files(signal(0.0));
    assert_eq!(without.first().map(String::as_str), Some("shop/orders.py"));
    assert!(!without.iter().any(|p| p == "shop/tally.py"), "{without:?}");
    let with = files(signal(1.0));
    assert_eq!(with.first().map(String::as_str), Some("shop/orders.py"));
    assert!(with.iter().any(|p| p == "shop/tally.py"), "{with:?}");
    assert!(with.iter().any(|p| p == "shop/views.py"), "{with:?}");
    assert!(!with.iter().any(|p| p == "shop/misc.py"), "{with:?}");
    // By default on for files, and off for chunks.
    let default = files(None);
    assert!(default.iter().any(|p| p == "shop/tally.py"), "{default:?}");
    let chunks = search(&store, "checkout cart", &SearchOptions::default()).unwrap();
    let chunk_paths: Vec<&str> = chunks.hits.iter().map(path).collect();
    assert!(!chunk_paths.contains(&"shop/tally.py"), "{chunk_paths:?}");
}

/// A Markdown heading holding the question's words does not take the first place
/// from the code that does the thing: in code search, sections count through the
/// keyword and vector lists, not at a symbol name's weight. Asked for symbols, the
/// section is still found.
#[test]
fn a_markdown_heading_does_not_outrank_the_code_it_describes() {
    use engram::search::HitKind;
    let repo = tempfile::tempdir().unwrap();
    write(
        repo.path(),
        "docs/guide.md",
        "# Guide\n\n## Retry failed webhook deliveries\n\nThe service retries.\n",
    );
    write(
        repo.path(),
        "app/hooks.py",
        "def retry_failed_deliveries(queue):\n    \"\"\"Retry failed webhook deliveries from the queue.\"\"\"\n    for item in queue:\n        item.send()\n",
    );
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    index::index(&store, repo.path(), &IndexOptions::default()).unwrap();
    let query = "retry failed webhook deliveries";
    let hits = search(&store, query, &SearchOptions::default())
        .unwrap()
        .hits;
    assert_eq!(hits.first().map(path), Some("app/hooks.py"), "{hits:?}");
    assert!(hits.iter().any(|h| path(h) == "docs/guide.md"), "{hits:?}");
    let symbols = SearchOptions {
        kind: Some(HitKind::Symbol),
        ..SearchOptions::default()
    };
    let found = search(&store, query, &symbols).unwrap().hits;
    assert!(
        found
            .iter()
            .any(|h| h.key.contains("Retry failed webhook deliveries:section")),
        "{found:?}"
    );
}
