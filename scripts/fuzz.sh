#!/usr/bin/env bash
# Fuzzes swarm's parsers (durations, names, session records, config.json, NATS
# URLs) with clang's libFuzzer under ASan and UBSan, for a bounded time per
# target, and keeps what it finds in tests/fuzz/corpus/<target>/, where the
# ordinary test command replays it (FuzzCorpus_EveryFoundInputKeepsItsProperties).
#   scripts/fuzz.sh              # 60 s per target
#   scripts/fuzz.sh 600          # 10 min per target
# Exit 1 when a target broke a property or crashed; its input is then in the
# corpus, so the replay test fails until the parser is fixed.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
targets=(duration names record config url)

scripts/setup.sh >/dev/null
probe() { echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
            clang++ -fsanitize=fuzzer -x c++ - -o /tmp/swarm-fuzz-probe 2>/dev/null; }
if ! command -v clang++ >/dev/null || ! probe; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get install -y --no-install-recommends clang libclang-rt-dev >/dev/null ||
    { $sudo apt-get update >/dev/null; $sudo apt-get install -y --no-install-recommends clang libclang-rt-dev >/dev/null; }
  probe || { echo "fuzz: clang cannot build a libFuzzer target here" >&2; exit 1; }
fi

build=${SWARM_FUZZ_BUILD_DIR:-build-fuzz}
CC=clang CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSWARM_FUZZ=ON >/dev/null
cmake --build "$build" -j"$(nproc)" --target "${targets[@]/#/fuzz_}" >/dev/null

status=0
for t in "${targets[@]}"; do
  corpus=tests/fuzz/corpus/$t
  work=$build/fuzz-work/$t
  crashes=$build/fuzz-crashes
  mkdir -p "$work" "$crashes"
  before=$(ls "$corpus" | wc -l)
  # New inputs go to a scratch folder first; the committed corpus seeds it.
  if ! "$build/tests/fuzz_$t" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$crashes/$t-" \
       "$work" "$corpus" >"$build/fuzz-$t.log" 2>&1; then
    echo "fuzz $t: FAILED (see $build/fuzz-$t.log); the input is kept in $corpus"
    for f in "$crashes/$t-"*; do [ -e "$f" ] && cp "$f" "$corpus/found-$(basename "$f")"; done
    status=1
  fi
  # Keep only inputs that reach code the corpus did not: the replay stays quick.
  "$build/tests/fuzz_$t" -merge=1 -artifact_prefix="$crashes/$t-merge-" "$corpus" "$work" >>"$build/fuzz-$t.log" 2>&1 || true
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$build/fuzz-$t.log" | tail -1 | awk '{print $2}')
  echo "fuzz $t: ${runs:-?} runs in ${seconds}s, corpus $before -> $(ls "$corpus" | wc -l) inputs"
done
exit $status
