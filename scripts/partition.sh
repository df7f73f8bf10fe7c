#!/usr/bin/env bash
# The partition soak: a 3-node nats-server cluster in network namespaces,
# `swarm lock` loops on both sides, a writer per side counting the writes
# the server acknowledges, and a leader cut off (20 s, long enough for an
# election) and healed (15 s) again and again; then a check that fencing
# tokens only grew, that no two commands held the lease at once unless a
# higher token fenced the cut-off one, and that no acknowledged grant or
# write was lost. Runs against Debian's nats-server, then against the
# current release when the build tree has it (scripts/current-nats-server.sh),
# each --runs times. Needs root. Not part of the test command (it is long).
#   scripts/partition.sh                  # 1 run of 5 cuts of the lease stream's leader per server (~4 min)
#   scripts/partition.sh --runs 10 --target alternate   # the README's figures (~40 min per server)
#   scripts/partition.sh --cuts 3 --cut-seconds 10 --heal-seconds 10 --ttl 3s --max-seconds 500
# --target stream|meta|alternate: cut the lease stream's leader, the
# JetStream metadata leader, or each in turn.
# Prints each run's verdict and a total per server; exit 1 when any run failed.
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
# 420) and 3 minutes to set up, stop the loops and check. --runs is ours.
max_seconds=420
runs=1
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs)
      [[ "${2:-}" =~ ^[1-9][0-9]{0,2}$ ]] || { echo "partition: --runs '${2:-}': a whole number 1 to 999" >&2; exit 2; }
      runs=$2; shift 2 ;;
    --max-seconds) max_seconds=${2:-}; args+=("$1" "${2:-}"); shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
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
  add_figures "$label" "$output"
  [ -n "$verdict" ] || verdict="partition: nats-server $label: FAIL (no verdict; exit $status, 124 is the timeout)"
  rm -f "$output"
  verdicts+=("$verdict")
  [ "$status" -eq 0 ] || failed=1
}

# Each run's figures ("partition: figures ok=1 cuts=5 ..."), added up per server.
declare -A total
add_figures() {
  local label=$1 output=$2 line pair
  line=$(grep '^partition: figures ' "$output" | tail -n1 || true)
  total[$label.runs]=$(( ${total[$label.runs]:-0} + 1 ))
  for pair in ${line#partition: figures }; do
    total[$label.${pair%%=*}]=$(( ${total[$label.${pair%%=*}]:-0} + ${pair#*=} ))
  done
}
total_line() {
  local l=$1
  echo "partition: nats-server $l total: ${total[$l.ok]:-0} of ${total[$l.runs]:-0} runs ok; ${total[$l.cuts]:-0} cuts" \
    "(${total[$l.meta]:-0} of the metadata leader), ${total[$l.sections]:-0} sections under the lease," \
    "${total[$l.unfenced]:-0} unfenced overlaps (${total[$l.fenced]:-0} fenced), ${total[$l.backwards]:-0} tokens" \
    "backwards, ${total[$l.lost]:-0} lost grants, ${total[$l.acked]:-0} acknowledged writes of which" \
    "${total[$l.acked_lost]:-0} lost"
}

debian=$(nats-server --version 2>/dev/null | sed -n "s/.*\(v[0-9][0-9.]*\).*/\1/p")
labels=("${debian:-debian}")
for ((r = 1; r <= runs; r++)); do
  run_with "${labels[0]}" "$PATH" "${args[@]}"
  [ "$stopped" -eq 0 ] || exit 130
done
version=$(tr -d '[:space:]' < scripts/nats-server.version)
current="$build/nats-server-$version"
if [ -x "$current/nats-server" ]; then
  labels+=("$version")
  for ((r = 1; r <= runs; r++)); do
    run_with "$version" "$(cd "$current" && pwd):$PATH" "${args[@]}"
    [ "$stopped" -eq 0 ] || exit 130
  done
else
  echo "partition: no $current/nats-server: the nats-server $version run is skipped"
  verdicts+=("partition: nats-server $version: not run ($current/nats-server is not there; scripts/current-nats-server.sh builds it)")
fi

[ "$stopped" -eq 0 ] || exit 130
echo
printf '%s\n' "${verdicts[@]}"
for label in "${labels[@]}"; do total_line "$label"; done
exit "$failed"
