//! The PostgreSQL import, written in batches, against the local store's import of the
//! same file: the same report (`imported`, `replaced`), the same ids (given, derived
//! from legacy ids, drawn for lines without one) and the same live texts, for a file
//! of many batches whose ids repeat within a batch and across batches; against the
//! server `tools/postgres.sh start` starts (`ENGRAM_TEST_DATABASE_URL`; without it
//! these tests fail, saying how to start one).

use std::collections::BTreeMap;

use engram::memory::{Memories, Memory, MemoryBackend, MemoryFilter};
use serde_json::json;

use crate::support::pg;

/// Lines of a file of several hundred entries: distinct ids, each fifth repeated
/// (at once, in the same batch, and 30 lines later, often in the next one), lines
/// without an id, and legacy (non-`mem:`) ids of which three repeat.
fn lines() -> Vec<String> {
    let mut out = Vec::new();
    for i in 0..400u32 {
        out.push(
            json!({"id": format!("mem:{i:08x}"), "text": format!("entry {i} about the parser")})
                .to_string(),
        );
        if i % 5 == 4 {
            out.push(
                json!({"id": format!("mem:{i:08x}"), "text": format!("entry {i} again")})
                    .to_string(),
            );
            out.push(json!({"id": format!("mem:{:08x}", i.saturating_sub(30)), "text": format!("entry {} once more", i.saturating_sub(30))}).to_string());
        }
        if i % 25 == 0 {
            out.push(json!({"text": format!("entry without an id after {i}")}).to_string());
        }
        if i % 40 == 7 {
            out.push(json!({"id": format!("9b2f6c1e-legacy-{}", i % 3), "text": format!("legacy entry at {i}")}).to_string());
        }
    }
    out
}

/// Every live memory: text by id, ids drawn at random left out (they differ), and
/// how many there are.
fn live(b: &dyn MemoryBackend) -> (BTreeMap<String, String>, usize) {
    let all: Vec<Memory> = b
        .list_filtered(&MemoryFilter::default(), 100_000, 0)
        .unwrap();
    let given = all
        .iter()
        .filter(|m| !m.text.starts_with("entry without an id"))
        .map(|m| (m.id.clone(), m.text.clone()))
        .collect();
    (given, all.len())
}

#[test]
fn a_batched_import_gives_the_ids_counts_and_texts_the_local_import_gives() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("many.jsonl");
    let lines = lines();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let local = Memories::open(dir.path().join("store")).unwrap();
    let p = pg::memories("batched-import");
    // One id already held on both sides before the import.
    for b in [&local as &dyn MemoryBackend, &p] {
        let mut m = Memory::new("held before the import");
        m.id = "mem:00000007".into();
        b.write(m).unwrap();
    }

    let l_report = local.import_file(&file).unwrap();
    let p_report = p.import_file(&file).unwrap();
    assert_eq!(l_report.imported, lines.len() as u64);
    assert_eq!(
        (p_report.imported, p_report.replaced),
        (l_report.imported, l_report.replaced)
    );
    // 80 repeated at once, 80 repeated later, 1 held before, 7 legacy lines of 3 ids.
    assert_eq!(l_report.replaced, 80 + 80 + 1 + 7);
    let (l_live, l_n) = live(&local);
    let (p_live, p_n) = live(&p);
    assert_eq!(p_n, l_n);
    assert_eq!(p_live, l_live);
    assert_eq!(p_live["mem:0000018f"], "entry 399 again");
    assert_eq!(p_live["mem:00000004"], "entry 4 once more");
    assert_eq!(p_live["mem:00000000"], "entry 0 once more");
    assert_eq!(
        p_live
            .values()
            .filter(|t| t.starts_with("legacy entry"))
            .count(),
        3
    );
    // Lines of one id at one version leave one version row, the last line's, as the
    // import entry by entry did (the local store keeps each line in its history).
    let versions = p.history("mem:0000018f").unwrap();
    assert_eq!(versions.len(), 1);
    assert_eq!(versions[0].text, "entry 399 again");

    // The same file again replaces every entry but those drawn a fresh id.
    let again = p.import_file(&file).unwrap();
    let drawn = lines.iter().filter(|l| !l.contains("\"id\"")).count() as u64;
    assert_eq!(again.replaced, again.imported - drawn);
    assert_eq!(p.count().unwrap() as usize, p_n + drawn as usize);
}
