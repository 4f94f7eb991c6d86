#!/usr/bin/env bash
# The whole test suite: what CI runs (.ci/run calls this).
#   ENGRAM_FUZZ_SECONDS=N  also run each fuzz target for N seconds (needs cargo-fuzz + nightly)
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh

# Each step's wall time goes to stderr, so a run shows what every check costs.
step() {
  local name=$1 start=$SECONDS
  shift
  "$@"
  echo "test.sh: ${name}: $((SECONDS - start)) s" >&2
}

# Release builds carry line tables for profiling (Cargo.toml); the suite needs none,
# and leaving them out makes every test binary quicker to build and link.
export CARGO_PROFILE_RELEASE_DEBUG="${CARGO_PROFILE_RELEASE_DEBUG:-0}"

# Formatting, lints and doc links are part of the suite: a warning fails it.
step "fmt --check" cargo fmt --check
# clippy and doc both check in the dev profile with every feature, so the
# dependencies' metadata is built once for the two.
step "clippy" cargo clippy --quiet --all-features --all-targets -- -D warnings
step "doc" env RUSTDOCFLAGS="-D warnings" \
  cargo doc --quiet --no-deps --all-features

# The format layer must build alone, without the store's or the CLI's dependencies.
step "format layer alone" cargo build --quiet --no-default-features --lib
# Benchmarks and tools must keep compiling even though CI does not time them.
# Same profile and features as the release tests below, so nothing is built twice.
step "benches and bins" cargo build --quiet --release --all-features --benches --bins

# The unit tests once in debug mode, so debug assertions and overflow checks run
# (default features: the engine, index, memory, MCP and CLI; the neural embedder's
# dependencies are built once, in release, below); then everything in release mode.
step "unit tests (debug)" cargo test --quiet --lib
step "all tests (release)" cargo test --release --all-features

# The fuzz targets must keep building (running them is tools/fuzz-smoke.sh's job).
if cargo +nightly --version >/dev/null 2>&1; then
  step "fuzz targets" cargo +nightly build --quiet --manifest-path fuzz/Cargo.toml
else
  echo "test.sh: no nightly toolchain; fuzz targets not built" >&2
fi

if [ -n "${ENGRAM_FUZZ_SECONDS:-}" ]; then
  FUZZ_SECONDS="$ENGRAM_FUZZ_SECONDS" tools/fuzz-smoke.sh
fi
