#!/usr/bin/env bash
# The fault loop: join, commit and close run through the real binary while a
# third of them are SIGKILLed at a random moment, with `swarm doctor --fix`
# after each round; then it checks that no reported commit and no written
# file was lost and that doctor was healthy after every --fix.
#   scripts/faults.sh                      # 300 iterations (about 3 minutes)
#   scripts/faults.sh --iterations 1000 --seed 42 --max-seconds 1800
# Exit 1 when anything was lost or left broken (the seed replays the run).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh >/dev/null
build=${SWARM_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" --target fault_runner >/dev/null
exec "$build/tests/fault_runner" "$@"
