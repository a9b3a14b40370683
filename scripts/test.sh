#!/usr/bin/env bash
# Install everything the tests need (venv, package, per-area tools) and run every test.
# Usage: ./scripts/test.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test]'
export PATH="$PWD/.venv/bin:$PATH"
for setup in scripts/setup/*.sh; do
  [ -e "$setup" ] || continue
  echo "== setup: $setup"
  bash "$setup"
done
echo "== ruff"
.venv/bin/ruff check server targets tests benchmarks scripts
echo "== pytest"
exec .venv/bin/python -m pytest -p no:cacheprovider "$@"
