#!/usr/bin/env bash
# Builds the current nats-server release (the version pinned in
# scripts/nats-server.version) with `go install` of its official Go module
# into the build tree, and links it beside the build's swarm, where `swarm up`
# prefers it over an older nats-server on PATH (adr/0052); `cmake --install`
# installs it beside swarm. Never installs onto the user's PATH.
# It needs Go 1.26 or later (the module's go.mod asks for it). A machine
# without one gets that toolchain from the Go module proxy, as the go
# command itself does (golang.org/toolchain, pinned with its SHA-256 in
# scripts/go-toolchain.sums), into ~/.cache/swarm; $SWARM_NO_GO_DOWNLOAD=1
# forbids that. When nothing works it says so and does nothing: `swarm up`
# then starts the older nats-server on PATH and names what it lacks.
#   scripts/current-nats-server.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-${SWARM_BUILD_DIR:-build}}
version=$(tr -d '[:space:]' < scripts/nats-server.version)
target="$build/nats-server-$version"
go_min_minor=26   # the release's go.mod: go 1.26.0
mkdir -p "$build"
# The link beside the build tree's swarm.
link_beside_swarm() {
  # Replaced in one rename: a swarm starting now sees the old link or the new one.
  ln -sfn "nats-server-$version/nats-server" "$build/.nats-server.link.$$" && mv -Tf "$build/.nats-server.link.$$" "$build/nats-server"
}
if [ -x "$target/nats-server" ] && "$target/nats-server" --version 2>/dev/null | grep -q "${version#v}"; then
  echo "setup: nats-server $version is in $target"
  link_beside_swarm
  exit 0
fi

# Whether the go command $1 is 1.<go_min_minor> or later.
new_enough() {
  local v major rest minor
  v=$("$1" env GOVERSION 2>/dev/null | sed 's/^go//') || return 1
  major=${v%%.*}; rest=${v#*.}; minor=${rest%%.*}
  [ "${major:-0}" -gt 1 ] || { [ "${major:-0}" -eq 1 ] && [ "${minor:-0}" -ge "$go_min_minor" ]; }
}

# The pinned toolchain from the Go module proxy, checked against its pinned
# SHA-256, unpacked once into the cache. Prints the go command's path.
fetched_go() {
  local arch line want zip dir base url
  case "$(uname -m)" in
    x86_64) arch=amd64 ;;
    aarch64|arm64) arch=arm64 ;;
    *) echo "setup: no pinned Go toolchain for $(uname -m)" >&2; return 1 ;;
  esac
  line=$(grep " linux-$arch\$" scripts/go-toolchain.sums) || return 1
  want=${line%% *}
  base=$(echo "$line" | awk '{print $2}')   # e.g. v0.0.1-go1.26.8
  dir="${XDG_CACHE_HOME:-$HOME/.cache}/swarm/golang-toolchain-$base.linux-$arch"
  # Complete only with its stamp, written last: a run killed half way
  # unpacked leaves no stamp, and the next run unpacks again.
  if [ ! -f "$dir/.swarm-complete" ]; then
    command -v curl >/dev/null && command -v unzip >/dev/null ||
      { echo "setup: curl and unzip are needed to fetch Go" >&2; return 1; }
    url="${GOPROXY_TOOLCHAIN:-https://proxy.golang.org}/golang.org/toolchain/@v/$base.linux-$arch.zip"
    echo "setup: fetching Go ${base#*-go} from the Go module proxy ($url)" >&2
    mkdir -p "$(dirname "$dir")" || return 1
    # A folder of this run's own beside the cache: two setups at once never share one.
    work=$(mktemp -d "$dir.tmp.XXXXXX") || return 1
    zip="$work/go.zip"
    if ! curl -fsSL --retry 3 -o "$zip" "$url"; then rm -rf "$work"; return 1; fi
    if [ "$(sha256sum "$zip" | cut -d' ' -f1)" != "$want" ]; then
      echo "setup: the Go toolchain from $url is not the pinned one (SHA-256 differs): not used" >&2
      rm -rf "$work"; return 1
    fi
    # A module zip keeps no modes: the go command sets them on what it runs.
    if ! unzip -q "$zip" -d "$work/x" ||
       ! chmod -R u+x "$work"/x/golang.org/toolchain@*/bin "$work"/x/golang.org/toolchain@*/pkg/tool; then
      rm -rf "$work"; return 1
    fi
    unpacked=$(ls -d "$work"/x/golang.org/toolchain@* 2>/dev/null | head -1)
    [ -n "$unpacked" ] && [ -x "$unpacked/bin/go" ] || { rm -rf "$work"; return 1; }
    touch "$unpacked/.swarm-complete" || { rm -rf "$work"; return 1; }
    # Another run may have put its copy in place meanwhile: either is whole.
    if [ ! -f "$dir/.swarm-complete" ]; then rm -rf "$dir" && mv "$unpacked" "$dir"; fi
    rm -rf "$work"
    [ -f "$dir/.swarm-complete" ] || return 1
  fi
  echo "$dir/bin/go"
}

go_cmd=""
if command -v go >/dev/null && new_enough go; then
  go_cmd=$(command -v go)
elif [ "${SWARM_NO_GO_DOWNLOAD:-0}" != 1 ] && fetched=$(fetched_go) && new_enough "$fetched"; then
  go_cmd=$fetched
fi
if [ -z "$go_cmd" ]; then
  echo "setup: no Go 1.$go_min_minor or later: nats-server $version not built; \`swarm up\` starts the nats-server on PATH (older: it names what it lacks), and the tests run against it only"
  exit 0
fi
mkdir -p "$target"
echo "setup: building nats-server $version with go install into $target ($("$go_cmd" env GOVERSION))"
if ! GOTOOLCHAIN=local GOBIN="$(cd "$target" && pwd)" GOFLAGS=-mod=mod "$go_cmd" install "github.com/nats-io/nats-server/v2@$version"; then
  echo "setup: go install of nats-server $version failed: \`swarm up\` starts the nats-server on PATH, and the tests run against it only" >&2
  rm -rf "$target"
  exit 0
fi
"$target/nats-server" --version
link_beside_swarm
