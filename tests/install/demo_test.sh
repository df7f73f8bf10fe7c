#!/usr/bin/env bash
# scripts/demo.sh as a newcomer sees it, with the build the tests made
# ($SWARM_DEMO_SWARM skips the packages and the build): a first line at
# once, a line per phase with its time, each command shown, and at the end
# a workspace left to explore with the three commands that do; --clean
# removes it. The packages and the build phases run only in the full demo.
#   demo_test.sh SOURCE_DIR SWARM_BINARY
set -euo pipefail
src=$1
swarm=$2
tmp=$(mktemp -d)
ws=
cleanup() {
  if [ -n "$ws" ] && [ -d "$ws" ]; then SWARM_WORKSPACE="$ws" "$swarm" down >/dev/null 2>&1 || true; rm -rf "$ws"; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "demo_test: $*" >&2; echo "--- its output:" >&2; cat "$tmp/out" >&2 || true; exit 1; }

# Each line stamped with the seconds since the start, as it comes.
start=$EPOCHREALTIME
SWARM_DEMO_SWARM="$swarm" timeout 240 "$src/scripts/demo.sh" 2>&1 | while IFS= read -r line; do
  printf '%s %s\n' "$EPOCHREALTIME" "$line"
done > "$tmp/stamped" || { cp "$tmp/stamped" "$tmp/out"; fail "the demo failed"; }
awk -v s="$start" '{ t = $1 - s; sub(/^[^ ]+ /, ""); printf "%.2f %s\n", t, $0 }' "$tmp/stamped" > "$tmp/out"
first=$(head -n1 "$tmp/out" | cut -d' ' -f1)
awk -v t="$first" 'BEGIN { exit !(t < 5) }' || fail "its first line came after ${first}s"
for phase in "==> 1/4" "==> 3/4" "==> 4/4"; do
  grep -qF -- "$phase" "$tmp/out" || fail "no line for phase $phase"
done
[ "$(grep -cE '^[0-9.]+ +\([0-9]+s\)$' "$tmp/out")" -ge 3 ] || fail "the phases do not say what they took"
for shown in '$ swarm up' '$ swarm join --slot render' '$ swarm land --ready' '$ swarm log'; do
  grep -qF -- "$shown" "$tmp/out" || fail "the command '$shown' is not shown"
done
ws=$(sed -n 's/.*export SWARM_WORKSPACE=\([^ ]*\) .*/\1/p' "$tmp/out")
[ -n "$ws" ] && [ -d "$ws/.swarm" ] || fail "no workspace left to explore"
for cmd in 'swarm status' 'swarm serve' 'swarm down'; do
  grep -qE -- "^[0-9.]+   $cmd +#" "$tmp/out" || fail "the end does not name '$cmd'"
done
# The workspace works as the end says: its server still runs.
SWARM_WORKSPACE="$ws" "$swarm" status >/dev/null || fail "swarm status in the workspace left failed"
SWARM_WORKSPACE="$ws" "$swarm" down >/dev/null || fail "swarm down in the workspace left failed"
rm -rf "$ws"
ws=

# --clean leaves nothing behind.
SWARM_DEMO_SWARM="$swarm" timeout 240 "$src/scripts/demo.sh" --clean > "$tmp/out" 2>&1 || fail "the demo --clean failed"
left=$(sed -n 's/.*the workspace \(\/[^ ]*\) and its server are removed.*/\1/p' "$tmp/out")
[ -n "$left" ] || fail "--clean does not say what it removed"
[ ! -e "$left" ] || fail "--clean left $left"
echo "demo_test: ok (first line after ${first}s)"
