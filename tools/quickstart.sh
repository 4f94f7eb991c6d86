#!/usr/bin/env bash
# Build engram and run its main job on the embedded default (no server, no API key):
# index this repository into a fresh store and search it, import a set of memories and
# recall them by keyword, then verify the store.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
cargo build --quiet --release --bin engram
engram=target/release/engram
store="${ENGRAM_STORE:-$(mktemp -d)/store}"
export ENGRAM_STORE="$store"

echo "== store: $store"
echo "== index this repository (secrets are redacted before anything is written)"
$engram index .
echo "== search 'commit record chain'"
$engram search "commit record chain" --top-k 3
echo "== memories"
$engram import examples/memories.jsonl
$engram remember "Quick start ran: the store accepts writes" --tag quickstart
echo "== recall 'sqlite wal readers'"
$engram recall "sqlite wal readers" --top-k 3
echo "== recall 'parse http request'"
$engram recall "parse http request" --top-k 3
echo "== stats"
$engram stats
echo "== verify"
$engram verify
