"""Theoretical occupancy from registers, shared memory and block size, as the CUDA occupancy calculator
computes it, for a few named architectures. The block size is read from the launch in the source when it
can be worked out from constants; dynamic shared memory is not known at compile time and is left out."""

from __future__ import annotations

import ast
import math
import operator
import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ArchLimits:
    max_warps: int  # resident warps per SM
    max_blocks: int  # resident blocks per SM
    regs_per_sm: int
    smem_per_sm: int  # bytes usable by blocks (largest carve-out)
    reserved_smem_per_block: int  # bytes the system keeps per resident block
    reg_unit: int = 256  # registers are allocated per warp in units of this many
    smem_unit: int = 128
    max_threads_per_block: int = 1024


ARCHS: dict[str, ArchLimits] = {
    "sm_70": ArchLimits(64, 32, 65536, 98304, 0),
    "sm_75": ArchLimits(32, 16, 65536, 65536, 0),
    "sm_80": ArchLimits(64, 32, 65536, 167936, 1024),
    "sm_86": ArchLimits(48, 16, 65536, 102400, 1024),
    "sm_89": ArchLimits(48, 24, 65536, 102400, 1024),
    "sm_90": ArchLimits(64, 32, 65536, 233472, 1024),
    "sm_100": ArchLimits(64, 32, 65536, 233472, 1024),
    "sm_120": ArchLimits(48, 32, 65536, 102400, 1024),
}


def arch_limits(arch: str) -> ArchLimits | None:
    key = arch.replace("compute_", "sm_").rstrip("a").rstrip("f")
    return ARCHS.get(key)


def occupancy(arch: str, threads_per_block: int, registers: int, shared_bytes: int) -> dict[str, Any]:
    """Resident blocks/warps per SM and the limiting resource; {"error": ...} when it cannot be computed."""
    limits = arch_limits(arch)
    if limits is None:
        return {"error": f"no occupancy table for {arch} (known: {', '.join(ARCHS)})"}
    if threads_per_block <= 0 or threads_per_block > limits.max_threads_per_block:
        return {"error": f"block of {threads_per_block} threads is not launchable"}
    warps = math.ceil(threads_per_block / 32)
    by_warps = limits.max_warps // warps
    regs_per_warp = math.ceil(max(registers, 1) * 32 / limits.reg_unit) * limits.reg_unit
    by_regs = (limits.regs_per_sm // regs_per_warp) // warps
    smem = math.ceil((shared_bytes + limits.reserved_smem_per_block) / limits.smem_unit) * limits.smem_unit
    by_smem = limits.smem_per_sm // smem if smem > 0 else limits.max_blocks
    candidates = {"blocks": limits.max_blocks, "warps": by_warps, "registers": by_regs, "shared memory": by_smem}
    blocks = min(candidates.values())
    limiter = min(candidates, key=lambda k: candidates[k])
    return {
        "arch": arch,
        "threads_per_block": threads_per_block,
        "blocks_per_sm": blocks,
        "warps_per_sm": blocks * warps,
        "max_warps_per_sm": limits.max_warps,
        "occupancy": round(blocks * warps / limits.max_warps, 3),
        "limited_by": limiter,
    }


# --- reading the block size from source --------------------------------------------------------------

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
        ast.Mod: operator.mod, ast.LShift: operator.lshift, ast.RShift: operator.rshift}
DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+([^\n]+)$", re.MULTILINE)
CONSTEXPR = re.compile(r"\b(?:constexpr|const)\s+(?:unsigned\s+|static\s+)*(?:int|unsigned|size_t|long)\s+(\w+)\s*=\s*([^;,]+)[;,]")


def _eval(expr: str, consts: dict[str, str], depth: int = 0) -> int | None:
    expr = re.sub(r"\b(\d+)[uUlL]+\b", r"\1", expr.strip()).replace("/", "//")
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        return None

    def walk(node: ast.AST) -> int | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name) and node.id in consts and depth < 8:
            return _eval(consts[node.id].replace("//", "/"), consts, depth + 1)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            left, right = walk(node.left), walk(node.right)
            if left is None or right is None or (right == 0 and isinstance(node.op, (ast.FloorDiv, ast.Mod))):
                return None
            return _OPS[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            value = walk(node.operand)
            return None if value is None else -value
        return None

    return walk(tree.body)


def constants(text: str) -> dict[str, str]:
    found = {m.group(1): m.group(2).split("//")[0].strip() for m in DEFINE.finditer(text)}
    found.update({m.group(1): m.group(2).strip() for m in CONSTEXPR.finditer(text)})
    return found


def _split_args(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def _product(dims: list[int | None]) -> int | None:
    """The product of the dimensions, None when there are none or one is not known."""
    known = [d for d in dims if d is not None]
    return math.prod(known) if known and len(known) == len(dims) else None


def _threads(expr: str, text: str, consts: dict[str, str]) -> int | None:
    expr = expr.strip()
    m = re.fullmatch(r"dim3\s*\((.*)\)", expr, re.DOTALL)
    if m:
        return _product([_eval(a, consts) for a in _split_args(m.group(1))])
    if re.fullmatch(r"\w+", expr):
        decl = re.search(rf"\bdim3\s+{expr}\s*(?:\(([^;]*)\)|=\s*dim3\s*\(([^;]*)\)|\{{([^;]*)\}})\s*;", text)
        if decl:
            args = next(g for g in decl.groups() if g is not None)
            return _product([_eval(a, consts) for a in _split_args(args)])
        value = re.search(rf"\b(?:int|unsigned|const\s+int|constexpr\s+int)\s+{expr}\s*=\s*([^;]+);", text)
        if value:
            return _eval(value.group(1), consts)
    return _eval(expr, consts)


def block_size(text: str, kernel: str, context: str = "") -> int | None:
    """Threads per block of `kernel`: from __launch_bounds__, else from its launch `<<<grid, block>>>`
    when the block expression reduces to constants (#define / constexpr, in text or context)."""
    consts = constants(context + "\n" + text)
    bounds = re.search(rf"__launch_bounds__\s*\(\s*([^,)]+)[^)]*\)\s*{kernel}\b", text)
    launch = re.search(rf"\b{kernel}\s*(?:<[^<>]*>)?\s*<<<(.*?)>>>", text, re.DOTALL)
    if launch:
        args = _split_args(launch.group(1))
        if len(args) >= 2:
            threads = _threads(args[1], text, consts)
            if threads:
                return threads
    if bounds:
        return _eval(bounds.group(1), consts)
    return None
