"""Drive `engram serve` (stdio) with the official Python MCP SDK while it asks external
providers: enrich_prompt and code_search with "providers": true.

usage: providers_client.py ENGRAM_BIN STORE_DIR CONFIG_FILE REPO_DIR

The config lists a provider named "docs" that answers and one named "stuck" that
hangs (deadline 2000 ms). Checks, twice over one session (so a kept connection and a
restarted one both work): the store's code and docs' results merged and attributed,
stuck skipped with a note, the call back within stuck's deadline plus slack, and
code_search listing docs' results under "external". Exits non-zero on a failure.
"""

import asyncio
import json
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


async def main():
    engram, store, config, repo = sys.argv[1:5]
    params = StdioServerParameters(
        command=engram,
        args=["--store", store, "--config", config, "serve", "--repo", repo],
    )
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            plain = await call(s, "enrich_prompt", {"prompt": "retry"})
            if "providers" in plain or "docs:" in plain["context"]:
                fail(f"providers asked unasked: {plain}")
            for round_ in range(2):
                started = time.monotonic()
                e = await call(s, "enrich_prompt", {"prompt": "retry", "providers": True})
                took = time.monotonic() - started
                if took > 12:
                    fail(f"round {round_}: enrich_prompt took {took:.1f} s")
                ctx = e["context"]
                for want in ("[source: src/lib.rs:", "[source: docs: docs/retry-policy.md:12-18]",
                             "[note: provider stuck skipped: no answer within its deadline of 2000 ms]"):
                    if want not in ctx:
                        fail(f"round {round_}: {want!r} not in {ctx!r}")
                status = {n["provider"]: n["status"] for n in e["providers"]}
                if status != {"docs": "ok", "stuck": "timeout"}:
                    fail(f"round {round_}: {status}")
                c = await call(s, "code_search", {"query": "retry", "providers": True})
                sources = [x["source"] for x in c["external"]]
                if "[source: docs: docs/retry-policy.md:12-18]" not in sources:
                    fail(f"round {round_}: code_search external: {c}")
                if not c["hits"] or c["hits"][0]["path"] != "src/lib.rs":
                    fail(f"round {round_}: code_search hits: {c['hits']}")
    print("ok")


asyncio.run(main())
