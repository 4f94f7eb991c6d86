#!/usr/bin/env bash
# Build every fuzz target and run each for FUZZ_SECONDS (default 20).
# Needs a nightly toolchain and cargo-fuzz; says so and exits 0 when they are missing.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
if ! cargo +nightly --version >/dev/null 2>&1 || ! cargo +nightly fuzz --help >/dev/null 2>&1; then
  echo "fuzz-smoke: nightly toolchain or cargo-fuzz missing; skipped (tools/setup.sh fuzz installs them)" >&2
  exit 0
fi
seconds="${FUZZ_SECONDS:-20}"
for target in $(cargo +nightly fuzz list); do
  echo "fuzz-smoke: $target for ${seconds}s" >&2
  cargo +nightly fuzz run "$target" -- -max_total_time="$seconds" -rss_limit_mb=4096 2>&1 | tail -n 3
done
