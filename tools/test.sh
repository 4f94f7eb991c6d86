#!/usr/bin/env bash
# The whole test suite: what CI runs (.ci/run calls this).
#   ENGRAM_FUZZ_SECONDS=N  also run each fuzz target for N seconds (needs cargo-fuzz + nightly)
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh test
# The suite runs the built-in embedder unless a test chooses one, whether or not a
# quick start installed all-MiniLM-L6-v2 here: `.cargo/config.toml` sets
# ENGRAM_EMBEDDER for every process cargo starts, so a bare `cargo test` agrees.

# Each step's wall time goes to stderr, so a run shows what every check costs.
step() {
  local name=$1 start=$SECONDS
  shift
  "$@"
  echo "test.sh: ${name}: $((SECONDS - start)) s" >&2
}

# Every cargo step uses the `ci` profile (Cargo.toml): release code with this
# crate's debug assertions and overflow checks on. One profile for lints, docs,
# benches and tests means each dependency and build script is built once, not once
# per profile; no separate debug run is needed for the assertions.
profile=(--profile ci)

# Formatting, lints and doc links are part of the suite: a warning fails it.
step "fmt --check" cargo fmt --check
# `--workspace`: the members under crates/ (the secret detector) are linted, documented
# and tested too; a bare `cargo test` at the root covers the root package only.
step "clippy" cargo clippy --quiet "${profile[@]}" --workspace --all-features --all-targets -- -D warnings
step "doc" env RUSTDOCFLAGS="-D warnings" \
  cargo doc --quiet "${profile[@]}" --workspace --no-deps --all-features

# The format layer must build alone, without the store's or the CLI's dependencies.
step "format layer alone" cargo build --quiet "${profile[@]}" --no-default-features --lib
# Benchmarks and tools must keep compiling even though CI does not time them.
step "benches and bins" cargo build --quiet "${profile[@]}" --all-features --benches --bins

# The PostgreSQL backend's tests (tests/it/memory_backends.rs, tests/it/memory_pg.rs) run
# against a real server with pgvector: one of this run's own, in a temporary
# directory, stopped however the run ends. They fail without it, never skip. An
# ENGRAM_TEST_DATABASE_URL already set names a server to use instead.
start_postgres() {
  if [ -n "${ENGRAM_TEST_DATABASE_URL:-}" ]; then
    echo "test.sh: using the PostgreSQL server in ENGRAM_TEST_DATABASE_URL" >&2
    return 0
  fi
  pg_dir=$(mktemp -d)
  trap 'tools/postgres.sh stop "$pg_dir" >/dev/null 2>&1 || true; rm -rf "$pg_dir"' EXIT
  ENGRAM_TEST_DATABASE_URL=$(tools/postgres.sh start "$pg_dir" | tail -n 1)
  export ENGRAM_TEST_DATABASE_URL
}
step "postgres" start_postgres

# Everything: unit, integration, end-to-end (real MCP clients, killed children) and
# doc tests, with every feature.
step "all tests" cargo test "${profile[@]}" --workspace --all-features

# The fuzz targets must keep building (running them is tools/fuzz-smoke.sh's job).
if cargo +nightly --version >/dev/null 2>&1; then
  step "fuzz targets" cargo +nightly build --quiet --manifest-path fuzz/Cargo.toml
else
  echo "test.sh: no nightly toolchain; fuzz targets not built" >&2
fi

if [ -n "${ENGRAM_FUZZ_SECONDS:-}" ]; then
  FUZZ_SECONDS="$ENGRAM_FUZZ_SECONDS" tools/fuzz-smoke.sh
fi
