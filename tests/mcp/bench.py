"""Round-trip latency of engram's MCP tools over stdio, with the official Python SDK.

usage: bench.py ENGRAM_BIN STORE_DIR REPO_DIR [N]

Indexes REPO_DIR, then times N calls each (default 300) of code_search (queries
rotating over a few phrasings) and memory_write_structured, and prints p50/p90/p99.
Not run in CI; a measurement tool.
"""

import asyncio
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

QUERIES = ["parse http request", "open the store", "commit a write batch", "search memories",
           "sanitise escape sequences", "vector cache", "hash64 key", "tree-sitter symbols"]


def pct(lat, p):
    return lat[min(len(lat) - 1, int(len(lat) * p))]


async def main():
    bin_, store, repo = sys.argv[1:4]
    n = int(sys.argv[4]) if len(sys.argv) > 4 else 300
    params = StdioServerParameters(command=bin_, args=["--store", store, "serve", "--repo", repo], cwd=repo)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            t = time.perf_counter()
            r = await s.call_tool("jit_index_directory", {})
            print(f"index: {(time.perf_counter() - t):.2f} s  {r.content[0].text[:160]}")
            for name, mk in [
                ("code_search", lambda i: {"query": QUERIES[i % len(QUERIES)], "top_k": 10}),
                ("memory_write_structured", lambda i: {
                    "text": f"bench decision {i}: keep the tracker in WAL mode", "insights": ["decision"],
                    "contexts": ["backend"], "tags": ["bench"]}),
                ("memory_search", lambda i: {"query": f"bench decision {i} WAL"}),
            ]:
                lat = []
                for i in range(n):
                    t = time.perf_counter()
                    r = await s.call_tool(name, mk(i))
                    lat.append((time.perf_counter() - t) * 1e3)
                    if getattr(r, "is_error", None) or getattr(r, "isError", False):
                        raise SystemExit(f"{name} failed: {r.content[0].text}")
                lat.sort()
                print(f"{name:24} p50 {pct(lat, .5):6.2f} ms  p90 {pct(lat, .9):6.2f} ms  "
                      f"p99 {pct(lat, .99):6.2f} ms  ({n} calls)")


asyncio.run(main())
