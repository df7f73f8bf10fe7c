#!/usr/bin/env bash
# Installs the build into a temporary prefix and uses it as a user would:
# the installed swarm (its git module from the installed folder, then from a
# moved prefix), the man page, bash completion, and the example built against
# the CMake package and against pkg-config, run on a nats-server of its own.
#   tests/install/install_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$(realpath "$1") build=$(realpath "$2")
unset SWARM_GIT_MODULE SWARM_WORKSPACE
tmp=$(realpath "$(mktemp -d /tmp/swarm-install-XXXXXX)")  # as /proc/self/exe names it
server=
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "install test: $*" >&2; exit 1; }

prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' "$build/CMakeCache.txt")
for f in bin/swarm "$libdir/swarm/libswarm_git.so" include/swarm/swarm/lease/lease.h include/swarm/kv/connection.h \
         "$libdir/libswarm.a" "$libdir/libswarm_kv.a" "$libdir/cmake/swarm/swarmConfig.cmake" \
         "$libdir/cmake/swarm/swarmConfigVersion.cmake" "$libdir/pkgconfig/swarm.pc" share/man/man1/swarm.1.gz \
         share/bash-completion/completions/swarm share/zsh/vendor-completions/_swarm \
         share/fish/vendor_completions.d/swarm.fish "$libdir/swarm/swarm-serve" share/doc/swarm/copyright; do
  [ -e "$prefix/$f" ] || fail "missing $f in the installed prefix"
done
[ "$("$prefix/bin/swarm" --version)" = "swarm $(sed -n 's/^project(swarm VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")" ] ||
  fail "swarm --version: $("$prefix/bin/swarm" --version)"
zgrep -q 'swarm join' "$prefix/share/man/man1/swarm.1.gz" || fail "the man page has no section on join"
zgrep -q '^\.SH VERBS' "$prefix/share/man/man1/swarm.1.gz" || fail "the man page has no VERBS section"
for section in ENVIRONMENT FILES '"EXIT STATUS"'; do
  zgrep -q "^\.SH $section" "$prefix/share/man/man1/swarm.1.gz" || fail "the man page has no $section section"
done
zgrep -q 'swarm lease acquire' "$prefix/share/man/man1/swarm.1.gz" || fail "the man page has no section on lease acquire"
zgrep -q '^\.SS "swarm help leases"' "$prefix/share/man/man1/swarm.1.gz" || fail "the man page has no topic leases"
# What a user types: man finds it in the prefix (as it does ~/.local's from PATH).
# scripts/setup.sh installs man-db for the tests: without it this is a failure, never a silent skip.
command -v man >/dev/null || fail "man is not installed (scripts/setup.sh --tests installs man-db)"
# Read whole, then searched: grep -q would close the pipe early and, under
# pipefail, the writer's SIGPIPE would fail the test at random.
page=$(MANPATH="$prefix/share/man" MANWIDTH=100 man swarm 2>/dev/null) || page=
grep -q 'swarm lease acquire' <<<"$page" ||
  fail "man swarm does not show the installed page"
# And offline help says the same as --help.
[ "$("$prefix/bin/swarm" help join)" = "$("$prefix/bin/swarm" join --help)" ] || fail "swarm help join is not join --help"
page=$("$prefix/bin/swarm" help trust) || fail "swarm help trust failed"
grep -q 'never' <<<"$page" || fail "swarm help trust prints no page"

# A nats-server of our own on a port it picks itself (and writes down).
mkdir "$tmp/ports"
nats-server -js -a 127.0.0.1 -p -1 --ports_file_dir "$tmp/ports" -sd "$tmp/nats" > "$tmp/nats.log" 2>&1 &
server=$!
for _ in $(seq 200); do ls "$tmp"/ports/*.ports >/dev/null 2>&1 && break; sleep 0.05; done
url=$(sed -n 's/.*"nats":\["\([^"]*\)".*/\1/p' "$tmp"/ports/*.ports 2>/dev/null)
[ -n "$url" ] || fail "nats-server did not start: $(cat "$tmp/nats.log")"

# The whole job from the installed binary, in a fresh repository.
use() {  # use PREFIX WORKSPACE SLOT
  local swarm=$1/bin/swarm ws=$2 slot=$3
  (cd "$ws" && "$swarm" up --nats-url "$url" >/dev/null) ||
    fail "up from $1"
  local wt
  wt=$(cd "$ws" && "$swarm" --log-level debug join --slot "$slot" --task "T-$slot" 2>"$tmp/join.err") ||
    fail "join from $1: $(cat "$tmp/join.err")"
  grep -q "loaded the git module $1/" "$tmp/join.err" || fail "the git module did not come from $1: $(cat "$tmp/join.err")"
  echo hello > "$wt/hello.txt"
  (cd "$ws" && "$swarm" commit --slot "$slot" -m "hello" >/dev/null) || fail "commit from $1"
  # Completion (swarm itself answers, from PATH): verbs, no value for --task, live slots.
  words=$(cd "$ws" && PATH="$1/bin:$PATH" bash -c "source '$1/share/bash-completion/completions/swarm'; COMP_WORDS=(swarm sta); COMP_CWORD=1; _swarm; echo \${COMPREPLY[*]}")
  [ "$words" = "status" ] || fail "completion of 'swarm sta' gave '$words'"
  words=$(cd "$ws" && PATH="$1/bin:$PATH" bash -c "source '$1/share/bash-completion/completions/swarm'; COMP_WORDS=(swarm join --task ''); COMP_CWORD=3; _swarm; echo \${COMPREPLY[*]}")
  [ -z "$words" ] || fail "completion of a --task value offered '$words'"
  words=$(cd "$ws" && PATH="$1/bin:$PATH" bash -c "source '$1/share/bash-completion/completions/swarm'; COMP_WORDS=(swarm close --slot ''); COMP_CWORD=3; _swarm; echo \${COMPREPLY[*]}")
  [[ " $words " == *" $slot "* ]] || fail "completion of --slot gave '$words', not $slot"
  # The HTTP server from the private folder: swarm serve runs it.
  (cd "$ws" && exec "$swarm" serve --listen 127.0.0.1:0 > "$tmp/serve.out" 2>&1) & local serving=$!
  # Bounded, and generous: on a machine busy with a parallel build serve took over 10 s to say it serves.
  for _ in $(seq 600); do
    grep -q '^serving http' "$tmp/serve.out" 2>/dev/null && break
    kill -0 "$serving" 2>/dev/null || break
    sleep 0.1
  done
  grep -q '^serving http://127.0.0.1:' "$tmp/serve.out" ||
    fail "serve from $1 ($(kill -0 "$serving" 2>/dev/null && echo 'still running after 60 s' || echo 'exited')): $(cat "$tmp/serve.out")"
  kill -TERM "$serving"
  wait "$serving" || fail "serve from $1 did not end cleanly"
  (cd "$ws" && "$swarm" close --slot "$slot" --result success >/dev/null) || fail "close from $1"
  (cd "$ws" && "$swarm" down >/dev/null) || fail "down from $1"
}
ws=$tmp/ws
git init -q -b main "$ws"
git -C "$ws" -c user.name=t -c user.email=t@t commit -q --allow-empty -m init
use "$prefix" "$ws" one
# The same prefix moved elsewhere: the module is found relative to the binary.
mv "$prefix" "$tmp/moved"
use "$tmp/moved" "$ws" two

# The current nats-server, when the setup built it, is installed beside swarm
# and is what the moved prefix's `up` would start, before Debian's on PATH.
release=$(tr -d '[:space:]' < "$src/scripts/nats-server.version")
if [ -x "$build/nats-server-$release/nats-server" ]; then
  [ -x "$tmp/moved/$libdir/swarm/nats-server" ] || fail "missing $libdir/swarm/nats-server in the installed prefix"
  said=$(env -u SWARM_NATS_SERVER "$tmp/moved/bin/swarm" version) || fail "swarm version: $said"
  echo "$said" | grep -q "^embedded default: nats-server ${release#v} ($tmp/moved/$libdir/swarm/nats-server, beside swarm)" ||
    fail "the installed swarm would not start the release beside it: $said"
fi

# The example, built against the installed package, takes and releases a lease.
(cd "$ws" && "$tmp/moved/bin/swarm" up --nats-url "$url" >/dev/null)
# Its leases are the workspace's, by the name `up` gave it (in its config).
name=$(grep -o '"name":[[:space:]]*"[^"]*"' "$ws/.swarm/config.json" | sed 's/.*"\([^"]*\)"$/\1/')
[[ -n $name ]] || fail "no workspace name in $ws/.swarm/config.json: $(cat "$ws/.swarm/config.json")"
cmake -S "$src/examples/lease_client" -B "$tmp/example" -DCMAKE_PREFIX_PATH="$tmp/moved" >/dev/null ||
  fail "the example does not configure against the installed package"
cmake --build "$tmp/example" >/dev/null || fail "the example does not build against the installed package"
out=$("$tmp/example/lease_client" "$url" example-job "$name" 2>"$tmp/example.err") ||
  fail "the example failed: $out $(cat "$tmp/example.err")"
[[ $out =~ ^example-job\ [0-9]+$ ]] || fail "the example printed '$out', not the lease and its token"
# Running a command under the lease (swarm::run_holding): it sees the token,
# its exit status comes back, and the lease is free again after.
status=0
out=$("$tmp/example/lease_client" "$url" example-job "$name" -- sh -c 'echo "held $SWARM_LEASE $SWARM_FENCING_TOKEN"; exit 5') ||
  status=$?
[[ $status == 5 ]] || fail "the example's command exited $status, not 5"
[[ $out =~ ^example-job\ ([0-9]+)$'\n'held\ example-job\ ([0-9]+)$ && ${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" ]] ||
  fail "the example's command printed '$out', not the lease's token"
out=$("$tmp/example/lease_client" "$url" example-job "$name") || fail "the lease was not released after the command: $out"
# And by pkg-config alone.
pc=$tmp/moved/$libdir/pkgconfig
PKG_CONFIG_PATH=$pc g++ -std=c++20 "$src/examples/lease_client/main.cc" -o "$tmp/by-pkg-config" \
  $(PKG_CONFIG_PATH=$pc pkg-config --cflags --libs swarm) || fail "the example does not build with pkg-config"
out=$("$tmp/by-pkg-config" "$url" example-job "$name") || fail "the pkg-config build failed: $out"
[[ $out =~ ^example-job\ [0-9]+$ ]] || fail "the pkg-config build printed '$out'"
echo "install test: ok"
