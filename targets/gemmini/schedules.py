"""The text of a matmul schedule written out in a Gemmini kernel by the offline moves: how it is rendered,
and how a later move recognises it in the code to retune it.

A schedule carries no machine-readable data. It opens with a comment a person can read ("Weight-stationary
schedule for 512x512x512, tiles of 8x8x8 blocks: ..."); a later move renders the schedules that comment
describes (with and without bias, accumulator halves or not) and matches each against the code token by
token, layout free, reading the operands (pointers, strides, activation, scale) where the template has
them. Code edited in any other way is not recognised, so a retune never rewrites code it does not fully
understand.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, fields

DIM = 16
HALF_SPAD_ROWS = 4 * 4096 // 2
HALF_ACC_ROWS = 1024 // 2


@dataclass(frozen=True)
class Operands:
    """The C expressions a schedule reads and writes, as the library call had them: the A, B, bias (D) and C
    pointers, the row strides of A, B and C in elements, the activation and the output scale."""

    A: str
    B: str
    D: str
    C: str
    sA: str
    sB: str
    sC: str
    act: str
    scale: str

    @classmethod
    def of_call(cls, args: dict[str, str]) -> Operands:
        return cls(**{f.name: args[f.name] for f in fields(cls)})

    @property
    def bias(self) -> bool:
        """Whether a bias row (repeated on every output row) is added."""
        return self.D.strip() not in ("NULL", "0")

    def identifiers(self) -> set[str]:
        return {w for f in fields(self) for w in re.findall(r"[A-Za-z_]\w*", getattr(self, f.name))}


@dataclass(frozen=True)
class Schedule:
    """A tiled int8 matmul C = act(scale * (A*B + bias)) written out in the kernel: every instruction issued
    by the core (weight- or output-stationary), or one LOOP_WS per tile (`loop`)."""

    dims: tuple[int, int, int]  # I, J, K in elements, multiples of DIM
    tiles: tuple[int, int, int]  # in DIM blocks, dividing the problem
    ops: Operands
    loop: bool = False
    dataflow: str = "WS"  # core-issued schedules only ("WS" or "OS")
    acc_double: bool = False  # core-issued only: output tiles alternate between the accumulator's halves
    resident: bool = False  # a panel of B (all of K, tiles[1] column blocks) stays; A streams (render_resident)

    @property
    def blocks(self) -> tuple[int, int, int]:
        """The problem in DIM blocks."""
        return self.dims[0] // DIM, self.dims[1] // DIM, self.dims[2] // DIM


# ------------------------------------------------------------------------------------------ rendering
# Each renderer returns the schedule's statements one line each, indented from column 0 and without
# enclosing braces: where they go (a function body, or a block of their own) is for the caller to say.

def _row_blocks(tile: int) -> int:
    """How many DIM blocks one mvin/mvout row moves: up to 4 (one 64-byte DMA request), dividing the tile."""
    return 4 if tile % 4 == 0 else (2 if tile % 2 == 0 else 1)


def _shift(lines: list[str], spaces: int) -> list[str]:
    return [" " * spaces + line for line in lines]


def describe(s: Schedule) -> str:
    """The schedule's opening comment, in words (it is also what recognises a schedule later)."""
    shape, tiles = "x".join(map(str, s.dims)), "x".join(map(str, s.tiles))
    if s.resident:
        return (f"B-resident schedule for {shape}: a panel of B ({s.tiles[1]} column blocks, all of K) stays in the "
                "scratchpad while every 16-row block of A is moved in once (two slots: the next loads while this "
                "one computes) and its results leave; each operand is read once per panel, in order, so the DMA "
                "keeps its address translations.")
    if s.loop:
        ni, nj, nk = s.blocks
        ti, tj, tk = s.tiles
        return (f"LOOP_WS schedule for {shape}, one hardware loop per tile of {tiles} blocks, alternating "
                "scratchpad halves" + ("; B is one tile, moved in once per half" if nj == tj and nk == tk else "")
                + ("; A is one tile, moved in once per half" if ni == ti and nk == tk else "")
                + "; the core stores results in rows of up to 64 bytes.")
    return (f"{'Output' if s.dataflow == 'OS' else 'Weight'}-stationary schedule for {shape}, tiles of {tiles} "
            "blocks: scratchpad halves alternate between K tiles"
            + (" and accumulator halves between output tiles." if s.acc_double
               else "; the output tile uses the whole accumulator."))


def _comment(text: str) -> list[str]:
    lines = textwrap.wrap(text, width=96)
    if len(lines) == 1:
        return [f"/* {lines[0]} */"]
    return [f"/* {lines[0]}"] + [f" * {line}" for line in lines[1:-1]] + [f" * {lines[-1]} */"]


def _configs(s: Schedule) -> list[str]:
    o = s.ops
    flow = "OUTPUT" if s.dataflow == "OS" and not s.loop else "WEIGHT"
    return [
        f"gemmini_extended_config_ex({flow}_STATIONARY, NO_ACTIVATION, 0, 1, false, false);",
        f"gemmini_extended_config_st(({o.sC}) * sizeof(elem_t), {o.act}, {o.scale});",
        f"gemmini_extended3_config_ld(({o.sA}) * sizeof(elem_t), MVIN_SCALE_IDENTITY, false, 0);",
        f"gemmini_extended3_config_ld(({o.sB}) * sizeof(elem_t), MVIN_SCALE_IDENTITY, false, 1);",
        "gemmini_extended3_config_ld(0, MVIN_SCALE_IDENTITY, false, 2);",
    ]


def _bias_loads(s: Schedule) -> list[str]:
    """The bias row into every row of the output tile's accumulator rows (mvin3: the accumulator's slot)."""
    if not s.ops.bias:
        return []
    ti, tj, _ = s.tiles
    return [
        f"for (size_t i = 0; i < {ti}; i++)",
        f"  for (size_t j = 0; j < {tj}; j++)",
        f"    gemmini_extended_mvin3(({s.ops.D}) + (j0 + j) * DIM, acc + (uint32_t)((i * {tj} + j) * DIM), DIM, DIM);",
    ]


def _operand_loads(s: Schedule) -> list[str]:
    """One K tile of A and of B into the current scratchpad half, rows of up to 4 blocks per mvin."""
    o = s.ops
    ti, tj, tk = s.tiles
    a_blocks, b_blocks = _row_blocks(tk), _row_blocks(tj)
    return [
        f"for (size_t i = 0; i < {ti}; i++)",
        f"  for (size_t k = 0; k < {tk}; k += {a_blocks})",
        f"    gemmini_extended_mvin(({o.A}) + (i0 + i) * DIM * ({o.sA}) + (k0 + k) * DIM,",
        f"                          a_sp + (uint32_t)((i * {tk} + k) * DIM), {a_blocks} * DIM, DIM);",
        f"for (size_t k = 0; k < {tk}; k++)",
        f"  for (size_t j = 0; j < {tj}; j += {b_blocks})",
        f"    gemmini_extended_mvin2(({o.B}) + (k0 + k) * DIM * ({o.sB}) + (j0 + j) * DIM,",
        f"                           b_sp + (uint32_t)((k * {tj} + j) * DIM), {b_blocks} * DIM, DIM);",
    ]


def _ws_computes(s: Schedule) -> list[str]:
    """Weight-stationary: each B block stays in the PEs for a whole column of A blocks; the first K step of
    an output tile overwrites the accumulator rows unless a bias is already there."""
    ti, tj, tk = s.tiles
    first_flag = "GEMMINI_ACC_ACCUMULATE" if s.ops.bias else "(k0 == 0 && k == 0 ? 0 : GEMMINI_ACC_ACCUMULATE)"
    return [
        f"for (size_t j = 0; j < {tj}; j++)",
        f"  for (size_t k = 0; k < {tk}; k++) {{",
        f"    const uint32_t flag = {first_flag};",
        f"    gemmini_extended_preload(b_sp + (uint32_t)((k * {tj} + j) * DIM), (acc | flag) + (uint32_t)(j * DIM),",
        "                             DIM, DIM, DIM, DIM);",
        "    gemmini_extended_compute_preloaded(a_sp + (uint32_t)(k * DIM), GARBAGE_ADDR, DIM, DIM, DIM, DIM);",
        f"    for (size_t i = 1; i < {ti}; i++) {{",
        f"      gemmini_extended_preload(GARBAGE_ADDR, (acc | flag) + (uint32_t)((i * {tj} + j) * DIM), DIM, DIM,",
        "                               DIM, DIM);",
        f"      gemmini_extended_compute_accumulated(a_sp + (uint32_t)((i * {tk} + k) * DIM), GARBAGE_ADDR, DIM,",
        "                                           DIM, DIM, DIM);",
        "    }",
        "  }",
    ]


def _os_computes(s: Schedule) -> list[str]:
    """Output-stationary: the sums stay in the PEs over the K tile; only the last compute writes them (to
    the accumulator, on top of the bias or of earlier K tiles)."""
    ti, tj, tk = s.tiles
    flag = "GEMMINI_ACC_ACCUMULATE" if s.ops.bias else "(k0 == 0 ? 0 : GEMMINI_ACC_ACCUMULATE)"
    a_sp, b_sp = f"a_sp + (uint32_t)((i * {tk} + k) * DIM)", f"b_sp + (uint32_t)((k * {tj} + j) * DIM)"
    out_c = f"(acc | {flag}) + (uint32_t)((i * {tj} + j) * DIM)"
    if tk == 1:
        body = [
            "const size_t k = 0;",
            f"gemmini_extended_preload(GARBAGE_ADDR, {out_c}, DIM, DIM, DIM, DIM);",
            f"gemmini_extended_compute_preloaded({a_sp}, {b_sp}, DIM, DIM, DIM, DIM);",
        ]
    else:
        body = [
            "gemmini_extended_preload(GARBAGE_ADDR, GARBAGE_ADDR, DIM, DIM, DIM, DIM);",
            "{",
            "  const size_t k = 0;",
            f"  gemmini_extended_compute_preloaded({a_sp}, {b_sp}, DIM, DIM, DIM, DIM);",
            "}",
            f"for (size_t k = 1; k < {tk - 1}; k++)",
            f"  gemmini_extended_compute_accumulated({a_sp}, {b_sp}, DIM, DIM, DIM, DIM);",
            "{",
            f"  const size_t k = {tk - 1};",
            f"  gemmini_extended_preload(GARBAGE_ADDR, {out_c}, DIM, DIM, DIM, DIM);",
            f"  gemmini_extended_compute_accumulated({a_sp}, {b_sp}, DIM, DIM, DIM, DIM);",
            "}",
        ]
    return [f"for (size_t i = 0; i < {ti}; i++)", f"  for (size_t j = 0; j < {tj}; j++) {{"] + _shift(body, 4) + ["  }"]


def _result_stores(s: Schedule, source: str) -> list[str]:
    """The output tile from the accumulator rows at `source` to C, rows of up to 4 blocks per mvout."""
    o = s.ops
    ti, tj, _ = s.tiles
    c_blocks = _row_blocks(tj)
    return [
        f"for (size_t i = 0; i < {ti}; i++)",
        f"  for (size_t j = 0; j < {tj}; j += {c_blocks})",
        f"    gemmini_extended_mvout(({o.C}) + (i0 + i) * DIM * ({o.sC}) + (j0 + j) * DIM,",
        f"                           {source}(uint32_t)((i * {tj} + j) * DIM), {c_blocks} * DIM, DIM);",
    ]


def render_explicit(s: Schedule) -> list[str]:
    """Every instruction issued by the core, with constant bounds (so it spends few cycles per instruction):
    per output tile the bias, then per K tile the A and B tiles into alternating scratchpad halves and the
    computes, then the results out of the accumulator (or its current half)."""
    ni, nj, nk = s.blocks
    ti, tj, tk = s.tiles
    computes = _os_computes(s) if s.dataflow == "OS" else _ws_computes(s)
    k_tile = ([f"for (size_t k0 = 0; k0 < {nk}; k0 += {tk}) {{",
               f"  const uint32_t a_sp = spad_half, b_sp = spad_half + {ti * tk * DIM};"]
              + _shift(_operand_loads(s) + computes, 2) + [f"  spad_half ^= {HALF_SPAD_ROWS};", "}"])
    output_tile = (["const uint32_t acc = GEMMINI_ACC_ADDR | acc_half;"] + _bias_loads(s) + k_tile
                   + _result_stores(s, "acc + ") + ([f"acc_half ^= {HALF_ACC_ROWS};"] if s.acc_double else []))
    return (_comment(describe(s)) + _configs(s) + [
        "uint32_t spad_half = 0, acc_half = 0;",
        f"for (size_t i0 = 0; i0 < {ni}; i0 += {ti})",
        f"  for (size_t j0 = 0; j0 < {nj}; j0 += {tj}) {{",
    ] + _shift(output_tile, 4) + ["  }"])


def render_loop(s: Schedule) -> list[str]:
    """One LOOP_WS per tile, so that a tile of A or B the hardware loop already holds in a scratchpad half
    is not moved in again (A or B = NULL): when the whole B (or the whole A) is a single tile, each half
    loads it once. The core stores the results, in rows of up to 64 bytes."""
    o = s.ops
    ni, nj, nk = s.blocks
    ti, tj, tk = s.tiles
    reuse_a, reuse_b = ni == ti and nk == tk, nj == tj and nk == tk
    d = f"k0 == 0 ? ({o.D}) + j0 * DIM : NULL" if o.bias else "NULL"
    tile = [
        "const int half = (tile & 1) ? 2 : 1;",
        f"const elem_t *a = {'tile >= 2 ? NULL : ' if reuse_a else ''}({o.A}) + i0 * DIM * ({o.sA}) + k0 * DIM;",
        f"const elem_t *b = {'tile >= 2 ? NULL : ' if reuse_b else ''}({o.B}) + k0 * DIM * ({o.sB}) + j0 * DIM;",
        f"const acc_t *d = {d};",
        f"gemmini_loop_ws({ti}, {tj}, {tk}, 0, 0, 0, a, b, d, NULL, {o.sA}, {o.sB}, 0, {o.sC}, false,",
        f"                false, false, false, {'true' if o.bias else 'k0 > 0'}, {o.act}, half, half, false);",
        f"if (k0 + {tk} == {nk})",
    ] + _shift(_result_stores(s, "GEMMINI_ACC_ADDR | "), 2)
    return (_comment(describe(s)) + _configs(s) + [
        "unsigned tile = 0;",
        f"for (size_t i0 = 0; i0 < {ni}; i0 += {ti})",
        f"  for (size_t j0 = 0; j0 < {nj}; j0 += {tj})",
        f"    for (size_t k0 = 0; k0 < {nk}; k0 += {tk}, tile++) {{",
    ] + _shift(tile, 6) + ["    }"])


def resident_panel(dims: tuple[int, int, int]) -> int | None:
    """Column blocks of B kept resident: dividing J, at most 32 (two accumulator slots of it fit), and the panel
    plus two A block rows in the scratchpad; as wide as fits. None when not even one block column fits."""
    _, nj, nk = (d // DIM for d in dims)
    fits = [jp for jp in range(1, min(nj, 32) + 1) if nj % jp == 0 and nk * DIM * (jp + 2) <= 2 * HALF_SPAD_ROWS]
    return max(fits) if fits else None


def render_resident(s: Schedule) -> list[str]:
    """Data movement first: per panel of B (loaded once), each block row of A is moved in once into one of
    two slots, multiplied by the whole panel (each B block preloaded for one compute), and its output tiles
    leave in rows of up to 64 bytes from one of two accumulator slots."""
    o = s.ops
    ni, nj, nk = s.blocks
    jp = s.tiles[1]
    a_blocks, b_blocks = _row_blocks(nk), _row_blocks(jp)
    flag = "GEMMINI_ACC_ACCUMULATE" if o.bias else "(k ? GEMMINI_ACC_ACCUMULATE : 0)"
    bias = ([f"for (size_t j = 0; j < {jp}; j++)",
             f"  gemmini_extended_mvin3(({o.D}) + (p * {jp} + j) * DIM, acc + (uint32_t)(j * DIM), DIM, DIM);"]
            if o.bias else [])
    row_block = [
        f"const uint32_t a_sp = {nk * jp * DIM} + (uint32_t)((i & 1) * {nk * DIM});",
        f"const uint32_t acc = GEMMINI_ACC_ADDR | (uint32_t)((i & 1) * {jp * DIM});",
    ] + bias + [
        f"for (size_t k = 0; k < {nk}; k += {a_blocks})",
        f"  gemmini_extended_mvin(({o.A}) + i * DIM * ({o.sA}) + k * DIM, a_sp + (uint32_t)(k * DIM), {a_blocks} * DIM,",
        "                        DIM);",
        f"for (size_t k = 0; k < {nk}; k++)",
        f"  for (size_t j = 0; j < {jp}; j++) {{",
        f"    gemmini_extended_preload((uint32_t)((k * {jp} + j) * DIM), (acc | {flag}) + (uint32_t)(j * DIM), DIM,",
        "                             DIM, DIM, DIM);",
        "    gemmini_extended_compute_preloaded(a_sp + (uint32_t)(k * DIM), GARBAGE_ADDR, DIM, DIM, DIM, DIM);",
        "  }",
        f"for (size_t j = 0; j < {jp}; j += {b_blocks})",
        f"  gemmini_extended_mvout(({o.C}) + i * DIM * ({o.sC}) + (p * {jp} + j) * DIM, acc + (uint32_t)(j * DIM),",
        f"                         {b_blocks} * DIM, DIM);",
    ]
    panel = [
        f"for (size_t k = 0; k < {nk}; k++)",
        f"  for (size_t j = 0; j < {jp}; j += {b_blocks})",
        f"    gemmini_extended_mvin2(({o.B}) + k * DIM * ({o.sB}) + (p * {jp} + j) * DIM,",
        f"                           (uint32_t)((k * {jp} + j) * DIM), {b_blocks} * DIM, DIM);",
        f"for (size_t i = 0; i < {ni}; i++) {{",
    ] + _shift(row_block, 2) + ["}"]
    return (_comment(describe(s)) + _configs(s)
            + [f"for (size_t p = 0; p < {nj // jp}; p++) {{"] + _shift(panel, 2) + ["}"])


def render_schedule(s: Schedule) -> list[str]:
    if s.resident:
        return render_resident(s)
    return render_loop(s) if s.loop else render_explicit(s)


def join(lines: list[str], indent: str) -> str:
    """The lines as text that starts where the first one goes: the others get the indentation."""
    return "\n".join(line if n == 0 or not line else indent + line for n, line in enumerate(lines))


def in_block(lines: list[str]) -> list[str]:
    return ["{"] + _shift(lines, 2) + ["}"]


# ------------------------------------------------------------------------------------------ declarations
_DECLARATION = re.compile(r"\s*(?:for \()?(?:const )?(?:size_t|uint32_t|unsigned|int|elem_t|acc_t)\b")


def declared_names(lines: list[str], top_level_only: bool = False) -> set[str]:
    """The names the schedule's lines declare (all of them, or only those at its top level)."""
    names: set[str] = set()
    for line in lines:
        if top_level_only and line.startswith((" ", "for")):
            continue  # nested, or scoped to its for loop
        if not _DECLARATION.match(line):
            continue
        names.update(re.findall(r"([A-Za-z_]\w*)\s*=(?!=)", line.split(";")[0]))
    return names


def clashes(s: Schedule) -> bool:
    """Whether an operand names a variable the schedule declares (it would read the schedule's own)."""
    template = render_schedule(Schedule(s.dims, s.tiles, _placeholders(s.ops.bias), s.loop, s.dataflow,
                                        s.acc_double))
    return bool(s.ops.identifiers() & declared_names(template))


# ---------------------------------------------------------------------------------------- recognition
@dataclass(frozen=True)
class Token:
    key: str  # what is compared: the token, or a comment's words
    start: int
    end: int


_TOKEN = re.compile(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'|[A-Za-z_]\w*|\d[\w.]*|->|\+\+|--"
                    r"|<<=?|>>=?|[<>=!]=|&&|\|\||[-+*/%&|^]=|\S", re.DOTALL)


def tokens(text: str, start: int = 0) -> list[Token]:
    out = []
    for m in _TOKEN.finditer(text, start):
        tok = m.group(0)
        if tok.startswith("/*"):  # layout free: line breaks and the ` * ` that opens a comment's lines
            tok = "/* " + " ".join(w for w in tok[2:-2].split() if w != "*") + " */"
        out.append(Token(tok, m.start(), m.end()))
    return out


def _placeholders(bias: bool) -> Operands:
    names = {f.name: f"__speedpatch_{f.name}__" for f in fields(Operands)}
    return Operands(**dict(names, D=names["D"] if bias else "NULL"))


_OPEN, _CLOSE = "([{", ")]}"


def _operand_end(code: list[Token], i: int, follow: str) -> int | None:
    """Where an operand that starts at code[i] ends: at the first `follow` token outside brackets; None
    when an argument, a statement or a block ends first."""
    depth = 0
    for j in range(i, len(code)):
        key = code[j].key
        if depth == 0 and key == follow:
            return j if j > i else None
        if depth == 0 and key in (";", "{", "}", ","):  # an operand is one expression
            return None
        depth += (key in _OPEN) - (key in _CLOSE)
        if depth < 0:
            return None
    return None


def _match(template: list[Token], code: list[Token], text: str) -> tuple[dict[str, str], int] | None:
    """The operands and the end offset when the code starts with the template (placeholders standing for
    any bracket-balanced expression, the same one wherever a placeholder repeats); None otherwise."""
    slots = {f"__speedpatch_{f.name}__": f.name for f in fields(Operands)}
    seen: dict[str, list[str]] = {}
    operands: dict[str, str] = {}
    i = 0
    for n, tok in enumerate(template):
        if tok.key in slots:
            follow = template[n + 1].key if n + 1 < len(template) else ";"
            end = _operand_end(code, i, follow)
            if end is None:
                return None
            keys = [t.key for t in code[i:end]]
            name = slots[tok.key]
            if seen.setdefault(name, keys) != keys:
                return None
            operands.setdefault(name, text[code[i].start:code[end - 1].end])
            i = end
        elif i < len(code) and code[i].key == tok.key:
            i += 1
        else:
            return None
    return operands, code[i - 1].end


# The opening comment: the kind, the problem and the tiles (the template match checks every other word).
_OPENING = re.compile(r"/\*\s*(Weight-stationary|Output-stationary|LOOP_WS) schedule for (\d+)x(\d+)x(\d+), "
                      r"(?:tiles of|one hardware loop per tile of)\s+(\d+)x(\d+)x(\d+) blocks")


def _variants(kind: str, dims: tuple[int, int, int], tiles: tuple[int, int, int]) -> Iterator[Schedule]:
    for bias in (True, False):
        ops = _placeholders(bias)
        if kind == "LOOP_WS":
            yield Schedule(dims, tiles, ops, loop=True)
            continue
        for acc_double in (True, False):
            yield Schedule(dims, tiles, ops, dataflow="OS" if kind.startswith("Output") else "WS",
                           acc_double=acc_double)


def find_schedules(text: str) -> list[tuple[Schedule, int, int]]:
    """The schedules written out in `text`, each with the offsets of its statements (from its opening
    comment to its last statement). A schedule whose code differs from what its comment describes (it was
    edited) is not in the list."""
    found = []
    for m in _OPENING.finditer(text):
        numbers = [int(x) for x in m.groups()[1:]]
        dims, tiles = (numbers[0], numbers[1], numbers[2]), (numbers[3], numbers[4], numbers[5])
        if any(d <= 0 or d % DIM or not 0 < t <= d // DIM for d, t in zip(dims, tiles, strict=True)):
            continue
        code = tokens(text, m.start())
        for variant in _variants(m.group(1), dims, tiles):
            matched = _match(tokens(join(render_schedule(variant), "")), code, text)
            if matched is not None:
                operands, end = matched
                ops = Operands(**dict(operands, D=operands.get("D", "NULL")))
                found.append((Schedule(dims, tiles, ops, variant.loop, variant.dataflow, variant.acc_double),
                              m.start(), end))
                break
    return found
