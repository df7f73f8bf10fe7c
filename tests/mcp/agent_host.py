"""An agent host's start of `swarm mcp`, as docs/mcp.md says each host
starts a stdio server (tests/e2e/mcp/mcp_hosts_test.cc runs it as the AGENT of
a `swarm run`). It reads the host's configuration file as that host does
(JSON; TOML by tomllib), builds the server's environment by the host's rule,
starts the server in / (not in the worktree: the configuration alone must
find the workspace and the slot), sends an initialize, a renew that names
no slot and a status, and writes every line the server answered to OUT.

    agent_host.py HOST CONFIG OUT

HOST is one of:
  claude-code            Claude Code's own environment, the entry's `env`
                         on top, `${VAR}` and `${VAR:-default}` expanded
  claude-code-allowlist  CLAUDE_CODE_MCP_ALLOWLIST_ENV=1: a baseline (here
                         PATH and HOME) and the entry's `env`, expanded
  codex                  Codex's default list, the names of `env_vars` set
                         in its environment, then the entry's `env`
  codex-no-env-vars      Codex ignoring `env_vars`: a control, which the
                         test expects to fail
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib

CODEX_DEFAULT = ["HOME", "LOGNAME", "PATH", "SHELL", "USER", "__CF_USER_TEXT_ENCODING", "LANG", "LC_ALL", "TERM",
                 "TMPDIR", "TZ"]


def expand(value):
    """Claude Code's expansion: ${VAR}, ${VAR:-default}; an unset VAR without a default stays as written."""
    def one(m):
        name, default = m.group(1), m.group(3)
        if name in os.environ:
            return os.environ[name]
        return default if default is not None else m.group(0)
    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}", one, value)


def entry_and_env(host, text):
    if host.startswith("claude-code"):
        entry = json.loads(text)["mcpServers"]["swarm"]
        assert entry.get("type", "stdio") == "stdio", entry
        env = dict(os.environ) if host == "claude-code" else {k: os.environ[k] for k in ("PATH", "HOME")}
        env.update({k: expand(v) for k, v in entry.get("env", {}).items()})
        return entry["command"], [expand(a) for a in entry.get("args", [])], env
    entry = tomllib.loads(text)["mcp_servers"]["swarm"]
    names = CODEX_DEFAULT + ([] if host == "codex-no-env-vars" else list(entry.get("env_vars", [])))
    env = {n: os.environ[n] for n in names if isinstance(n, str) and n in os.environ}
    env.update(entry.get("env", {}))
    return entry["command"], list(entry.get("args", [])), env


def main():
    host, config, out = sys.argv[1:4]
    with open(config, encoding="utf-8") as f:
        command, args, env = entry_and_env(host, f.read())
    path = shutil.which(command, path=env.get("PATH"))
    assert path is not None, f"{command} is not on the server's PATH"
    requests = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": host, "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
         "params": {"name": "renew", "arguments": {"status": "working", "note": "via " + host}}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "status", "arguments": {}}},
    ]
    stdin = "".join(json.dumps(r) + "\n" for r in requests)
    ran = subprocess.run([path] + args, input=stdin, capture_output=True, text=True, env=env, cwd="/", timeout=60)
    with open(out, "w", encoding="utf-8") as f:
        f.write(ran.stdout)
    sys.stderr.write(ran.stderr)
    return ran.returncode


if __name__ == "__main__":
    sys.exit(main())
