#!/usr/bin/env bash
# Clone the localization eval's repositories (tools/localize-eval/repos.tsv) as bare
# repositories under $ENGRAM_LOCALIZE_REPOS (default target/localize-eval/repos), one
# folder per name, and check that each holds its pinned head.
set -euo pipefail
cd "$(dirname "$0")/../.."
dest=${ENGRAM_LOCALIZE_REPOS:-target/localize-eval/repos}
mkdir -p "$dest"
grep -v '^#' tools/localize-eval/repos.tsv | while IFS=$'\t' read -r name _split _lang url head; do
  [ -n "$name" ] || continue
  if [ ! -d "$dest/$name" ]; then
    git clone --quiet --bare "$url" "$dest/$name"
  fi
  if ! git -C "$dest/$name" cat-file -e "$head^{commit}" 2>/dev/null; then
    echo "fetch: $name lacks its pinned head $head" >&2
    exit 1
  fi
done
echo "fetch: repositories in $dest" >&2
