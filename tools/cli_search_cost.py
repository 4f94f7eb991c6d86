#!/usr/bin/env python3
"""What the neural model costs a one-shot CLI search.

usage: python3 tools/cli_search_cost.py ENGRAM_BIN [ENGRAM_BIN ...] [--tree DIR]
           [--query TEXT] [--calls 40]

Copies DIR (default: this repository's src/store) into two temporary git trees,
indexes one with the default embedder (all-MiniLM-L6-v2 when tools/setup.sh has
installed its files) and one with the built-in embedder (ENGRAM_EMBEDDER=hash-v2-256),
then runs `engram search QUERY` in each, CALLS times, every binary and tree
interleaved so machine load falls on all alike. Prints wall and CPU p50 per binary
and tree, and the model's cost: MiniLM's p50 minus the built-in one's, same binary.
The stores live in the temporary directory too (ENGRAM_STORE), removed at the end.
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def run(cmd, cwd, env):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    wall = (time.perf_counter() - t) * 1000
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1000
    return wall, cpu


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("bins", nargs="+")
    ap.add_argument("--tree", default=os.path.join(here, "..", "src", "store"))
    ap.add_argument("--query", default="append a record to the blob log")
    ap.add_argument("--calls", type=int, default=40)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="engram-cli-cost-")
    trees = {}
    try:
        for kind, embedder in (("minilm", None), ("builtin", "hash-v2-256")):
            d = os.path.join(work, f"cost-{kind}")
            shutil.copytree(a.tree, os.path.join(d, "src"))
            subprocess.run(["git", "init", "-q"], cwd=d, check=True)
            env = dict(os.environ)
            env.pop("ENGRAM_EMBEDDER", None)
            env["ENGRAM_STORE"] = os.path.join(work, f"store-{kind}")
            if embedder:
                env["ENGRAM_EMBEDDER"] = embedder
            subprocess.run([a.bins[0], "index", "."], cwd=d, env=env, check=True,
                           stdout=subprocess.DEVNULL, stderr=sys.stderr)
            trees[kind] = (d, env)
        wall = {(b, k): [] for b in a.bins for k in trees}
        cpu = {(b, k): [] for b in a.bins for k in trees}
        for _ in range(a.calls):
            for b in a.bins:
                for k, (d, env) in trees.items():
                    w, c = run([b, "search", a.query], d, env)
                    wall[(b, k)].append(w)
                    cpu[(b, k)].append(c)
        for b in a.bins:
            p = {k: statistics.median(wall[(b, k)]) for k in trees}
            for k in trees:
                print(f"{b} {k}: wall p50 {p[k]:.1f} ms, cpu p50 "
                      f"{statistics.median(cpu[(b, k)]):.1f} ms")
            print(f"{b}: the model costs {p['minilm'] - p['builtin']:.1f} ms a search")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
