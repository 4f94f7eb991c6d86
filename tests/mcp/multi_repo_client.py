"""Drive one `engram serve --http` serving two repositories, with the official MCP SDK.

usage: multi_repo_client.py BASE_URL REPO_A REPO_B TOKEN_A TOKEN_BOTH WEBHOOK_SECRET REPO_B_DIR

Checks that each repository is reached at /mcp/{repo} by the tokens that name it and
refused (403) to the others, that /api/repos lists what a token may reach, that what is
written in one repository is never found from the other, and that the push webhook
re-indexes the repository in its path. The server has the aliases `bee` (B) and
`shared` (both: a collision): `bee` reaches B in the URL, but not from A's MCP
endpoint; `shared` is refused as ambiguous, naming only the repositories the caller
may reach. Exits non-zero on the first failure.
"""

import asyncio
import hashlib
import hmac
import json
import sys
import urllib.error
import urllib.request

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

BASE, A, B, TOKEN_A, TOKEN_BOTH, SECRET, B_DIR = sys.argv[1:8]


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
    status, body = http("GET", "/api/repos", TOKEN_A)
    listed = [r["repo"] for r in json.loads(body)["repos"]]
    if status != 200 or listed != [A]:
        fail(f"/api/repos for A's token: {status} {body}")
    status, body = http("GET", "/api/repos", TOKEN_BOTH)
    listed = sorted(r["repo"] for r in json.loads(body)["repos"])
    if status != 200 or listed != sorted([A, B]):
        fail(f"/api/repos for both: {status} {body}")
    for method, path in [("GET", f"/api/memory/{B}/stats"), ("POST", f"/mcp/{B}"), ("GET", f"/mcp/{B}")]:
        body = b"{}" if method == "POST" else None
        status, _ = http(method, path, TOKEN_A, body)
        if status != 403:
            fail(f"{method} {path} with A's token answered {status}, not 403")
        status, _ = http(method, path, None, body)
        if status != 401:
            fail(f"{method} {path} without a token answered {status}, not 401")
    # A repository the server does not have: refused to a token that does not name
    # it, exactly as one it has.
    status, _ = http("GET", "/api/memory/not-served/stats", TOKEN_BOTH)
    if status != 403:
        fail(f"stats of an unknown repository answered {status}, not 403")
    # With two repositories there is no default one.
    status, _ = http("POST", "/mcp", TOKEN_BOTH, b"{}")
    if status not in (403, 404):
        fail(f"bare /mcp with two repositories answered {status}")
    # Aliases in the URL: `bee` is B's; `shared` is both's, so ambiguous.
    status, body = http("GET", "/api/memory/bee/stats", TOKEN_BOTH)
    if status != 200:
        fail(f"stats of B by its alias: {status} {body}")
    for path in ["/api/memory/bee/stats", "/mcp/bee"]:
        status, _ = http("GET", path, TOKEN_A)
        if status != 403:
            fail(f"{path} with A's token answered {status}, not 403")
    status, body = http("GET", "/api/memory/shared/stats", TOKEN_BOTH)
    if status != 409 or A.encode() not in body or B.encode() not in body:
        fail(f"an ambiguous name with both's token: {status} {body}")
    status, body = http("GET", "/api/memory/shared/stats", TOKEN_A)
    if status != 409 or A.encode() not in body or B.encode() in body:
        fail(f"an ambiguous name with A's token: {status} {body}")
    status, _ = http("GET", "/api/memory/shared/stats", None)
    if status != 401:
        fail(f"an ambiguous name without a token answered {status}, not 401")
    for repo, token in [(A, TOKEN_A), (A, TOKEN_BOTH), (B, TOKEN_BOTH)]:
        status, body = http("GET", f"/api/memory/{repo}/stats", token)
        if status != 200 or json.loads(body)["files"] < 1:
            fail(f"stats of {repo}: {status} {body}")

    # The webhook re-indexes the repository in its path, and only with a good HMAC.
    with open(B_DIR + "/pushed_b.py", "w") as f:
        f.write("def arrived_in_b_by_push():\n    return 2\n")
    payload = json.dumps({"ref": "refs/heads/main"}).encode()
    good = "sha256=" + hmac.new(SECRET.encode(), payload, hashlib.sha256).hexdigest()
    status, _ = http("POST", f"/api/webhook/push/{B}", None, payload, {"X-Hub-Signature-256": "sha256=" + "0" * 64})
    if status != 401:
        fail(f"webhook with a wrong signature answered {status}")
    status, _ = http("POST", "/api/webhook/push", None, payload, {"X-Hub-Signature-256": good})
    if status != 404:
        fail(f"webhook without a repository answered {status}, not 404")
    status, body = http("POST", f"/api/webhook/push/{B}", None, payload, {"X-Hub-Signature-256": good})
    if status != 200 or json.loads(body)["reindexed"]["files_indexed"] != 1:
        fail(f"webhook for B: {status} {body}")


async def call(repo, token, name, args, refused=False):
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with streamable_http_client(f"{BASE}/mcp/{repo}", http_client=client) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            try:
                r = await session.call_tool(name, args)
            except MCPError as e:
                if refused:
                    return str(e)
                fail(f"{name} in {repo}: {e}")
            if refused:
                fail(f"{name} in {repo} with {args} was not refused: {r.content[0].text[:300]}")
            if r.is_error:
                fail(f"{name} in {repo}: {r.content[0].text}")
            return json.loads(r.content[0].text)


async def over_mcp():
    # B by its alias, in the URL and in `repo`.
    stats = await call("bee", TOKEN_BOTH, "memory_stats", {"repo": "bee"})
    if stats["repo"] != B:
        fail(f"memory_stats at /mcp/bee: {stats}")
    # From A's endpoint, B is out of scope by any name, even for a token reaching both,
    # and the refusal names none of B's names.
    for name in [B, "bee"]:
        msg = await call(A, TOKEN_BOTH, "memory_stats", {"repo": name}, refused=True)
        listed = msg.split("name it as one of: ")[-1].split(", ")
        if "not one this caller may reach" not in msg or A not in listed or {"bee", B} & set(listed):
            fail(f"repo {name!r} from A: {msg}")
    msg = await call(A, TOKEN_BOTH, "memory_stats", {"repo": "shared"}, refused=True)
    if "ambiguous" not in msg or A not in msg or B in msg:
        fail(f"repo 'shared' from A: {msg}")
    await call(A, TOKEN_A, "memory_write_structured", {"text": "the zebracorn rollout waits for the audit", "insights": ["decision"]})
    found = await call(A, TOKEN_BOTH, "memory_search", {"query": "zebracorn rollout"})
    if "zebracorn" not in json.dumps(found):
        fail(f"A's memory not found in A: {json.dumps(found)[:300]}")
    found = await call(B, TOKEN_BOTH, "memory_search", {"query": "zebracorn rollout"})
    if "zebracorn" in json.dumps(found):
        fail(f"A's memory leaked into B: {json.dumps(found)[:300]}")
    hits = (await call(A, TOKEN_A, "code_search", {"query": "only in alpha"}))["hits"]
    if not hits or hits[0]["path"] != "alpha.py":
        fail(f"code_search in A: {hits}")
    hits = (await call(B, TOKEN_BOTH, "code_search", {"query": "only in alpha"}))["hits"]
    if any(h["path"] == "alpha.py" for h in hits):
        fail(f"A's code found from B: {hits}")
    hits = (await call(B, TOKEN_BOTH, "code_search", {"query": "arrived in b by push"}))["hits"]
    if not hits or hits[0]["path"] != "pushed_b.py":
        fail(f"code_search in B after its push: {hits}")


if __name__ == "__main__":
    try:
        plain_http()
        asyncio.run(over_mcp())
    except AssertionError as e:
        print(f"FAIL: {e}", file=sys.stderr)
        sys.exit(1)
    print("ok")
