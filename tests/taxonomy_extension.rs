// A binary of its own, not a module of tests/it: a store's taxonomy extensions are
// process-wide (src/memory/taxonomy.rs) and would reach the other tests' stores.

//! A store's `taxonomy.toml` adds task, insight and context values; malformed files
//! are refused with the reason.

use engram::memory::{Memories, Memory, TAXONOMY_FILE};

#[test]
fn extension_file_adds_values_and_bad_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = Memory::new("moving the billing tables to their own database");
    m.task = Some("migration".into());
    // Before the file exists the value is refused, with the valid list.
    let before = Memories::open(dir.path()).unwrap();
    let err = before.write(m.clone()).unwrap_err().to_string();
    assert!(err.contains("debug") && err.contains("x-"), "{err}");
    drop(before);

    std::fs::write(
        dir.path().join(TAXONOMY_FILE),
        "tasks = [\"migration\"]\ncontexts = [\"mobile\"]\n",
    )
    .unwrap();
    let memories = Memories::open(dir.path()).unwrap();
    let mut m2 = m.clone();
    m2.contexts = vec!["Mobile".into()];
    let stored = memories.write(m2).unwrap();
    assert_eq!(stored.task.as_deref(), Some("migration"));
    assert_eq!(stored.contexts, ["mobile"]);
    // An unknown value's error now lists the extension too.
    let mut bad = Memory::new("x");
    bad.task = Some("frobnicate".into());
    let err = memories.write(bad).unwrap_err().to_string();
    assert!(err.contains("migration"), "{err}");

    for (text, why) in [
        ("tasks = \"migration\"", "invalid type"),
        ("tasks = [\"Has Space\"]", "not a valid value"),
        ("colours = [\"red\"]", "unknown field"),
    ] {
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join(TAXONOMY_FILE), text).unwrap();
        let err = Memories::open(other.path())
            .err()
            .expect("refused")
            .to_string();
        assert!(
            err.contains(why) && err.contains(TAXONOMY_FILE),
            "{text}: {err}"
        );
    }
}
