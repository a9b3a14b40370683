#!/usr/bin/env bash
# CUDA target test setup: cuobjdump + nvdisasm (SASS instruction mix of cuda-compile) from PyPI into the
# project venv. nvcc itself comes with the machine (CUDA toolkit); tests that need it skip without it.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=.venv/bin/python
[ -x "$PY" ] || PY=python3
if ! "$PY" -c "import glob,sys,os; sys.exit(0 if any(glob.glob(os.path.join(p,'nvidia','*','bin','nvdisasm')) for p in sys.path) else 1)" 2>/dev/null; then
  "$PY" -m pip install -q nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm
fi
