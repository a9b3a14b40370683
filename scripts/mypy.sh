#!/usr/bin/env bash
# Type-check server/ and targets/ as the package they install as (server/ is speedpatch, targets/ is
# speedpatch.targets). mypy cannot follow the editable install's import hook that maps them, so it checks
# a tree of links laid out as installed: speedpatch/<each entry of server/> and speedpatch/targets.
# Settings and the modules left out (each with its reason) are in pyproject.toml, [tool.mypy].
# Usage: scripts/mypy.sh [mypy args]; paths in its messages are the repository's (server/..., targets/...).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MYPY=${MYPY:-$ROOT/.venv/bin/mypy}
# one tree per clone, kept between runs so that mypy's cache (keyed by path) stays valid
TREE=${XDG_CACHE_HOME:-$HOME/.cache}/speedpatch/mypy-tree-$(printf %s "$ROOT" | sha1sum | cut -c1-12)
rm -rf "$TREE/speedpatch"
mkdir -p "$TREE/speedpatch"
for entry in server/*; do
  [ "$(basename "$entry")" = __pycache__ ] || ln -s "$ROOT/$entry" "$TREE/speedpatch/"
done
ln -s "$ROOT/targets" "$TREE/speedpatch/targets"
cd "$TREE"
"$MYPY" --config-file "$ROOT/pyproject.toml" --cache-dir "$TREE/.mypy_cache" -p speedpatch "$@" \
  | sed -e 's#^speedpatch/targets/#targets/#' -e 's#^speedpatch/#server/#'
