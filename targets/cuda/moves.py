"""Offline moves: deterministic source rewrites of the solution part that often change CUDA speed.

- tunable constants (`#define BLOCK 16`, `constexpr int TILE = 32;`): halve and double, staying powers of
  two and keeping every launch at <= 1024 threads per block;
- `#pragma unroll 4` on a kernel loop that has no unroll pragma;
- `__restrict__` on a kernel's pointer parameters (lets the compiler use the read-only path and reorder).
Moves never touch the harness part; each is one plan in words and the whole resulting file.
"""

from __future__ import annotations

import re

from speedpatch.model import Kernel
from speedpatch.targets.base import Move
from speedpatch.targets.cuda.detect import global_functions
from speedpatch.targets.cuda.occupancy import block_size
from speedpatch.targets.cuda.problem import KIT, split_problem

TUNABLE = re.compile(
    r"^(?P<head>[ \t]*#[ \t]*define[ \t]+(?P<name>\w+)[ \t]+)(?P<value>\d+)(?P<tail>[ \t]*(?://[^\n]*)?)$"
    r"|^(?P<head2>[ \t]*(?:static[ \t]+)?constexpr[ \t]+(?:int|unsigned|size_t)[ \t]+(?P<name2>\w+)[ \t]*=[ \t]*)"
    r"(?P<value2>\d+)(?P<tail2>[ \t]*;[^\n]*)$",
    re.MULTILINE,
)
TUNABLE_NAME = re.compile(r"BLOCK|THREADS|TILE|UNROLL|WARPS|^B[MNK]$|^T[MNXY]$|^B[XY]$|ITEMS|VEC|ROWS_PER|COLS_PER",
                          re.IGNORECASE)
FOR_LOOP = re.compile(r"^([ \t]*)for[ \t]*\(", re.MULTILINE)
POINTER_PARAM = re.compile(r"(\b(?:const\s+)?(?:float[24]?|double|int|unsigned|__half2?|half2?|__nv_bfloat162?|nv_bfloat162?)"
                           r"\s*\*)(?!\s*__restrict__)(\s*)(\w+)")


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _launchable(solution: str, harness: str) -> bool:
    for f in global_functions(solution):
        threads = block_size(solution, f.name, harness)
        if threads is not None and not 1 <= threads <= 1024:
            return False
    return True


def offline_moves(source: str, kernel: Kernel) -> list[Move]:
    layout = split_problem(source)
    if layout is None or layout.kind != KIT:
        return []
    head, solution = source[: layout.solution_start], layout.solution
    moves: list[Move] = []
    seen = {source}

    def add(plan: str, new_solution: str) -> None:
        text = head + new_solution
        if text not in seen:
            seen.add(text)
            moves.append(Move(plan, text))

    for m in TUNABLE.finditer(solution):
        name = m.group("name") or m.group("name2")
        value = int(m.group("value") or m.group("value2"))
        if not TUNABLE_NAME.search(name) or not _is_pow2(value):
            continue
        value_start = m.start("value") if m.group("value") else m.start("value2")
        value_end = m.end("value") if m.group("value") else m.end("value2")
        floor = 32 if re.search("THREADS|WARP", name, re.IGNORECASE) and value >= 32 else 1
        for new in (value * 2, value // 2):
            if new < floor or new > 1024 or new == value:
                continue
            rewritten = solution[:value_start] + str(new) + solution[value_end:]
            if _launchable(rewritten, layout.harness):
                add(f"Change the tuning constant {name} from {value} to {new} (block/tile size trade-off: "
                    "parallelism vs. reuse and occupancy).", rewritten)

    for f in global_functions(solution):
        body = solution[f.start : f.end]
        for loop in FOR_LOOP.finditer(body):
            before = body[: loop.start()].rstrip().splitlines()[-1:] or [""]
            if "#pragma unroll" in before[0]:
                continue
            at = f.start + loop.start()
            line = solution.count("\n", 0, at) + layout.solution_line + 1
            rewritten = solution[:at] + f"{loop.group(1)}#pragma unroll 4\n" + solution[at:]
            add(f"Unroll the loop at line {line} of kernel {f.name} by 4 with `#pragma unroll 4` "
                "(fewer branches, more independent loads in flight).", rewritten)
        open_paren = body.find("(")
        close_paren = body.find(")", open_paren)
        if open_paren >= 0 and close_paren > open_paren:
            params = body[open_paren:close_paren]
            # `float *x` has no space after the `*`: one is needed, or `__restrict__x` becomes one name.
            restricted = POINTER_PARAM.sub(lambda p: f"{p.group(1)} __restrict__{p.group(2) or ' '}{p.group(3)}",
                                           params)
            if restricted != params:
                rewritten = (solution[: f.start + open_paren] + restricted + solution[f.start + close_paren :])
                add(f"Mark the pointer parameters of {f.name} `__restrict__` so the compiler may keep values in "
                    "registers and use the read-only data path.", rewritten)
    return moves
