#!/usr/bin/env bash
# Run a command next to a real local Ray cluster, inside the caller's private network namespace (the
# test wraps this script in `unshare -n`): only loopback exists, so nothing binds or reaches another
# interface. A head node and one worker, both offering the custom resource gemmini_host (so that a task
# of a worker killed mid-run has somewhere to be retried).
# usage: cluster.sh COMMAND...   (environment: RAY_PORT, RAY_BIN)
set -euo pipefail
ip link set lo up
export RAY_USAGE_STATS_ENABLED=0
PORT=${RAY_PORT:-6391}
RAY=${RAY_BIN:-ray}
cleanup() { "$RAY" stop --force >/dev/null 2>&1 || true; }
trap cleanup EXIT
# a temp dir of its own: another cluster on this machine (another test run's namespace) must not share it
TMP=$(mktemp -d /tmp/ray-test-XXXX)
"$RAY" start --head --node-ip-address=127.0.0.1 --port="$PORT" --num-cpus=2 --include-dashboard=false \
  --disable-usage-stats --resources='{"gemmini_host": 2}' --object-store-memory=100000000 --temp-dir="$TMP" >/dev/null
"$RAY" start --address="127.0.0.1:$PORT" --node-ip-address=127.0.0.1 --num-cpus=2 \
  --resources='{"gemmini_host": 2}' --object-store-memory=100000000 >/dev/null
export SPEEDPATCH_RAY_ADDRESS="127.0.0.1:$PORT"
"$@"
