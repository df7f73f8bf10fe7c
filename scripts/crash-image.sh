#!/usr/bin/env bash
# The crash-image test (tests/e2e/command/crash_image_test.cc) again and again, as
# root: the workspace on an ext4 loop device, its image copied right after
# the acknowledgements, started again on the copy. Each run says which
# server it ran on; any loss on the embedded default fails the run.
#   scripts/crash-image.sh [--runs N] [--server PATH]   (default 20 runs, the leg's server)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=20
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --server) export SWARM_NATS_SERVER=$2; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "crash-image: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "crash-image: needs root (a loop device)" >&2; exit 2; }
build=${SWARM_BUILD_DIR:-build}
tests=$build/tests/e2e_command
# The embedded default: the release beside the build's swarm, its folder first on PATH as in the test leg.
if [ -z "${SWARM_NATS_SERVER:-}" ] && [ -x "$build/nats-server" ]; then
  release_dir=$(dirname "$(readlink -f "$build/nats-server")")
  export PATH="$release_dir:$PATH" SWARM_NATS_LEG="v$("$build/nats-server" --version | sed -n 's/.* v//p')"
fi
[ -x "$tests" ] || { echo "crash-image: build the tests first ($tests)" >&2; exit 2; }
failed=0
for i in $(seq 1 "$runs"); do
  if timeout 300 "$tests" --test-case='CrashImage_*' >/tmp/crash-image.$$.log 2>&1; then
    if grep -q 'syncs by interval here' /tmp/crash-image.$$.log; then echo "run $i: ok (a server syncing by interval: tokens only)"
    else echo "run $i: ok (every acknowledged write checked)"; fi
  else
    failed=$((failed + 1)); echo "run $i: FAILED"; tail -20 /tmp/crash-image.$$.log
  fi
done
rm -f /tmp/crash-image.$$.log
echo "crash-image: $((runs - failed)) of $runs runs lost nothing they promised"
[ "$failed" -eq 0 ]
