#!/usr/bin/env bash
# The build keeps cli/'s targets apart (adr/0026, adr/0056): with the include
# tree each is compiled against, an internal header of swarm/ and another
# front end's header are not found, while a public header and the target's
# own folder are. Each refusal has its control: the same header does
# preprocess from the source tree, so a refusal is the tree's doing.
#   layers_test.sh CXX BUILD_DIR SOURCE_DIR
set -euo pipefail
cxx=$1
layers=$2/layers
src=$3
internal_list=$layers/internal-headers.txt
failures=0
checked=0
fail() { echo "layers_test: $*" >&2; failures=$((failures + 1)); }
# The probe sits in a folder of its own: a quoted include looks beside it first.
probe_dir=$(mktemp -d)
trap 'rm -rf "$probe_dir"' EXIT
# The packages' own headers, as the build finds them (cJSON.h is in a folder of its own).
read -r -a package_flags <<<"$(pkg-config --cflags libnats libcjson libgit2)"

# preprocess INCLUDE_DIR HEADER: 0 when HEADER is found (and all it includes).
preprocess() {
  printf '#include "%s"\n' "$2" >"$probe_dir/probe.cc"
  "$cxx" -std=c++20 -E -I "$1" "${package_flags[@]}" -o /dev/null "$probe_dir/probe.cc" 2>"$probe_dir/err"
}
# The first error, for a message.
first_error() { grep -m1 -E "error|No such" "$probe_dir/err" || head -1 "$probe_dir/err"; }
refused() {  # TREE HEADER
  checked=$((checked + 1))
  if preprocess "$layers/$1" "$2"; then
    fail "$1 finds $2, which it must not"
  elif ! grep -qE "$2: No such file|'$2' file not found" "$probe_dir/err"; then
    fail "$1 fails on $2 for another reason: $(first_error)"
  fi
  preprocess "$src" "$2" || fail "control: $2 does not preprocess from the source tree: $(first_error)"
}
allowed() {  # TREE HEADER
  checked=$((checked + 1))
  preprocess "$layers/$1" "$2" || fail "$1 does not find $2: $(first_error)"
}

[ -s "$internal_list" ] || { echo "layers_test: no list of internal headers at $internal_list" >&2; exit 1; }
mapfile -t internals <"$internal_list"

# target:own folder:the other front ends' folders it must not see.
targets=(
  "swarm_verbs:verbs:command mcp socket serve programs"
  "swarm_front_command:command:mcp socket serve programs"
  "swarm_front_mcp:mcp:command socket serve programs"
  "swarm_front_socket:socket:command mcp serve programs"
  "swarm_front_serve:serve:command mcp socket programs"
  "swarm:programs:serve"
  "swarm-serve:programs:"
)
for entry in "${targets[@]}"; do
  IFS=: read -r tree own others <<<"$entry"
  [ -d "$layers/$tree" ] || { fail "no include tree $layers/$tree"; continue; }
  for header in "${internals[@]}"; do refused "$tree" "$header"; done
  for folder in $others; do
    header=$(cd "$src" && ls cli/"$folder"/*.h 2>/dev/null | head -1 || true)
    if [ -n "$header" ]; then refused "$tree" "$header"; fi
  done
  allowed "$tree" swarm/base/error.h
  allowed "$tree" swarm/slots/lifecycle.h
  own_header=$(cd "$src" && ls cli/"$own"/*.h 2>/dev/null | head -1 || true)
  if [ -n "$own_header" ]; then allowed "$tree" "$own_header"; fi
done

# Inside swarm/, the folder that owns an internal header still sees it.
allowed swarm_doctor swarm/doctor/checks.h
allowed swarm_lease swarm/lease/lease_queue.h

echo "layers_test: $checked includes checked, $failures wrong"
[ "$failures" -eq 0 ]
