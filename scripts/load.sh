#!/usr/bin/env bash
# A busy machine: N sessions renewed in a loop, M `swarm lock` contenders
# whose commands mark when they hold the lock, and `swarm status` every
# second, all through the real binary on the embedded server, for a bounded
# time. The verdict counts exits other than 0 and 3 (must be 0) and double
# holders (two commands holding the lock at once: must be 0).
#   scripts/load.sh                               # 200 sessions, 30 contenders, 60 s
#   scripts/load.sh --sessions 100 --contenders 10 --seconds 30
# Exit 1 when the verdict is not clean.
set -euo pipefail
cd "$(dirname "$0")/.."

sessions=200 contenders=30 seconds=60
while [ $# -gt 0 ]; do
  case "$1" in
    --sessions) sessions=$2; shift 2 ;;
    --contenders) contenders=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    *) echo "usage: scripts/load.sh [--sessions N] [--contenders M] [--seconds S]" >&2; exit 2 ;;
  esac
done

scripts/setup.sh >/dev/null
build=${SWARM_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" --target swarm swarm_git >/dev/null
swarm=$(cd "$build" && pwd)/swarm

work=$(mktemp -d /tmp/swarm-load.XXXXXX)
cleanup() {
  touch "$work/stop"
  wait 2>/dev/null || true
  (cd "$work/ws" && "$swarm" down >/dev/null 2>&1) || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM
export HOME=$work XDG_CONFIG_HOME=$work/config SWARM_WORKSPACE=$work/ws SWARM_HOST=load SWARM_HOST_ID=load-id
mkdir -p "$work/ws" "$work/logs"
(cd "$work/ws" && git init -q && git -c user.name=l -c user.email=l@l commit -q --allow-empty -m load)
"$swarm" up --ttl 60s >/dev/null

echo "load: joining $sessions slots"
for i in $(seq 1 "$sessions"); do "$swarm" join --slot "s$i" --task "T-$i" >/dev/null; done

# Each loop appends one line per run to its log: "<verb> <exit>".
renewers=$(( sessions < 20 ? sessions : 20 ))
for r in $(seq 1 "$renewers"); do
  (
    while [ ! -e "$work/stop" ]; do
      for i in $(seq "$r" "$renewers" "$sessions"); do
        [ -e "$work/stop" ] && break
        "$swarm" renew --slot "s$i" >/dev/null 2>>"$work/logs/errors" && e=0 || e=$?
        echo "renew $e" >>"$work/logs/renew.$r"
      done
    done
  ) &
done
for c in $(seq 1 "$contenders"); do
  (
    while [ ! -e "$work/stop" ]; do
      "$swarm" lock load --ttl 5s --wait 20s -- sh -c \
        'echo "S $SWARM_FENCING_TOKEN $(date +%s%N)" >>"$0"; sleep 0.02; echo "E $SWARM_FENCING_TOKEN $(date +%s%N)" >>"$0"' \
        "$work/marks" >/dev/null 2>>"$work/logs/errors" && e=0 || e=$?
      echo "lock $e" >>"$work/logs/lock.$c"
    done
  ) &
done
(
  while [ ! -e "$work/stop" ]; do
    "$swarm" status >/dev/null 2>>"$work/logs/errors" && e=0 || e=$?
    echo "status $e" >>"$work/logs/status"
    sleep 1
  done
) &

echo "load: $sessions sessions renewing, $contenders contenders, status every second, for ${seconds}s"
sleep "$seconds"
touch "$work/stop"
wait

touch "$work/marks"
counts=$(cat "$work"/logs/renew.* "$work"/logs/lock.* "$work"/logs/status 2>/dev/null | awk '
  { runs[$1]++; if ($2 == 0) ok[$1]++; else if ($2 == 3) held[$1]++; else { odd[$1]++; other++ } }
  END {
    for (v in runs) printf "%s %d runs (0: %d, 3: %d, other: %d); ", v, runs[v], ok[v], held[v], odd[v]
    printf "|%d", other
  }')
other=${counts##*|}
# Double holders: the marks ordered by time must alternate S, E, S, E...
doubles=$(sort -k3,3n "$work/marks" | awk '
  $1 == "S" { if (holding) doubles++; holding = 1 }
  $1 == "E" { holding = 0 }
  END { print doubles + 0 }')
grants=$(grep -c '^S' "$work/marks" || true)
if [ -s "$work/logs/errors" ]; then
  echo "load: errors seen (first 5 of $(sort -u "$work/logs/errors" | wc -l) distinct):"
  sort | uniq -c < "$work/logs/errors" | sort -rn | head -5
fi
verdict=ok
[ "$other" -eq 0 ] && [ "$doubles" -eq 0 ] || verdict=FAIL
echo "load: ${counts%|*}grants $grants; exits other than 0/3: $other; double holders: $doubles: $verdict"
[ "$verdict" = ok ]
