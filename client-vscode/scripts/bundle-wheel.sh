#!/usr/bin/env bash
# Builds the speedpatch wheel (no dependencies) from this repository into client-vscode/python/, so the
# .vsix carries it for the extension's first-use install. The sources are staged in a temporary folder:
# building in the checkout would rewrite its build/ and *.egg-info, which an editable install relies on.
# PYTHON (default python3) needs pip; pip fetches the build backend (setuptools) into an isolated build env.
set -euo pipefail
EXT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROOT="$(dirname "$EXT")"
PYTHON="${PYTHON:-python3}"
STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT
cp -r "$ROOT/pyproject.toml" "$ROOT/setup.py" "$ROOT/README.md" "$ROOT/server" "$ROOT/targets" "$ROOT/menus" "$STAGE/"
find "$STAGE" -name __pycache__ -type d -prune -exec rm -rf {} +
rm -rf "$EXT/python"
mkdir -p "$EXT/python"
"$PYTHON" -m pip wheel --quiet --no-deps --wheel-dir "$EXT/python" "$STAGE"
ls "$EXT/python"
