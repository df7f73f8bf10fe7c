#!/usr/bin/env bash
# The man page swarm(1), made from the binary itself: its --help as the
# description, each verb's --help as a section of VERBS, each page of the
# documentation (`swarm help TOPIC`) as a section of TOPICS, then the
# ENVIRONMENT, FILES and EXIT STATUS kept beside this script. Never written
# by hand, and built by every build (no help2man needed).
#   scripts/manpage.sh BUILD/swarm OUT.1
set -euo pipefail
bin=$1 out=$2
sections="$(dirname "$0")/manpage-sections.txt"
# Text as roff takes it verbatim in a .nf block: backslashes doubled, a
# leading dot or quote kept from being a request.
verbatim() { sed 's/\\/\\\\/g; s/^\./\\\&./; s/^'"'"'/\\\&'"'"'/'; }
version=$("$bin" --version | awk '{print $2}')
date=$(date -u -d "@${SOURCE_DATE_EPOCH:-$(stat -c %Y "$sections")}" +%Y-%m-%d)
{
  echo ".TH SWARM 1 \"$date\" \"swarm $version\" \"User Commands\""
  echo ".SH NAME"
  echo "swarm \\- coordination of agents working in parallel on one workspace, on NATS JetStream"
  echo ".SH SYNOPSIS"
  echo ".B swarm"
  echo "[\\fIoptions\\fR] \\fIverb\\fR [\\fIverb options\\fR]"
  echo ".br"
  echo ".B swarm help"
  echo "[\\fIverb\\fR | \\fItopic\\fR]"
  echo ".SH DESCRIPTION"
  echo ".nf"
  "$bin" --help | verbatim
  echo ".fi"
  echo ".SH VERBS"
  # Each verb, and each sub-verb (lease acquire, recovery prune ...), with its own --help.
  "$bin" _complete verbs | while IFS= read -r verb; do
    echo ".SS \"swarm $verb\""
    echo ".nf"
    # shellcheck disable=SC2086  # a sub-verb is two words
    "$bin" $verb --help | verbatim
    echo ".fi"
  done
  echo ".SH TOPICS"
  echo "The pages of the documentation, as \\fBswarm help\\fR \\fItopic\\fR prints them."
  "$bin" _complete topics | while IFS= read -r topic; do
    echo ".SS \"swarm help $topic\""
    echo ".nf"
    "$bin" help "$topic" | verbatim
    echo ".fi"
  done
  # ENVIRONMENT, FILES and EXIT STATUS: "[NAME]" lines start a section.
  sed -e 's/^\[\([^] ]*\)\]$/.SH \1/' -e 's/^\[\(.* .*\)\]$/.SH "\1"/' "$sections"
  echo ".SH SEE ALSO"
  echo "nats\\-server(1), git(1), prometheus(1); the documentation in the sources' docs/ folder."
} > "$out"
