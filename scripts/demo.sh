#!/usr/bin/env bash
# The main job on the embedded default, saying what it does as it goes:
# installs what is missing (naming it), builds (with the compiler's
# progress), makes a workspace whose `swarm up` starts its own nats-server,
# then runs the loop step by step, each command shown with its output: three
# slots join and commit, two close with success, one is evicted, the slot
# branches, the done work landed after a check, the journal. The workspace
# is left running for you to explore (the commands are printed at the end);
# --clean stops its server and removes it instead. With $SWARM_DEMO_SWARM
# naming a built swarm, the packages and the build are skipped (the tests).
#   scripts/demo.sh [--clean]
set -euo pipefail
cd "$(dirname "$0")/.."

clean=0
for arg in "$@"; do
  case "$arg" in
    --clean) clean=1 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo: unknown argument '$arg' (only --clean)" >&2; exit 2 ;;
  esac
done

started=$SECONDS
phase_started=$SECONDS
phase() { phase_started=$SECONDS; printf '\n==> %s\n' "$*"; }
took() { printf '    (%ss)\n' $((SECONDS - phase_started)); }

echo "swarm demo: packages, a build, then the loop on a workspace of its own (the first time 8 to 12 minutes on 2 cores, most of it the build; seconds once built)"

if [ -n "${SWARM_DEMO_SWARM:-}" ]; then
  phase "1/4 packages and 2/4 the build: skipped, \$SWARM_DEMO_SWARM names a built swarm ($SWARM_DEMO_SWARM)"
  [ -x "$SWARM_DEMO_SWARM" ] || { echo "demo: \$SWARM_DEMO_SWARM is no program: $SWARM_DEMO_SWARM" >&2; exit 2; }
  swarm_bin="$(cd "$(dirname "$SWARM_DEMO_SWARM")" && pwd)/$(basename "$SWARM_DEMO_SWARM")"
  took
else
phase "1/4 packages: what building and running swarm needs (g++, cmake, nats-server, libnats, libgit2, cJSON, spdlog, CLI11), and the current nats-server release"
# setup.sh says what it installs; apt-get's own chatter is cut to a line per package.
build=${SWARM_DEMO_BUILD_DIR:-build-demo}
# The current nats-server too, beside the demo's swarm: its embedded default.
SWARM_BUILD_DIR=$build scripts/setup.sh --tool 2>&1 | while IFS= read -r line; do
  case "$line" in
    setup:*) echo "    $line" ;;
    "Setting up "*) echo "    ${line%% (*}" ;;
    E:*|*rror*) echo "    $line" ;;
  esac
done
took

phase "2/4 building swarm in $build/ ($(nproc) jobs)"
# Release: no debug information, which is a third of a cold build (338 s
# against 519 s for RelWithDebInfo on 2 idle cores, docs/performance.md).
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DSWARM_BUILD_TESTS=OFF >/dev/null
# The compiler's progress: its percentage, on one line on a terminal.
last=""
cmake --build "$build" -j"$(nproc)" --target swarm 2>&1 | while IFS= read -r line; do
  if [[ $line =~ ^\[\ *([0-9]+)%\] ]]; then
    pct=${BASH_REMATCH[1]}
    [ "$pct" = "$last" ] && continue
    last=$pct
    if [ -t 1 ]; then printf '\r    building: %3s%%' "$pct"; elif (( pct % 10 == 0 )); then echo "    building: $pct%"; fi
  elif [[ $line == *error* ]]; then
    echo "    $line"
  fi
done
[ -t 1 ] && echo
[ -x "$build/swarm" ] || { echo "demo: the build failed (run: cmake --build $build --target swarm)" >&2; exit 1; }
swarm_bin="$(cd "$build" && pwd)/swarm"
took
fi

ws=$(mktemp -d /tmp/swarm-demo-XXXXXX)
export SWARM_WORKSPACE="$ws"
unset NATS_URL
finish() {
  if [ "$clean" = 1 ]; then
    "$swarm_bin" down >/dev/null 2>&1 || true
    rm -rf "$ws"
  fi
}
trap finish EXIT

step() {
  echo
  echo "    \$ swarm $(printf '%q ' "$@")"
  "$swarm_bin" "$@" 2>&1 | sed 's/^/      /'
  return "${PIPESTATUS[0]}"
}

phase "3/4 a workspace in $ws: swarm up makes .swarm/, its hub and its buckets, and starts its own nats-server"
step up
took

phase "4/4 the loop: three agents join and commit, two finish, one is evicted, the finished work lands"
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
echo "    \$ git --git-dir \$SWARM_WORKSPACE/.swarm/hub.git log --oneline --graph main"
git --git-dir "$ws/.swarm/hub.git" log --oneline --graph main | sed 's/^/      /'
took

echo
if [ "$clean" = 1 ]; then
  echo "done in $((SECONDS - started))s; the workspace $ws and its server are removed (--clean)"
  exit 0
fi
echo "done in $((SECONDS - started))s. The workspace is yours to explore, its nats-server still running:"
echo "  export SWARM_WORKSPACE=$ws PATH=$(dirname "$swarm_bin"):\$PATH"
echo "  swarm status     # who holds which slot (the evicted parse's folder is still there: swarm doctor)"
echo "  swarm serve      # the live dashboard and /metrics: open the link it prints"
echo "  swarm down       # stops its nats-server; then rm -rf $ws (or run the demo with --clean)"
