//! Index a directory and search it the way `engram search` does: keyword, vector and
//! symbol matches fused.
//!
//! `cargo run --example search -- DIR "query words"` (the store goes in a temporary
//! directory and is removed afterwards).

use engram::index::{self, IndexOptions};
use engram::search::{search, SearchOptions};
use engram::store::{Store, StoreOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(query)) = (args.next(), args.next()) else {
        eprintln!("usage: search DIR QUERY");
        std::process::exit(2);
    };
    let store_dir = tempfile::tempdir()?;
    let store = Store::open(
        store_dir.path(),
        StoreOptions::default(),
        engram::projections(),
    )?;
    let report = index::index(&store, std::path::Path::new(&dir), &IndexOptions::default())?;
    eprintln!(
        "indexed {} files: {} chunks, {} symbols, {} secrets redacted",
        report.files_indexed,
        report.chunks,
        report.symbols,
        report.redactions.values().sum::<u64>()
    );
    let results = search(&store, &query, &SearchOptions::default())?;
    for hit in results.hits {
        println!(
            "{:.4}  {}:{}-{}  {}",
            hit.score,
            hit.path.unwrap_or_default(),
            hit.start_line.unwrap_or(0),
            hit.end_line.unwrap_or(0),
            hit.snippet
        );
    }
    Ok(())
}
