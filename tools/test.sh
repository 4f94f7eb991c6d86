#!/usr/bin/env bash
# The whole test suite: what CI runs (.ci/run calls this).
#   ENGRAM_FUZZ_SECONDS=N  also run each fuzz target for N seconds (needs cargo-fuzz + nightly)
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh

# Formatting and lints are part of the suite: a warning fails it.
cargo fmt --check
cargo clippy --quiet --release --all-features --all-targets -- -D warnings

# The format layer must build alone, without the store's or the CLI's dependencies.
cargo build --quiet --no-default-features --lib
# Benchmarks and tools must keep compiling even though CI does not time them.
cargo build --quiet --release --benches --bins

cargo test --release --all-features

# The fuzz targets must keep building (running them is tools/fuzz-smoke.sh's job).
if cargo +nightly --version >/dev/null 2>&1; then
  cargo +nightly build --quiet --manifest-path fuzz/Cargo.toml
else
  echo "test.sh: no nightly toolchain; fuzz targets not built" >&2
fi

if [ -n "${ENGRAM_FUZZ_SECONDS:-}" ]; then
  FUZZ_SECONDS="$ENGRAM_FUZZ_SECONDS" tools/fuzz-smoke.sh
fi
