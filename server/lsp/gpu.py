"""The way forward for a CUDA kernel with no GPU here: set up the cuda-ssh backend in speedpatch.toml.

Writes only what is missing, as text appended to the file (comments and layout of the user's file stay):
a `[backends] cuda = "cuda-ssh"` choice and a `[backend.cuda-ssh]` table whose host the user fills in. The
editor then opens the file at the host line; until a host is set, the kernel says so (cuda-ssh's own
availability check).
"""

from __future__ import annotations

import re
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

CONFIGURE_GPU = "speedpatch.configureGpu"
BACKEND = "cuda-ssh"

_TABLE = f"""
[backend.{BACKEND}]
# the GPU machine: anything ssh accepts (an alias from ~/.ssh/config, user@host); it needs nvcc and a GPU
host = ""
# nvcc = "/usr/local/cuda/bin/nvcc"
# arch = "native"
"""


def configure_gpu(config_path: Path) -> tuple[Path, int, bool]:
    """Make speedpatch.toml choose cuda-ssh and hold its table. Returns (file, 0-based line of `host`,
    whether the file was changed). Refuses (ValueError) to touch a file that does not parse: appending to
    it could not be checked."""
    text = config_path.read_text(encoding="utf-8") if config_path.exists() else ""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{config_path.name} does not parse ({exc}); fix it first") from exc
    added = ""
    backends = data.get("backends")
    if not isinstance(backends, dict) or "cuda" not in backends:
        if isinstance(backends, dict):  # the table exists: its key goes inside it, not in a second table
            text = re.sub(r"(?m)^\[backends\][^\n]*\n", lambda m: m.group(0) + f'cuda = "{BACKEND}"\n', text, count=1)
        else:
            added += f'\n[backends]\ncuda = "{BACKEND}"\n'
    if BACKEND not in (data.get("backend") or {}):
        added += _TABLE
    changed = bool(added) or text != (config_path.read_text(encoding="utf-8") if config_path.exists() else "")
    if changed:
        if text and not text.endswith("\n"):
            text += "\n"
        text += added.lstrip("\n") if not text.strip() else added  # a new file starts with its first table
        tomllib.loads(text)  # what we write must load (a bug here must not break the user's config)
        config_path.write_text(text, encoding="utf-8")
    line = _host_line(text)
    return config_path, line, changed


def _host_line(text: str) -> int:
    lines = text.splitlines()
    start = next((i for i, s in enumerate(lines) if s.strip() == f"[backend.{BACKEND}]"), 0)
    for i in range(start, len(lines)):
        if lines[i].strip().startswith("host"):
            return i
    return start
