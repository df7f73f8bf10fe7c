#!/usr/bin/env bash
# The main job on the embedded default: installs what is missing, builds, makes
# a temporary workspace, `swarm up` (which starts its own nats-server), three
# slots join and commit, status, one close with success, one eviction, the
# slot branches, the finished work landed on main after a check, the journal,
# `swarm down`. Shows each step and its output.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh >/dev/null
build=${SWARM_BUILD_DIR:-build}
if [ ! -x "$build/swarm" ] || [ -n "$(find cli kv swarm CMakeLists.txt -newer "$build/swarm" -print -quit)" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$build" -j"$(nproc)" --target swarm >/dev/null
fi
swarm_bin="$(cd "$build" && pwd)/swarm"

ws=$(mktemp -d /tmp/swarm-demo-XXXXXX)
export SWARM_WORKSPACE="$ws"
unset NATS_URL
trap '"$swarm_bin" down >/dev/null 2>&1 || true; rm -rf "$ws"' EXIT

step() {
  echo
  echo "\$ swarm $(printf '%q ' "$@")"
  "$swarm_bin" "$@" 2>&1 | sed 's/^/  /'
  return "${PIPESTATUS[0]}"
}

echo "workspace: $ws"
step up
for slot in render parse index; do
  step join --slot "$slot" --task "T-$slot"
  wt=$("$swarm_bin" cwd --slot "$slot")
  echo "work of $slot" > "$wt/$slot.txt"
  step commit --slot "$slot" -m "$slot: first result"
done
step status
step close --slot render --result success
step close --slot index --result success
step evict --slot parse
step status
step branches
step land --ready -- test -f render.txt
step branches
step log --kind close --kind land
echo
echo "\$ git --git-dir \$SWARM_WORKSPACE/.swarm/hub.git log --oneline --graph main"
git --git-dir "$ws/.swarm/hub.git" log --oneline --graph main | sed 's/^/  /'
step down
