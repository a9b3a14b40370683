#!/usr/bin/env bash
# Install speedpatch and run the main job: optimize an example Gemmini kernel on the built-in
# gemmini-native model with the offline proposer (no LLM, no network), then show the diff and speedup.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q .
# The winner's figure is measured again on gemmini-spike (the same cycle model inside the Spike RISC-V
# simulator, out of the program's reach) when its tools can be installed here: apt packages need root.
if [ "$(id -u)" = 0 ] || { command -v riscv64-unknown-elf-gcc && command -v dtc && command -v g++; } >/dev/null 2>&1; then
  echo "installing the gemmini-spike tools, so the winner is re-verified on Spike (scripts/setup/gemmini-spike.sh)"
  bash scripts/setup/gemmini-spike.sh || echo "gemmini-spike could not be installed: the winner will say 'not re-verified'"
else
  echo "not root and no RISC-V toolchain: the winner will not be re-verified on gemmini-spike (scripts/setup/gemmini-spike.sh)"
fi
REPO=$PWD
SPEEDPATCH="$REPO/.venv/bin/speedpatch"
WORK=$(mktemp -d)
cp examples/gemmini/matmul_128.c "$WORK/"
cd "$WORK"
echo "optimizing $WORK/matmul_128.c (offline proposer, gemmini-native model)"
"$SPEEDPATCH" optimize matmul_128.c --offline --iterations 3 "$@"
RUN=$("$SPEEDPATCH" runs --json | "$REPO/.venv/bin/python" -c 'import json, sys; print(json.load(sys.stdin)[0]["run_id"])')
echo
echo "The run is stored in $WORK/.speedpatch (speedpatch is in $REPO/.venv/bin; 'source .venv/bin/activate' puts it on PATH)."
echo "To write the winner into $WORK/matmul_128.c:"
echo "  $SPEEDPATCH --workspace $WORK apply $RUN"
