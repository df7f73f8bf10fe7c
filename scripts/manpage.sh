#!/usr/bin/env bash
# The man page, made by help2man from the binary's own --help and --version,
# with each verb's --help as a VERBS section: never written by hand.
#   scripts/manpage.sh BUILD/swarm OUT.1
set -euo pipefail
bin=$1 out=$2
include=$(mktemp)
trap 'rm -f "$include"' EXIT
{
  echo "[VERBS]"
  for verb in $("$bin" _complete verbs); do
    echo ".SS \"swarm $verb\""
    echo ".nf"
    "$bin" "$verb" --help | sed 's/\\/\\\\/g; s/^\./\\\&./'
    echo ".fi"
  done
  echo "[SEE ALSO]"
  echo "The README and ../shared/CONTRACT.md of the swarm sources; nats-server(1), git(1)."
} > "$include"
help2man --no-info --no-discard-stderr --section 1 \
  --name "session and lease manager on NATS JetStream key-value" \
  --include "$include" --output "$out" "$bin"
