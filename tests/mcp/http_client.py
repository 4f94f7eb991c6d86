"""Drive `engram serve --http` with plain HTTP requests and the official MCP SDK.

usage: http_client.py BASE_URL REPO TOKEN OTHER_REPO_TOKEN WEBHOOK_SECRET REPO_DIR ENGRAM_BIN STORE [--bench N]

REPO_DIR is a checkout named `widgets` with the remote https://github.com/acme/widgets.git;
ENGRAM_TOKENS_FILE is the server's tokens file.

Checks that no endpoint but /healthz answers without a valid token (401) or with a
token for another repository (403), that /healthz answers 200 without one and says
nothing but "ok", that stats answer with one, that the repository is reached by
every name it answers to (in the URL and in `repo` arguments) and another name is
refused, that tokens made and revoked with `engram token` take effect while the
server runs, that the push webhook checks its HMAC and re-indexes, and that the MCP
tools work over streamable HTTP (valid, invalid and hostile calls). Exits non-zero on
the first failure.
"""

import asyncio
import hashlib
import hmac
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

BASE, REPO, TOKEN, OTHER, SECRET, REPO_DIR, ENGRAM, STORE = sys.argv[1:9]
REAL = os.path.realpath(REPO_DIR)
# Every name the repository answers to in a URL (owner/name as two segments or one).
URL_NAMES = [REPO, "widgets", "acme/widgets", "acme%2Fwidgets", "ACME/Widgets",
             urllib.parse.quote(REAL, safe="")]


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
    endpoints = [("GET", f"/api/memory/{REPO}/stats"), ("POST", "/mcp"), ("GET", "/mcp"),
                 ("GET", "/api/repos"), ("GET", "/no-such-endpoint")]
    # A name that resolves and one that does not look alike without a token.
    endpoints += [("GET", f"/api/memory/{n}/stats") for n in URL_NAMES + ["acme/gadgets", "gadgets"]]
    endpoints += [("POST", f"/mcp/{n}") for n in ["acme/widgets", "acme/gadgets"]]
    for method, path in endpoints:
        body = b"{}" if method == "POST" else None
        for token in [None, "", "not-a-token", TOKEN + "x", TOKEN[:-1]]:
            status, _ = http(method, path, token, body)
            if status != 401:
                fail(f"{method} {path} with token {token!r} answered {status}, not 401")
        status, _ = http(method, path, OTHER, body)
        if status != 403 and path != "/no-such-endpoint":
            fail(f"{method} {path} with another repository's token answered {status}, not 403")
    # Health needs no token, and says nothing else with or without one.
    for token in [None, "not-a-token", OTHER, TOKEN]:
        status, body = http("GET", "/healthz", token)
        if status != 200 or json.loads(body) != {"status": "ok"}:
            fail(f"healthz with token {token!r}: {status} {body}")
    status, body = http("GET", f"/api/memory/{REPO}/stats", TOKEN)
    stats = json.loads(body)
    if status != 200 or stats["files"] < 1:
        fail(f"stats: {status} {body}")
    for name in URL_NAMES:
        status, body = http("GET", f"/api/memory/{name}/stats", TOKEN)
        if status != 200 or json.loads(body)["files"] < 1:
            fail(f"stats by the name {name!r}: {status} {body}")
    status, body = http("GET", "/api/repos", TOKEN)
    names = json.loads(body)["repos"][0]["names"]
    for name in [REPO, "widgets", "acme/widgets", REAL]:
        if name not in names:
            fail(f"/api/repos does not list the name {name!r}: {body}")
    for bad in ["..%2f..%2fetc", "other-repo", "%00", "gadgets", "acme/gadgets",
                urllib.parse.quote(os.path.dirname(REAL), safe="")]:
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


def engram(*args):
    """`engram --store STORE ARGS` with the server's tokens file; its stdout and stderr."""
    r = subprocess.run([ENGRAM, "--store", STORE, *args], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail(f"engram {args}: {r.stderr}")
    return r.stdout, r.stderr


async def mcp_call(path, token, name, args):
    """One call at `path`; the result's text and whether it failed (or was refused)."""
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with streamable_http_client(BASE + path, http_client=client) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            try:
                r = await session.call_tool(name, args)
            except MCPError as e:
                return str(e), True
            return r.content[0].text, bool(r.is_error)


async def names_and_live_tokens():
    # The repository by any name, at any of its URLs.
    for path in ["/mcp", "/mcp/acme/widgets", "/mcp/widgets", f"/mcp/{REPO}"]:
        for name in [".", "widgets", "acme/widgets", REAL, REPO]:
            text, failed = await mcp_call(path, TOKEN, "memory_stats", {"repo": name})
            if failed or json.loads(text)["repo"] != REPO:
                fail(f"memory_stats at {path} with repo {name!r}: {text}")
    text, failed = await mcp_call("/mcp/acme/widgets", TOKEN, "memory_stats", {"project_id": "acme/gadgets"})
    if not failed or "acme/widgets" not in text or "not one this caller may reach" not in text:
        fail(f"a foreign project_id over HTTP: {text}")

    # A token made while the server runs, by owner/name: the only thing on stdout.
    out, err = engram("token", "new", "--name", "live", "--repo", "acme/widgets")
    if not re.fullmatch(r"[0-9a-f]{64}\n", out) or "shown once" not in err:
        fail(f"token new printed {out!r} (stderr {err!r})")
    live = out.strip()
    status, body = http("GET", "/api/memory/widgets/stats", live)
    if status != 200:
        fail(f"a token made while the server runs: {status} {body}")
    text, failed = await mcp_call("/mcp", live, "memory_stats", {"repo": "."})
    if failed:
        fail(f"MCP with a new token: {text}")
    # One made by path (relative to where it is run) reaches it too.
    r = subprocess.run([ENGRAM, "--json", "token", "new", "--name", "by-path", "--repo", "."],
                       cwd=REPO_DIR, capture_output=True, text=True, timeout=60)
    by_path = json.loads(r.stdout)
    if by_path["repos"] != [REAL]:
        fail(f"token new --repo . keeps {by_path}")
    status, body = http("GET", f"/api/memory/{REPO}/stats", by_path["token"])
    if status != 200:
        fail(f"a token made by path: {status} {body}")

    # Listed without secrets, then revoked: refused at once.
    out, _ = engram("--json", "token", "list")
    listed = json.loads(out)["tokens"]
    ids = {t["name"]: t["id"] for t in listed}
    mine = [t for t in listed if t["name"] == "live"]
    if len(mine) != 1 or mine[0]["repos"] != ["acme/widgets"] or not mine[0]["created_ms"]:
        fail(f"token list: {out}")
    if live in out or by_path["token"] in out or TOKEN in out or "sha256" in out:
        fail(f"token list shows a secret: {out}")
    out, _ = engram("token", "list")
    if ids["live"] not in out or "acme/widgets" not in out or live in out:
        fail(f"token list (human): {out}")
    engram("token", "revoke", ids["live"])
    status, _ = http("GET", "/api/memory/widgets/stats", live)
    if status != 401:
        fail(f"a revoked token answered {status}, not 401")
    engram("token", "revoke", ids["by-path"])
    status, _ = http("GET", f"/api/memory/{REPO}/stats", by_path["token"])
    if status != 401:
        fail(f"a revoked token answered {status}, not 401")
    # The others still work.
    status, _ = http("GET", f"/api/memory/{REPO}/stats", TOKEN)
    if status != 200:
        fail(f"the first token after revoking others: {status}")


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
        asyncio.run(names_and_live_tokens())
        asyncio.run(over_mcp(bench))
    except AssertionError as e:
        print(f"FAIL: {e}", file=sys.stderr)
        sys.exit(1)
    print("ok")
