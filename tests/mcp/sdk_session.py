"""`swarm mcp` driven by a client nobody here wrote: the official MCP SDK's
Python client (mcp 2.3.0, installed by the test command into the build
tree). For each revision, 2025-11-25 (initialize) and 2026-07-28
(server/discover): the tools are found, a slot is joined (its handle read),
a file committed, status read, a stale handle refused as an error result, a
land's check reported as progress, a waiting inbox cancelled, the slot
closed. Then bad requests, on the raw pipe: malformed JSON, an unknown tool,
wrong argument types, a message broken by a newline, and 300 lines of
random bytes, each answered by a JSON-RPC error while the server keeps
serving.

    sdk_session.py SWARM_BINARY
"""

import json
import os
import random
import subprocess
import sys
import tempfile

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

SWARM = sys.argv[1]
CORE = {"status", "join", "commit", "sync", "close", "renew", "task_list", "task_next", "send", "inbox", "ack", "hold",
        "land", "log", "ask", "blob_get"}
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAILED:", what, file=sys.stderr)


def workspace():
    ws = tempfile.mkdtemp(prefix="swarm-mcp-")
    subprocess.run(["git", "init", "-q", "-b", "main", ws], check=True)
    subprocess.run(["git", "-C", ws, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty",
                    "-m", "init"], check=True)
    env = dict(os.environ, SWARM_WORKSPACE=ws, SWARM_HOST="host-mcp", SWARM_HOST_ID="id-mcp")
    env.pop("NATS_URL", None)
    subprocess.run([SWARM, "up"], cwd=ws, env=env, check=True, stdout=subprocess.DEVNULL)
    return ws, env


async def session(revision, ws, env):
    slot = "agent-" + revision.replace("-", "")
    params = StdioServerParameters(command=SWARM, args=["mcp"], env=env, cwd=ws)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=60,
                                 client_info=types.Implementation(name="swarm-test", version="1")) as s:
            if revision == "2026-07-28":
                discovered = await s.discover()
                check("2026-07-28" in discovered.supported_versions, f"{revision}: discover names the revision")
            else:
                await s.initialize()
            check(s.protocol_version == revision, f"{revision}: negotiated {s.protocol_version}")
            listed = await s.list_tools()
            names = {t.name for t in listed.tools}
            check(CORE <= names, f"{revision}: core tools missing: {CORE - names}")
            joined = await s.call_tool("join", {"slot": slot, "task": "T-" + slot})
            check(not joined.is_error, f"{revision}: join failed: {joined.content}")
            handle = joined.structured_content["handle"]
            check(handle["kind"] == "session" and handle["ttl_seconds"] > 0, f"{revision}: join's handle {handle}")
            token = handle["token"]
            worktree = joined.structured_content["worktree"]
            with open(os.path.join(worktree, "hello.txt"), "w") as f:
                f.write("hello from " + revision + "\n")
            committed = await s.call_tool("commit", {"slot": slot, "message": "hello", "session": token})
            check(not committed.is_error, f"{revision}: commit failed: {committed.content}")
            check(committed.structured_content.get("schema") == "swarm.commit.v1", f"{revision}: commit's document")
            status = await s.call_tool("status", {"slot": [slot]})
            sessions = status.structured_content["sessions"]
            check(len(sessions) == 1 and sessions[0]["slot"] == slot, f"{revision}: status {sessions}")
            check(json.loads(status.content[0].text)["sessions"][0]["slot"] == slot, f"{revision}: status as text")
            # A handle that is no longer current: an error result naming what to do, never a protocol error.
            stale = await s.call_tool("renew", {"slot": slot, "session": token + 1000})
            check(stale.is_error, f"{revision}: a stale handle was accepted")
            check(stale.structured_content["schema"] == "swarm.error.v1" and stale.structured_content["exit"] == 3,
                  f"{revision}: stale handle's error {stale.structured_content}")
            check("stop working in it" in stale.content[0].text, f"{revision}: the error says what to do")
            # A waiting inbox, cancelled by the client: the call ends, the server goes on.
            with anyio.move_on_after(1.5):
                await s.call_tool("inbox", {"as": slot, "wait": "60s"})
                check(False, f"{revision}: the inbox returned before its wait")
            again = await s.call_tool("status", {})
            check(not again.is_error, f"{revision}: the server answers after a cancellation")
            closed = await s.call_tool("close", {"slot": slot, "result": "success", "session": token})
            check(not closed.is_error, f"{revision}: close failed: {closed.content}")
            # A land cancelled while its check runs: stopped as Ctrl-C would stop it, main as it was.
            hub = os.path.join(ws, ".swarm", "hub.git")
            main_before = subprocess.run(["git", "--git-dir", hub, "rev-parse", "main"], capture_output=True,
                                         text=True).stdout
            with anyio.move_on_after(2):
                await s.call_tool("land", {"slot": slot, "check": ["sleep", "30"]})
                check(False, f"{revision}: the slow land returned before it was cancelled")
            main_after = subprocess.run(["git", "--git-dir", hub, "rev-parse", "main"], capture_output=True,
                                        text=True).stdout
            check(main_after == main_before, f"{revision}: a cancelled land moved main")
            # A land whose check speaks: its lines come as progress (and it got the lease the cancelled one left).
            seen = []

            async def on_progress(progress, total, message):
                seen.append(message)

            started = anyio.current_time()
            landed = await s.call_tool("land", {"slot": slot, "check": ["sh", "-c", "echo checking the tree"]},
                                       progress_callback=on_progress)
            check(anyio.current_time() - started < 20, f"{revision}: the land waited for a lease left behind")
            check(not landed.is_error, f"{revision}: land failed: {landed.content}")
            check(landed.structured_content.get("outcome") == "landed", f"{revision}: land {landed.structured_content}")
            check(any("checking the tree" in (m or "") for m in seen), f"{revision}: no progress from the check: {seen}")


def raw_exchange(ws, env, lines):
    """Writes `lines` to a fresh `swarm mcp`, closes its input, returns the JSON messages it wrote."""
    p = subprocess.run([SWARM, "mcp"], cwd=ws, env=env, input=b"".join(lines), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    out = []
    for line in p.stdout.split(b"\n"):
        if line:
            out.append(json.loads(line))  # nothing but protocol on stdout
    return p.returncode, out


def bad_requests(ws, env):
    def msg(obj):
        return (json.dumps(obj) + "\n").encode()

    lines = [
        b"{not json\n",
        msg({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
                                                                            "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}),
        msg({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "no_such_tool", "arguments": {}}}),
        msg({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "join", "arguments": {"slot": 42}}}),
        msg({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "commit",
                                                                           "arguments": {"message": "m", "bogus": 1}}}),
        b'{"jsonrpc": "2.0", "id": 5,\n "method": "ping"}\n',
        msg({"jsonrpc": "2.0", "id": 6, "method": "no/such/method"}),
        msg([1, 2, 3]),
        msg({"jsonrpc": "2.0", "id": 7, "method": "tools/list",
             "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01"}}}),
    ]
    rng = random.Random(46)
    for _ in range(300):
        lines.append(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))).replace(b"\n", b" ") + b"\n")
    lines.append(msg({"jsonrpc": "2.0", "id": 99, "method": "ping"}))
    code, out = raw_exchange(ws, env, lines)
    check(code == 0, f"raw: the server exited {code}")
    by_id = {m.get("id"): m for m in out if "id" in m}
    check(by_id.get(1, {}).get("result", {}).get("protocolVersion") == "2025-11-25", "raw: initialize answered")
    check(by_id.get(2, {}).get("error", {}).get("code") == -32602, f"raw: unknown tool {by_id.get(2)}")
    check(by_id.get(3, {}).get("error", {}).get("code") == -32602, f"raw: wrong type {by_id.get(3)}")
    check(by_id.get(4, {}).get("error", {}).get("code") == -32602, f"raw: unknown argument {by_id.get(4)}")
    check(by_id.get(6, {}).get("error", {}).get("code") == -32601, f"raw: unknown method {by_id.get(6)}")
    check(by_id.get(7, {}).get("error", {}).get("code") == -32022, f"raw: unsupported version {by_id.get(7)}")
    check("result" in by_id.get(99, {}), "raw: the last ping was not answered: the server stopped serving")
    parse_errors = [m for m in out if m.get("id") is None and m.get("error", {}).get("code") in (-32700, -32600)]
    check(len(parse_errors) >= 3, f"raw: malformed lines answered with {len(parse_errors)} errors")


async def main():
    ws, env = workspace()
    try:
        for revision in ("2025-11-25", "2026-07-28"):
            await session(revision, ws, env)
        bad_requests(ws, env)
    finally:
        subprocess.run([SWARM, "down"], cwd=ws, env=env, stdout=subprocess.DEVNULL)
    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        sys.exit(1)
    print("mcp sdk sessions: ok")


anyio.run(main)
