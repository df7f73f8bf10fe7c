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
  # Each verb, and each sub-verb (lease acquire, recovery prune ...), with its own --help.
  "$bin" _complete verbs | while IFS= read -r verb; do
    echo ".SS \"swarm $verb\""
    echo ".nf"
    # shellcheck disable=SC2086  # a sub-verb is two words
    "$bin" $verb --help | sed 's/\\/\\\\/g; s/^\./\\\&./'
    echo ".fi"
  done
  # ENVIRONMENT, FILES and EXIT STATUS: kept beside this script.
  cat "$(dirname "$0")/manpage-sections.txt"
  echo "[SEE ALSO]"
  echo "The README of the swarm sources; nats-server(1), git(1), prometheus(1)."
} > "$include"
help2man --no-info --no-discard-stderr --section 1 \
  --name "session and lease manager on NATS JetStream key-value" \
  --include "$include" --output "$out" "$bin"
