"""Hostile calls to `engram serve` over stdio with the official Python MCP SDK.

usage: adversarial.py ENGRAM_BIN STORE_A REPO_A STORE_B REPO_B

Repository B is indexed and remembered first (through its own server) with a canary
word; then the server for repository A, whose tree holds a symlink into B, gets every
string argument of every tool replaced in turn by FTS5 syntax, SQL, traversal paths,
control and invisible characters, oversized text and B's canary and paths. Every call
must be answered (a result or an error that is not a database error), the server must
stay up, nothing of B may come back, and what A had stored must still be there.
Exits non-zero on the first failure.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

try:  # mcp >= 2
    from mcp.shared.exceptions import MCPError as McpError
except ImportError:  # mcp 1.x
    from mcp.shared.exceptions import McpError

CANARY = "zebracanary7731"


def fail(msg):
    raise AssertionError(msg)


def is_error(r):
    return getattr(r, "is_error", None) or getattr(r, "isError", False)


def schema_of(t):
    return getattr(t, "input_schema", None) or getattr(t, "inputSchema", {})


def text_of(r):
    return r.content[0].text if r.content else ""


async def call(session, name, args):
    r = await session.call_tool(name, args)
    if is_error(r):
        fail(f"{name}({args}) failed: {text_of(r)}")
    return json.loads(text_of(r))


def hostile(repo_b):
    return [
        '"unbalanced', "NEAR(a b)", "a* OR -b", "col:umn", "^start", "{a b}:x", "AND", "x OR",
        ")))", "'; DROP TABLE records; --", '" OR 1=1 --', "1); DELETE FROM memories; --",
        "../../etc/passwd", "%2e%2e%2f%2e%2e%2fetc%2fpasswd", "..%5c..%5cwindows", "/etc/passwd",
        os.path.join(repo_b, "src", "secret.rs"), "escape/src/secret.rs", "escape",
        "\x00", "a\x1b]0;x\x07b\x1b[31m", "\U000E0049\u202e", "*", "**/*", "mem:00000000",
        "sym:../x#y:function:1:2", "file:" + os.path.join(repo_b, "src", "secret.rs"),
        CANARY, "x" * 100_000, "",
    ]


def base_args(mid, sid):
    """Valid arguments for every tool (the hostile values replace one at a time)."""
    return {
        "code_search": {"query": "parse", "lang": "rust", "path": "src/**", "kind": "chunk"},
        "symbol_search": {"name": "parse"},
        "find_references": {"name": "parse", "min_confidence": "ambiguous", "limit": 20},
        "find_callers": {"name": "parse", "depth": 2, "min_confidence": "same-name"},
        "impact_analysis": {"target": "src/lib.rs", "depth": 2, "min_confidence": "same-name"},
        "symbols_overview": {"path": "src", "limit": 50},
        "jit_index_file": {"path": "src/lib.rs"},
        "jit_index_directory": {"path": "src"},
        "jit_search": {"query": "parse", "path": "src/**"},
        "register_file": {"path": "src/lib.rs"},
        "memory_write": {"text": "a fact", "tags": ["t"]},
        "memory_search": {"query": "fact"},
        "memory_list_threads": {},
        "memory_write_structured": {
            "text": "a pitfall", "task": "debug", "insights": ["pitfall"], "contexts": ["backend"],
            "tags": ["t"], "symbols": [], "provenance": "agent_observed", "session": sid},
        "memory_search_structured": {
            "query": "pitfall", "task": "debug", "insights": ["pitfall"], "contexts": ["backend"],
            "tags": ["t"], "kind": "memory", "since": "7d", "session": sid},
        "memory_get": {"id": mid},
        "memory_list_structured": {
            "task": "debug", "insights": ["pitfall"], "contexts": ["backend"], "tags": ["t"],
            "kind": "memory", "since": "7d", "session": sid},
        "pattern_load": {"toml": 'name = "todo"\n[[patterns]]\nid = "todo"\nregex = "TODO"\n'},
        "pattern_scan": {"set": "secrets", "key": "file:src/lib.rs"},
        "pattern_scan_memories": {"set": "secrets", "task": "debug", "context": "backend"},
        "pattern_list": {},
        "pattern_delete": {"set": "no-such-set"},
        "audit_read": {"since": "7d", "limit": 20},
        "get_notes": {"name": "build"},
        "set_note": {"name": "build", "value": "cargo build"},
        "coding_start_session": {"description": "work", "tags": ["t"]},
        "coding_end_session": {"id": sid},
        "coding_track_file_change": {
            "path": "src/lib.rs", "action": "edit", "reason": "why", "diff_summary": "d",
            "related_files": ["src/http.rs"], "session": sid},
        "coding_record_error": {
            "error_type": "E", "message": "boom", "stack_trace": "at x", "file": "src/lib.rs",
            "solution": "s", "screenshot": "shot.png", "session": sid, "resolved_by": mid},
        "coding_record_decision": {
            "decision": "d", "rationale": "r", "alternatives": ["a"], "impact": "i", "tags": ["t"],
            "related_files": ["src/lib.rs"], "session": sid},
        "coding_search_errors": {"query": "boom"},
        "coding_suggest_solution": {"error_id": mid},
        "coding_get_project_context": {},
        "coding_analyze_patterns": {},
        "enrich_prompt": {"prompt": "parse request"},
        "memory_update": {"id": sid, "tags": ["t"]},
        "memory_delete": {"id": "mem:ffffffff"},
        "delete_note": {"name": "no-such-note"},
        "search_notes": {"query": "build"},
        "memory_stats": {},
        "memory_stale": {"limit": 5},
        "memory_confirm": {"id": mid},
    }


# Words only repository B holds (the hostile values never contain them).
B_ONLY = ["b-secret-body", "lives in repository b", "b-note-body"]


def leaks(text):
    low = text.lower()
    return any(w in low for w in B_ONLY)


async def seed_b(bin_, store_b, repo_b):
    params = StdioServerParameters(command=bin_, args=["--store", store_b, "serve", "--repo", repo_b],
                                   cwd=repo_b)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            await call(s, "jit_index_directory", {})
            await call(s, "memory_write", {"text": f"{CANARY} lives in repository B"})
            await call(s, "set_note", {"name": "build", "value": f"{CANARY} b-note-body"})
            hits = (await call(s, "code_search", {"query": CANARY}))["hits"]
            if not hits:
                fail("repository B's own server cannot find its canary")


async def attack_a(bin_, store_a, repo_a, repo_b):
    # Every tool listed (the default lists a dozen), so every schema is attacked.
    params = StdioServerParameters(command=bin_, args=["--store", store_a, "serve", "--repo", repo_a, "--tools", "all"],
                                   cwd=repo_a)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            r = await call(s, "jit_index_directory", {})
            mid = (await call(s, "memory_write", {"text": "keep this memory about parsing"}))["id"]
            sid = (await call(s, "coding_start_session", {"description": "adversarial"}))["id"]
            # A secret written in any argument is redacted before it is stored.
            r = await call(s, "memory_write", {"text": "aws key AKIAHNHEOABTCPM7PCMI in config"})
            if r.get("redacted_secrets") != 1:
                fail(f"secret not reported redacted: {r}")
            got = (await call(s, "memory_get", {"id": r["id"]}))["memory"]["text"]
            if "AKIAHNHEOABTCPM7PCMI" in got:
                fail("a secret was stored")
            # The symlink into B was not followed by the indexer.
            for q in [CANARY, "b secret body", "b_secret"]:
                hits = (await call(s, "code_search", {"query": q}))["hits"]
                if any(leaks(json.dumps(h)) for h in hits):
                    fail(f"code from repository B came back for {q!r}: {hits}")

            tools = {t.name: schema_of(t) for t in (await s.list_tools()).tools}
            bases = base_args(mid, sid)
            if set(bases) != set(tools):
                fail(f"base arguments and tools differ: {set(bases) ^ set(tools)}")
            calls = 0
            for name, schema in sorted(tools.items()):
                props = schema.get("properties", {})
                strings = [p for p, d in props.items() if d.get("type") in ("string", "array")]
                for p in strings:
                    for h in hostile(repo_b):
                        args = dict(bases[name])
                        args[p] = [h] if props[p].get("type") == "array" else h
                        calls += 1
                        try:
                            r = await s.call_tool(name, args)
                        except McpError as e:
                            msg = str(e)
                        else:
                            msg = text_of(r)
                            if not is_error(r):
                                json.loads(msg)
                        if leaks(msg):
                            fail(f"{name}({p}={h[:40]!r}) returned repository B: {msg[:300]}")
                        low = msg.lower()
                        if name != "pattern_load" and ("fts5" in low or "sqlite" in low
                                                       or "sql logic" in low or "no such column" in low):
                            fail(f"{name}({p}={h[:40]!r}) reached the database raw: {msg[:300]}")
                        if len(msg.encode()) > 80_000:
                            fail(f"{name}({p}={h[:40]!r}) answered {len(msg)} bytes, over the caps")
                # Still up, still answering.
                await call(s, "pattern_list", {})

            # Nothing was dropped or rewritten by what was sent.
            got = (await call(s, "memory_get", {"id": mid}))["memory"]
            if got["text"] != "keep this memory about parsing":
                fail(f"a stored memory changed: {got}")
            hits = (await call(s, "memory_search", {"query": "keep this memory parsing"}))["hits"]
            if not any(h["key"] == mid for h in hits):
                fail("memory search no longer finds a stored memory")
            if not (await call(s, "code_search", {"query": "parse request"}))["hits"]:
                fail("code search no longer finds indexed code")
            print(f"ok ({calls} hostile calls)")


async def main():
    bin_, store_a, repo_a, store_b, repo_b = sys.argv[1:6]
    await seed_b(bin_, store_b, repo_b)
    await attack_a(bin_, store_a, repo_a, repo_b)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except AssertionError as e:
        print(f"FAIL: {e}", file=sys.stderr)
        sys.exit(1)
