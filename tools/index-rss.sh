#!/usr/bin/env bash
# Peak memory of `engram index` by tree size: the trees are the first N `.rs`, `.md`
# and `.toml` files of the local cargo registry's sources (sorted by crate, then path),
# copied into a scratch directory (past the registry's files, the same files again
# under `rep-K/`); each is indexed into a fresh store with the built-in
# embedder while /proc/PID/status is sampled every 0.2 s.
#
#   tools/index-rss.sh ENGRAM_BIN [FILES...]      (default sizes: 2000 8000)
#
# Prints, per tree: files, lines, wall seconds, lines/s, and the peaks of VmHWM (all
# resident memory), RssAnon (heap, stacks) and RssFile (mapped files: the log and the
# vector cache). Figures and their runs: benches/RESULTS.md, "Resident memory".
set -euo pipefail
bin=${1:?usage: tools/index-rss.sh ENGRAM_BIN [FILES...]}
shift
if [ $# -gt 0 ]; then sizes=("$@"); else sizes=(2000 8000); fi
registry=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/ 2>/dev/null | head -1)
[ -n "$registry" ] || { echo "index-rss: no cargo registry sources found" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for n in "${sizes[@]}"; do
  tree="$work/tree-$n"
  lines=$(python3 - "$registry" "$n" "$tree" <<'PY'
import os, shutil, sys
root, n, dst = sys.argv[1], int(sys.argv[2]), sys.argv[3]
files = []
for crate in sorted(os.listdir(root)):
    for dp, dn, fn in os.walk(os.path.join(root, crate)):
        dn.sort()
        files += [os.path.join(dp, f) for f in sorted(fn) if f.endswith((".rs", ".md", ".toml"))]
lines = 0
# Past the registry's own files the list starts over under `rep-K/` (same sources,
# other paths), so a tree of any size can be made: issue 43 asks for 10M lines.
for i in range(n):
    f = files[i % len(files)]
    rep = i // len(files)
    rel = os.path.relpath(f, root)
    t = os.path.join(dst, f"rep-{rep}", rel) if rep else os.path.join(dst, rel)
    os.makedirs(os.path.dirname(t), exist_ok=True)
    shutil.copyfile(f, t)
    with open(f, "rb") as h:
        lines += h.read().count(b"\n")
print(lines)
PY
)
  store="$work/store-$n"
  start=$(date +%s.%N)
  ENGRAM_EMBEDDER=hash-v2-256 "$bin" --store "$store" index "$tree" >/dev/null 2>&1 &
  pid=$!
  hwm=0; anon=0; file=0
  while kill -0 "$pid" 2>/dev/null; do
    if status=$(cat "/proc/$pid/status" 2>/dev/null); then
      h=$(awk '/^VmHWM/{print $2}' <<<"$status"); a=$(awk '/^RssAnon/{print $2}' <<<"$status")
      f=$(awk '/^RssFile/{print $2}' <<<"$status")
      [ -n "$h" ] && [ "$h" -gt "$hwm" ] && hwm=$h
      [ -n "$a" ] && [ "$a" -gt "$anon" ] && anon=$a
      [ -n "$f" ] && [ "$f" -gt "$file" ] && file=$f
    fi
    sleep 0.2
  done
  wait "$pid"
  end=$(date +%s.%N)
  python3 - "$n" "$lines" "$start" "$end" "$hwm" "$anon" "$file" <<'PY'
import sys
n, lines, start, end, hwm, anon, file = sys.argv[1:]
secs = float(end) - float(start)
print(f"{n} files, {int(lines):,} lines: {secs:.1f} s, {int(lines)/secs:,.0f} lines/s, "
      f"VmHWM {int(hwm)//1024} MB (anon {int(anon)//1024} MB, mapped files {int(file)//1024} MB)")
PY
  rm -rf "$tree" "$store"
done
