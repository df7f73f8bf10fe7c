#!/usr/bin/env bash
# The partition test: a 3-node nats-server cluster in network namespaces,
# `swarm lock` loops on both sides, and the leader of the lease stream cut
# off and healed again and again; then a check that fencing tokens only grew,
# that no two commands held the lease at once unless a higher token fenced
# the cut-off one, and that no acknowledged grant was lost. Runs against
# Debian's nats-server, then against the current release when the build tree
# has it (scripts/current-nats-server.sh). Needs root.
#   scripts/partition.sh                  # 10 cuts of 8 s each (about 3 minutes per server)
#   scripts/partition.sh --cuts 3 --cut-seconds 10 --heal-seconds 10 --ttl 3s --max-seconds 500
# Prints one verdict line per server; exit 1 when any run's verdict is a failure.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
  echo "partition: needs root (network namespaces, iptables)" >&2
  exit 2
fi
missing=()
command -v ip >/dev/null || missing+=(iproute2)
command -v iptables >/dev/null || missing+=(iptables)
if [ ${#missing[@]} -gt 0 ]; then
  echo "partition: installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

build=${SWARM_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" --target partition_runner swarm swarm_git >/dev/null
runner="$build/tests/partition_runner"

# Each run's names come from this number (see partition_runner.cc), so that
# what a killed runner left behind can be found and removed here.
run_number=$$
prefix() { echo "swp$(( $1 % 10000 ))"; }
remove_leftovers() {
  local p
  p=$(prefix "$run_number")
  # veths first: a namespace with a socket still retransmitting outlives its deletion
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep "^${p}v[0-9]$" || true); do
    ip link del "$link" 2>/dev/null || true
  done
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^${p}n[0-9]$" || true); do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
  ip link del "${p}br" 2>/dev/null || true
}
trap remove_leftovers EXIT

# A runner told to stop removes what it made before it exits: SIGINT or
# SIGTERM here is passed on to it (timeout runs it in a process group of its
# own, so a Ctrl-C does not reach it), and this script waits for it.
child=
stopped=0
stop_runner() {
  stopped=1
  if [ -n "$child" ]; then kill -TERM "$child" 2>/dev/null || true; fi
}
trap stop_runner INT TERM

# Each run is bounded: its --max-seconds of cuts (the runner's default is
# 420) and 3 minutes to set up, stop the loops and check.
max_seconds=420
args=("$@")
for ((i = 0; i + 1 < ${#args[@]}; i++)); do
  [ "${args[i]}" != --max-seconds ] || max_seconds=${args[i + 1]}
done
bound=$(( max_seconds + 180 ))

verdicts=()
failed=0
# One bounded run of the runner with the nats-server first on PATH.
run_with() {
  local label=$1 path=$2 status=0 output verdict
  shift 2
  run_number=$(( run_number + 1 ))
  output=$(mktemp)
  PATH="$path" SWARM_PARTITION_RUN=$run_number timeout -k 30 "$bound" "$runner" "$@" >"$output" 2>&1 &
  child=$!
  tail -n +1 -f --pid="$child" "$output" || true
  # wait returns early when a signal comes in; the runner then still cleans up.
  while true; do
    status=0
    wait "$child" || status=$?
    kill -0 "$child" 2>/dev/null || break
  done
  child=
  [ "$stopped" -eq 0 ] || tail -n 40 "$output"
  remove_leftovers
  verdict=$(grep '^partition: nats-server .*: \(ok\|FAIL\)' "$output" | tail -n1 || true)
  [ -n "$verdict" ] || verdict="partition: nats-server $label: FAIL (no verdict; exit $status, 124 is the timeout)"
  rm -f "$output"
  verdicts+=("$verdict")
  [ "$status" -eq 0 ] || failed=1
}

run_with debian "$PATH" "$@"
[ "$stopped" -eq 0 ] || exit 130
version=$(tr -d '[:space:]' < scripts/nats-server.version)
current="$build/nats-server-$version"
if [ -x "$current/nats-server" ]; then
  run_with "$version" "$(cd "$current" && pwd):$PATH" "$@"
else
  echo "partition: no $current/nats-server: the nats-server $version run is skipped"
  verdicts+=("partition: nats-server $version: not run ($current/nats-server is not there; scripts/current-nats-server.sh builds it)")
fi

[ "$stopped" -eq 0 ] || exit 130
echo
printf '%s\n' "${verdicts[@]}"
exit "$failed"
