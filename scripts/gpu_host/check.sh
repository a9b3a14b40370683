#!/usr/bin/env bash
# On a machine with an NVIDIA GPU, nvcc and (optionally) torch: install speedpatch from a wheel folder
# made by wheels.sh (no network needed), then run the GPU-only tests and the end-to-end GPU check.
#   scripts/gpu_host/check.sh WHEELS [LOGDIR] [-- gpu_check.py options, e.g. --only matmul,softmax]
# speedpatch goes into the environment of $PYTHON (default python3): the one that has torch, so the
# KernelBench-style path runs too. On a shared machine point PYTHON at a virtual environment instead.
set -uo pipefail
cd "$(dirname "$0")/../.."
WHEELS=${1:?usage: scripts/gpu_host/check.sh WHEELS [LOGDIR] [-- gpu_check.py options]}
shift
LOGDIR=.
if [ $# -gt 0 ] && [ "$1" != "--" ]; then LOGDIR=$1; shift; fi
[ "${1:-}" = "--" ] && shift
PY=${PYTHON:-python3}
mkdir -p "$LOGDIR"
LOG="$LOGDIR/gpu_check.log"
export PYTHONUNBUFFERED=1
{
  echo "== $(date -u +%FT%TZ) $(uname -m) | $("$PY" --version 2>&1) | $(nvcc --version 2>/dev/null | tail -1)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || echo "nvidia-smi: not available"
  "$PY" -m pip install -q --no-index --find-links "$WHEELS" speedpatch || { echo "install from $WHEELS failed"; exit 2; }
  # Installed, not imported from this checkout: the test and the check run what a user would get.
  "$PY" -m pytest -q -p no:cacheprovider --rootdir=. -o addopts="--import-mode=importlib" \
    tests/cuda/test_gpu.py tests/cuda/test_kernelbench.py tests/cuda/test_nvcc_builds.py -rs
  tests_rc=$?
  "$PY" scripts/gpu_check.py "$@"
  check_rc=$?
  echo "== tests exit $tests_rc, gpu_check exit $check_rc"
  [ $tests_rc -eq 0 ] && [ $check_rc -eq 0 ]
} 2>&1 | tee "$LOG"
exit "${PIPESTATUS[0]}"
