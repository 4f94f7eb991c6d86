#!/usr/bin/env python3
"""Replay engram's fusion over the lists the search eval wrote, without re-indexing.

    ENGRAM_EVAL_LISTS=1 cargo bench --bench search_eval
    tools/search-eval/replay_fusion.py target/search-eval/lists.jsonl [--vec NAME] [K S/K/V ...]

Prints, per half (tune, held-out) and query type, where the right answer ranks in each
list (symbol, keyword, vector) and MRR@10 after fusion for each configuration given as
`K S/K/V` (RRF constant, then symbol/keyword/vector weights; default: engram's, `5
1.2/1/0.4`). `--vec NAME` replays with embedder NAME's vector list (the eval writes
every embedder's, e.g. `--vec minilm`; default the first embedder's). As in src/search:
a query shaped like an identifier gets no vector list, and code named exactly as the
query (the symbol list's entries scored f64::MAX) goes first.
Choose on the tune half only.
"""
import json
import sys
from collections import Counter


def is_identifier(q):
    q = q.strip()
    if not q or any(c.isspace() for c in q):
        return False
    camel = any(a.isascii() and a.islower() and b.isascii() and b.isupper() for a, b in zip(q, q[1:]))
    return any(c in q for c in "_.#$/") or "::" in q or camel


def fuse(q, k, ws, wk, wv):
    if is_identifier(q["query"]):
        wv = 0.0
    score, hit = {}, {}
    for entries, w in ((q["sym"], ws), (q["kw"], wk), (q["vec"], wv)):
        if w == 0:
            continue
        for i, (key, _, h) in enumerate(entries):
            if key not in score:
                score[key], hit[key] = 0.0, h
            score[key] += w / (k + i + 1)
    top = max(score.values(), default=0.0)
    for key, s, _ in q["sym"]:
        if s >= 1e299:  # exact name
            score[key] += top
    return [hit[key] for key in sorted(score, key=lambda key: -score[key])]


def first_hit(hits, depth=None):
    for i, h in enumerate(hits[:depth]):
        if h:
            return i + 1
    return None


def bucket(r):
    return "none" if r is None else "1" if r == 1 else "2-3" if r <= 3 else "4-10" if r <= 10 else "11+"


def main():
    queries = [json.loads(line) for line in open(sys.argv[1])]
    args = sys.argv[2:]
    if args[:1] == ["--vec"]:
        name, args = args[1], args[2:]
        for q in queries:
            q["vec"] = q["vecs"][name]
    args = args or ["5", "1.2/1/0.4"]
    configs = [(float(args[i]), *map(float, args[i + 1].split("/"))) for i in range(0, len(args), 2)]
    for half in ("tune", "held-out"):
        for t in ("doc", "identifier", "paraphrase"):
            qs = [q for q in queries if q["half"] == half and q["type"] == t]
            print(f"== {half} {t} ({len(qs)} queries)")
            for name in ("sym", "kw", "vec"):
                ranks = [first_hit([h for _, _, h in q[name]]) for q in qs]
                counts = Counter(bucket(r) for r in ranks)
                mrr = sum(1 / r for r in ranks if r and r <= 10) / max(len(qs), 1)
                cells = " ".join(f"{b}:{counts[b]}" for b in ("1", "2-3", "4-10", "11+", "none"))
                print(f"  {name:4} alone  MRR@10 {mrr:.3f}  answer at {cells}")
            for k, ws, wk, wv in configs:
                ranks = [first_hit(fuse(q, k, ws, wk, wv), 10) for q in qs]
                mrr = sum(1 / r for r in ranks if r) / max(len(qs), 1)
                print(f"  fused K={k:g} w={ws:g}/{wk:g}/{wv:g}  MRR@10 {mrr:.3f}")


if __name__ == "__main__":
    main()
