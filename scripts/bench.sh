#!/usr/bin/env bash
# The benchmark: swarm against raw nats.c and the git CLI, side by side, in
# one run. Installs what is missing, builds, starts its own nats-server (the
# benchmark program does), prints a table and one JSON document.
#   scripts/bench.sh            # full run (lists up to 100,000 sessions)
#   scripts/bench.sh --quick    # fewer samples, no 100,000 case
#   scripts/bench.sh --json FILE
#   scripts/bench.sh --quick --only 7,8   # some cases (numbered as in tests/bench/swarm_bench.cc)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh >/dev/null
# /usr/bin/time measures peak memory of a process without counting its parent's pages.
if ! [ -x /usr/bin/time ]; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get install -y --no-install-recommends time >/dev/null || { $sudo apt-get update >/dev/null; $sudo apt-get install -y --no-install-recommends time >/dev/null; }
fi

build=${SWARM_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" --target swarm swarm_git swarm_bench minimal_get minimal_bus >/dev/null
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr), $(nats-server --version), git $(git --version | awk '{print $3}')"
exec "$build/tests/swarm_bench" "$@"
