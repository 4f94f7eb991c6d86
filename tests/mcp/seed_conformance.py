"""Seed conformance: every tool call of the seed systems goes in unchanged.

usage: seed_conformance.py ENGRAM_BIN STORE_DIR REPO_DIR FOREIGN_DIR

REPO_DIR is a checkout whose folder is `widgets` and whose remote is
https://github.com/acme/widgets.git; FOREIGN_DIR is a directory the server does not
serve.

Drives `engram serve --tools all,compat` with the official Python MCP SDK. For each
tool of seeds 000 (TeleCoder), 001 (Kagura) and 003 (Galaxybrain), and the tools the
audit maps seeds 002 and 004 onto, the seed's own call goes in as the seed writes it
(argument names, types, string-encoded values, user_id/project_id/repo); it must
succeed, and its effect is checked through engram's own tools. Also: an alias given
with its canonical name and a different value is refused naming both, and `repo`
naming another repository is refused, listing the names that work; the seeds'
`repo` / `project_id` are accepted as any name the repository answers to (store name,
folder, ".", absolute path, `owner/name`). Exits non-zero on the first failure.
"""

import asyncio
import hashlib
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
try:  # mcp >= 2
    from mcp.shared.exceptions import MCPError as McpError
except ImportError:  # mcp 1.x
    from mcp.shared.exceptions import McpError

COMPAT_TOOLS = {"telecoder_search_code", "telecoder_search_symbol", "telecoder_get_notes",
                "telecoder_set_note", "search_code", "search_symbol"}


def fail(msg):
    raise AssertionError(msg)


def check(cond, msg):
    if not cond:
        fail(msg)


def hash64(key):
    """The seeds' key hash: BLAKE2b-8, person "galaxybrain", little-endian u64."""
    d = hashlib.blake2b(key.encode(), digest_size=8, person=b"galaxybrain").digest()
    return int.from_bytes(d, "little")


def is_error(r):
    return getattr(r, "is_error", None) or getattr(r, "isError", False)


async def call(session, name, args):
    try:
        r = await session.call_tool(name, args)
    except McpError as e:
        fail(f"{name}({args}) refused: {e}")
    text = r.content[0].text if r.content else ""
    if is_error(r):
        fail(f"{name}({args}) failed: {text}")
    return json.loads(text)


async def refused(session, name, args):
    try:
        r = await session.call_tool(name, args)
    except McpError as e:
        return str(e)
    if not is_error(r):
        fail(f"{name}({args}) should have failed: {r.content[0].text[:300]}")
    return r.content[0].text


async def telecoder(s, repo, repo_dir):
    """Seed 000: repo on every call, the TeleCoder names, key/value notes."""
    await call(s, "jit_index_directory", {"repo": repo, "path": repo_dir})  # Index(repo, repoPath)
    for name in ["telecoder_search_code", "search_code"]:
        r = await call(s, name, {"repo": repo, "query": "parse request line", "top_k": 5})
        check(any(h["path"] == "src/http.rs" for h in r["hits"]), f"{name}: {r}")
    for name, args in [("telecoder_search_symbol", {"repo": repo, "symbol": "parse_request", "topK": 3}),
                       ("search_symbol", {"repo": repo, "symbol": "parse_request"})]:
        r = await call(s, name, args)
        check(any(x["name"] == "parse_request" for x in r["symbols"]), f"{name}: {r}")
    await call(s, "telecoder_set_note", {"repo": repo, "key": "test-command", "value": "cargo test --release"})
    r = await call(s, "get_notes", {"name": "test-command"})
    check(r["notes"][0]["text"] == "cargo test --release", f"note not set: {r}")
    r = await call(s, "telecoder_get_notes", {"repo": repo})
    check(any(n["text"] == "cargo test --release" for n in r["notes"]), f"telecoder_get_notes: {r}")
    r = await call(s, "search_notes", {"repo": repo, "query": "cargo"})
    check(len(r["notes"]) == 1, f"search_notes: {r}")
    r = await call(s, "enrich_prompt", {"repo": repo, "prompt": "how is a request line parsed?"})
    check("src/http.rs" in r["context"], f"enrich_prompt: {r['context'][:300]}")
    r = await call(s, "delete_note", {"repo": repo, "key": "test-command"})
    check(r["deleted"] is True, f"delete_note: {r}")
    await refused(s, "get_notes", {"name": "test-command"})
    # Isolation: another repository's name is refused on every tool.
    msg = await refused(s, "telecoder_search_code", {"repo": "someone-elses-repo", "query": "x", "top_k": 1})
    check("repo" in msg and "someone-elses-repo" in msg, f"repo refusal: {msg}")
    msg = await refused(s, "coding_analyze_patterns", {"user_id": "u", "project_id": "other-project"})
    check("project_id" in msg, f"project_id refusal: {msg}")


async def kagura(s, repo):
    """Seed 001: user_id + project_id on every call, JSON-string lists, bool strings."""
    scope = {"user_id": "kiyota", "project_id": repo}
    sid = (await call(s, "coding_start_session", {**scope, "description": "Fix the request parser",
                                                  "tags": '["parser", "bugfix"]'}))["id"]
    r = await call(s, "memory_get", {"id": sid})
    check(r["memory"]["tags"] == ["parser", "bugfix"], f"session tags: {r}")
    change = (await call(s, "coding_track_file_change", {
        **scope, "file_path": "src/http.rs", "action": "edit", "diff": "+ reject bodies over 1 MiB",
        "reason": "large bodies exhausted memory", "related_files": '["src/lib.rs"]',
        "line_range": "2,5", "session_id": sid}))["id"]
    meta = (await call(s, "memory_get", {"id": change}))["memory"]["metadata"]
    check((meta["path"], meta["start_line"], meta["end_line"]) == ("src/http.rs", 2, 5), f"change: {meta}")
    check(meta.get("diff_summary") == "+ reject bodies over 1 MiB", f"diff: {meta}")
    err = (await call(s, "coding_record_error", {
        **scope, "error_type": "TypeError", "message": "cannot unpack None into a tuple",
        "stack_trace": "File src/http.rs, line 4", "file_path": "src/http.rs", "line_number": 4,
        "solution": "return None on a short line", "screenshot_base64": "iVBORw0KGgoAAAANSUhEUg==",
        "tags": '["parser"]', "resolved": "true", "session_id": sid}))["id"]
    m = (await call(s, "memory_get", {"id": err}))["memory"]
    check(m["tags"] == ["parser"] and m["metadata"]["file"] == "src/http.rs" and m["metadata"]["line"] == 4, f"error: {m}")
    check("iVBORw0KGgo" not in json.dumps(m) and "sha256" in m["metadata"]["screenshot"], f"screenshot: {m}")
    dec = (await call(s, "coding_record_decision", {
        **scope, "decision": "Parse request lines by hand", "rationale": "no dependency for one split",
        "alternatives": '["httparse", "regex"]', "impact": "src/http.rs", "tags": '["parser"]',
        "related_files": '["src/http.rs"]', "confidence": "0.8", "reviewed": "false", "session_id": sid}))["id"]
    m = (await call(s, "memory_get", {"id": dec}))["memory"]
    check(m["metadata"].get("alternatives") == ["httparse", "regex"], f"decision: {m}")
    r = await call(s, "coding_search_errors", {**scope, "query": "TypeError unpack", "k": "5"})
    top = r["errors"][0]
    check(top["error_type"] == "TypeError" and top["file_path"] == "src/http.rs" and top["line_number"] == 4
          and top["solution"] and "memory" in top, f"search_errors: {top}")
    r = await call(s, "coding_get_project_context", {**scope, "focus": "request parser"})
    check("Focus" in r["context"], f"project context: {r['context'][:300]}")
    await call(s, "coding_analyze_patterns", scope)
    r = await call(s, "coding_end_session", {**scope, "summary": "Parser fixed", "success": "true"})
    check(r["id"] == sid and r["files_touched"] == ["src/http.rs"] and r["errors_encountered"] == 1
          and r["errors_fixed"] == 1 and r["decisions_made"] == 1 and r["duration_minutes"] >= 0, f"end: {r}")
    m = (await call(s, "memory_get", {"id": sid}))["memory"]
    check(m["metadata"]["status"] == "ended" and m["metadata"]["user_summary"] == "Parser fixed", f"ended: {m}")
    msg = await refused(s, "coding_end_session", scope)
    check("no active coding session" in msg, f"end without active: {msg}")


async def by_every_name(s, store_name, repo_dir, foreign_dir):
    """Seeds 000 and 001 name the repository as they know it: any of its names works."""
    real = os.path.realpath(repo_dir)
    good = [store_name, "widgets", ".", real, real + "/src/..", "acme/widgets", "ACME/Widgets"]
    for i, name in enumerate(good):
        await call(s, "telecoder_set_note", {"repo": name, "key": f"name-{i}", "value": f"set via {name}"})
        notes = await call(s, "telecoder_get_notes", {"repo": name})
        check(f"name-{i}" in json.dumps(notes), f"get_notes via {name!r}: {notes}")
        r = await call(s, "telecoder_search_code", {"repo": name, "query": "parse request line", "top_k": 3})
        check(r["hits"], f"search_code via {name!r}: {r}")
        r = await call(s, "symbol_search", {"repo": name, "name": "parse_request"})
        check(r["symbols"], f"symbol_search via {name!r}: {r}")
        scope = {"user_id": "kiyota", "project_id": name}
        r = await call(s, "coding_get_project_context", scope)
        check("context" in r, f"project context via {name!r}: {r}")
        await call(s, "coding_search_errors", {**scope, "query": "TypeError"})
        await call(s, "coding_analyze_patterns", scope)
    # Names of no served repository are refused, with the names that would work.
    for bad in ["gadgets", os.path.realpath(foreign_dir), "acme/gadgets", "widgets/", "Widgets",
                real + "/src", os.path.dirname(real), "*", ""]:
        for arg in ["repo", "project_id"]:
            msg = await refused(s, "telecoder_get_notes" if arg == "repo" else "coding_analyze_patterns",
                                {arg: bad, "user_id": "u"} if arg == "project_id" else {arg: bad})
            check(arg in msg and "not one this caller may reach" in msg, f"{arg}={bad!r}: {msg}")
            for works in [store_name, "widgets", "acme/widgets", real, "."]:
                check(works in msg, f"{arg}={bad!r}: {works!r} not listed in {msg}")


async def galaxybrain(s):
    """Seed 003: context/symbol_keys/memory_id/pattern_set_id/target_key, hash64 ints."""
    sym = (await call(s, "symbol_search", {"name": "parse_request"}))["symbols"][0]["key"]
    w = await call(s, "memory_write_structured", {
        "text": "Never eval( user input in the request parser", "task": "task:debug",
        "insights": ["insight:pitfall"], "context": ["context:auth"], "symbol_keys": [hash64(sym)],
        "tags": ["security"]})
    mid = w["id"]
    check(w["memory"]["key_hash"] == hash64(mid), f"key_hash: {w}")
    m = (await call(s, "memory_get", {"memory_id": mid}))["memory"]
    check(m["symbols"] == [sym] and m["contexts"] == ["auth"] and m["task"] == "debug", f"written: {m}")
    r = await call(s, "memory_search_structured", {"query": "eval user input", "task": "task:debug",
                                                   "context": ["context:auth"], "top_k": 10})
    check(any(h.get("id") == mid and h["task"] == "debug" and h["contexts"] == ["auth"] for h in r["hits"]), f"search: {r}")
    r = await call(s, "memory_search_structured", {"task": "task:debug", "context": ["context:auth"]})
    check([h["id"] for h in r["hits"]] == [mid], f"filter-only search: {r}")
    r = await call(s, "memory_list_structured", {"task": "task:debug", "context": ["context:auth"], "limit": 50, "offset": 0})
    check([x["id"] for x in r["memories"]] == [mid], f"list: {r}")
    regexes = ["eval\\s*\\(", "exec\\s*\\(", "subprocess\\.call.*shell\\s*=\\s*True",
               "password\\s*=\\s*['\"][^'\"]+['\"]"]
    r = await call(s, "pattern_load", {"pattern_set_id": "pat:security", "patterns": regexes,
                                       "description": "Detect common security anti-patterns",
                                       "tags": ["security", "code-smell"]})
    check(r["id"] == "pat:security" and r["patterns"] == 4, f"pattern_load: {r}")
    # The seed's own example set is named like a built-in: refused unless replacing.
    smells = {"pattern_set_id": "pat:security-smells", "patterns": regexes[:2],
              "description": "The seed's security smells"}
    msg = await refused(s, "pattern_load", smells)
    check("replace" in msg, f"built-in name without replace: {msg}")
    r = await call(s, "pattern_load", dict(smells, replace="true"))
    check(r["id"] == "pat:security-smells" and r["patterns"] == 2, f"replace built-in: {r}")
    r = await call(s, "pattern_list", {})
    smell_sets = [x for x in r["sets"] if x["id"] == "pat:security-smells"]
    check(len(smell_sets) == 1 and smell_sets[0]["builtin"] is False, f"replaced set listed: {smell_sets}")
    r = await call(s, "pattern_list", {})
    check(any(x["id"] == "pat:security" and x["tags"] == ["security", "code-smell"] for x in r["sets"]), f"list: {r}")
    chunk = (await call(s, "code_search", {"query": "eval user_input", "path": "src/danger.py"}))["hits"][0]["key"]
    r = await call(s, "pattern_scan", {"pattern_set_id": "pat:security", "target_key": hash64(chunk)})
    check(r["matches"] and r["matches"][0]["text"].startswith("eval")
          and r["matches"][0]["end"] > r["matches"][0]["start"], f"pattern_scan: {r}")
    # The signed form SQLite shows works too.
    signed = hash64(chunk) - (1 << 64) if hash64(chunk) >= 1 << 63 else hash64(chunk)
    r2 = await call(s, "pattern_scan", {"pattern_set_id": "pat:security", "target_key": signed})
    check(r2["matches"] == r["matches"], "signed key hash")
    msg = await refused(s, "pattern_scan", {"pattern_set_id": "pat:security", "target_key": 12345})
    check("no record has key hash 12345" in msg, f"unknown hash: {msg}")
    r = await call(s, "pattern_scan_memories", {"pattern_set_id": "pat:security", "task": "task:debug",
                                                "context": ["context:auth"]})
    check(any(x["key"] == mid for x in r["matches"]), f"scan memories (prefixed filters): {r}")
    msg = await refused(s, "pattern_scan_memories", {"pattern_set_id": "pat:security", "task": "task:juggling"})
    check("juggling" in msg, f"unknown task: {msg}")
    msg = await refused(s, "memory_write_structured", {"text": "x", "context": ["auth"], "contexts": ["ui"]})
    check("\"context\"" in msg and "\"contexts\"" in msg, f"alias conflict: {msg}")
    return mid


async def libraries(s):
    """Seeds 002 and 004 (library APIs) through the tools the audit maps them onto."""
    sid = "3f2b8c1e-9a4d-4e7b-b1c2-5d6e7f8a9b0c"
    r = await call(s, "memory_write_structured", {"text": "Summary: parser hardened", "session_id": sid})
    check((await call(s, "memory_get", {"id": r["id"]}))["memory"]["session"] == sid, "002 insert_summary")
    await call(s, "memory_search", {"query": "parser hardened", "top_k": 5})  # 002 similar_text
    await call(s, "memory_list_threads", {"limit": 5})  # 002 recent_summaries
    mid = (await call(s, "memory_write", {"text": "Docs live in docs/", "metadata": {"category": "documentation"}}))["id"]
    m = (await call(s, "memory_get", {"memory_id": mid}))["memory"]
    check(m["metadata"] == {"category": "documentation"}, f"004 add_memory: {m}")
    r = await call(s, "memory_update", {"memory_id": mid, "text": "Docs live in docs/ and README.md",
                                        "metadata": {"reviewed": True}})
    m = (await call(s, "memory_get", {"memory_id": mid}))["memory"]
    check(m["version"] == 2 and m["text"].endswith("README.md") and m["metadata"]["reviewed"] is True, f"004 update: {m}")
    before = (await call(s, "memory_stats", {}))["total_memories"]
    r = await call(s, "memory_delete", {"memory_id": mid})
    check(r["deleted"] is True, f"004 delete: {r}")
    check((await call(s, "memory_stats", {}))["total_memories"] == before - 1, "004 count after delete")
    await refused(s, "memory_get", {"memory_id": mid})


async def main():
    engram, store, repo_dir, foreign_dir = sys.argv[1:5]
    repo = os.path.basename(os.path.normpath(store))
    params = StdioServerParameters(
        command=engram, args=["--store", store, "serve", "--repo", repo_dir, "--tools", "all,compat"],
        cwd=repo_dir)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            names = {t.name for t in (await s.list_tools()).tools}
            check(COMPAT_TOOLS <= names, f"compat tools not listed: {COMPAT_TOOLS - names}")
            stats = await call(s, "memory_stats", {})
            check(stats["repo"] == repo, f"repo name: {stats}")
            await telecoder(s, repo, repo_dir)
            await kagura(s, repo)
            await by_every_name(s, repo, repo_dir, foreign_dir)
            await galaxybrain(s)
            await libraries(s)
    print("seed conformance: ok")


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except AssertionError as e:
        print(f"FAIL: {e}", file=sys.stderr)
        sys.exit(1)
