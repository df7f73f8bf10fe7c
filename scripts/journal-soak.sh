#!/usr/bin/env bash
# The journal's reads at scale, out of the test command (it takes minutes):
# 1,000,000 events (slots, leases, another workspace's, junk, gaps, a
# deleted tail) and `log -n N` for every N from 1 to 10,000 (the
# workspace's, --kind, --slot, --since, --onto) held to a full scan by
# direct gets, against Debian's nats-server and then the current release.
#   scripts/journal-soak.sh                   # 1,000,000 events, N to 10,000
#   scripts/journal-soak.sh 100000 2000       # smaller
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-1000000}
every_n=${2:-10000}
build=${SWARM_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" --target swarm_tests >/dev/null
export SWARM_JOURNAL_EVENTS=$events SWARM_JOURNAL_EVERY_N=$every_n
case="Journal_TheLastNIsWhatAFullScanFindsWhateverTheServersCounters"
echo "journal-soak: $events events, every N to $every_n, nats-server $(nats-server --version)"
timeout 3h "$build/tests/swarm_tests" -tc="$case"
current=$(ls -d "$build"/nats-server-*/ 2>/dev/null | head -1 || true)
if [ -n "$current" ]; then
  echo "journal-soak: the same on $("$current/nats-server" --version)"
  PATH="$current:$PATH" timeout 3h "$build/tests/swarm_tests" -tc="$case"
fi
