#!/usr/bin/env bash
# Index cost of the languages that got grammars with issue 41 (Kotlin, Swift, Scala,
# Bash, Lua): a tree of real files from packages, indexed cold into a fresh store by
# two engram binaries (BEFORE without the grammars, AFTER with them), alternating,
# RUNS times each, with the built-in embedder (what the grammars cost, not the model).
#
#   tools/langs-index.sh BEFORE_BIN AFTER_BIN [RUNS] [FASTPARSE_CHECKOUT]
#
# The tree: the .kt and .swift files of expo-modules-core 58.1.0 (npm); Debian's
# lua-penlight 1.13.1-3 (its modules) and bash-completion 1:2.11-6 (its
# completions, given a `.bash` extension, which they lack); and, when a checkout of
# com-lihaoyi/fastparse at 385431ec is given, its .scala files. Needs npm, apt-get
# (after `apt-get update`) and dpkg. Prints each run's seconds, then per binary the
# median, the files, chunks and symbols indexed and the store's size.
# Figures: benches/RESULTS.md, "Kotlin, Swift, Scala, Bash and Lua".
set -euo pipefail
before=${1:?usage: tools/langs-index.sh BEFORE_BIN AFTER_BIN [RUNS] [FASTPARSE_CHECKOUT]}
after=${2:?usage: tools/langs-index.sh BEFORE_BIN AFTER_BIN [RUNS] [FASTPARSE_CHECKOUT]}
runs=${3:-3}
fastparse=${4:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tree="$work/tree"
mkdir -p "$tree"/kotlin-swift "$tree"/lua "$tree"/bash "$tree"/scala

# Copy the files under $1 whose names end with one of the other arguments into $2,
# keeping their paths.
copy() {
  local from=$1 to=$2
  shift 2
  python3 - "$from" "$to" "$@" <<'PY'
import os, shutil, sys
src, dst, exts = sys.argv[1], sys.argv[2], tuple(sys.argv[3:])
for dp, dn, fn in os.walk(src):
    dn.sort()
    for f in sorted(fn):
        p = os.path.join(dp, f)
        if f.endswith(exts) and os.path.isfile(p) and not os.path.islink(p):
            t = os.path.join(dst, os.path.relpath(p, src))
            os.makedirs(os.path.dirname(t), exist_ok=True)
            shutil.copyfile(p, t)
PY
}

(cd "$work" && npm pack --silent expo-modules-core@58.1.0 >/dev/null)
mkdir -p "$work/emc" && tar xzf "$work"/expo-modules-core-58.1.0.tgz -C "$work/emc"
copy "$work/emc/package" "$tree/kotlin-swift" .kt .swift
(cd "$work" && apt-get download -qq lua-penlight=1.13.1-3 bash-completion=1:2.11-6 2>/dev/null)
dpkg -x "$work"/lua-penlight_*.deb "$work/pl"
# One copy of each module: the package's other Lua versions' folders link to it.
copy "$work/pl/usr/share/lua" "$tree/lua" .lua
dpkg -x "$work"/bash-completion_*.deb "$work/bc"
for f in "$work"/bc/usr/share/bash-completion/completions/* "$work"/bc/usr/share/bash-completion/bash_completion; do
  if [ -f "$f" ] && [ ! -L "$f" ]; then cp "$f" "$tree/bash/$(basename "$f").bash"; fi
done
if [ -n "$fastparse" ]; then copy "$fastparse" "$tree/scala" .scala; fi
for d in kotlin-swift lua bash scala; do
  echo "$d: $(find "$tree/$d" -type f | wc -l) files, $(find "$tree/$d" -type f -print0 | xargs -0 -r cat | wc -l) lines"
done

declare -A times
for i in $(seq 1 "$runs"); do
  for which in before after; do
    bin=${!which}
    store="$work/store-$which"
    rm -rf "$store"
    start=$(date +%s.%N)
    ENGRAM_EMBEDDER=hash-v2-256 "$bin" --store "$store" index "$tree" --json >"$work/$which.json" 2>/dev/null
    s=$(echo "$(date +%s.%N) - $start" | bc)
    times[$which]="${times[$which]:-} $s"
    echo "run $i $which: $s s"
  done
done
for which in before after; do
  median=$(tr ' ' '\n' <<<"${times[$which]}" | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  counts=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("files", d["files_indexed"], "chunks", d["chunks"], "symbols", d["symbols"])' "$work/$which.json")
  echo "$which: median $median s, $counts, store $(du -sk "$work/store-$which" | cut -f1) KiB"
done
