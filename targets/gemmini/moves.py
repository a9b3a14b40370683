"""Offline moves for Gemmini kernels: deterministic source rewrites of the library calls inside a kernel
that change its schedule (tile sizes, dataflow, hardware loop vs. instructions issued by the core).

Each move rewrites only the kernel function's body, so a winner can always be applied to the editor's
file by splicing the kernel alone. Which move is faster is for the model to say: the search evaluates
them all and keeps the fastest correct ones.

Rewrites:
  tiled_matmul_auto(...)  -> tiled_matmul(... explicit tiles ...)          (LOOP_WS, chosen tiles)
                          -> gemmini_tiled_matmul_manual(..., WS | OS)     (core-issued, double-buffered
                                                                           scratchpad and accumulator)
                          -> the schedule written out: every instruction from the core, or one LOOP_WS
                             per tile (schedules.py renders them and recognises them for later retunes)
  tiled_matmul(...)       -> neighbouring tile sizes; the core-issued form
  gemmini_tiled_matmul_manual(...) -> neighbouring tile sizes; the other dataflow
  a written-out schedule  -> neighbouring dividing tiles; core-issued: accumulator halves on/off, the other
                             dataflow; per-tile LOOP_WS: every instruction from the core instead
  tiled_conv_auto(...)    -> tiled_conv(... explicit tiles ...)
  tiled_conv(...)         -> neighbouring tile sizes
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import product

from speedpatch.model import Kernel
from speedpatch.targets.base import Move
from speedpatch.targets.gemmini.csource import skip_literal, split_top_level
from speedpatch.targets.gemmini.schedules import (
    DIM,
    HALF_ACC_ROWS,
    HALF_SPAD_ROWS,
    Operands,
    Schedule,
    clashes,
    declared_names,
    find_schedules,
    in_block,
    join,
    render_schedule,
    resident_panel,
    tokens,
)

IDENTITY_SCALES = {"MVIN_SCALE_IDENTITY", "ACC_SCALE_IDENTITY", "1", "1.0", "1.0f", "1.f"}
FALSE = {"false", "0"}
MAX_MOVES = 14

CALL_NAMES = ("tiled_matmul_auto", "tiled_matmul", "gemmini_tiled_matmul_manual", "tiled_conv_auto", "tiled_conv")


@dataclass
class Call:
    name: str
    start: int  # offsets in the kernel text, of the whole call `name(...)`
    end: int
    args: list[str]


# ------------------------------------------------------------------------------------------- parsing
def _split_args(inner: str) -> list[str]:
    return [arg.strip() for arg in split_top_level(inner, ",")]


def find_calls(text: str) -> list[Call]:
    calls = []
    for m in re.finditer(r"\b(" + "|".join(CALL_NAMES) + r")\s*\(", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            ch = text[i]
            if ch in "\"'":
                i = skip_literal(text, i)
                continue
            depth += ch == "("
            depth -= ch == ")"
            i += 1
        if depth == 0:
            calls.append(Call(m.group(1), m.start(), i, _split_args(text[m.end():i - 1])))
    return calls


def int_defines(source: str) -> dict[str, str]:
    return {m.group(1): m.group(2).split("//")[0].strip()
            for m in re.finditer(r"^\s*#\s*define\s+(\w+)\s+(.+?)\s*$", source, re.MULTILINE)}


def eval_int(expr: str, defines: dict[str, str], depth: int = 0) -> int | None:
    """The integer value of a C constant expression of literals, macros and + - * / ( ); None if unknown."""
    if depth > 10:
        return None
    expr = re.sub(r"\b(\d+)[uUlL]+\b", r"\1", expr)

    def expand(m: re.Match[str]) -> str:
        name = m.group(0)
        if name in defines:
            value = eval_int(defines[name], defines, depth + 1)
            if value is not None:
                return str(value)
        return name

    expr = re.sub(r"\b[A-Za-z_]\w*\b", expand, expr).replace("/", "//")
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        return None
    allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Add, ast.Sub, ast.Mult, ast.FloorDiv,
               ast.USub, ast.UAdd)
    if not all(isinstance(n, allowed) for n in ast.walk(tree)):
        return None
    try:
        value = eval(compile(tree, "<expr>", "eval"), {"__builtins__": {}})  # only arithmetic nodes remain
    except ZeroDivisionError:
        return None
    return value if isinstance(value, int) else None


# -------------------------------------------------------------------------------------------- tiling
def blocks(n: int) -> int:
    return (n + DIM - 1) // DIM


def matmul_fits(ti: int, tj: int, tk: int) -> bool:
    return ti * tj * DIM <= HALF_ACC_ROWS and (ti * tk + tk * tj) * DIM <= HALF_SPAD_ROWS


def auto_tiles(dim_i: int, dim_j: int, dim_k: int) -> tuple[int, int, int]:
    """The tiles tiled_matmul_auto picks (the same rule as gemmini_lib.h)."""
    ti, tj, tk = blocks(dim_i), blocks(dim_j), blocks(dim_k)
    Ib, Jb, Kb = ti, tj, tk
    while not matmul_fits(ti, tj, tk):
        if ti >= tj and ti >= tk and ti > 1:
            ti -= 1
        elif tj >= tk and tj > 1:
            tj -= 1
        elif tk > 1:
            tk -= 1
        else:
            break
    grown = True
    while grown:
        grown = False
        if tj < Jb and matmul_fits(ti, tj + 1, tk):
            tj, grown = tj + 1, True
        if ti < Ib and matmul_fits(ti + 1, tj, tk):
            ti, grown = ti + 1, True
        if tk < Kb and matmul_fits(ti, tj, tk + 1):
            tk, grown = tk + 1, True
    return ti, tj, tk


def neighbours(tiles: tuple[int, int, int], dims: tuple[int, int, int] | None) -> list[tuple[int, int, int]]:
    """Tile shapes one step away: each tile dimension doubled or halved, clipped to the problem."""
    out = []
    for axis, factor in product(range(3), (2, 0.5)):
        t = list(tiles)
        t[axis] = max(1, int(t[axis] * factor))
        if dims:
            t[axis] = min(t[axis], blocks(dims[axis]))
        cand = (t[0], t[1], t[2])
        if cand != tiles and matmul_fits(*cand) and cand not in out:
            out.append(cand)
    return out


def wide_tiles(dims: tuple[int, int, int]) -> tuple[int, int, int]:
    """LOOP_WS tiles wide in J: up to 16 column blocks (two block rows of I still fill the accumulator half),
    I to fill the rest of it, K as deep as the scratchpad half holds. Each A block the loop moves in then
    feeds tile_J columns, and each mvout row is 16 x tile_J wide, so A is re-read Jb / tile_J times instead
    of Jb / tiled_matmul_auto's tile_J (its rule grows the biggest dimension first, usually I)."""
    Ib, Jb, Kb = (blocks(d) for d in dims)
    tj = min(Jb, HALF_ACC_ROWS // DIM // 2)
    ti = max(1, min(Ib, HALF_ACC_ROWS // DIM // tj))
    tk = max(1, min(Kb, HALF_SPAD_ROWS // DIM // (ti + tj)))
    return ti, tj, tk


def good_tiles(dims: tuple[int, int, int]) -> list[tuple[int, int, int]]:
    """A few shapes that use the whole accumulator half (ti*tj = 32 blocks) with a medium K tile: the
    region where the model's reuse/overlap trade-off is usually best."""
    Ib, Jb, Kb = (blocks(d) for d in dims)
    out = []
    for ti, tj in ((8, 4), (4, 8), (4, 4), (16, 2), (2, 16)):
        ti, tj = min(ti, Ib), min(tj, Jb)
        tk = min(Kb, 16)
        while tk > 1 and not matmul_fits(ti, tj, tk):
            tk //= 2
        if matmul_fits(ti, tj, tk) and (ti, tj, tk) not in out:
            out.append((ti, tj, tk))
    return out


# ------------------------------------------------------------------------------------------- rewrites
def _manual_ok(args: dict[str, str]) -> bool:
    """The core-issued form supports identity input scales and no transposes / full C / low D."""
    return (args["A_scale"] in IDENTITY_SCALES and args["B_scale"] in IDENTITY_SCALES
            and args["D_scale"] in IDENTITY_SCALES
            and all(args[k] in FALSE for k in ("tA", "tB", "full_C", "low_D")))


MATMUL_AUTO = ["I", "J", "K", "A", "B", "D", "C", "sA", "sB", "sD", "sC", "A_scale", "B_scale", "D_scale", "act",
               "scale", "bert", "repeating", "tA", "tB", "full_C", "low_D", "weightA", "type"]
MATMUL = MATMUL_AUTO[:18] + ["tile_I", "tile_J", "tile_K"] + MATMUL_AUTO[18:]
MANUAL = ["I", "J", "K", "A", "B", "D", "C", "sA", "sB", "sD", "sC", "act", "scale", "repeating", "tile_I", "tile_J",
          "tile_K", "type"]


def _tiled_matmul(a: dict[str, str], tiles: tuple[int, int, int]) -> str:
    vals = dict(a, tile_I=str(tiles[0]), tile_J=str(tiles[1]), tile_K=str(tiles[2]), type="WS")
    return "tiled_matmul(" + ", ".join(vals[k] for k in MATMUL) + ")"


def _manual(a: dict[str, str], tiles: tuple[int, int, int], dataflow: str) -> str:
    vals = dict(a, tile_I=str(tiles[0]), tile_J=str(tiles[1]), tile_K=str(tiles[2]), type=dataflow)
    return "gemmini_tiled_matmul_manual(" + ", ".join(vals[k] for k in MANUAL) + ")"


def _fmt(t: tuple[int, int, int]) -> str:
    return f"tile_I={t[0]}, tile_J={t[1]}, tile_K={t[2]} (blocks of {DIM})"


def _positive_triple(exprs: list[str], defines: dict[str, str]) -> tuple[int, int, int] | None:
    """The values of three C expressions (sizes or tiles) when each is a known positive integer, else None."""
    x, y, z = (eval_int(e, defines) for e in exprs)
    if x is None or y is None or z is None or min(x, y, z) <= 0:
        return None
    return (x, y, z)


Rewrite = str | Schedule  # a call expression that replaces the call, or a schedule that replaces its statement


def matmul_moves(call: Call, defines: dict[str, str]) -> list[tuple[str, Rewrite]]:
    names = {"tiled_matmul_auto": MATMUL_AUTO, "tiled_matmul": MATMUL, "gemmini_tiled_matmul_manual": MANUAL}[call.name]
    if len(call.args) != len(names):
        return []
    a = dict(zip(names, call.args, strict=True))
    dims = _positive_triple([a[k] for k in ("I", "J", "K")], defines)
    out: list[tuple[str, Rewrite]] = []
    if call.name == "tiled_matmul_auto":
        if dims is None:
            return []
        auto = auto_tiles(*dims)
        manual = _manual_ok(a) and a["type"].strip() != "CPU"
        if manual:
            out.append((f"Issue the matmul from the core (no LOOP_WS) with the weight-stationary dataflow and the same "
                        f"tiles ({_fmt(auto)}), double-buffering scratchpad and accumulator halves so loads, "
                        "computation and write-back of successive tiles overlap.", _manual(a, auto, "WS")))
            for t in good_tiles(dims):
                out.append((f"Issue the matmul from the core, weight-stationary, with tiles {_fmt(t)} that fill the "
                            "accumulator half for more reuse of each loaded A and B block.", _manual(a, t, "WS")))
            out.append((f"Switch to the output-stationary dataflow (sums stay in the PEs over the K tile), issued "
                        f"from the core with tiles {_fmt(auto)}.", _manual(a, auto, "OS")))
        if dims is not None and explicit_ok(a, dims):
            ops = Operands.of_call(a)
            panel = resident_panel(dims)
            resident = Schedule(dims, (1, panel, dims[2] // DIM), ops, resident=True) if panel else None
            if resident is not None and not clashes(resident):
                out.insert(0, ("Move each operand once: keep a panel of B (all of K, "
                               f"{panel} column blocks) resident in the scratchpad, move every 16-row block of A in "
                               "once per panel (two slots, the next loading while this one computes) and store its "
                               "results right away, so every DMA stream walks its operand in order and the TLB "
                               "keeps its translations instead of walking the page table on every switch between "
                               "A, B and C.", resident))
            for tiles in loop_candidates(dims):
                s = Schedule(dims, tiles, ops, loop=True)
                if not clashes(s):
                    out.append((f"Write one LOOP_WS per tile explicitly with dividing tiles {_fmt(tiles)}, "
                                "alternating scratchpad halves, skip moving in again an A or B tile that is already "
                                "in the half (pass NULL) when the whole operand is a single tile, and store the "
                                "results from the core with mvouts 4 blocks wide (one 64-byte DMA request per row "
                                "instead of four).", s))
            for tiles, acc_double in explicit_candidates(dims):
                s = Schedule(dims, tiles, ops, acc_double=acc_double)
                if not clashes(s):
                    out.append((f"Write the schedule out explicitly (weight-stationary, tiles {_fmt(tiles)}, "
                                f"accumulator {'double-buffered' if acc_double else 'used whole'}) with constant loop "
                                "bounds, so the core spends few cycles per instruction and each B block stays in the "
                                "PEs for a whole column of A blocks.", s))
        wide = wide_tiles(dims)
        if wide != auto and matmul_fits(*wide):
            out.append((f"Keep the LOOP_WS hardware loop but give tiled_matmul tiles wide in J, {_fmt(wide)}, "
                        f"instead of the automatic {_fmt(auto)}: each A block moved in then feeds "
                        f"{wide[1]} column blocks, so A is read from memory fewer times.", _tiled_matmul(a, wide)))
        for t in [t for t in neighbours(auto, dims) if t != wide][:3]:
            out.append((f"Replace tiled_matmul_auto by tiled_matmul with explicit tiles {_fmt(t)} instead of the "
                        f"automatic {_fmt(auto)}.", _tiled_matmul(a, t)))
        return out
    tiles3 = _positive_triple([a[k] for k in ("tile_I", "tile_J", "tile_K")], defines)
    if tiles3 is None:
        return []
    if call.name == "tiled_matmul":
        if _manual_ok(a) and a["type"].strip() in ("WS", "OS"):
            out.append((f"Issue the matmul from the core instead of the LOOP_WS hardware loop, same tiles "
                        f"({_fmt(tiles3)}), double-buffering the accumulator too.", _manual(a, tiles3, "WS")))
        for t in neighbours(tiles3, dims):
            out.append((f"Change the tile sizes from {_fmt(tiles3)} to {_fmt(t)}.", _tiled_matmul(a, t)))
        return out
    dataflow = a["type"].strip()
    other = "OS" if dataflow == "WS" else "WS"
    for t in neighbours(tiles3, dims):
        out.append((f"Change the tile sizes from {_fmt(tiles3)} to {_fmt(t)} (dataflow {dataflow}).",
                    _manual(a, t, dataflow)))
    out.append((f"Switch the dataflow from {dataflow} to {other} with the same tiles ({_fmt(tiles3)}).",
                _manual(a, tiles3, other)))
    return out


# ------------------------------------------------------------------------------- explicit schedules
# The schedules themselves (their text, and recognising it again) are in schedules.py; here: which ones to
# write out, and the moves on one already written out.
def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def explicit_fits(ti: int, tj: int, tk: int, acc_double: bool) -> bool:
    acc_rows = HALF_ACC_ROWS if acc_double else 2 * HALF_ACC_ROWS
    return ti * tj * DIM <= acc_rows and (ti * tk + tk * tj) * DIM <= HALF_SPAD_ROWS


def explicit_ok(a: dict[str, str], dims: tuple[int, int, int] | None) -> bool:
    """The explicit schedule covers: sizes that are multiples of DIM, identity input scales, no transposes,
    int8 C, and either no bias or a bias row repeated on every row."""
    if dims is None or any(d % DIM for d in dims) or not _manual_ok(a) or a["type"].strip() == "CPU":
        return False
    return a["D"].strip() in ("NULL", "0") or a["repeating"].strip() in ("true", "1")


def loop_candidates(dims: tuple[int, int, int]) -> list[tuple[int, int, int]]:
    """Dividing tiles for the hardware loop: the biggest ones that keep a whole operand as one tile."""
    ni, nj, nk = (d // DIM for d in dims)
    out = []
    for keep in ("B", "A", "none"):
        best = None
        for ti, tj, tk in product(divisors(ni), divisors(nj), divisors(nk)):
            if not matmul_fits(ti, tj, tk):
                continue
            if keep == "B" and (tj != nj or tk != nk) or keep == "A" and (ti != ni or tk != nk):
                continue
            key = (ti * tj, tk)
            if best is None or key > best[0]:
                best = (key, (ti, tj, tk))
        if best and best[1] not in out:
            out.append(best[1])
    return out


def explicit_candidates(dims: tuple[int, int, int]) -> list[tuple[tuple[int, int, int], bool]]:
    """Tile shapes that divide the problem and fill the accumulator (whole or half), K tiles of 4-16."""
    ni, nj, nk = (d // DIM for d in dims)
    out = []
    for acc_double in (False, True):
        best = None
        for ti, tj in product(divisors(ni), divisors(nj)):
            tk = max((d for d in divisors(nk) if d <= 8 and explicit_fits(ti, tj, d, acc_double)), default=0)
            if not tk:
                continue
            key = (ti * tj, min(ti, tj), tk)
            if best is None or key > best[0]:
                best = (key, (ti, tj, tk))
        if best:
            out.append((best[1], acc_double))
    return out


def explicit_neighbours(dims: tuple[int, int, int], tiles: tuple[int, int, int],
                        acc_double: bool) -> list[tuple[str, tuple[int, int, int], bool]]:
    counts = [d // DIM for d in dims]
    out = []
    for axis, name in enumerate(("tile_I", "tile_J", "tile_K")):
        divs = divisors(counts[axis])
        pos = divs.index(tiles[axis]) if tiles[axis] in divs else -1
        for step in (1, -1):
            if pos < 0 or not 0 <= pos + step < len(divs):
                continue
            t = list(tiles)
            t[axis] = divs[pos + step]
            cand = (t[0], t[1], t[2])
            if explicit_fits(*cand, acc_double):
                out.append((f"{name} {tiles[axis]} -> {cand[axis]}", cand, acc_double))
    if explicit_fits(*tiles, not acc_double):
        out.append(("accumulator double-buffering " + ("off" if acc_double else "on"), tiles, not acc_double))
    return out


# -------------------------------------------------------------------------------------------- convs
CONV_AUTO = ["batch", "in_row", "in_col", "in_ch", "out_ch", "out_row", "out_col", "stride", "in_dil", "k_dil", "pad",
             "kdim", "wrot", "t_out", "t_in", "t_w1203", "t_w0132", "input", "weights", "bias", "output", "act",
             "scale", "pool_size", "pool_stride", "pool_pad", "type"]
CONV_TILES = ["batches", "porows", "pocols", "pochs", "krows", "kcols", "kchs"]
CONV_DIMS = ("batch", "out_row", "out_col", "out_ch", "in_ch", "kdim", "stride", "k_dil")


def conv_limits(dims: dict[str, int]) -> list[int]:
    """The largest value of each tile size (CONV_TILES order): the problem's own extent."""
    return [dims["batch"], dims["out_row"], dims["out_col"], dims["out_ch"], dims["kdim"], dims["kdim"], dims["in_ch"]]
CONV = CONV_AUTO[:17] + CONV_TILES + CONV_AUTO[17:]


def conv_fits(t: dict[str, int], dims: dict[str, int]) -> bool:
    """Whether one LOOP_CONV_WS tile fits (the same rule as gemmini_conv_loop_tiles_fit in gemmini_conv.h): the
    loop keeps out*stride + dilated_kernel - 1 input rows/columns per tile next to the tile's weights in half
    of the scratchpad, and its outputs in half of the accumulator."""
    stride, dil = dims["stride"], dims["k_dil"]

    def in_dim(out: int, k: int) -> int:
        return out * stride + k + (dil - 1) * (k - 1) - 1

    och, ich = blocks(t["pochs"]), blocks(t["kchs"])
    acc = och * t["batches"] * t["porows"] * t["pocols"]
    spad = (ich * t["batches"] * in_dim(t["porows"], t["krows"]) * in_dim(t["pocols"], t["kcols"])
            + och * t["krows"] * t["kcols"] * t["kchs"])
    return acc <= HALF_ACC_ROWS and spad <= HALF_SPAD_ROWS


def conv_auto_tiles(dims: dict[str, int]) -> dict[str, int]:
    """The tiles tiled_conv_auto picks: upstream's rule, as gemmini_conv_upstream_tiles in gemmini_conv.h writes it
    (shrink the largest size until a tile fits, channels by DIM, columns last; then grow columns, then all)."""
    most = conv_limits(dims)
    rows, cols, channels = 1, 2, (3, 6)
    a = list(most)

    def fits(v: list[int]) -> bool:
        return conv_fits(dict(zip(CONV_TILES, v, strict=True)), dims)

    while not fits(a):
        largest, at = -1, -1
        for i, v in enumerate(a):
            if not (i == cols and v <= DIM and a[rows] > 1) and v > largest:
                largest, at = v, i
        if largest <= 1:
            break
        if at in channels:
            a[at] = a[at] // DIM * DIM if a[at] % DIM else a[at] - DIM
            a[at] = a[at] or 1
        else:
            a[at] -= 1
    while a[cols] < most[cols] and fits(a[:cols] + [a[cols] + 1] + a[cols + 1:]):
        a[cols] += 1
    grew = True
    while grew:
        grew = False
        for i in range(len(a)):
            g = a[:i] + [a[i] + 1] + a[i + 1:]
            if g[i] <= most[i] and fits(g):
                a, grew = g, True
    return dict(zip(CONV_TILES, a, strict=True))


def _conv_scaled(t: dict[str, int], key: str, factor: float, limit: int) -> int:
    step = DIM if key in ("pochs", "kchs") else 1
    value = int(t[key] * factor)
    return max(step, min(limit, value - value % step if step > 1 else value))


# Pairs of tile sizes that share the accumulator (or the scratchpad): doubling one and halving the other keeps
# the footprint about the same, a step single-size changes cannot take when the tile is already full.
CONV_TRADES = (("porows", "pochs"), ("pochs", "porows"), ("batches", "pochs"), ("kchs", "pochs"))


def conv_neighbours(t: dict[str, int], dims: dict[str, int]) -> list[tuple[str, dict[str, int]]]:
    limits = dict(zip(CONV_TILES, conv_limits(dims), strict=True))
    out: list[tuple[str, dict[str, int]]] = []

    def add(why: str, cand: dict[str, int]) -> None:
        if cand != t and conv_fits(cand, dims) and cand not in [c for _, c in out]:
            out.append((why, cand))

    for up, down in CONV_TRADES:
        cand = dict(t, **{up: _conv_scaled(t, up, 2, limits[up]), down: _conv_scaled(t, down, 0.5, limits[down])})
        if cand[up] != t[up] and cand[down] != t[down]:
            add(f"{up} {t[up]} -> {cand[up]} and {down} {t[down]} -> {cand[down]}", cand)
    for key in ("porows", "pochs", "kchs", "batches", "pocols", "krows"):
        for factor in (2, 0.5):
            value = _conv_scaled(t, key, factor, limits[key])
            cand = dict(t, **{key: value})
            if key == "krows":
                cand["kcols"] = min(limits["kcols"], value)
            add(f"{key} {t[key]} -> {value}", cand)
    # one kernel axis at a time, to one row (column) per loop or the whole kernel: more, smaller reduction loops
    # whose loads pipeline in finer steps, or fewer
    for key in ("krows", "kcols"):
        for value in (1, limits[key]):
            add(f"{key} {t[key]} -> {value}", dict(t, **{key: value}))
    return out


# ---- a cheap analytic cost of tiled_conv's schedule, to offer the promising tiles first ----------------------
# Per LOOP_CONV_WS (one per output tile and reduction tile, in gemmini_conv_run's order), in cycles:
#  - compute C: the mesh streams one row per output pixel per (output-channel block, kernel position, input-channel
#    block), at least T_MESH_MIN_ROWS (4) rows per compute, and the first compute after new weights at least the
#    DIM weight rows it shifts in (model/functional.c gm_compute);
#  - loads L: the bias, one 64-byte line per output pixel and output-channel block (first reduction tile only);
#    the input window, (rows*stride + kernel - 1) x (cols*stride + kernel - 1) pixels of the tile's channels, one
#    DIM-byte scratchpad row per cycle and at least one line per pixel; the weights, one line per weight row of up
#    to 64 output channels -- each unless tiled_conv keeps it in place (its reuse rule, below). Weights that do not
#    fit half the L2 miss on every reload: then at least DRAM_LINE_CYCLES per line;
#  - stores S: each mvout of up to DIM pixels x DIM channels (last reduction tile only), STORE_CYCLES apiece.
# LOOP_CONV_WS gates whole stages (a loop's computes wait for all its loads, its stores for all its computes) and
# two loops share the unit, so loop i+1's loads (after loop i-1's stores) run during loop i's computes. They do not
# hide completely: the model's load unit also waits on DRAM latency and page walks that this estimate leaves out,
# so the shorter of the two counts OVERLAP_LEFT of its length: loop i costs max(C_i, N) + OVERLAP_LEFT * min(C_i, N)
# with N = L_(i+1) + S_(i-1). Checked against tiled_conv runs on gemmini-native's model (December 2026: 594 tiles
# of the 56x56x64 paper conv, 173 of 28x28x128, 174 of 14x14x256, mostly accumulator-filling ones and the local
# steps around them): Spearman 0.78 / 0.63 / 0.57; the fastest measured tile is among the 8 cheapest estimates
# for the last two and 4.5% off it for the first (whose fastest tiles are small loops: 1 x 32 pixels x 64
# channels). Full overlap (0) ranks the 56x56 sweep with 0.55; none (1) misses the 14x14 conv's fastest tile.
# What the estimate leaves out and the search measures instead: page walks (one TLB entry shared by the input
# reader and the output writer), the L2 beyond "weights fit half of it", each loop's fixed latency.
STORE_CYCLES = 20
LINE_BYTES = 64
DRAM_LINE_CYCLES = 8  # timing_params.h: T_LINE_BYTES / T_DRAM_BYTES_PER_CYCLE
L2_BYTES = 512 * 1024  # timing_params.h: T_L2_KIB
OVERLAP_LEFT = 0.5


def _conv_positions(extent: int, tile: int) -> list[tuple[int, bool, bool]]:
    """(size, first, last) of the tiles along one dimension, in order."""
    return [(min(tile, extent - x), x == 0, x + tile >= extent) for x in range(0, extent, tile)]


def conv_cost(t: dict[str, int], dims: dict[str, int]) -> int:
    """Estimated cycles of tiled_conv with tiles t (see above); lower is better."""
    return _conv_cost(tuple(t[k] for k in CONV_TILES), tuple(dims[k] for k in CONV_DIMS))



@lru_cache(maxsize=4096)
def _conv_cost(tiles: tuple[int, ...], shape: tuple[int, ...]) -> int:
    batches, porows, pocols, pochs, krows, kcols, kchs = tiles
    batch, out_row, out_col, out_ch, in_ch, kdim, stride, dil = shape
    n_och = -(-out_ch // pochs)
    n_red = -(-kdim // krows) * -(-kdim // kcols) * -(-in_ch // kchs)
    n_sp = -(-batch // batches) * -(-out_row // porows) * -(-out_col // pocols)
    # tiled_conv's reuse rule (gemmini_conv_run): weights stay when input-channel x output-channel x kernel tiles
    # number <= 2, the input when all but the output-channel tiles do
    keep_w, keep_in = n_red * n_och <= 2, n_red * n_sp <= 2
    weights_miss = kdim * kdim * in_ch * out_ch > L2_BYTES // 2
    reduction = list(product(_conv_positions(kdim, krows), _conv_positions(kdim, kcols),
                             _conv_positions(in_ch, kchs)))
    loads, computes, stores = [], [], []
    for (b, b_first, _), (r, r_first, _), (c, c_first, _) in product(
            _conv_positions(batch, batches), _conv_positions(out_row, porows), _conv_positions(out_col, pocols)):
        col_blocks = [min(DIM, c - x) for x in range(0, c, DIM)]
        feed = b * r * sum(max(i, 4) for i in col_blocks) + max(0, DIM - col_blocks[0])
        pixels = b * r * c
        spatial_first = b_first and r_first and c_first
        for o, o_first, _ in _conv_positions(out_ch, pochs):
            ob = blocks(o)
            for (kr, kr_first, kr_last), (kc, kc_first, kc_last), (k, k_first, k_last) in reduction:
                computes.append(ob * kr * kc * blocks(k) * feed)
                load = pixels * ob if kr_first and kc_first and k_first else 0
                if not (keep_in and not o_first):
                    in_rows = r * stride + kr + (dil - 1) * (kr - 1) - 1
                    in_cols = c * stride + kc + (dil - 1) * (kc - 1) - 1
                    load += b * in_rows * in_cols * max(blocks(k), -(-k // LINE_BYTES))
                if not (keep_w and not spatial_first):
                    lines = kr * kc * k * -(-o // LINE_BYTES)
                    load += lines * (DRAM_LINE_CYCLES if weights_miss else 1)
                loads.append(load)
                stores.append(STORE_CYCLES * b * r * len(col_blocks) * ob if kr_last and kc_last and k_last else 0)
    total = float(loads[0] + stores[-1])
    for i, compute in enumerate(computes):
        after = loads[i + 1] + (stores[i - 1] if i else 0) if i + 1 < len(loads) else 0
        total += max(compute, after) + OVERLAP_LEFT * min(compute, after)
    return int(total)


def _conv_sizes(extent: int, step: int) -> list[int]:
    """Tile sizes worth trying along one dimension: the whole extent, the multiples of step that divide it, and
    the extent split evenly in two to four, as is and rounded up to step (so no tile is a sliver)."""
    sizes = {extent} | {d for d in range(step, extent, step) if extent % d == 0}
    for k in (2, 3, 4):
        even = -(-extent // k)
        sizes |= {even, -(-even // step) * step}
    return sorted(x for x in sizes if 1 <= x <= extent)


def conv_good_tiles(dims: dict[str, int], count: int = 8) -> list[dict[str, int]]:
    """Tiles that fill the accumulator half (at least 3/4 of it, or the whole output), whole kernels where they fit,
    ranked by conv_cost, cheapest first: the candidates worth measuring before local steps."""
    found = _conv_good_tiles(tuple(dims[k] for k in CONV_DIMS))
    return [dict(zip(CONV_TILES, t, strict=True)) for t in found[:count]]


@lru_cache(maxsize=64)
def _conv_good_tiles(shape: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    dims = dict(zip(CONV_DIMS, shape, strict=True))
    count = 16
    rows_full = dims["batch"] * dims["out_row"] * dims["out_col"] * blocks(dims["out_ch"])
    need = min(HALF_ACC_ROWS * 3 // 4, rows_full)
    kernels = [dims["kdim"]] + [k for k in (1,) if k < dims["kdim"]]
    found: list[tuple[int, dict[str, int]]] = []
    for kk in kernels:
        for b, c, o, k in product(range(1, dims["batch"] + 1), _conv_sizes(dims["out_col"], DIM),
                                  _conv_sizes(dims["out_ch"], DIM), _conv_sizes(dims["in_ch"], DIM)):
            per_row = blocks(o) * b * c
            if per_row > HALF_ACC_ROWS:
                continue
            # the most rows that fit; fewer rows only waste accumulator
            r = min(dims["out_row"], HALF_ACC_ROWS // per_row)
            t = {"batches": b, "porows": r, "pocols": c, "pochs": o, "krows": kk, "kcols": kk, "kchs": k}
            while r > 1 and not conv_fits(t, dims):
                r -= 1
                t["porows"] = r
            if per_row * r < need or not conv_fits(t, dims):
                continue
            found.append((conv_cost(t, dims), t))
        if found:
            break  # smaller kernel tiles only where a whole kernel never fits
    limits = conv_limits(dims)

    def order(x: tuple[int, dict[str, int]]) -> tuple[int, int, int, tuple[int, ...]]:
        # equal estimates: sizes that divide the problem (no remainder loops), then wider rows (an NHWC row of
        # the input is one contiguous run of DRAM)
        sizes = tuple(x[1].values())
        return x[0], sum(n % v != 0 for n, v in zip(limits, sizes, strict=True)), -x[1]["pocols"], sizes

    found.sort(key=order)
    # one tile per output shape first (the input-channel tile is a local step away), then the rest by cost
    seen: set[tuple[int, ...]] = set()
    first: list[dict[str, int]] = []
    rest: list[dict[str, int]] = []
    for _, t in found:
        shape = (t["batches"], t["porows"], t["pocols"], t["pochs"])
        (rest if shape in seen else first).append(t)
        seen.add(shape)
    return tuple(tuple(t[k] for k in CONV_TILES) for t in (first + rest)[:count])


def _conv_fmt(t: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in t.items())


def _conv_plain(a: dict[str, str]) -> bool:
    """The cost and the footprint-filling tiles assume no pooling and no input dilation."""
    return a["pool_stride"].strip() in FALSE and a["in_dil"].strip() == "1"


def _conv_call(a: dict[str, str], tiles: dict[str, int]) -> str:
    vals = dict(a, **{k: str(v) for k, v in tiles.items()})
    return "tiled_conv(" + ", ".join(vals[k] for k in CONV) + ")"


def conv_moves(call: Call, defines: dict[str, str]) -> list[tuple[str, str]]:
    names = CONV_AUTO if call.name == "tiled_conv_auto" else CONV
    if len(call.args) != len(names):
        return []
    a = dict(zip(names, call.args, strict=True))
    values = {k: eval_int(a[k], defines) for k in CONV_DIMS}
    if not all(isinstance(v, int) and v > 0 for v in values.values()):
        return []
    dims = {k: int(v) for k, v in values.items() if v is not None}
    out = []
    good = conv_good_tiles(dims) if _conv_plain(a) else []
    if call.name == "tiled_conv_auto":
        auto = conv_auto_tiles(dims)
        for t in good:
            if t != auto:
                out.append((f"Replace tiled_conv_auto by tiled_conv with tiles that fill the accumulator half "
                            f"({_conv_fmt(t)}; estimated {conv_cost(t, dims):,} cycles against "
                            f"{conv_cost(auto, dims):,} for the automatic tiles): more output channels per tile "
                            "re-read each input pixel less often, and fewer, larger loops.", _conv_call(a, t)))
        for why, t in conv_neighbours(auto, dims)[:3]:
            out.append((f"Replace tiled_conv_auto by tiled_conv with explicit tiles ({why}; tiles "
                        f"{_conv_fmt(t)}).", _conv_call(a, t)))
        return out
    tv = {k: eval_int(a[k], defines) for k in CONV_TILES}
    if not all(isinstance(v, int) and v > 0 for v in tv.values()):
        return []
    tiles = {k: int(v) for k, v in tv.items() if v is not None}
    steps = conv_neighbours(tiles, dims)
    if good:  # the cheapest estimate first: the search measures only the first few moves of a parent
        steps.sort(key=lambda st: conv_cost(st[1], dims))
    for why, t in steps:
        out.append((f"Change the convolution tiles: {why}.", _conv_call(a, t)))
    for t in good:
        if t != tiles and t not in [c for _, c in steps]:
            out.append((f"Change the convolution tiles to ones that fill the accumulator half ({_conv_fmt(t)}; "
                        f"estimated {conv_cost(t, dims):,} cycles against {conv_cost(tiles, dims):,}).",
                        _conv_call(a, t)))
    return out


def schedule_moves(text: str) -> list[tuple[str, int, int, str]]:
    """Moves on the schedules written out in a kernel's text: (plan, start, end, replacement statements)."""
    out: list[tuple[str, int, int, str]] = []
    for s, start, end in find_schedules(text):
        indent = _line_indent(text, start)

        def rewrite(plan: str, new: Schedule, start: int = start, end: int = end, indent: str = indent) -> None:
            if not clashes(new):
                out.append((plan, start, end, join(render_schedule(new), indent)))

        if s.loop:
            for why, t, _ in explicit_neighbours(s.dims, s.tiles, True):
                if t != s.tiles and matmul_fits(*t):
                    rewrite(f"Retune the per-tile LOOP_WS schedule: {why} (tiles {_fmt(t)}).", replace(s, tiles=t))
            rewrite(f"Issue every instruction from the core instead of LOOP_WS, weight-stationary, tiles "
                    f"{_fmt(s.tiles)}.", Schedule(s.dims, s.tiles, s.ops, acc_double=matmul_fits(*s.tiles)))
            continue
        for why, t, db in explicit_neighbours(s.dims, s.tiles, s.acc_double):
            rewrite(f"Retune the explicit schedule: {why} (tiles {_fmt(t)}).", replace(s, tiles=t, acc_double=db))
        other = "WS" if s.dataflow == "OS" else "OS"
        rewrite(f"Switch the explicit schedule to the {'output' if other == 'OS' else 'weight'}-stationary "
                f"dataflow (tiles {_fmt(s.tiles)}).", replace(s, dataflow=other))
    return out


# ----------------------------------------------------------------------- explicit kernels of a harness
# A kernel written out instruction by instruction (the paper's starting point) has no library call to
# retune. When the file's trusted harness says what the kernel computes (speedpatch_run_matmul /
# speedpatch_run_conv with this kernel), the moves rewrite the kernel's body as the same operation on the
# hardware loops (the library call, then the schedules the library-call moves offer). The harness checks
# the result as for any candidate; only the kernel's body changes.

def _call_args_of(source: str, function: str, last_arg: str) -> list[str] | None:
    """The arguments of the first call `function(...)` in source whose last argument is `last_arg`."""
    for call in _find_named_calls(source, function):
        if call and call[-1].strip() == last_arg:
            return call
    return None


def _find_named_calls(text: str, function: str) -> list[list[str]]:
    out = []
    for m in re.finditer(r"\b" + re.escape(function) + r"\s*\(", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            if text[i] in "\"'":
                i = skip_literal(text, i)
                continue
            depth += text[i] == "("
            depth -= text[i] == ")"
            i += 1
        if depth == 0:
            out.append(_split_args(text[m.end():i - 1]))
    return out


def _kernel_params(kernel_text: str, name: str) -> tuple[list[str], int] | None:
    """Parameter names of the kernel's definition and the offset of its body's opening brace."""
    m = re.search(r"\b" + re.escape(name) + r"\s*\(([^)]*)\)\s*\{", kernel_text)
    if not m:
        return None
    names = []
    for param in _split_args(m.group(1)):
        ident = re.findall(r"[A-Za-z_]\w*", param)
        if not ident:
            return None
        names.append(ident[-1])
    return names, m.end() - 1


def _body(new: Rewrite, unused: list[str], params: list[str]) -> str:
    """A kernel body made of one rewrite, after voiding the parameters it leaves unused: the call, or a
    schedule's statements (in a block of their own when a name they declare is also a parameter's)."""
    if isinstance(new, Schedule):
        lines = render_schedule(new)
        if declared_names(lines, top_level_only=True) & set(params):
            lines = in_block(lines)
    else:
        lines = [new + ";"]
    return "{\n" + "\n".join("  " + line for line in [f"(void){n};" for n in unused] + lines) + "\n}"


def explicit_kernel_moves(source: str, kernel: Kernel, defines: dict[str, str]) -> list[tuple[str, str]]:
    """(plan, new kernel text) for a library-free kernel whose harness call names it."""
    parsed = _kernel_params(kernel.text, kernel.name)
    if parsed is None:
        return []
    params, brace = parsed
    head = kernel.text[:brace]
    out: list[tuple[str, str]] = []
    mm = _call_args_of(source, "speedpatch_run_matmul", kernel.name)
    if mm is not None and len(mm) == 7 and len(params) == 4:
        i, j, k, with_bias, act, scale = (x.strip() for x in mm[:6])
        pa, pb, pbias, pc = params
        bias = with_bias not in FALSE
        a = dict(I=i, J=j, K=k, A=pa, B=pb, D=pbias if bias else "NULL", C=pc, sA=k, sB=j, sD=j, sC=j,
                 A_scale="MVIN_SCALE_IDENTITY", B_scale="MVIN_SCALE_IDENTITY", D_scale="MVIN_SCALE_IDENTITY",
                 act=act, scale=scale, bert="0", repeating="true" if bias else "false", tA="false", tB="false",
                 full_C="false", low_D="false", weightA="0", type="WS")
        auto = "tiled_matmul_auto(" + ", ".join(a[x] for x in MATMUL_AUTO) + ")"
        unused = [] if bias else [pbias]
        out.append(("Replace the explicit instruction loops by the same matmul on the LOOP_WS hardware loop "
                    "(tiled_matmul_auto): the accelerator then issues its own mvin/preload/compute/mvout "
                    "streams, overlapped, instead of the core issuing every instruction.", head + _body(auto, unused, params)))
        synth = Call("tiled_matmul_auto", 0, len(auto), _split_args(auto[len("tiled_matmul_auto("):-1]))
        for plan, new in matmul_moves(synth, defines):
            out.append(("Replace the explicit instruction loops: " + plan[0].lower() + plan[1:],
                        head + _body(new, unused, params)))
        return out
    cv = _call_args_of(source, "speedpatch_run_conv", kernel.name)
    if cv is not None and len(cv) == 4 and len(params) == 4:
        shape_var, act, scale = (x.strip() for x in cv[:3])
        init = re.search(r"struct\s+speedpatch_conv_shape\s+" + re.escape(shape_var) + r"\s*=\s*\{([^}]*)\}", source)
        fields = _split_args(init.group(1)) if init else []
        if len(fields) != 7:
            return out
        batch, dim, ich, och, kdim, stride, pad = (f.strip() for f in fields)
        odim = f"(({dim} + 2 * {pad} - {kdim}) / {stride} + 1)"
        pin, pw, pbias, pout = params
        a = dict(batch=batch, in_row=dim, in_col=dim, in_ch=ich, out_ch=och, out_row=odim, out_col=odim,
                 stride=stride, in_dil="1", k_dil="1", pad=pad, kdim=kdim, wrot="false", t_out="false", t_in="false",
                 t_w1203="false", t_w0132="false", input=pin, weights=pw, bias=pbias, output=pout, act=act,
                 scale=scale, pool_size="0", pool_stride="0", pool_pad="0", type="WS")
        auto = "tiled_conv_auto(" + ", ".join(a[x] for x in CONV_AUTO) + ")"
        out.append(("Replace the explicit instruction loops by the same convolution on the LOOP_CONV_WS hardware "
                    "loop (tiled_conv_auto): the accelerator issues its own overlapped command streams.",
                    head + _body(auto, [], params)))
        synth = Call("tiled_conv_auto", 0, len(auto), _split_args(auto[len("tiled_conv_auto("):-1]))
        for plan, new in conv_moves(synth, defines):
            out.append(("Replace the explicit instruction loops by the hardware loop with chosen tiles: "
                        + plan[0].lower() + plan[1:], head + _body(new, [], params)))
    return out


# ------------------------------------------------------------------------------------------------ API
def _line_indent(text: str, pos: int) -> str:
    """The indentation of the line `pos` is on."""
    line = text[text.rfind("\n", 0, pos) + 1:]
    return line[:len(line) - len(line.lstrip(" \t"))]


def _code(text: str) -> list[str]:
    return [t.key for t in tokens(text) if not t.key.startswith(("/*", "//"))]


def _alone_in_body(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] is the only statement (comments aside) of the function body `text` ends with."""
    before = _code(text[:start])
    return bool(before) and before[-1] == "{" and _code(text[end:]) == ["}"]


def _with_schedule(text: str, call: Call, s: Schedule) -> str | None:
    """The kernel text with the call's statement replaced by the schedule's statements: they become the
    function's body when the call was its only statement, and go in a block of their own otherwise (which
    scopes their declarations among the other statements). None when the call is not a statement."""
    semicolon = re.match(r"\s*;", text[call.end:])
    if semicolon is None:
        return None
    end = call.end + semicolon.end()
    lines = render_schedule(s)
    elsewhere = set(_code(text[:call.start] + " " + text[end:]))
    if not _alone_in_body(text, call.start, end) or declared_names(lines, top_level_only=True) & elsewhere:
        lines = in_block(lines)
    return text[:call.start] + join(lines, _line_indent(text, call.start)) + text[end:]


def offline_moves(source: str, kernel: Kernel) -> list[Move]:
    text = source[kernel.start:kernel.end]
    if text != kernel.text:  # the kernel region no longer matches the source: nothing safe to rewrite
        return []
    defines = int_defines(source)
    moves: list[Move] = []
    for plan, start, end, statements in schedule_moves(text):
        new_kernel = text[:start] + statements + text[end:]
        moves.append(Move(plan=plan, source=source[:kernel.start] + new_kernel + source[kernel.end:]))
    if not find_calls(text) and not moves:
        for plan, new_kernel in explicit_kernel_moves(source, kernel, defines):
            moves.append(Move(plan=plan, source=source[:kernel.start] + new_kernel + source[kernel.end:]))
    for call in find_calls(text):
        rewrites = conv_moves(call, defines) if call.name.startswith("tiled_conv") else matmul_moves(call, defines)
        for plan, new in rewrites:
            rewritten = (text[:call.start] + new + text[call.end:] if isinstance(new, str)
                         else _with_schedule(text, call, new))
            if rewritten is not None:
                moves.append(Move(plan=plan, source=source[:kernel.start] + rewritten + source[kernel.end:]))
    return moves[:MAX_MOVES]
