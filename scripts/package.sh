#!/usr/bin/env bash
# Builds the Debian packages swarm_<version>_<arch>.deb (the tool) and
# libswarm-dev_<version>_<arch>.deb (the library) with CPack and checks them
# with lintian (no errors allowed).
#   scripts/package.sh [OUT_DIR]       (default: build/package)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
build=${SWARM_BUILD_DIR:-build}
out=${1:-$build/package}
# A package installs under /usr, so its module folder is lib/<multiarch>/swarm;
# Release: no debug info in the static library (-Wno-restrict: GCC 12 warns
# falsely on std::string at -O3, bug 105329).
cmake -S . -B "$build/pkg" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS=-Wno-restrict -DCMAKE_INSTALL_PREFIX=/usr -DSWARM_BUILD_TESTS=OFF >/dev/null
cmake --build "$build/pkg" -j"$(nproc)" >/dev/null
mkdir -p "$out"
out=$(realpath "$out")
rm -f "$out"/swarm_*.deb "$out"/libswarm-dev_*.deb
(cd "$build/pkg" && cpack -G DEB -B "$out" >/dev/null)
deb=$(ls -t "$out"/swarm_*.deb | head -1)
dev=$(ls -t "$out"/libswarm-dev_*.deb | head -1)
for package in "$deb" "$dev"; do
  echo "package: $package"
  dpkg-deb --info "$package" | sed -n '/Package:/,$p'
  # Errors fail the build; warnings are shown.
  lintian --fail-on error --tag-display-limit 0 "$package" 2>&1 | grep -v "running with root privileges" || true
  lintian --fail-on error --tag-display-limit 0 "$package" >/dev/null 2>&1 ||
    { echo "package: lintian found errors in $package" >&2; exit 1; }
done
# Each file in one package only: the tool holds no header, the library no binary.
tool_files=$(dpkg-deb -c "$deb" | awk '{print $6}')
dev_files=$(dpkg-deb -c "$dev" | awk '{print $6}')
grep -q '/usr/include/' <<<"$tool_files" && { echo "package: headers in the swarm package" >&2; exit 1; }
grep -q '/usr/bin/swarm$' <<<"$dev_files" && { echo "package: the binary in libswarm-dev" >&2; exit 1; }
for f in ./usr/include/swarm/swarm/lease/lease.h ./usr/lib/.*/libswarm.a ./usr/lib/.*/cmake/swarm/swarmConfig.cmake \
         ./usr/lib/.*/pkgconfig/swarm.pc; do
  grep -qx "$f" <<<"$dev_files" || { echo "package: libswarm-dev lacks $f" >&2; exit 1; }
done
# What a user gets: the binary runs from the unpacked package and finds its
# git module in lib/<multiarch>/swarm relative to itself.
unpacked=$(realpath "$(mktemp -d)")
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$unpacked"' EXIT
dpkg-deb -x "$deb" "$unpacked"
"$unpacked/usr/bin/swarm" --version
# `up` makes the hub with the git module: it must load from the package.
mkdir "$unpacked/ports"
nats-server -js -a 127.0.0.1 -p -1 --ports_file_dir "$unpacked/ports" -sd "$unpacked/nats" >"$unpacked/nats.log" 2>&1 &
server=$!
for _ in $(seq 100); do ls "$unpacked"/ports/*.ports >/dev/null 2>&1 && break; sleep 0.05; done
url=$(sed -n 's/.*"nats":\["\([^"]*\)".*/\1/p' "$unpacked"/ports/*.ports)
git init -q -b main "$unpacked/ws"
(cd "$unpacked/ws" && env -u SWARM_GIT_MODULE "$unpacked/usr/bin/swarm" --log-level debug up --nats-url "$url") \
  >"$unpacked/up.log" 2>&1 || { cat "$unpacked/up.log" >&2; echo "package: swarm up failed" >&2; exit 1; }
grep -q "loaded the git module $unpacked/usr/lib/" "$unpacked/up.log" ||
  { cat "$unpacked/up.log" >&2; echo "package: the git module did not load from the package" >&2; exit 1; }
[ -f "$unpacked/usr/share/man/man1/swarm.1.gz" ] || { echo "package: no man page" >&2; exit 1; }
[ -f "$unpacked/usr/share/bash-completion/completions/swarm" ] || { echo "package: no completion" >&2; exit 1; }
ls "$unpacked"/usr/lib/*/swarm/libswarm_git.so >/dev/null || { echo "package: no git module" >&2; exit 1; }
echo "package: ok"
