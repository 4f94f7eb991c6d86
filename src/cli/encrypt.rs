//! `engram encrypt`: seal a store's vectors under a key, or rotate that key
//! (format-spec/encryption.md). The key file is read (or, with `--new-key`, written)
//! here; the store does the sealing, through compaction.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use engram::memory::Memories;
use engram::store::VectorKey;
use serde_json::json;

use super::output::Output;
use super::settings::load_key_file;
use super::{store_dir, store_options, Cli};

pub fn encrypt(cli: &Cli, out: &Output, key_file: &Path, new_key: bool) -> Result<ExitCode> {
    let dir = store_dir(cli)?;
    if new_key {
        let canonical_parent = key_file
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .canonicalize()
            .with_context(|| format!("the folder of {} does not exist", key_file.display()))?;
        let store = dir.canonicalize().unwrap_or_else(|_| dir.clone());
        if canonical_parent.starts_with(&store) {
            anyhow::bail!(
                "the key file {} would be inside the store directory {}: a key kept beside the data it protects protects nothing; choose a path outside it",
                key_file.display(),
                dir.display()
            );
        }
        VectorKey::generate()?.write_new_file(key_file)?;
    }
    let key = load_key_file(key_file, &dir)?;
    let memories = Memories::open_with(&dir, store_options(cli, &dir)?)
        .with_context(|| format!("opening store {}", dir.display()))?;
    let before = memories.store().sealed_key_id()?;
    let pb = out.spinner("sealing vectors (compacting blob.dat)");
    let r = memories.store().seal_vectors(&key);
    pb.finish_and_clear();
    let r = r?;
    let action = if before.is_some() {
        "rotated"
    } else {
        "sealed"
    };
    out.value(
        &json!({
            "action": action,
            "key_id": key.id_hex(),
            "previous_key_id": before,
            "vectors_sealed": r.records_rewritten,
            "bytes_before": r.bytes_before,
            "bytes_after": r.bytes_after,
            "generation": r.generation,
            "key_file": key_file,
        }),
        || {
            format!(
                "{action}: {} vectors sealed under key {} ({}); every engram that opens this store now needs key_file = {} (or ENGRAM_KEY_FILE)",
                r.records_rewritten,
                key.id_hex(),
                before.map_or("the store was plain".to_string(), |b| format!("was {b}")),
                key_file.display()
            )
        },
    )?;
    Ok(ExitCode::SUCCESS)
}
