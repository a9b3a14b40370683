#!/usr/bin/env bash
# Collect speedpatch and every wheel it needs into one folder, for a GPU host that cannot reach PyPI.
#   scripts/gpu_host/wheels.sh DIR [PYTHON_VERSION]     (the GPU host's Python, default 3.12; x86-64 Linux)
# Copy DIR and this checkout to the host, then run scripts/gpu_host/check.sh DIR there.
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR=${1:?usage: scripts/gpu_host/wheels.sh DIR [PYTHON_VERSION]}
PYVER=${2:-3.12}
PY=${PYTHON:-python3}
mkdir -p "$DIR"
"$PY" -m pip wheel -q --no-deps -w "$DIR" .
# The same requirements the wheel declares, resolved for the host's interpreter and platform.
mapfile -t REQS < <("$PY" - <<'PYEOF'
try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib
with open("pyproject.toml", "rb") as f:
    deps = tomllib.load(f)["project"]["dependencies"]
print("\n".join(d for d in deps if "python_version <" not in d))
PYEOF
)
platforms=()
for p in manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux_2_24_x86_64 manylinux_2_27_x86_64 manylinux_2_28_x86_64; do
  platforms+=(--platform "$p")
done
"$PY" -m pip download -q --only-binary=:all: --python-version "$PYVER" --implementation cp "${platforms[@]}" \
  -d "$DIR" "${REQS[@]}"
echo "wheels for Python $PYVER in $DIR: $(ls "$DIR" | wc -l) files, $(du -sh "$DIR" | cut -f1)"
