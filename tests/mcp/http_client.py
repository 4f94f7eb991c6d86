"""Drive `engram serve --http` with plain HTTP requests and the official MCP SDK.

usage: http_client.py BASE_URL REPO TOKEN OTHER_REPO_TOKEN WEBHOOK_SECRET REPO_DIR [--bench N]

Checks that no endpoint answers without a valid token (401) or with a token for
another repository (403), that health and stats answer with one, that the push webhook
checks its HMAC and re-indexes, and that the MCP tools work over streamable HTTP
(valid, invalid and hostile calls). Exits non-zero on the first failure.
"""

import asyncio
import hashlib
import hmac
import json
import sys
import time
import urllib.error
import urllib.request

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

BASE, REPO, TOKEN, OTHER, SECRET, REPO_DIR = sys.argv[1:7]


def fail(msg):
    raise AssertionError(msg)


def http(method, path, token=None, body=None, headers=None):
    req = urllib.request.Request(BASE + path, data=body, method=method)
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def plain_http():
    endpoints = [("GET", "/healthz"), ("GET", f"/api/memory/{REPO}/stats"), ("POST", "/mcp"), ("GET", "/mcp")]
    for method, path in endpoints:
        body = b"{}" if method == "POST" else None
        for token in [None, "", "not-a-token", TOKEN + "x", TOKEN[:-1]]:
            status, _ = http(method, path, token, body)
            if status != 401:
                fail(f"{method} {path} with token {token!r} answered {status}, not 401")
        status, _ = http(method, path, OTHER, body)
        if status != 403:
            fail(f"{method} {path} with another repository's token answered {status}, not 403")
    status, body = http("GET", "/healthz", TOKEN)
    if status != 200 or json.loads(body)["status"] != "ok":
        fail(f"healthz: {status} {body}")
    status, body = http("GET", f"/api/memory/{REPO}/stats", TOKEN)
    stats = json.loads(body)
    if status != 200 or stats["files"] < 1:
        fail(f"stats: {status} {body}")
    for bad in ["..%2f..%2fetc", "other-repo", "%00"]:
        status, _ = http("GET", f"/api/memory/{bad}/stats", TOKEN)
        # Refused either way; a token never learns whether another repository exists.
        if status not in (400, 403, 404):
            fail(f"stats of {bad!r} answered {status}")

    # Webhook: HMAC checked, then an incremental re-index.
    with open(REPO_DIR + "/src/pushed.py", "w") as f:
        f.write("def arrived_by_push():\n    return 1\n")
    payload = json.dumps({"ref": "refs/heads/main"}).encode()
    good = "sha256=" + hmac.new(SECRET.encode(), payload, hashlib.sha256).hexdigest()
    for sig in [None, "sha256=" + "0" * 64, good[:-2] + "00", "md5=abc"]:
        headers = {"X-Hub-Signature-256": sig} if sig else {}
        status, _ = http("POST", "/api/webhook/push", None, payload, headers)
        if status != 401:
            fail(f"webhook with signature {sig!r} answered {status}")
    status, body = http("POST", "/api/webhook/push", None, payload, {"X-Hub-Signature-256": good})
    if status != 200 or json.loads(body)["reindexed"]["files_indexed"] != 1:
        fail(f"webhook: {status} {body}")


async def over_mcp(bench):
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
    async with streamable_http_client(BASE + "/mcp", http_client=client) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            await session.initialize()
            names = {t.name for t in (await session.list_tools()).tools}
            if "code_search" not in names or "enrich_prompt" not in names:
                fail(f"tools over HTTP: {names}")
            r = await session.call_tool("code_search", {"query": "arrived by push"})
            hits = json.loads(r.content[0].text)["hits"]
            if r.is_error or not hits or hits[0]["path"] != "src/pushed.py":
                fail(f"code_search over HTTP: {r.content[0].text[:300]}")
            r = await session.call_tool("memory_write_structured", {"text": "HTTP works", "insights": ["context"]})
            if r.is_error:
                fail(f"memory_write_structured over HTTP: {r.content[0].text}")
            try:
                r = await session.call_tool("memory_write", {"txt": "x"})
                if not r.is_error:
                    fail("a bad call over HTTP succeeded")
            except MCPError as e:
                if "unknown argument" not in str(e):
                    fail(f"bad call error: {e}")
            r = await session.call_tool("jit_index_file", {"path": "../../etc/passwd"})
            if not r.is_error:
                fail("path traversal over HTTP was let through")
            for h in ['"x', "NEAR(a b)", "'; DROP TABLE records; --"]:
                r = await session.call_tool("memory_search", {"query": h})
                if r.is_error:
                    fail(f"hostile query {h!r}: {r.content[0].text}")
            if bench:
                for name, mk in [
                    ("code_search", lambda i: {"query": "parse request"}),
                    ("memory_write_structured", lambda i: {"text": f"bench {i}", "insights": ["context"]}),
                ]:
                    lat = []
                    for i in range(bench):
                        t = time.perf_counter()
                        r = await session.call_tool(name, mk(i))
                        lat.append((time.perf_counter() - t) * 1e3)
                        if r.is_error:
                            fail(f"{name}: {r.content[0].text}")
                    lat.sort()
                    print(f"http {name}: p50 {lat[len(lat) // 2]:.2f} ms  p99 {lat[int(len(lat) * 0.99) - 1]:.2f} ms  over {bench} calls")


if __name__ == "__main__":
    bench = int(sys.argv[sys.argv.index("--bench") + 1]) if "--bench" in sys.argv else 0
    try:
        plain_http()
        asyncio.run(over_mcp(bench))
    except AssertionError as e:
        print(f"FAIL: {e}", file=sys.stderr)
        sys.exit(1)
    print("ok")
