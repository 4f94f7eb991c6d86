//! The storage engine on its own: commit a batch, read it back, search vectors,
//! verify. Run with `cargo run --example store_basics`.

use engram::store::{verify, Store, StoreOptions, WriteBatch};
use serde_json::{json, Map};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("engram-example-{}", std::process::id()));
    let store = Store::open(&dir, StoreOptions::default(), Vec::new())?;

    // One atomic batch: two values and their embeddings.
    let mut batch = WriteBatch::new();
    let mut meta = Map::new();
    meta.insert("lang".into(), json!("rust"));
    batch.put(
        "file:src/lib.rs",
        meta.clone(),
        "pub fn add(a: i32, b: i32) -> i32 { a + b }",
    )?;
    batch.put("file:src/main.rs", meta, "fn main() { println!(\"hi\") }")?;
    batch.put_vector("file:src/lib.rs", "example-3d", &[1.0, 0.0, 0.2])?;
    batch.put_vector("file:src/main.rs", "example-3d", &[0.0, 1.0, 0.1])?;
    let info = store.commit(&batch)?;
    println!("committed seq {}..={}", info.first_seq, info.commit_seq);

    let rec = store.get("file:src/lib.rs")?.ok_or("missing")?;
    println!(
        "{} = {:?} (meta {:?})",
        rec.key,
        String::from_utf8_lossy(&rec.body),
        rec.meta
    );

    for hit in store.vector_search("example-3d", &[0.9, 0.1, 0.2], 2)? {
        println!("nearest: {} ({:.3})", hit.key, hit.score);
    }

    let report = verify(&dir)?;
    println!(
        "verify: sound = {}, {} records",
        report.is_sound(),
        report.records
    );
    drop(store);
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
