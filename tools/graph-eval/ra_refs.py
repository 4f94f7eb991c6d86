"""Compare `engram refs` with rust-analyzer's references on a third-party Rust crate:
precision and recall, micro-averaged, per minimum confidence.

usage: python3 tools/graph-eval/ra_refs.py ENGRAM_BIN CRATE_DIR [--count 100] [--work DIR]
           [--floor PRECISION,RECALL]

CRATE_DIR is an unpacked crate (e.g. one under ~/.cargo/registry/src/, copied: rust-analyzer
runs `cargo metadata` in it, offline). rust-analyzer (`rustup component add rust-analyzer`)
writes the crate's LSIF dump (`rust-analyzer lsif CRATE_DIR`), whose reference results are
the reference tool's answers; engram indexes the same tree into a fresh store.

Definitions are chosen by a fixed rule, as `jedi_refs.py` does: every function, method,
struct and enum engram finds in a `.rs` file outside `tests/`, `benches/` and `examples/`,
sorted by path and line, then `count` of them evenly spaced (index floor(i * N / count)).
For each, rust-analyzer's references of the defining name (the range at the name on the
definition's line) and engram's `refs --at PATH:LINE --min-confidence ambiguous`.

What is compared. engram reports call sites (`call`, `construct`) and `use` items naming
the definition (`import`, by line); rust-analyzer reports every use of the name. A
rust-analyzer reference counts as a call reference when the name is followed by `(` or
`::<` (a call, a turbofish call, a tuple struct's constructor), or, for a struct, by `{`
where that is a literal (not `impl S {`, `-> S {`, `for S {`); as an import when it sits
in a `use` item. An enum's references (`E::Variant`, types) are uses only: `Type::f()` is
a call of `f`, a use of `Type`, as `Class.method()` is in `jedi_refs.py`. Precision: engram's references that rust-analyzer reports too (as any use),
over engram's. Recall: rust-analyzer's call and import references that engram reports,
over rust-analyzer's; recall against every use (type positions, values, paths) is printed
beside it. References inside the definition's own span are kept; the definition itself is
left out of both. rust-analyzer analyses the crate with its default features: code behind
a `#[cfg]` they leave off has no range in the dump at all, so engram's references on a
line without any range are not judged (counted and printed apart). Positions: path, line and column for calls; path and line for imports.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict

LEVELS = ["resolved", "imported", "same-name", "ambiguous"]
KINDS = ("function", "method", "struct", "enum")
SKIP_DIRS = ("tests/", "benches/", "examples/")


def engram(bin_, store, *args):
    out = subprocess.run([bin_, "--store", store, *args, "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def ra_version():
    out = subprocess.run(["rust-analyzer", "--version"], check=True, capture_output=True, text=True)
    return out.stdout.strip()


class Lsif:
    """The parts of an LSIF dump the comparison reads: ranges by document, and each
    range's reference result."""

    def __init__(self, path, root):
        self.doc_path = {}  # document id -> path relative to root
        self.range_pos = {}  # range id -> (line0, char0, line0_end, char0_end)
        self.range_doc = {}  # range id -> document id
        self.next = {}  # range or result set id -> result set id
        self.refs_of = {}  # result set id -> reference result id
        self.items = defaultdict(list)  # reference result id -> [(property, range ids)]
        prefix = "file://" + os.path.abspath(root).rstrip("/") + "/"
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                e = json.loads(line)
                label = e.get("label")
                if e["type"] == "vertex":
                    if label == "document" and e["uri"].startswith(prefix):
                        self.doc_path[e["id"]] = e["uri"][len(prefix):]
                    elif label == "range":
                        s, t = e["start"], e["end"]
                        self.range_pos[e["id"]] = (s["line"], s["character"], t["line"], t["character"])
                    continue
                if label == "contains":
                    for v in e["inVs"]:
                        self.range_doc[v] = e["outV"]
                elif label == "next":
                    self.next[e["outV"]] = e["inV"]
                elif label == "textDocument/references":
                    self.refs_of[e["outV"]] = e["inV"]
                elif label == "item":
                    self.items[e["outV"]].append((e.get("property"), e["inVs"]))
        self.by_doc_line = defaultdict(list)
        for rid, doc in self.range_doc.items():
            if rid in self.range_pos and doc in self.doc_path:
                self.by_doc_line[(self.doc_path[doc], self.range_pos[rid][0])].append(rid)

    def references(self, path, line0, char0):
        """(definitions, references) of the name whose range starts at the position:
        lists of (path, line0, char0)."""
        rid = next((r for r in self.by_doc_line.get((path, line0), []) if self.range_pos[r][1] == char0), None)
        if rid is None:
            return None
        rs = self.next.get(rid)
        seen = set()
        while rs is not None and rs not in self.refs_of and rs not in seen:
            seen.add(rs)
            rs = self.next.get(rs)
        result = self.refs_of.get(rs)
        if result is None:
            return None
        defs, refs = [], []
        for prop, ranges in self.items.get(result, []):
            for r in ranges:
                doc = self.range_doc.get(r)
                if doc not in self.doc_path:
                    continue
                p = self.range_pos[r]
                (defs if prop == "definitions" else refs).append((self.doc_path[doc], p[0], p[1]))
        return defs, refs


def use_lines(text):
    """Lines that belong to a `use` item (a braced one spans lines, up to its `;`)."""
    out, inside = set(), False
    for i, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if inside or re.match(r"(pub(\([^)]*\))?\s+)?use\s", s):
            out.add(i)
            inside = ";" not in s
    return out


def choose(bin_, store, count):
    symbols = []
    for f in engram(bin_, store, "overview", "-k", "1000000")["files"]:
        if not f["path"].endswith(".rs") or f["path"].startswith(SKIP_DIRS) or f["path"] == "build.rs":
            continue
        for s in f["symbols"]:
            if s["kind"] in KINDS:
                symbols.append((f["path"], s["line"], s["name"], s["kind"]))
    symbols.sort()
    n = len(symbols)
    return [symbols[i * n // count] for i in range(min(count, n))], n


def ra_refs(lsif, src, cache, path, line, name, kind):
    lines, _ = cache(path)
    keyword = {"function": "fn", "method": "fn", "struct": "struct", "enum": "enum"}[kind]
    m = re.search(r"\b" + keyword + r"\s+(" + re.escape(name) + r")\b", lines[line - 1])
    if not m:
        return None
    got = lsif.references(path, line - 1, m.start(1))
    if got is None:
        return None
    defs, refs = got
    defined = {(p, l0 + 1) for p, l0, _ in defs}
    calls, uses = set(), set()
    for p, l0, c0 in refs:
        if (p, l0 + 1) in defined:
            continue  # the definition itself
        text, uses_at = cache(p)
        if l0 + 1 in uses_at:
            key = (p, l0 + 1, None)
            calls.add(key)
            uses.add(key)
            continue
        key = (p, l0 + 1, c0 + 1)
        uses.add(key)
        before, after = text[l0][:c0], text[l0][c0 + len(name):].lstrip()
        if kind == "enum":
            continue  # an enum is used (`E::Variant`, a type), never called
        called = after.startswith(("(", "::<"))
        # A struct literal (`S { .. }`), but not a type before a block (`impl S {`,
        # `-> S {`, `for S {`, `where … S {`).
        literal = kind == "struct" and after.startswith("{") and not re.search(
            r"(->|\b(impl|for|where|struct|trait|fn)\b)[^;{}()=]*$", before)
        if called or literal:
            calls.add(key)
    return calls, uses


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("engram")
    ap.add_argument("crate")
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--work")
    ap.add_argument("--floor", help="PRECISION,RECALL at `imported`: exit 1 below either")
    a = ap.parse_args()

    work = a.work or tempfile.mkdtemp(prefix="engram-ra-eval-")
    os.makedirs(work, exist_ok=True)
    src = os.path.abspath(a.crate)
    dump = os.path.join(work, "crate.lsif")
    env = dict(os.environ, CARGO_NET_OFFLINE="true")
    with open(dump, "w", encoding="utf-8") as out:
        subprocess.run(["rust-analyzer", "lsif", src], check=True, stdout=out, stderr=subprocess.DEVNULL,
                       env=env)
    lsif = Lsif(dump, src)
    store = os.path.join(work, "store")
    subprocess.run([a.engram, "--store", store, "index", src], check=True, capture_output=True)
    chosen, total = choose(a.engram, store, a.count)

    files = {}

    def cache(rel):
        if rel not in files:
            with open(os.path.join(src, rel), encoding="utf-8") as fh:
                t = fh.read()
            files[rel] = (t.splitlines(), use_lines(t))
        return files[rel]

    # Per level: engram refs, of them correct, RA call refs, of them found, every RA use, of them found.
    tally = {lv: [0, 0, 0, 0, 0, 0] for lv in LEVELS}
    asked = unjudged = 0
    for path, line, name, kind in chosen:
        r = ra_refs(lsif, src, cache, path, line, name, kind)
        if r is None:
            continue
        asked += 1
        rcalls, ruses = r
        got = engram(a.engram, store, "refs", "--at", f"{path}:{line}", "--min-confidence", "ambiguous",
                     "-k", "100000")["refs"]
        # A line rust-analyzer has no range on at all is code it did not analyse (behind
        # a `#[cfg]` its default features leave off): what engram finds there cannot be
        # judged, so it is counted apart.
        seen = [g for g in got if lsif.by_doc_line.get((g["path"], g["line"] - 1))]
        unjudged += len(got) - len(seen)
        for lv in LEVELS:
            ok = LEVELS[: LEVELS.index(lv) + 1]
            mine = {(g["path"], g["line"], g.get("column")) for g in seen if g["confidence"] in ok}
            t = tally[lv]
            t[0] += len(mine)
            t[1] += len(mine & ruses)
            t[2] += len(rcalls)
            t[3] += len(rcalls & mine)
            t[4] += len(ruses)
            t[5] += len(ruses & mine)
    ratio = lambda x, y: x / y if y else float("nan")
    lines_of_code = sum(
        sum(1 for _ in open(os.path.join(d, f), encoding="utf-8", errors="replace"))
        for d, _, fs in os.walk(src) for f in fs if f.endswith(".rs"))
    print(f"crate {os.path.basename(src)} ({lines_of_code} lines of Rust), {ra_version()}, "
          f"{asked} of {len(chosen)} chosen definitions answered, {total} in all; "
          f"{unjudged} engram refs on lines rust-analyzer did not analyse, not judged")
    print("| min confidence | engram refs | precision | RA call+use-item refs | recall | RA uses | recall (all uses) |")
    print("|---|---|---|---|---|---|---|")
    for lv in LEVELS:
        e, ok, rc, rf, ru, uf = tally[lv]
        print(f"| {lv} | {e} | {ratio(ok, e):.3f} | {rc} | {ratio(rf, rc):.3f} | {ru} | {ratio(uf, ru):.3f} |")
    if a.floor:
        want_p, want_r = (float(x) for x in a.floor.split(","))
        e, ok, rc, rf, _, _ = tally["imported"]
        got_p, got_r = ratio(ok, e), ratio(rf, rc)
        if not (got_p >= want_p and got_r >= want_r):
            print(f"below the floor at imported: precision {got_p:.3f} (floor {want_p}), "
                  f"recall {got_r:.3f} (floor {want_r})", file=sys.stderr)
            sys.exit(1)


if __name__ == "__main__":
    main()
