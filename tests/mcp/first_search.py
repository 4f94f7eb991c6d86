"""A first code_search in a repository that was never indexed indexes it.

usage: first_search.py ENGRAM_BIN STORE_A REPO_A STORE_B REPO_B

Repository A is small: its first code_search waits for the index and finds the file,
saying it indexed first. Repository B is served with first_index_wait_ms = 0, so its
first call cannot wait: it answers at once with a note of how far indexing got, and
a later call finds the file once the index is done. Exits non-zero on a failure.
"""

import asyncio
import json
import re
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def fail(msg):
    raise AssertionError(msg)


async def call(session, name, args):
    r = await session.call_tool(name, args)
    text = r.content[0].text if r.content else ""
    if getattr(r, "is_error", None) or getattr(r, "isError", False):
        fail(f"{name}({args}) failed: {text}")
    return json.loads(text)


def paths(answer):
    return {h.get("path") for h in answer.get("hits", [])}


async def serve(bin_, store, repo, env, scenario):
    params = StdioServerParameters(command=bin_, args=["--store", store, "serve", "--repo", repo],
                                   cwd=repo, env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await scenario(session)


async def small(session):
    r = await call(session, "code_search", {"query": "reconcile ledger entries"})
    if "src/ledger.py" not in paths(r):
        fail(f"the first code_search did not find the file: {r}")
    if not re.match(r"indexed \d+ files first", r.get("note", "")):
        fail(f"the first code_search did not say it indexed: {r}")
    r = await call(session, "code_search", {"query": "reconcile ledger entries"})
    if "note" in r or "src/ledger.py" not in paths(r):
        fail(f"the second code_search: {r}")


async def large(session):
    r = await call(session, "code_search", {"query": "reconcile ledger entries"})
    note = r.get("note", "")
    if not re.match(r"indexing: (\d+/\d+ files done|listing the repository's files); results are partial$", note):
        fail(f"a first code_search that cannot wait must say how far indexing got: {r}")
    deadline = time.time() + 120
    while True:
        r = await call(session, "code_search", {"query": "reconcile ledger entries"})
        if "src/ledger.py" in paths(r):
            break
        if time.time() > deadline:
            fail(f"the background index never finished: {r}")
        await asyncio.sleep(0.2)


async def main():
    bin_, store_a, repo_a, store_b, repo_b = sys.argv[1:6]
    await serve(bin_, store_a, repo_a, None, small)
    await serve(bin_, store_b, repo_b, {"ENGRAM_FIRST_INDEX_WAIT_MS": "0"}, large)
    print("ok")


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except AssertionError as e:
        print(f"FAIL: {e}", file=sys.stderr)
        sys.exit(1)
