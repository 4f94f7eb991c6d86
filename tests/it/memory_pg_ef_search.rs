//! The `database_ef_search` setting on the PostgreSQL backend: the `hnsw.ef_search`
//! the server holds while a recall searches vectors, and the setting's checks on the
//! command line, against the server `tools/postgres.sh start` starts
//! (`ENGRAM_TEST_DATABASE_URL`; without it these tests fail, saying how to start one).

use engram::memory::{Memory, MemoryBackend, MemoryError, MemoryFilter};
use engram::memory_pg::{EF_SEARCH, MAX_EF_SEARCH};

use crate::support::pg;

#[test]
fn the_server_searches_with_the_larger_of_the_setting_and_twice_the_candidates() {
    // The setting's default is the backend's.
    assert_eq!(
        engram::config::Config::defaults().get("database_ef_search"),
        EF_SEARCH.to_string()
    );
    let m = pg::memories("ef-search");
    // Top 10 fetches 40 candidates a source: 80 asked of the index.
    assert_eq!(m.vector_ef_search(10).unwrap(), EF_SEARCH.max(80));
    let m = m.with_ef_search(321).unwrap();
    assert_eq!(m.vector_ef_search(10).unwrap(), 321);
    let m = m.with_ef_search(1).unwrap();
    assert_eq!(m.vector_ef_search(10).unwrap(), 80);
    // 100 kept: 400 candidates, 800 asked; 400 kept: capped at pgvector's maximum.
    assert_eq!(m.vector_ef_search(100).unwrap(), 800);
    assert_eq!(m.vector_ef_search(400).unwrap(), MAX_EF_SEARCH);
    for bad in [0, MAX_EF_SEARCH + 1] {
        let Err(MemoryError::Invalid(e)) = pg::memories("ef-search-bad").with_ef_search(bad) else {
            panic!("ef_search {bad} was accepted");
        };
        assert!(e.contains("1 to 1000"), "{e}");
    }
}

#[test]
fn a_recall_at_the_largest_ef_search_finds_what_it_found_at_the_default() {
    let m = pg::memories("ef-search-recall");
    for i in 0..30 {
        m.write(Memory::new(format!(
            "note {i} about the parser of file {i}.rs"
        )))
        .unwrap();
    }
    let filter = MemoryFilter::default();
    let ids = |b: &dyn MemoryBackend| -> Vec<String> {
        b.recall("parser of file 7.rs", &filter, 5)
            .unwrap()
            .into_iter()
            .map(|h| h.memory.id)
            .collect()
    };
    let before = ids(&m);
    assert!(!before.is_empty());
    let m = m.with_ef_search(MAX_EF_SEARCH).unwrap();
    assert_eq!(ids(&m), before);
}

#[test]
fn the_command_line_refuses_an_ef_search_out_of_range_and_recalls_within_it() {
    // Migrated first: the command line does not migrate.
    pg::database();
    let url = pg::url();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "").unwrap();
    let store = dir.path().join(pg::unique_repo("ef-cli"));
    let engram = |ef: &str, args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_engram"))
            .arg("--store")
            .arg(&store)
            .args(args)
            .env("ENGRAM_DATABASE_URL", &url)
            .env("ENGRAM_CONFIG", &config)
            .env("ENGRAM_DATABASE_EF_SEARCH", ef)
            .output()
            .unwrap()
    };
    let out = engram("500", &["remember", "ef_search reaches the team backend"]);
    assert!(out.status.success(), "{out:?}");
    let out = engram("500", &["--json", "recall", "ef_search team backend"]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("ef_search reaches"));
    for bad in ["0", "1001"] {
        let out = engram(bad, &["recall", "anything"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success()
                && err.contains("database_ef_search")
                && err.contains("1 to 1000"),
            "{bad}: {err}"
        );
    }
}
