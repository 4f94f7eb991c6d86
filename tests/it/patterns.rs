//! Pattern sets: built-in fixtures, agreement with the `regex` crate, scans over the
//! log in place, loading, and bad input.

use engram::memory::{Memories, Memory};
use engram::patterns::{
    builtin, compile, CompiledSet, PatternDef, PatternError, PatternSet, Patterns, ScanTarget,
};
use engram::store::WriteBatch;
use proptest::prelude::*;
use serde_json::{json, Map};
use std::path::Path;
use std::sync::LazyLock;

/// Every built-in set compiled once for the whole binary: Hyperscan takes seconds
/// over the secret rules, and the properties below run many cases.
static COMPILED: LazyLock<Vec<CompiledSet>> = LazyLock::new(|| {
    builtin::all()
        .into_iter()
        .map(|s| compile(&s).unwrap())
        .collect()
});

/// A store's compiled-set cache (`patterns/`), filled once by a scan in a warm-up
/// store; each case's fresh store gets a copy, so its scans load instead of compiling.
static WARM_CACHE: LazyLock<(tempfile::TempDir, std::path::PathBuf)> = LazyLock::new(|| {
    let dir = tempfile::tempdir().unwrap();
    let store =
        engram::store::Store::open(dir.path(), Default::default(), engram::projections()).unwrap();
    let patterns = Patterns::new(&store);
    for set in builtin::all() {
        patterns.scan(set.slug(), &ScanTarget::Code).unwrap();
    }
    let cache = dir.path().join("patterns");
    assert!(
        std::fs::read_dir(&cache).unwrap().count() > 0,
        "no compiled set was cached"
    );
    (dir, cache)
});

fn copy_warm_cache(store_dir: &Path) {
    let to = store_dir.join("patterns");
    std::fs::create_dir_all(&to).unwrap();
    for entry in std::fs::read_dir(&WARM_CACHE.1).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

#[test]
fn every_builtin_pattern_has_fixtures_that_behave() {
    for set in builtin::all() {
        let compiled = compile(&set).unwrap();
        for p in &set.patterns {
            let fx: Vec<_> = builtin::FIXTURES
                .iter()
                .filter(|f| f.0 == set.slug() && f.1 == p.id)
                .collect();
            assert!(!fx.is_empty(), "{}/{} has no fixture", set.slug(), p.id);
            let idx = set.patterns.iter().position(|q| q.id == p.id).unwrap();
            for (_, id, yes, no) in fx {
                let hit = |t: &str| {
                    compiled
                        .scan(t.as_bytes())
                        .unwrap()
                        .iter()
                        .any(|h| h.0 == idx)
                };
                assert!(hit(yes), "{id} should match {yes:?}");
                assert!(!hit(no), "{id} should not match {no:?}");
            }
        }
    }
}

fn regex_for(p: &PatternDef) -> regex::bytes::Regex {
    let flags = if p.caseless { "(?i-u)" } else { "(?-u)" };
    regex::bytes::Regex::new(&format!("{flags}{}", p.regex)).unwrap()
}

fn line_strategy() -> impl Strategy<Value = String> {
    let fixtures: Vec<String> = builtin::FIXTURES
        .iter()
        .flat_map(|f| [f.2.to_string(), f.3.to_string()])
        .collect();
    prop_oneof![
        proptest::sample::select(fixtures),
        "[ -~]{0,60}",
        Just(String::new()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Over the stored bodies, in place, a set finds exactly the (pattern, line)
    /// pairs that the `regex` crate finds line by line in the same text.
    #[test]
    fn scans_in_place_agree_with_the_regex_crate(bodies in proptest::collection::vec(proptest::collection::vec(line_strategy(), 1..12), 1..6)) {
        let dir = tempfile::tempdir().unwrap();
        let store = engram::store::Store::open(dir.path(), Default::default(), engram::projections()).unwrap();
        copy_warm_cache(dir.path());
        let mut batch = WriteBatch::new();
        let texts: Vec<String> = bodies.iter().map(|lines| lines.join("\n")).collect();
        for (i, t) in texts.iter().enumerate() {
            batch.put(&format!("chunk:src/f{i}.py:0"), Map::new(), t.as_bytes().to_vec()).unwrap();
        }
        store.commit(&batch).unwrap();
        let patterns = Patterns::new(&store);
        for set in builtin::all() {
            let mut got: Vec<(String, String, u64)> = patterns.scan(set.slug(), &ScanTarget::Code).unwrap()
                .into_iter().map(|m| (m.key, m.pattern, m.line.unwrap())).collect();
            got.sort();
            got.dedup();
            let mut want = Vec::new();
            for (i, t) in texts.iter().enumerate() {
                for p in &set.patterns {
                    let re = regex_for(p);
                    for (n, line) in t.split('\n').enumerate() {
                        if re.is_match(line.as_bytes()) {
                            want.push((format!("chunk:src/f{i}.py:0"), p.id.clone(), n as u64 + 1));
                        }
                    }
                }
            }
            want.sort();
            prop_assert_eq!(got, want, "set {}", set.slug());
        }
    }

    #[test]
    fn scanning_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..2000)) {
        for compiled in COMPILED.iter() {
            let _ = compiled.scan(&bytes).unwrap();
        }
    }
}

#[test]
fn a_bad_regex_is_refused_with_its_index_and_hyperscan_message() {
    let set = PatternSet::parse(
        r#"{"name":"mine","patterns":[{"id":"ok","regex":"abc"},{"id":"broken","regex":"(unclosed"}]}"#,
        false,
    )
    .unwrap();
    match compile(&set).unwrap_err() {
        PatternError::BadRegex {
            index, id, message, ..
        } => {
            assert_eq!((index, id.as_str()), (1, "broken"));
            assert!(!message.is_empty());
        }
        other => panic!("{other}"),
    }
    // Back-references are not Hyperscan syntax either.
    let set = PatternSet::parse(
        "name = \"br\"\n[[patterns]]\nid = \"dup\"\nregex = '(a)\\1'\n",
        true,
    )
    .unwrap();
    assert!(matches!(
        compile(&set),
        Err(PatternError::BadRegex { index: 0, .. })
    ));
    for bad in [
        r#"{"name":"Bad Name","patterns":[{"id":"a","regex":"a"}]}"#,
        r#"{"name":"x","patterns":[]}"#,
        r#"{"name":"x","patterns":[{"id":"a","regex":"a"},{"id":"a","regex":"b"}]}"#,
        r#"{"name":"x","patterns":[{"id":"a","regex":"a","colour":"red"}]}"#,
    ] {
        assert!(PatternSet::parse(bad, false).is_err(), "{bad}");
    }
}

#[test]
fn sets_load_list_and_scan_memories_keys_and_code_with_masking() {
    let dir = tempfile::tempdir().unwrap();
    let memories = Memories::open(dir.path()).unwrap();
    let mut m = Memory::new("deploy note\nthe key is AKIAHNHEOABTCPM7PCMI for staging");
    m.task = Some("debug".into());
    m.contexts = vec!["infra".into()];
    // Written today, the key is redacted before it reaches the log...
    let redacted = memories.write(m.clone()).unwrap();
    assert_eq!(redacted.redacted, 1);
    assert!(!redacted.text.contains("AKIAHNHEOABTCPM7PCMI"));
    memories.forget(&redacted.id).unwrap();
    // ...so the record an older engram stored verbatim is put as it was, for the scan
    // to find.
    m.id = "mem:0000aaaa".into();
    m.validate().unwrap();
    let mut old = WriteBatch::new();
    old.put_keeping_history(&m.id, m.to_meta(), m.text.as_bytes())
        .unwrap();
    memories.store().commit(&old).unwrap();
    let secret = m;
    let plain = memories
        .remember("we call eval( on config, see review", &[], None)
        .unwrap();
    let store = memories.store();
    let mut b = WriteBatch::new();
    let mut meta = Map::new();
    meta.insert("path".into(), json!("app/run.py"));
    meta.insert("start_line".into(), json!(40));
    b.put(
        "chunk:app/run.py:3",
        meta,
        "def run():\n    x = 1\n    subprocess.run(cmd, shell=True)\n",
    )
    .unwrap();
    store.commit(&b).unwrap();

    let patterns = Patterns::new(store);
    let found = patterns
        .scan(
            "pat:secrets",
            &ScanTarget::Memories {
                task: None,
                context: None,
            },
        )
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].key, secret.id);
    assert_eq!(found[0].pattern, "aws_access_key");
    assert_eq!(found[0].line, Some(2));
    assert!(
        !found[0].text.contains("IOSFODNN7EXAMPLE"),
        "secrets are masked: {}",
        found[0].text
    );
    assert_eq!(
        patterns
            .scan(
                "secrets",
                &ScanTarget::Memories {
                    task: Some("debug".into()),
                    context: Some("infra".into())
                }
            )
            .unwrap()
            .len(),
        1
    );
    assert!(patterns
        .scan(
            "secrets",
            &ScanTarget::Memories {
                task: Some("refactor".into()),
                context: None
            }
        )
        .unwrap()
        .is_empty());

    let code = patterns.scan("security-smells", &ScanTarget::Code).unwrap();
    assert_eq!(code.len(), 1);
    assert_eq!(
        (
            code[0].path.as_deref(),
            code[0].line,
            code[0].pattern.as_str()
        ),
        (Some("app/run.py"), Some(42), "shell_true")
    );
    assert_eq!(code[0].text, "shell=True");
    let one = patterns
        .scan("security-smells", &ScanTarget::Key(plain.id.clone()))
        .unwrap();
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].pattern, "eval_exec");

    let mine = PatternSet::parse(r#"{"name":"todo-owner","description":"TODOs without an owner","patterns":[{"id":"bare_todo","regex":"TODO:"}]}"#, false).unwrap();
    patterns.load(mine).unwrap();
    let names: Vec<String> = patterns
        .list()
        .unwrap()
        .into_iter()
        .map(|(s, _)| s.key())
        .collect();
    assert_eq!(
        names,
        [
            "pat:secrets",
            "pat:security-smells",
            "pat:debug-leftovers",
            "pat:todo-owner"
        ]
    );
    assert!(
        patterns.load(builtin::secrets()).is_err(),
        "built-ins cannot be replaced"
    );
    assert!(matches!(
        patterns.scan("pat:nope", &ScanTarget::Code),
        Err(PatternError::UnknownSet(_))
    ));
    // The compiled database is cached and reused.
    assert!(dir.path().join("patterns").read_dir().unwrap().count() >= 2);
    assert!(engram::store::verify(dir.path()).unwrap().is_sound());
}
