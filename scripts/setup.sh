#!/usr/bin/env bash
# Installs what swarm needs to build and test, from Debian's packages only.
# Does nothing when everything is already there. Then builds the current
# nats-server release into the build tree ($SWARM_BUILD_DIR, default build/:
# scripts/current-nats-server.sh, with the machine's Go 1.26 or one fetched
# from the Go module proxy), which `swarm up` starts by default (adr/0052).
# With --tests, also what only the tests use: the Prometheus server and
# Chromium (swarm serve's tests), zsh and fish (the completion tests), man,
# and Python's venv (for the MCP SDK's client, scripts/mcp-sdk.sh).
# With --tool, only what building and running swarm needs (the demo): no
# test packages, no package tools.
set -euo pipefail

mode=${1:-}
packages=(build-essential cmake pkg-config git nats-server openssl curl unzip ca-certificates
          libnats-dev libssl-dev libcjson-dev libgit2-dev libspdlog-dev libcli11-dev libcpp-httplib-dev)
if [ "$mode" != "--tool" ]; then
  packages+=(openssh-server doctest-dev dpkg-dev file lintian)
fi
if [ "$mode" = "--tests" ]; then
  packages+=(prometheus chromium zsh fish man-db python3-venv)
fi
# The current nats-server release: the embedded default, and the tests' first leg.
second_leg() {
  exec "$(dirname "$0")/current-nats-server.sh" "${SWARM_BUILD_DIR:-build}"
}

# A package is "there" when what we use from it is on disk.
have() {
  case "$1" in
    build-essential) command -v g++ >/dev/null && command -v make >/dev/null ;;
    cmake|git|nats-server|openssl|curl|unzip) command -v "$1" >/dev/null ;;
    ca-certificates) [ -d /etc/ssl/certs ] && [ -n "$(ls /etc/ssl/certs 2>/dev/null | head -1)" ] ;;
    pkg-config) command -v pkg-config >/dev/null ;;
    openssh-server) [ -x /usr/sbin/sshd ] && command -v ssh-keygen >/dev/null ;;
    libnats-dev) [ -f /usr/include/nats/nats.h ] ;;
    libssl-dev) [ -f /usr/include/openssl/evp.h ] ;;
    libcjson-dev) [ -f /usr/include/cjson/cJSON.h ] ;;
    libgit2-dev) [ -f /usr/include/git2.h ] ;;
    libspdlog-dev) [ -f /usr/include/spdlog/spdlog.h ] ;;
    libcli11-dev) [ -f /usr/include/CLI/CLI.hpp ] ;;
    doctest-dev) [ -f /usr/include/doctest/doctest.h ] ;;
    libcpp-httplib-dev) [ -f /usr/include/httplib.h ] ;;
    prometheus|chromium|zsh|fish) command -v "$1" >/dev/null ;;
    man-db) command -v man >/dev/null ;;
    python3-venv) python3 -c 'import venv, ensurepip' 2>/dev/null ;;
    lintian|file) command -v "$1" >/dev/null ;;
    dpkg-dev) command -v dpkg-shlibdeps >/dev/null ;;
    *) dpkg -s "$1" >/dev/null 2>&1 ;;
  esac
}

missing=()
for p in "${packages[@]}"; do have "$p" || missing+=("$p"); done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all dependencies present"
  second_leg
fi

echo "setup: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
if ! $sudo apt-get install -y --no-install-recommends "${missing[@]}"; then
  $sudo apt-get update
  $sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi
second_leg
