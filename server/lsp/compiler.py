"""Compiler output about the user's file, as the user's file: errors at their line, scratch paths named back.

Backends compile a copy of the whole file in a scratch folder (/tmp/speedpatch-eval-*/matmul.c), so gcc and
nvcc report `/tmp/speedpatch-eval-x/matmul.c:15:5: error: ...`. The copy is the file byte for byte (the
baseline is the file as it was when the run started), so its lines are the user's lines: only the folder
must be named back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

# gcc/clang: "path:LINE:COL: error: message" (column optional); nvcc's front end: "path(LINE): error: message"
_GCC = re.compile(r"^(?P<path>[^\s:()]+):(?P<line>\d+):(?:(?P<col>\d+):)?\s*(?:fatal\s+)?error:\s*(?P<msg>.+)$")
_NVCC = re.compile(r"^(?P<path>[^\s:()]+)\((?P<line>\d+)\):\s*(?:fatal\s+)?error:\s*(?P<msg>.+)$")


@dataclass(frozen=True)
class CompilerError:
    line: int  # 0-based, in the user's file
    column: int  # 0-based
    message: str


def _ours(reported: str, user_path: str) -> bool:
    """Whether a path in compiler output is the scratch copy of the user's file (same file name)."""
    return Path(reported).name == Path(user_path).name


def compiler_errors(output: str, user_path: str) -> list[CompilerError]:
    """Errors the compiler reported in the user's file (those in headers are left to the full message)."""
    found: list[CompilerError] = []
    seen: set[tuple[int, int, str]] = set()
    for raw in output.splitlines():
        match = _GCC.match(raw.strip()) or _NVCC.match(raw.strip())
        if match is None or not _ours(match["path"], user_path):
            continue
        col = match.groupdict().get("col")
        key = (int(match["line"]) - 1, int(col) - 1 if col else 0, match["msg"].strip())
        if key not in seen:  # the same error is often in both the message and the log
            seen.add(key)
            found.append(CompilerError(*key))
    return found


def relabel(output: str, user_path: str) -> str:
    """Compiler output with scratch copies of the file named as the user's file."""
    name = re.escape(Path(user_path).name)
    return re.sub(rf"(?<![\w.])/[^\s:()'\"]*/{name}(?=[:(])", user_path, output)
