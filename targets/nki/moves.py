"""Offline moves: deterministic whole-file rewrites that may make an NKI kernel faster in the cost model
(and on hardware), each with the plan text an LLM would have written. The search evaluates every move
like any candidate, so a move that breaks a constraint or the result is simply discarded.

Moves: hoist loop-invariant loads out of a loop; retile (grow TILE_*/BLOCK_* constants of the kernel);
turn a sequential_range without loop-carried values into affine_range; fuse an elementwise multiply /
add / subtract into the Scalar engine's activation (scale / bias operands).
"""

from __future__ import annotations

import ast
import re

from speedpatch.model import Kernel
from speedpatch.targets.base import Move
from speedpatch.targets.nki.detect import parse_python

ACTIVATIONS = {"exp", "tanh", "sigmoid", "relu", "gelu", "silu", "log", "sqrt", "rsqrt", "square", "softplus"}
MAX_TILE = 2048


def offline_moves(source: str, kernel: Kernel) -> list[Move]:
    tree = parse_python(source)
    if tree is None:
        return []
    func = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == kernel.name), None)
    if func is None:
        return []
    moves: list[Move] = []
    for make in (_hoist_moves, _retile_moves, _affine_moves, _fusion_moves):
        moves += make(source, tree, func)
    seen: set[str] = set()  # the first move that reaches a given source keeps it
    unique: list[Move] = []
    for m in moves:
        if m.source != source and m.source not in seen:
            seen.add(m.source)
            unique.append(m)
    return unique


# ---- text helpers ------------------------------------------------------------------------------------


class _Text:
    """Offsets into the source from ast (line, column) positions (columns are UTF-8 byte offsets)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.lines = source.splitlines(keepends=True)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))

    def offset(self, line: int, col: int) -> int:
        text = self.lines[line - 1] if line - 1 < len(self.lines) else ""
        return self.starts[line - 1] + len(text.encode("utf-8")[:col].decode("utf-8", "ignore"))

    def span(self, node: ast.expr | ast.stmt) -> tuple[int, int]:
        end_col = node.end_col_offset
        if end_col is None:
            raise ValueError(f"{type(node).__name__} at line {node.lineno} has no end position")
        return (self.offset(node.lineno, node.col_offset), self.offset(_end_line(node), end_col))

    def segment(self, node: ast.expr | ast.stmt) -> str:
        start, end = self.span(node)
        return self.source[start:end]


def _end_line(node: ast.expr | ast.stmt) -> int:
    """The node's last line. ast.parse sets it on every statement and expression; the type allows None for
    nodes built by hand, which no move sees."""
    if node.end_lineno is None:
        raise ValueError(f"{type(node).__name__} at line {node.lineno} has no end position")
    return node.end_lineno


def _replace(source: str, edits: list[tuple[int, int, str]]) -> str:
    for start, end, text in sorted(edits, reverse=True):
        source = source[:start] + text + source[end:]
    return source


def _call_name(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute):
            return func.attr
        if isinstance(func, ast.Name):
            return func.id
    return ""


def _names(node: ast.AST, ctx: type) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)}


def _module_alias(tree: ast.Module, module: str) -> str | None:
    """The local name bound to e.g. nki.isa (import nki.isa as nisa / from nki import isa)."""
    for node in tree.body:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in (module, f"neuronxcc.{module}") and a.asname:
                    return a.asname
        if isinstance(node, ast.ImportFrom) and node.module in ("nki", "neuronxcc.nki"):
            for a in node.names:
                if f"nki.{a.name}" == module:
                    return a.asname or a.name
    return None


# ---- hoisting ----------------------------------------------------------------------------------------


def _hoist_moves(source: str, tree: ast.Module, func: ast.FunctionDef) -> list[Move]:
    text = _Text(source)
    moves = []
    for loop in [n for n in ast.walk(func) if isinstance(n, ast.For)]:
        loop_vars = _names(loop.target, ast.Store)
        stored_in_loop = _names(loop, ast.Store)
        hoist: list[ast.Assign] = []
        hoisted_names: list[str] = []
        for stmt in loop.body:
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
                continue
            if _call_name(stmt.value) not in ("load", "load_transpose2d"):
                continue
            target = stmt.targets[0].id
            used = _names(stmt.value, ast.Load)
            stores_of_target = sum(1 for n in ast.walk(loop) if isinstance(n, ast.Name) and n.id == target
                                   and isinstance(n.ctx, ast.Store))
            if used & (loop_vars | (stored_in_loop - {target})) or stores_of_target != 1:
                continue
            hoist.append(stmt)
            hoisted_names.append(target)
        if not hoist:
            continue
        moved_lines = []
        edits = []
        for stmt in hoist:
            start = text.starts[stmt.lineno - 1]
            end = text.starts[_end_line(stmt)]
            block = source[start:end]
            dedent = stmt.col_offset - loop.col_offset
            moved_lines.append("".join(line[dedent:] if line.strip() else line for line in block.splitlines(keepends=True)))
            edits.append((start, end, ""))
        loop_start = text.starts[loop.lineno - 1]
        edits.append((loop_start, loop_start, "".join(moved_lines)))
        names = ", ".join(hoisted_names)
        one = len(hoist) == 1
        plan = (f"Hoist loop-invariant loads out of the loop at line {loop.lineno}: {names} "
                f"{'does' if one else 'do'} not depend on the loop, so load {'it' if one else 'them'} once before "
                f"the loop and keep {'it' if one else 'them'} resident in SBUF.")
        moves.append(Move(plan=plan, source=_replace(source, edits)))
    return moves


# ---- retiling ----------------------------------------------------------------------------------------

_TILE_NAME = re.compile(r"^[A-Z0-9_]*(TILE|BLOCK)[A-Z0-9_]*$")


def _retile_moves(source: str, tree: ast.Module, func: ast.FunctionDef) -> list[Move]:
    text = _Text(source)
    moves = []
    for stmt in func.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            continue
        name = stmt.targets[0].id
        value = stmt.value
        if not (_TILE_NAME.match(name) and isinstance(value, ast.Constant) and isinstance(value.value, int)):
            continue
        old = value.value
        limit = _tile_limit(text, func, name, stmt)
        for factor in (2, 4):
            new = old * factor
            if new > limit:  # a tile the hardware cannot hold fails every time: never propose it
                continue
            start, end = text.span(value)
            plan = (f"Retile: raise {name} from {old} to {new} so that each DMA transfer and engine instruction "
                    f"handles {factor}x more data per call (fewer fixed per-instruction and per-DMA costs).")
            moves.append(Move(plan=plan, source=_replace(source, [(start, end, str(new))])))
    return moves


PMAX = 128  # nl.tile_size.pmax: partitions of SBUF/PSUM, the first dimension of every on-chip tile
_STATED_LIMIT = re.compile(r"<=\s*(\d+)")


def _tile_limit(text: _Text, func: ast.FunctionDef, name: str, stmt: ast.Assign) -> int:
    """The largest value the tile constant `name` may take: MAX_TILE, the partition limit when the constant
    sizes the first (partition) dimension of a slice or of an on-chip tensor, and a limit the author
    stated on its line ("# ... (<= 512)")."""
    limit = MAX_TILE
    stated = _STATED_LIMIT.search(text.lines[stmt.lineno - 1].partition("#")[2]) if stmt.lineno <= len(text.lines) else None
    if stated:
        limit = min(limit, int(stated.group(1)))
    for node in ast.walk(func):
        first: ast.AST | None = None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple) and node.slice.elts:
            first = node.slice.elts[0]
        elif isinstance(node, ast.Call) and _call_name(node) in ("zeros", "ndarray", "full", "empty") and node.args:
            shape = node.args[0]
            on_chip = not any(k.arg == "buffer" and "hbm" in ast.dump(k.value) for k in node.keywords)
            if isinstance(shape, ast.Tuple) and shape.elts and on_chip:
                first = shape.elts[0]
        if first is not None and name in _names(first, ast.Load):
            limit = min(limit, PMAX)
    return limit


# ---- sequential_range -> affine_range ----------------------------------------------------------------


def _carries_values(loop: ast.For) -> bool:
    if any(isinstance(n, ast.AugAssign) for n in ast.walk(loop)):
        return True
    if any(isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store) for n in ast.walk(loop)):
        return True
    first_store: dict[str, int] = {}
    for n in ast.walk(loop):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            first_store[n.id] = min(first_store.get(n.id, n.lineno), n.lineno)
    loop_vars = _names(loop.target, ast.Store)
    for n in ast.walk(loop):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in first_store and n.id not in loop_vars:
            if n.lineno <= first_store[n.id] and n.lineno != loop.lineno:
                return True
    return False


def _affine_moves(source: str, tree: ast.Module, func: ast.FunctionDef) -> list[Move]:
    text = _Text(source)
    moves = []
    for loop in [n for n in ast.walk(func) if isinstance(n, ast.For)]:
        call = loop.iter
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr == "sequential_range") or _carries_values(loop):
            continue
        start, end = text.span(call.func)
        new_func = text.segment(call.func.value) + ".affine_range"
        plan = (f"The loop at line {loop.lineno} carries no values between iterations: make it nl.affine_range "
                f"instead of nl.sequential_range so that the compiler is free to reorder, unroll and pipeline "
                f"its iterations.")
        moves.append(Move(plan=plan, source=_replace(source, [(start, end, new_func)])))
    return moves


# ---- fusing elementwise work into activation ---------------------------------------------------------


def _fused(text: _Text, outer: ast.Call, inner: ast.Call, isa: str) -> str | None:
    if len(outer.args) != 1 or outer.keywords or len(inner.args) != 2 or inner.keywords:
        return None
    assert isinstance(outer.func, ast.Attribute)
    nl = text.segment(outer.func.value)
    data, other = (text.segment(a) for a in inner.args)
    kind = _call_name(inner)
    if kind == "multiply":
        extra = f"scale={other}"
    elif kind == "add":
        extra = f"bias={other}"
    elif kind == "subtract":
        extra = f"bias={nl}.negative({other})"
    else:
        return None
    return f"{isa}.activation(op={nl}.{outer.func.attr}, data={data}, {extra})"


def _fusion_moves(source: str, tree: ast.Module, func: ast.FunctionDef) -> list[Move]:
    isa = _module_alias(tree, "nki.isa")
    if isa is None:
        return []
    text = _Text(source)
    moves = []
    binaries = {"multiply", "add", "subtract"}
    # nested: nl.exp(nl.subtract(x, m))
    for outer in [n for n in ast.walk(func) if isinstance(n, ast.Call) and _call_name(n) in ACTIVATIONS]:
        if outer.args and isinstance(outer.args[0], ast.Call) and _call_name(outer.args[0]) in binaries:
            fused = _fused(text, outer, outer.args[0], isa)
            if fused:
                start, end = text.span(outer)
                moves.append(Move(plan=_fusion_plan(outer, outer.args[0]), source=_replace(source, [(start, end, fused)])))
    # two statements: t = nl.subtract(x, m); e = nl.exp(t), t used nowhere else
    loads: dict[str, list[ast.Name]] = {}
    for n in ast.walk(func):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            loads.setdefault(n.id, []).append(n)
    for stmt in [n for n in ast.walk(func) if isinstance(n, ast.Assign)]:
        if not (len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.Call)
                and _call_name(stmt.value) in binaries):
            continue
        name = stmt.targets[0].id
        uses = loads.get(name, [])
        if len(uses) != 1:
            continue
        activation = next((c for c in ast.walk(func) if isinstance(c, ast.Call) and _call_name(c) in ACTIVATIONS
                           and len(c.args) == 1 and c.args[0] is uses[0]), None)
        if activation is None or activation.lineno <= _end_line(stmt):
            continue
        fused = _fused(text, activation, stmt.value, isa)
        if fused:
            start, end = text.span(activation)
            line_start, line_end = text.starts[stmt.lineno - 1], text.starts[_end_line(stmt)]
            moves.append(Move(plan=_fusion_plan(activation, stmt.value),
                              source=_replace(source, [(start, end, fused), (line_start, line_end, "")])))
    return moves


def _fusion_plan(outer: ast.Call, inner: ast.Call) -> str:
    role = "scale" if _call_name(inner) == "multiply" else "bias"
    return (f"Fuse the {_call_name(inner)} at line {inner.lineno} into the {_call_name(outer)} on the Scalar engine: "
            f"nisa.activation applies its {role} operand for free, saving one Vector-engine pass over the tile.")
