#!/usr/bin/env bash
# The official Model Context Protocol SDK's Python client, for the tests
# only (tests/mcp/): into BUILD/mcp-venv, pinned. Does nothing when it is
# there already.
set -euo pipefail
build=${1:-build}
venv=$build/mcp-venv
version=2.3.0
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import mcp, importlib.metadata as m; assert m.version('mcp') == '$version'" 2>/dev/null; then
  exit 0
fi
echo "mcp-sdk: installing the MCP SDK $version into $venv"
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "mcp==$version"
