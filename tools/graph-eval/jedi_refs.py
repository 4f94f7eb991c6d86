"""Compare `engram refs` with jedi's `Script.get_references` on a pinned third-party
Python package: precision and recall, micro-averaged, per minimum confidence.

usage: python3 tools/graph-eval/jedi_refs.py ENGRAM_BIN [--package requests==2.32.3]
           [--count 100] [--work DIR] [--floor PRECISION,RECALL]

--floor makes it a check (the CI smoke test in tests/it/code_graph.rs): exit 1 when precision
or recall at confidence `imported` is below the given floor.

The package's wheel is fetched with `pip download --no-deps` (into --work, default a
temporary directory) and unpacked; engram indexes the unpacked tree into a fresh store.
Definitions are chosen by a fixed rule: every function, method and class engram finds
whose name is not a dunder (`__init__`, …), sorted by path and line, then `count` of
them evenly spaced (index floor(i * N / count)). For each, jedi is asked for the
references of the defining name (project = the unpacked tree) and engram for
`refs --at PATH:LINE --min-confidence ambiguous`.

What is compared. engram reports call sites (`call`, `construct`) and import
statements naming the definition (`import`, by line); jedi reports every use of the
name. A jedi reference counts as a call reference when the name is followed by `(`,
and as an import when it sits in an import statement. Precision: engram's references
that jedi reports too (as any use), over engram's. Recall: jedi's call and import
references that engram reports, over jedi's; recall against every jedi use (names
passed as values, attribute reads, annotations) is printed beside it. A definition's
own name, and other definitions of the name jedi links to it (overloads, conditional
fallbacks), are left out of both. Positions: path, line and column for calls; path and
line for imports.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile

LEVELS = ["resolved", "imported", "same-name", "ambiguous"]


def fetch(package, work):
    wheels = os.path.join(work, "wheels")
    os.makedirs(wheels, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
                    "-d", wheels, package], check=True)
    name = package.split("==")[0].replace("-", "_").lower()
    whl = [f for f in os.listdir(wheels) if f.lower().startswith(name) and f.endswith(".whl")]
    if not whl:
        sys.exit(f"no wheel for {package} in {wheels}")
    src = os.path.join(work, "src")
    with zipfile.ZipFile(os.path.join(wheels, sorted(whl)[-1])) as z:
        z.extractall(src)
    return src


def engram(bin_, store, *args):
    out = subprocess.run([bin_, "--store", store, *args, "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def choose(bin_, store, count):
    symbols = []
    for f in engram(bin_, store, "overview", "-k", "1000000")["files"]:
        if not f["path"].endswith(".py"):
            continue
        for s in f["symbols"]:
            if s["kind"] in ("function", "method", "class") and not (
                    s["name"].startswith("__") and s["name"].endswith("__")):
                symbols.append((f["path"], s["line"], s["name"]))
    symbols.sort()
    n = len(symbols)
    return [symbols[i * n // count] for i in range(min(count, n))], n


def import_lines(text):
    """Lines that belong to an import statement (parenthesised ones span lines)."""
    out, inside = set(), False
    for i, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if inside or s.startswith(("import ", "from ")):
            out.add(i)
            inside = ("(" in s and ")" not in s) or (inside and ")" not in s)
    return out


def jedi_refs(jedi, project, src, path, line, name):
    full = os.path.join(src, path)
    with open(full, encoding="utf-8") as fh:
        text = fh.read()
    m = re.search(r"\b(?:def|class)\s+(" + re.escape(name) + r")\b", text.splitlines()[line - 1])
    if not m:
        return None
    script = jedi.Script(text, path=full, project=project)
    calls, uses = set(), set()
    cache = {}
    for r in script.get_references(line, m.start(1), include_builtins=False):
        if r.module_path is None:
            continue
        rel = os.path.relpath(str(r.module_path), src)
        if rel.startswith(".."):
            continue
        if (rel, r.line) == (path, line):
            continue  # the definition itself
        if rel not in cache:
            with open(os.path.join(src, rel), encoding="utf-8") as fh:
                t = fh.read()
            cache[rel] = (t.splitlines(), import_lines(t))
        lines, imports = cache[rel]
        if r.line in imports:
            key = (rel, r.line, None)
            calls.add(key)
            uses.add(key)
            continue
        if r.is_definition():
            continue  # another definition of the name (an overload, a fallback)
        key = (rel, r.line, r.column + 1)
        uses.add(key)
        after = lines[r.line - 1][r.column + len(r.name):].lstrip()
        if after.startswith("("):
            calls.add(key)
    return calls, uses


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("engram")
    ap.add_argument("--package", default="requests==2.32.3")
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--work")
    ap.add_argument("--floor", help="PRECISION,RECALL at `imported`: exit 1 below either")
    ap.add_argument("--misses", action="store_true",
                    help="also list jedi's call and import references engram misses at `imported`, with their line")
    a = ap.parse_args()
    import jedi

    work = a.work or tempfile.mkdtemp(prefix="engram-graph-eval-")
    src = fetch(a.package, work)
    store = os.path.join(work, "store")
    subprocess.run([a.engram, "--store", store, "index", src], check=True, capture_output=True)
    chosen, total = choose(a.engram, store, a.count)
    project = jedi.Project(src)
    # Per level: engram refs, of them correct, jedi call refs, of them found, every jedi use, of them found.
    tally = {lv: [0, 0, 0, 0, 0, 0] for lv in LEVELS}
    missed = []
    lines_of_code = sum(
        sum(1 for _ in open(os.path.join(d, f), encoding="utf-8", errors="replace"))
        for d, _, fs in os.walk(src) for f in fs if f.endswith(".py"))
    for path, line, name in chosen:
        j = jedi_refs(jedi, project, src, path, line, name)
        if j is None:
            continue
        jcalls, juses = j
        got = engram(a.engram, store, "refs", "--at", f"{path}:{line}", "--min-confidence", "ambiguous",
                     "-k", "100000")["refs"]
        for lv in LEVELS:
            ok = LEVELS[: LEVELS.index(lv) + 1]
            mine = {(r["path"], r["line"], r.get("column")) for r in got if r["confidence"] in ok}
            t = tally[lv]
            t[0] += len(mine)
            t[1] += len(mine & juses)
            t[2] += len(jcalls)
            t[3] += len(jcalls & mine)
            t[4] += len(juses)
            t[5] += len(juses & mine)
            if lv == "imported" and a.misses:
                missed += [(name, k) for k in sorted(jcalls - mine, key=str)]
    ratio = lambda a, b: a / b if b else float("nan")
    print(f"package {a.package} ({lines_of_code} lines of Python), jedi {jedi.__version__}, "
          f"{len(chosen)} of {total} definitions")
    print("| min confidence | engram refs | precision | jedi call+import refs | recall | jedi uses | recall (all uses) |")
    print("|---|---|---|---|---|---|---|")
    for lv in LEVELS:
        e, ok, jc, jf, ju, uf = tally[lv]
        print(f"| {lv} | {e} | {ratio(ok, e):.3f} | {jc} | {ratio(jf, jc):.3f} | {ju} | {ratio(uf, ju):.3f} |")
    if missed:
        print(f"\nmissed at imported ({len(missed)}):")
        for name, (rel, line, col) in missed:
            with open(os.path.join(src, rel), encoding="utf-8") as fh:
                text = fh.read().splitlines()[line - 1].strip()
            print(f"  {name:28} {rel}:{line}:{col or ''}  {text[:100]}")
    if a.floor:
        want_p, want_r = (float(x) for x in a.floor.split(","))
        e, ok, jc, jf, _, _ = tally["imported"]
        got_p, got_r = ratio(ok, e), ratio(jf, jc)
        # NaN (nothing reported, or nothing to find) fails the check as well.
        if not (got_p >= want_p and got_r >= want_r):
            print(f"below the floor at imported: precision {got_p:.3f} (floor {want_p}), "
                  f"recall {got_r:.3f} (floor {want_r})", file=sys.stderr)
            sys.exit(1)


if __name__ == "__main__":
    main()
