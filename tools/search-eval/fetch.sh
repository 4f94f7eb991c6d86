#!/usr/bin/env bash
# Fetch the code-search eval's corpus (manifest.tsv next to this script): each archive
# downloaded from its registry, checked against its sha256, unpacked to
# $ENGRAM_EVAL_DATA/src/<name>-<version> (default target/search-eval). The downloading
# and checking is tools/fp-corpus/fetch.sh's; this only points it at this manifest.
#
#   tools/search-eval/fetch.sh
#   cargo bench --bench search_eval
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export ENGRAM_FP_MANIFEST="$here/manifest.tsv"
export ENGRAM_FP_CORPUS="${ENGRAM_EVAL_DATA:-$root/target/search-eval}"
exec "$here/../fp-corpus/fetch.sh"
