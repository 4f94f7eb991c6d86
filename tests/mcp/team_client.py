"""Drive two `engram serve --http` processes on one PostgreSQL database (the team
backend), each serving repositories A and B, with the official MCP SDK.

usage: team_client.py BASE_1 BASE_2 REPO_A REPO_B TOKEN

Checks that a memory, a note and a coding record written through one server are
found, listed, updated and deleted through the other; that repository B, on the same
servers and database, sees none of A's (memories, pattern scans, pattern sets, audit
trail); and that code tools stay on the local store.
Exits non-zero on the first failure.
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

BASE_1, BASE_2, A, B, TOKEN = sys.argv[1:6]


def fail(msg):
    raise AssertionError(msg)


async def call(base, repo, name, args, expect_error=False):
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
    async with streamable_http_client(f"{base}/mcp/{repo}", http_client=client) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            r = await session.call_tool(name, args)
            if expect_error:
                if not r.is_error:
                    fail(f"{name} in {repo} at {base} succeeded: {r.content[0].text[:300]}")
                return r.content[0].text
            if r.is_error:
                fail(f"{name} in {repo} at {base}: {r.content[0].text}")
            return json.loads(r.content[0].text)


async def main():
    written = await call(BASE_1, A, "memory_write_structured", {
        "text": "the quokkafish rollout waits for the billing freeze",
        "insights": ["decision"],
        "tags": ["rollout"],
    })
    mid = written["id"]
    found = await call(BASE_2, A, "memory_search", {"query": "quokkafish rollout"})
    if not any(h.get("id") == mid for h in found["hits"]):
        fail(f"server 2 does not find what server 1 wrote in A: {json.dumps(found)[:400]}")
    got = await call(BASE_2, A, "memory_get", {"id": mid})
    if "quokkafish" not in json.dumps(got):
        fail(f"memory_get through server 2: {got}")
    listed = await call(BASE_2, A, "memory_list_structured", {"tags": ["rollout"]})
    if [m["id"] for m in listed["memories"]] != [mid]:
        fail(f"memory_list_structured through server 2: {json.dumps(listed)[:400]}")
    updated = await call(BASE_2, A, "memory_update", {"id": mid, "text": "the quokkafish rollout shipped after the freeze"})
    if updated["version"] != 2:
        fail(f"memory_update through server 2: {updated}")
    got = await call(BASE_1, A, "memory_get", {"id": mid})
    if "shipped" not in json.dumps(got):
        fail(f"server 1 does not see server 2's update: {got}")

    await call(BASE_1, A, "set_note", {"name": "deploy-day", "value": "quokkafish ships on thursdays"})
    notes = await call(BASE_2, A, "get_notes", {"name": "deploy-day"})
    if "thursdays" not in json.dumps(notes):
        fail(f"note through server 2: {notes}")
    err = await call(BASE_1, A, "coding_record_error", {"error_type": "TimeoutError", "message": "quokkafish gateway timed out"})
    again = await call(BASE_2, A, "coding_record_error", {"error_type": "TimeoutError", "message": "quokkafish gateway timed out"})
    if again["id"] != err["id"] or again["frequency"] != 2:
        fail(f"an error recorded through both servers is not one entry seen twice: {err} {again}")
    errors = await call(BASE_2, A, "coding_search_errors", {"query": "quokkafish gateway"})
    if "quokkafish" not in json.dumps(errors):
        fail(f"coding_search_errors through server 2: {json.dumps(errors)[:400]}")

    # Repository B, on the same servers and database, sees none of A's.
    for base in (BASE_1, BASE_2):
        found = await call(base, B, "memory_search", {"query": "quokkafish rollout"})
        if "quokkafish" in json.dumps(found):
            fail(f"A's memory leaked into B at {base}: {json.dumps(found)[:400]}")
        listed = await call(base, B, "memory_list_structured", {})
        if listed["memories"]:
            fail(f"B lists memories at {base}: {json.dumps(listed)[:400]}")
        text = await call(base, B, "get_notes", {"name": "deploy-day"}, expect_error=True)
        if "no note" not in text:
            fail(f"A's note from B: {text}")
        text = await call(base, B, "memory_get", {"id": mid}, expect_error=True)
        if "no memory" not in text:
            fail(f"A's memory from B: {text}")
    stats = await call(BASE_1, B, "memory_stats", {})
    if stats["memories"] != 0:
        fail(f"B's memory_stats: {stats}")

    # The audit trail and pattern sets are the repository's, on the database: what
    # server 1 did in A is read through server 2, and B sees none of it.
    await call(BASE_1, A, "pattern_load", {"id": "quokka-names", "patterns": ["quokka[a-z]+"]})
    scanned = await call(BASE_2, A, "pattern_scan_memories", {"set": "quokka-names"})
    if not any(m["key"] == mid for m in scanned["matches"]):
        fail(f"pattern_scan_memories through server 2 in A: {json.dumps(scanned)[:400]}")
    trail = await call(BASE_2, A, "audit_read", {"limit": 500})
    ops = {e["op"] for e in trail["events"]}
    for op in ("memory_write_structured", "set_note", "pattern_load", "pattern_scan_memories"):
        if op not in ops:
            fail(f"audit_read in A through server 2 has no {op}: {sorted(ops)}")
    if trail["total"] < len(trail["events"]):
        fail(f"audit_read total: {trail['total']}")
    # Read events are group-committed by the server that made them; reading through
    # that server commits its own first.
    last = await call(BASE_2, A, "audit_read", {"limit": 1})
    if len(last["events"]) != 1 or last["events"][0]["op"] != "audit_read":
        fail(f"audit_read limit 1 is not the newest call: {last}")
    for base in (BASE_1, BASE_2):
        scanned = await call(base, B, "pattern_scan_memories", {"set": "security-smells"})
        if scanned["matches"]:
            fail(f"B's scan found memories at {base}: {scanned}")
        text = await call(base, B, "pattern_scan_memories", {"set": "quokka-names"}, expect_error=True)
        if "no pattern set" not in text:
            fail(f"A's pattern set from B at {base}: {text}")
        other = await call(base, B, "audit_read", {"limit": 500})
        # B made reads only (some naming A's words); A's writes are not in its trail.
        b_ops = {e["op"] for e in other["events"]}
        a_only = {"memory_write_structured", "set_note", "coding_record_error", "pattern_load",
                  "memory_update"}
        if b_ops & a_only or not b_ops or any(e["repo"] != B for e in other["events"]):
            fail(f"A's audit trail from B at {base}: {json.dumps(other)[:400]}")
        gone = await call(base, B, "pattern_delete", {"set": "quokka-names"})
        if gone["deleted"]:
            fail(f"B deleted A's pattern set at {base}")
    deleted = await call(BASE_2, A, "pattern_delete", {"set": "pat:quokka-names"})
    if not deleted["deleted"]:
        fail(f"pattern_delete in A through server 2: {deleted}")
    text = await call(BASE_1, A, "pattern_scan_memories", {"set": "quokka-names"}, expect_error=True)
    if "no pattern set" not in text:
        fail(f"server 1 still has the set server 2 deleted: {text}")

    # Code stays on each repository's local store.
    hits = (await call(BASE_2, A, "code_search", {"query": "only in alpha"}))["hits"]
    if not hits or hits[0]["path"] != "alpha.py":
        fail(f"code_search in A: {hits}")

    deleted = await call(BASE_2, A, "memory_delete", {"id": mid})
    if not deleted["deleted"]:
        fail(f"memory_delete through server 2: {deleted}")
    text = await call(BASE_1, A, "memory_get", {"id": mid}, expect_error=True)
    if "no memory" not in text:
        fail(f"server 1 still has the memory server 2 deleted: {text}")


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except AssertionError as e:
        print(f"FAIL: {e}", file=sys.stderr)
        sys.exit(1)
    print("ok")
