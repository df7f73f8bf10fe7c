#!/usr/bin/env bash
# Builds the current nats-server release (the version pinned in
# scripts/nats-server.version) with `go install` into the build tree, so that
# the tests run against it as well as against Debian's nats-server. Never
# installs onto the user's PATH. Needs Go 1.24 or later; without it, says so
# and does nothing (the tests then run against Debian's server only, and say so).
#   scripts/current-nats-server.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-${SWARM_BUILD_DIR:-build}}
version=$(tr -d '[:space:]' < scripts/nats-server.version)
target="$build/nats-server-$version"
if [ -x "$target/nats-server" ] && "$target/nats-server" --version 2>/dev/null | grep -q "${version#v}"; then
  echo "setup: nats-server $version is in $target"
  exit 0
fi
if ! command -v go >/dev/null; then
  echo "setup: no Go on this machine: the tests run against Debian's nats-server only (the $version leg needs Go >= 1.24)"
  exit 0
fi
go_version=$(go env GOVERSION 2>/dev/null | sed 's/^go//')
major=${go_version%%.*}; rest=${go_version#*.}; minor=${rest%%.*}
if [ "${major:-0}" -lt 1 ] || { [ "$major" -eq 1 ] && [ "${minor:-0}" -lt 24 ]; }; then
  echo "setup: Go $go_version is older than 1.24: the tests run against Debian's nats-server only (the $version leg needs Go >= 1.24)"
  exit 0
fi
mkdir -p "$target"
echo "setup: building nats-server $version with go install into $target (Go $go_version)"
if ! GOBIN="$(cd "$target" && pwd)" GOFLAGS=-mod=mod go install "github.com/nats-io/nats-server/v2@$version"; then
  echo "setup: go install of nats-server $version failed: the tests run against Debian's nats-server only" >&2
  rm -rf "$target"
  exit 0
fi
"$target/nats-server" --version
