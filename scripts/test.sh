#!/usr/bin/env bash
# The test command: installs what is missing, configures, builds, and runs
# every test through CTest (the install test among them), then builds the
# Debian package and checks it. Tests start their own nats-servers on free
# 127.0.0.1 ports; nothing needs to be running beforehand.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --tests

build=${SWARM_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSWARM_WERROR=ON
scripts/mcp-sdk.sh "$build"  # the MCP SDK's client, for swarm mcp's tests
cmake --build "$build" -j"$(nproc)"
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" "$@"
# The Debian package: built with CPack, checked by lintian, unpacked and run.
SWARM_BUILD_DIR=$build scripts/package.sh
