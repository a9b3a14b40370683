#!/usr/bin/env bash
# Sandbox setup: bubblewrap (bwrap), which runs every candidate build and run (targets/sandbox.py).
# Idempotent and quiet; without it candidates run with rlimits only and tests/sandbox fails under test.sh.
set -euo pipefail
command -v bwrap >/dev/null 2>&1 && exit 0
if [ "$(uname -s)" != Linux ]; then
  echo "bubblewrap is Linux-only: on $(uname -s) candidates run with rlimits and a scrubbed environment only"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo -n"
if command -v apt-get >/dev/null 2>&1; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null
elif command -v dnf >/dev/null 2>&1; then
  $SUDO dnf install -y -q bubblewrap
elif command -v apk >/dev/null 2>&1; then
  $SUDO apk add -q bubblewrap
else
  echo "cannot install bubblewrap here (no apt-get, dnf or apk): install it by hand" >&2
  exit 1
fi
command -v bwrap >/dev/null
