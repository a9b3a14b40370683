"""Emulated `nki.language` (nl): tensors, loops, indexing helpers, DMA, and the high-level math ops.

Every op also accepts `dst=` (write into an existing tile) besides returning a new SBUF tile (the
legacy return-value style). Math functions are objects usable both as calls (`nl.exp(x)`) and as the
`op=` of nki.isa instructions (`nisa.activation(op=nl.exp, ...)`).
"""

from __future__ import annotations

import builtins
import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from speedpatch.targets.nki.emulator import costmodel, ops
from speedpatch.targets.nki.emulator import dtypes as _dtypes
from speedpatch.targets.nki.emulator import params as P
from speedpatch.targets.nki.emulator.arguments import checked, refuse_unknown
from speedpatch.targets.nki.emulator.dtypes import (  # noqa: F401 - re-exported as nl.<dtype>
    DType,
    as_dtype,
    bfloat16,
    bool_,
    float8_e4m3,
    float8_e5m2,
    float16,
    float32,
    int8,
    int16,
    int32,
    numpy_dtype,
    tfloat32,
    uint8,
    uint16,
    uint32,
)
from speedpatch.targets.nki.emulator.errors import NkiError, NotEmulated
from speedpatch.targets.nki.emulator.tensor import (  # noqa: F401 - re-exported
    DynSlice,
    Tile,
    hbm,
    new_tile,
    par_dim,
    private_hbm,
    psum,
    sbuf,
    shared_hbm,
)
from speedpatch.targets.nki.emulator.tensor import fit_mask as _fit_mask

# ---- math: erf-based GELU without SciPy (Abramowitz-Stegun 7.1.26, |error| < 1.5e-7) -----------------


def _erf(x: np.ndarray) -> np.ndarray:
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * np.exp(-a * a)
    return (s * y).astype(np.float32)


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / np.float32(math.sqrt(2.0))))


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(np.float32(math.sqrt(2.0 / math.pi)) * (x + 0.044715 * x**3)))


# The derivatives the legacy nki.language index lists next to their functions (gelu_dx, silu_dx, erf_dx): the
# pages give no formula beyond the name, so they are the derivatives of the functions emulated here.
def _gelu_dx(x: np.ndarray) -> np.ndarray:  # d/dx x * Phi(x) = Phi(x) + x * phi(x)
    return (0.5 * (1.0 + _erf(x / np.float32(math.sqrt(2.0))))
            + x * np.exp(-0.5 * x * x) / np.float32(math.sqrt(2.0 * math.pi)))


def _silu_dx(x: np.ndarray) -> np.ndarray:  # d/dx x * s(x) = s(x) * (1 + x * (1 - s(x)))
    sig = 1.0 / (1.0 + np.exp(-x))
    return sig * (1.0 + x * (1.0 - sig))


def _erf_dx(x: np.ndarray) -> np.ndarray:
    return np.float32(2.0 / math.sqrt(math.pi)) * np.exp(-x * x)


class NkiOp:
    """A math function: callable as an instruction and usable as an `op=` argument."""

    def __init__(self, name: str, fn: Callable[..., Any], engine: str, arity: int, reduce: Callable | None = None,
                 bitvec: bool = False):
        self.name = name
        self.np = fn
        self.engine = engine
        self.arity = arity
        self.reduce = reduce  # the reduction this op performs when used as a reduce op (add -> sum)
        self.bitvec = bitvec  # a bitvec operator: integer operands taken as bit patterns (is_bitvec)

    def __repr__(self) -> str:
        return f"nl.{self.name}"

    def __call__(self, *args: Any, **kw: Any) -> Tile:
        # nki.language.<op>(x[, y], *, dtype=None, mask=None) (the element-wise pages); operands also by name
        names = ("x", "y")[:self.arity]
        refuse_unknown(f"nl.{self.name}", kw, (*names, "dtype", "mask"))
        dtype, mask, dst = kw.get("dtype"), kw.get("mask"), None
        if any(n in kw for n in names):
            args = args + tuple(kw[n] for n in names[len(args):] if n in kw)
        if len(args) != self.arity:
            raise NkiError(f"nl.{self.name} takes {self.arity} operand(s), got {len(args)}")
        if self.bitvec:
            check_bitvec(f"nl.{self.name}", [*args, dst], dtype)
        return ops.elementwise(self.name, self.engine, self.np, args, dst=dst, dtype=ops.out_dtype(dtype, *args), mask=mask,
                               integer=self.bitvec)


def _u(name: str, fn: Callable, engine: str = "scalar") -> NkiOp:
    return NkiOp(name, fn, engine, 1)


def _b(name: str, fn: Callable, reduce: Callable | None = None) -> NkiOp:
    return NkiOp(name, fn, "vector", 2, reduce)


exp = _u("exp", np.exp)
log = _u("log", np.log)
tanh = _u("tanh", np.tanh)
sigmoid = _u("sigmoid", lambda x: 1.0 / (1.0 + np.exp(-x)))
relu = _u("relu", lambda x: np.maximum(x, 0))
gelu = _u("gelu", _gelu)
gelu_apprx_tanh = _u("gelu_apprx_tanh", _gelu_tanh)
silu = _u("silu", lambda x: x / (1.0 + np.exp(-x)))
softplus = _u("softplus", lambda x: np.log1p(np.exp(x)))
sqrt = _u("sqrt", np.sqrt)
rsqrt = _u("rsqrt", lambda x: 1.0 / np.sqrt(x))
sin = _u("sin", np.sin)
cos = _u("cos", np.cos)
erf = _u("erf", _erf)
square = _u("square", np.square)
tan = _u("tan", np.tan)
mish = _u("mish", lambda x: x * np.tanh(np.log1p(np.exp(x))))
gelu_dx = _u("gelu_dx", _gelu_dx)
silu_dx = _u("silu_dx", _silu_dx)
erf_dx = _u("erf_dx", _erf_dx)
copy_op = _u("copy", lambda x: x)
identity = copy_op
abs = _u("abs", np.abs, "vector")  # noqa: A001 - NKI's public name
negative = _u("negative", np.negative, "vector")
reciprocal = _u("reciprocal", lambda x: 1.0 / x, "vector")
sign = _u("sign", np.sign, "vector")
floor = _u("floor", np.floor, "vector")
ceil = _u("ceil", np.ceil, "vector")

add = _b("add", np.add, np.sum)
subtract = _b("subtract", np.subtract)
multiply = _b("multiply", np.multiply, np.prod)
divide = _b("divide", np.divide)
maximum = _b("maximum", np.maximum, np.max)
minimum = _b("minimum", np.minimum, np.min)
power = _b("power", np.power)
mod = _b("mod", np.mod)  # the remainder with the divisor's sign, as Python's % (nki.language.mod docs)
fmod = _b("fmod", np.fmod)  # the remainder with the dividend's sign (nki.language.fmod docs)
equal = _b("equal", lambda a, b: (a == b).astype(np.float32))
not_equal = _b("not_equal", lambda a, b: (a != b).astype(np.float32))
greater = _b("greater", lambda a, b: (a > b).astype(np.float32))
greater_equal = _b("greater_equal", lambda a, b: (a >= b).astype(np.float32))
less = _b("less", lambda a, b: (a < b).astype(np.float32))
less_equal = _b("less_equal", lambda a, b: (a <= b).astype(np.float32))
logical_and = _b("logical_and", lambda a, b: np.logical_and(a, b).astype(np.float32))
logical_or = _b("logical_or", lambda a, b: np.logical_or(a, b).astype(np.float32))
logical_xor = _b("logical_xor", lambda a, b: np.logical_xor(a, b).astype(np.float32))  # nki.language.logical_xor
logical_not = NkiOp("logical_not", lambda x: np.logical_not(x).astype(np.float32), "vector", 1)  # nki.language.logical_not

# Bitvec operators (nki.language bitwise_and / bitwise_or / bitwise_xor / invert / left_shift / right_shift;
# nki.isa.tensor_scalar and tensor_tensor docs: "If bitvec operators are used, the instruction must run on
# Vector Engine. Also, the input/output data types must be integer types, and input elements are treated as
# bit patterns without any data type casting"). The operands reach these functions as int64 (ops.elementwise
# integer=True); right_shift of a signed type is NumPy's (arithmetic).
bitwise_and = NkiOp("bitwise_and", np.bitwise_and, "vector", 2, bitvec=True)
bitwise_or = NkiOp("bitwise_or", np.bitwise_or, "vector", 2, bitvec=True)
bitwise_xor = NkiOp("bitwise_xor", np.bitwise_xor, "vector", 2, bitvec=True)
left_shift = NkiOp("left_shift", np.left_shift, "vector", 2, bitvec=True)
right_shift = NkiOp("right_shift", np.right_shift, "vector", 2, bitvec=True)
invert = NkiOp("invert", np.invert, "vector", 1, bitvec=True)
_NUMPY_BITVEC = (np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.left_shift, np.right_shift, np.invert)


def is_bitvec(op: Any) -> bool:
    """Whether op is a bitvec operator (nl.bitwise_* / shifts / invert, or the NumPy ufunc of one)."""
    return bool(getattr(op, "bitvec", False)) or any(op is f for f in _NUMPY_BITVEC)


def check_bitvec(what: str, tiles: Sequence[Any], dtype: Any = None) -> None:
    """Bitvec operators take and write integer types only (nki.isa.tensor_scalar / tensor_tensor docs)."""
    named = [t for t in tiles if isinstance(t, Tile)]
    floats = [t for t in named if t.dtype.is_float]
    if dtype is not None and as_dtype(dtype).is_float:
        raise NkiError(f"{what}: bitvec operators write integer types only, dtype={as_dtype(dtype)!r}")
    if floats:
        raise NkiError(f"{what}: bitvec operators need integer tiles (they are read as bit patterns without "
                       f"casting); {floats[0].name!r} is {floats[0].dtype!r}")


def np_binary(op: Any) -> Callable:
    if isinstance(op, NkiOp):
        return op.np
    if isinstance(op, Reduction):
        return op.binary
    if callable(op):
        return op
    raise NkiError(f"unsupported op {op!r}")


def np_unary(op: Any) -> Callable:
    # nl.copy as an activation function is the identity (nki.isa.tensor_copy: "On NeuronCore v2, tensor_copy
    # is not supported on the Scalar Engine. Instead, use nisa.activation with op=nl.copy")
    if op is None or op is copy:
        return lambda x: x
    return np_binary(op)


# ---- reductions (Vector engine, along free axes) -----------------------------------------------------


class Reduction:
    def __init__(self, name: str, fn: Callable, binary: Callable):
        self.name = name
        self.np = fn
        self.binary = binary

    def __repr__(self) -> str:
        return f"nl.{self.name}"

    def __call__(self, *args: Any, **kw: Any) -> Tile:
        # nki.language.<reduction>(x, axis, *, dtype=None, mask=None, keepdims=False) (the reduction pages)
        what = f"nl.{self.name}"
        refuse_unknown(what, kw, _REDUCTION_ARGS)
        if len(args) > 2:
            raise NkiError(f"{what}: too many positional arguments (x, axis)")
        a = {**dict(zip(("x", "axis"), args, strict=False)), **kw}
        if "x" not in a or "axis" not in a:
            raise NkiError(f"{what}: x and axis are required")
        return reduce_tile(self.np, a["x"], a["axis"], dtype=a.get("dtype"), keepdims=bool(a.get("keepdims", False)),
                           mask=a.get("mask"), what=self.name)


_REDUCTION_ARGS = ("x", "axis", "dtype", "mask", "keepdims")


sum = Reduction("sum", np.sum, np.add)  # noqa: A001 - NKI's public name
max = Reduction("max", np.max, np.maximum)  # noqa: A001
min = Reduction("min", np.min, np.minimum)  # noqa: A001
mean = Reduction("mean", np.mean, np.add)
prod = Reduction("prod", np.prod, np.multiply)
# nki.language.var ("Similar to numpy.var", no keepdims on its page) and all ("Similar to numpy.all"): one VectorE
# pass over the input, as the other reductions (the pages give no cost; var's bn_stats/bn_aggr expansion is one
# pass plus a per-partition aggregate)
var = Reduction("var", np.var, np.add)
all = Reduction("all", lambda v, axis, keepdims=False: np.all(v != 0, axis=axis, keepdims=keepdims).astype(  # noqa: A001
    np.float32), np.logical_and)


def reduce_fn(op: Any) -> Callable[..., Any]:
    """The NumPy reduction meant by an `op=` argument (nl.add / np.add -> sum, nl.max -> max...)."""
    if isinstance(op, Reduction):
        return op.np
    if isinstance(op, NkiOp) and op.reduce is not None:
        return op.reduce
    table: dict[Any, Callable[..., Any]] = {np.add: np.sum, np.maximum: np.max, np.minimum: np.min,
                                            np.multiply: np.prod}
    if op in table:
        return table[op]
    if op in (np.sum, np.max, np.min, np.prod, np.mean, np.amax, np.amin):
        return op
    raise NkiError(f"{op!r} is not a reduction op (use nl.add, nl.maximum, nl.minimum, nl.multiply)")


def reduce_tile(fn: Callable, x: Tile, axis: Any, dtype: Any = None, keepdims: bool = False, mask: Any = None,
                dst: Tile | None = None, negate: bool = False, what: str = "reduce") -> Tile:
    if not isinstance(x, Tile):
        raise NkiError(f"{what}: data must be a tile")
    ops.require_on_chip(x, what)
    axes = ops.reduce_axes(x, axis, what)
    keep = _kept_elements(mask, x, axes, fn, what)

    def run(v: np.ndarray) -> np.ndarray:
        if keep is None:
            r = fn(v, axis=axes, keepdims=keepdims)
        elif fn is np.mean:
            r = (np.sum(np.where(keep, v, 0.0), axis=axes, keepdims=keepdims)
                 / np.maximum(np.sum(keep, axis=axes, keepdims=keepdims), 1))
        else:
            r = fn(np.where(keep, v, _IDENTITY[fn]), axis=axes, keepdims=keepdims)
        return -r if negate else r

    write_mask = (_reduction_mask(mask, x, axes, keepdims, what) if keep is None
                  else np.any(keep, axis=axes, keepdims=keepdims))
    return ops.elementwise(what, "vector", run, [x], dst=dst, dtype=ops.out_dtype(dtype, x), write_mask=write_mask)


# the value an element outside a reduction's mask contributes: none
_IDENTITY: dict[Any, float] = {np.sum: 0.0, np.prod: 1.0, np.max: -np.inf, np.amax: -np.inf, np.min: np.inf,
                               np.amin: np.inf}


def _kept_elements(mask: Any, x: Tile, axes: tuple[int, ...], fn: Callable, what: str) -> np.ndarray | None:
    """A reduction mask over free elements as the elements that take part (None for no mask, a scalar or a
    partition predicate: _reduction_mask). NKI API Masking: the mask 'informs the compiler to skip generating
    the instruction or generate the instruction with a smaller input tile shape' (its example: nl.square(in_tile,
    mask=((i_p < 64) & (i_f < 256))) 'computes only [0:64, 0:256]'), so a reduction reduces the selected
    elements only; a result element none of whose inputs is selected is not written. The cost stays that of the
    whole input tile (an upper bound: the smaller instruction's cost is not modeled)."""
    if mask is None:
        return None
    m = np.asarray(_fit_mask(mask, [x]))
    if m.ndim == 0 or (x.par_axis == 0 and m.shape[0] in (1, x.shape[0]) and builtins.all(n == 1 for n in m.shape[1:])):
        return None
    if fn is not np.mean and fn not in _IDENTITY:
        api = "nisa.tensor_reduce" if what == "tensor_reduce" else f"nl.{what}"
        raise NotEmulated(f"{api}(mask=...) over free elements with {fn!r} is part of NKI but not of the speedpatch "
                          f"emulator")
    try:
        return np.broadcast_to(m.astype(bool), x.shape)
    except ValueError:
        raise NkiError(f"{what}: mask of shape {m.shape} does not fit the reduced tile {x.shape}") from None


def _reduction_mask(mask: Any, x: Tile, axes: tuple[int, ...], keepdims: bool, what: str) -> Any:
    """A reduction's mask as a mask of its result: a predicate on the partitions only (`i_p < n`, shape (P, 1...)
    or (P,)) leaves the masked-out partitions of the result unwritten. A mask over free elements would say which
    elements take part in the reduction, which the docs do not define: not emulated."""
    if mask is None:
        return None
    m = np.asarray(_fit_mask(mask, [x]))
    if m.ndim == 0:
        return m
    if x.par_axis != 0 or m.shape[0] not in (1, x.shape[0]) or any(n != 1 for n in m.shape[1:]):
        api = "nisa.tensor_reduce" if what == "tensor_reduce" else f"nl.{what}"
        raise NotEmulated(f"{api}(mask=...) with a mask of shape {m.shape} over the free elements of {x.shape} is "
                          f"part of NKI but not of the speedpatch emulator (a mask of a reduction's inputs); mask "
                          f"partitions only (a predicate of the partition index)")
    out_ndim = x.ndim if keepdims else x.ndim - len(axes)
    return m.reshape((m.shape[0],) + (1,) * (out_ndim - 1))


# ---- creation ----------------------------------------------------------------------------------------


class _SharedHbm:
    """SPMD programs of one launch share their HBM outputs: the n-th HBM tensor a later program creates
    is the one the first program created."""

    def __init__(self) -> None:
        self.created: list[Tile] = []
        self.index = 0
        self.replay = False

    def get(self, make: Callable[[], Tile]) -> Tile:
        if self.replay and self.index < len(self.created):
            tile = self.created[self.index]
        else:
            tile = make()
            self.created.append(tile)
        self.index += 1
        return tile


_shared_hbm: list[_SharedHbm] = [_SharedHbm()]


# The nki.language functions take the parameters their API pages give (legacy `general/nki/api/generated/
# nki.language.*` and current `nki/api/generated/nki.language.*`, awsdocs-neuron.readthedocs-hosted.com), and no
# other keyword (arguments.checked).


@checked("nl.ndarray", {"address": ((None,), "an explicit on-chip address (v2.33)")})
def ndarray(shape: Any, dtype: Any, buffer: Any = sbuf, name: str = "", address: Any = None) -> Tile:
    def make() -> Tile:
        tile = new_tile(shape, dtype, buffer, name=name or "ndarray")
        if tile.buffer.kind == "psum":
            tile.alloc.unwritten_psum = "ndarray"
        return tile

    if getattr(buffer, "kind", "") == "hbm":
        return _shared_hbm[-1].get(make)
    return make()


@checked("nl.full")
def full(shape: Any, fill_value: float, dtype: Any, buffer: Any = sbuf, name: str = "") -> Tile:
    tile = new_tile(shape, dtype, buffer, name=name or "full")
    tile.write(np.float32(fill_value))
    if tile.buffer.kind == "psum" and float(fill_value) == 0.0:
        # a zeroed PSUM accumulator costs nothing: the first matmul into it overwrites instead of
        # accumulating ([ARCH]: "Every nc_matmul instruction can choose whether to override ... or
        # accumulate"); read first by another engine, it pays its memset then (tensor.read_of_unwritten_psum)
        tile.alloc.unwritten_psum = "zeros"
        return tile
    if tile.buffer.kind != "hbm":  # a memset on the Vector engine
        costmodel.current().issue("vector", ops.engine_cost_ns("vector", tile.free_size), [], [tile.access()],
                                  latency_ns=ops.access_latency_ns("vector"))
    return tile


@checked("nl.zeros")
def zeros(shape: Any, dtype: Any, buffer: Any = sbuf, name: str = "") -> Tile:
    return full(shape, 0.0, dtype, buffer, name or "zeros")


@checked("nl.ones")
def ones(shape: Any, dtype: Any, buffer: Any = sbuf, name: str = "") -> Tile:
    return full(shape, 1.0, dtype, buffer, name or "ones")


@checked("nl.zeros_like")
def zeros_like(a: Tile, dtype: Any = None, buffer: Any = None, name: str = "") -> Tile:
    return zeros(a.shape, dtype or a.dtype, buffer or a.buffer, name)


@checked("nl.empty_like")
def empty_like(a: Tile, dtype: Any = None, buffer: Any = None, name: str = "") -> Tile:
    """A new uninitialised tensor of a's shape (nki.language.empty_like)."""
    return ndarray(a.shape, dtype or a.dtype, buffer=buffer or a.buffer, name=name)


@checked("nl.broadcast_to")
def broadcast_to(src: Tile, shape: Any) -> Tile:
    """nki.language.broadcast_to(src, shape): src's one partition (or one element per partition) repeated to
    shape, as its method tile.broadcast_to (a partition broadcast is a TensorE matmul against ones, params.py)."""
    if not isinstance(src, Tile):
        raise NkiError(f"nl.broadcast_to: src must be a tile, got {type(src).__name__}")
    return src.broadcast_to(shape)


@checked("nl.loop_reduce")
def loop_reduce(x: Tile, op: Any, loop_indices: Any = None, dtype: Any = None, mask: Any = None) -> Tile:
    """nki.language.loop_reduce: `dst[...] = nl.loop_reduce(x, op, loop_indices)` is, per the docs, the same as
    `dst = nisa.tensor_tensor(data1=dst, data2=x, op=op)` -- the destination is the other operand. The
    returned view of x carries the reduction; the assignment (copy_into) performs it into its target."""
    if not isinstance(x, Tile):
        raise NkiError("nl.loop_reduce: x must be a tile")
    view = x[tuple(slice(None) for _ in x.shape)]
    view._loop_reduce = (np_binary(op), dtype, mask)
    return view


# ---- indexing ----------------------------------------------------------------------------------------


@checked("nl.arange")
def arange(*args: int) -> np.ndarray:
    return np.arange(*[int(a) for a in args])


@checked("nl.ds")
def ds(start: Any, size: int, step: int = 1) -> DynSlice:
    return DynSlice(start, size, step)


@dataclass(frozen=True)
class _Grid:
    axes: tuple[np.ndarray, ...]

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter(self.axes)

    def __getitem__(self, i: int) -> np.ndarray:
        return self.axes[i]

    @property
    def p(self) -> np.ndarray:
        return self.axes[0]

    @property
    def x(self) -> np.ndarray:
        return self.axes[1]

    @property
    def y(self) -> np.ndarray:
        return self.axes[2]

    @property
    def z(self) -> np.ndarray:
        return self.axes[3]


class GridIndex(np.ndarray):
    """One axis of an nl.mgrid grid, and any index arithmetic on it: an open-grid array (i_p (128, 1), i_f
    (1, 512)) that remembers the dense grid it belongs to. NKI's grids are dense (the nki.language.mgrid
    docs: "a dense (or fleshed out) mesh-grid ... each returned argument has the same shape"), yet an NKI
    index names the axis it iterates, so axes of differently shaped grids combine (the matmul tutorial
    indexes rhs[ki * P + ip, ni * F + ib] with ip from mgrid[0:P, 0:P] and ib from mgrid[0:P, 0:F]); as
    open grids they do, and indexing stays a strided box. The dense shape matters where an expression
    gives a tile its shape: nisa.iota(3 * g.x + g.y) fills every partition of the grid.

    grid_iters names the grid axes (iterators) the expression depends on: {(grid, axis): (size, array axis
    counted from the end)}; None when that is not known (mixed with a plain array). Indexing a tensor with
    such expressions gives a tile with one axis per iterator it uses (tensor.grid_index_space): the
    tutorials' `g[i_p_param, i_f]` with i_p_io, i_f, i_p_param = nl.mgrid[0:128, 0:N, 0:1] is a (1, N)
    tile, `a[i * 128 + ix, iy]` with ix, iw, iy = nl.mgrid[0:128, 0:1, 0:N] a (128, N) one."""

    grid_shape: tuple[int, ...] | None = None
    grid_iters: dict[tuple[int, int], tuple[int, int]] | None = None

    def __array_finalize__(self, obj: Any) -> None:
        self.grid_shape = getattr(obj, "grid_shape", None)
        self.grid_iters = getattr(obj, "grid_iters", None)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        shapes = [x.grid_shape for x in inputs if isinstance(x, GridIndex) and x.grid_shape is not None]
        plain = [x.view(np.ndarray) if isinstance(x, GridIndex) else x for x in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(o.view(np.ndarray) if isinstance(o, GridIndex) else o for o in kwargs["out"])
        result = getattr(ufunc, method)(*plain, **kwargs)
        if method != "__call__" or not isinstance(result, np.ndarray) or not shapes:
            return result
        try:  # expressions of two grids: the grid both span (None when they do not broadcast)
            grid: tuple[int, ...] | None = np.broadcast_shapes(*shapes, result.shape)
        except ValueError:
            grid = None
        out = result.view(GridIndex)
        out.grid_shape = grid
        out.grid_iters = _combined_iters(inputs)
        return out


def _combined_iters(inputs: tuple[Any, ...]) -> dict[tuple[int, int], tuple[int, int]] | None:
    """The iterators an expression of these inputs depends on (None if unknown, or if two of them would
    share one array axis)."""
    iters: dict[tuple[int, int], tuple[int, int]] = {}
    for x in inputs:
        if isinstance(x, GridIndex):
            if x.grid_iters is None:
                return None
            iters.update(x.grid_iters)
        elif isinstance(x, np.ndarray) and x.size > 1:
            return None  # a plain array (nl.arange): its axes are not named
    array_axes = [axis for _, axis in iters.values()]
    return iters if len(set(array_axes)) == len(array_axes) else None


_grid_ids = itertools.count()


def dense_shape(expr: Any) -> tuple[int, ...] | None:
    """The dense grid shape of an index expression made from nl.mgrid axes (None for anything else)."""
    return expr.grid_shape if isinstance(expr, GridIndex) else None


class _MGrid:
    """nl.mgrid[0:128, 0:512] -> the grid's axes as GridIndex arrays (open for indexing, dense for shapes)."""

    def __getitem__(self, key: Any) -> _Grid:
        keys = key if isinstance(key, tuple) else (key,)
        for k in keys:
            if not isinstance(k, slice) or isinstance(k.step, complex):
                raise NkiError(f"nl.mgrid takes slices such as nl.mgrid[0:128, 0:512] (complex steps are not "
                               f"supported), got {k!r}")
        if len(keys) == 1:
            return _Grid((np.arange(keys[0].start or 0, keys[0].stop, keys[0].step or 1),))
        axes = [np.asarray(a).view(GridIndex) for a in np.ogrid[keys]]
        shape = np.broadcast_shapes(*(a.shape for a in axes))
        gid = next(_grid_ids)
        for k, a in enumerate(axes):
            a.grid_shape = shape
            a.grid_iters = {(gid, k): (shape[k], k - len(shape))}
        return _Grid(tuple(axes))


mgrid = _MGrid()


class _TileSize:
    pmax = P.PARTITIONS
    gemm_stationary_fmax = P.GEMM_STATIONARY_FMAX
    gemm_moving_fmax = P.GEMM_MOVING_FMAX
    bn_stats_fmax = P.BN_STATS_FMAX
    psum_fmax = P.PSUM_BANK_BYTES // 4
    psum_partition_size = P.PSUM_BANK_BYTES * P.PSUM_BANKS
    sbuf_partition_size = P.SBUF_BYTES_PER_PARTITION


tile_size = _TileSize()


class _Fp32:
    """nl.fp32: FP32 constants. min is the bit pattern 0xff7fffff, the most negative finite fp32 (nki.language.fp32
    docs), the -infinity stand-in of masked attention scores."""

    min = float(np.finfo(np.float32).min)


fp32 = _Fp32()


class _TypeInfo:
    """What nl.finfo / nl.iinfo return: the limits of a device dtype, as NumPy's finfo / iinfo give them
    (bf16 and fp8 through ml_dtypes), e.g. nl.finfo(dtype).min as the padding of a max-pool."""

    def __init__(self, info: Any, dtype: DType) -> None:
        self.dtype = dtype
        self.bits = int(info.bits)
        self.min = float(info.min) if dtype.is_float else int(info.min)
        self.max = float(info.max) if dtype.is_float else int(info.max)
        if dtype.is_float:
            self.eps = float(info.eps)
            self.tiny = float(info.tiny)


def _host_type(dtype: Any) -> tuple[DType, Any]:
    dt = as_dtype(dtype)
    if dt.name == "tfloat32":
        return dt, np.float32
    if dt.name.startswith("float8") and _dtypes.ml_dtypes is not None:
        return dt, _dtypes.ml_dtypes.float8_e4m3fn if dt.name == "float8_e4m3" else _dtypes.ml_dtypes.float8_e5m2
    return dt, numpy_dtype(dt)


@checked("nl.finfo")
def finfo(dtype: Any) -> _TypeInfo:
    dt, host = _host_type(dtype)
    if not dt.is_float:
        raise NkiError(f"nl.finfo: {dt!r} is not a float type; use nl.iinfo")
    info = _TypeInfo(_dtypes.ml_dtypes.finfo(host) if _dtypes.ml_dtypes is not None else np.finfo(host), dt)
    if dt.name == "tfloat32":  # fp32's range in fp32's storage, 10 mantissa bits (nl.tfloat32 docs: 1S,8E,10M)
        info.eps = 2.0 ** -10
        info.max = (2.0 - 2.0 ** -10) * 2.0 ** 127
        info.min = -info.max
    return info


@checked("nl.iinfo")
def iinfo(dtype: Any) -> _TypeInfo:
    dt, host = _host_type(dtype)
    if dt.is_float:
        raise NkiError(f"nl.iinfo: {dt!r} is a float type; use nl.finfo")
    return _TypeInfo(np.iinfo(host), dt)

# ---- loops -------------------------------------------------------------------------------------------


class _LoopRange:
    """An NKI loop: iterates like range; the tiles allocated in an iteration's body are local to that
    iteration (out of scope at the next one, so their space can be reused: params.py, Capacity).

    Iterations are not serialized by the loop kind: affine_range, sequential_range and static_range
    iterations all overlap as far as their data dependencies and buffer reuse allow. sequential_range
    tells the compiler that iterations carry a dependency (which the emulator tracks from the data);
    it does not make the hardware wait for all engines between iterations."""

    def __init__(self, *args: Any) -> None:
        self.range = range(*[int(a) for a in args])

    def __len__(self) -> int:
        return len(self.range)

    def __getitem__(self, i: int) -> int:
        return self.range[i]

    def __iter__(self) -> Iterator[int]:
        trace = costmodel.current()
        loop = trace.enter_loop()
        try:
            for i in self.range:
                yield i
                loop.end_iteration()
        finally:
            trace.exit_loop(loop)


def _range_args(start: Any, stop: Any, step: Any) -> tuple[Any, ...]:
    return (start,) if stop is None else (start, stop, step)


# nki.language.affine_range / static_range / sequential_range(start, stop=None, step=1)
@checked("nl.affine_range")
def affine_range(start: Any, stop: Any = None, step: Any = 1) -> _LoopRange:
    return _LoopRange(*_range_args(start, stop, step))


@checked("nl.static_range")
def static_range(start: Any, stop: Any = None, step: Any = 1) -> _LoopRange:
    return _LoopRange(*_range_args(start, stop, step))


@checked("nl.sequential_range")
def sequential_range(start: Any, stop: Any = None, step: Any = 1) -> _LoopRange:
    return _LoopRange(*_range_args(start, stop, step))


# ---- SPMD launch grid --------------------------------------------------------------------------------

_program: list[tuple[int, ...]] = [()]
_grid: list[tuple[int, ...]] = [()]




class _GridProduct(int):
    """`nl.nc(2) * 2` is nl.spmd_dim(nl.nc(2), 2) and `2 * nl.nc(2)` is nl.spmd_dim(2, nl.nc(2)): the documented
    "syntactic sugar" (nki.language.spmd_dim; the AWS doc example test_nki_spmd_grid.py launches both). As plain
    ints they were 4 programs on one core."""

    def __mul__(self, other: Any) -> Any:
        if isinstance(other, int) and not isinstance(other, bool):
            return spmd_dim(self, other)
        return NotImplemented

    def __rmul__(self, other: Any) -> Any:
        if isinstance(other, int) and not isinstance(other, bool):
            return spmd_dim(other, self)
        return NotImplemented


class nc(_GridProduct):  # noqa: N801 - NKI's public name
    """A launch-grid dimension whose programs go to that many physical NeuronCores (kernel[nl.nc(2), 2]):
    program i of the dimension runs on core i. Programs on one core run one after another (params.py)."""


class spmd_dim(_GridProduct):  # noqa: N801 - NKI's public name
    """A launch-grid dimension made of sub-dimensions, major first (kernel[nl.spmd_dim(nl.nc(2), 2), 2]):
    its size is their product; its nl.nc sub-dimensions say which core each program runs on."""

    dims: tuple[int, ...]

    def __new__(cls, *dims: Any) -> spmd_dim:
        self = super().__new__(cls, math.prod(int(d) for d in dims))
        self.dims = tuple(d if isinstance(d, (nc, spmd_dim)) else int(d) for d in dims)
        return self


def _core_coordinate(dim: Any, i: int) -> tuple[int, int]:
    """(core coordinate, number of cores) of program i along one grid dimension."""
    if isinstance(dim, nc):
        return i, int(dim)
    if isinstance(dim, spmd_dim):
        core, cores = 0, 1
        for sub in reversed(dim.dims):  # minor sub-dimension first
            i, j = divmod(i, int(sub))
            c, n = _core_coordinate(sub, j)
            core, cores = core + c * cores, cores * n
        return core, cores
    return 0, 1


def physical_core(grid: tuple[int, ...], ids: tuple[int, ...]) -> tuple[int, int]:
    """(the NeuronCore program `ids` runs on, how many cores the grid spans) from its nl.nc dimensions."""
    core, cores = 0, 1
    for dim, i in zip(grid, ids, strict=True):
        c, n = _core_coordinate(dim, i)
        core, cores = core * n + c, cores * n
    if cores > P.MAX_PHYSICAL_CORES:
        raise NkiError(f"the launch grid spreads programs over {cores} physical NeuronCores (nl.nc); a kernel "
                       f"runs on at most {P.MAX_PHYSICAL_CORES} (a logical NeuronCore of trn2)")
    return core, cores


@checked("nl.shared_constant")
def shared_constant(value: Any, dtype: Any = None) -> Tile:
    """A compile-time constant tensor in HBM made from a host array (e.g. an identity or a mask)."""
    from speedpatch.targets.nki.emulator.tensor import hbm_tensor

    array = np.asarray(value)
    if dtype is not None:
        from speedpatch.targets.nki.emulator.dtypes import as_dtype, numpy_dtype

        array = array.astype(numpy_dtype(as_dtype(dtype)))
    return hbm_tensor(array, "shared_constant")


@checked("nl.shared_identity_matrix")
def shared_identity_matrix(n: int, dtype: Any = "uint8", dst: Tile | None = None) -> Tile:
    """An n x n identity matrix in SBUF (nki.language.shared_identity_matrix: "the same behavior to
    nki.language.shared_constant", an HBM constant, "in SBUF" on the current page, whose example computes on it
    and stores it): the constant is made in HBM and DMA'd into SBUF (or into dst), and that load is charged."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= int(n) <= P.PARTITIONS:
        raise NkiError(f"nl.shared_identity_matrix: n must be an int from 1 to {P.PARTITIONS} (its rows are "
                       f"partitions), got {n!r}")
    n = int(n)
    constant = shared_constant(np.eye(n), dtype=dtype)
    if dst is None:
        return load(constant)
    if not isinstance(dst, Tile) or dst.buffer.kind != "sbuf":
        raise NkiError("nl.shared_identity_matrix: dst must be an SBUF tile")
    return ops.dma(dst, constant, what="nl.shared_identity_matrix")


@checked("nl.program_id")
def program_id(axis: int = 0) -> int:
    ids = _program[-1]
    return ids[axis] if axis < len(ids) else 0


@checked("nl.num_programs")
def num_programs(axes: Any = None) -> int:
    """Programs along `axes` of the launch grid (an int or a tuple of them); without axes, all programs
    of the grid (nki.language.num_programs)."""
    grid = _grid[-1]
    if axes is None:
        return math.prod(int(d) for d in grid)
    if isinstance(axes, (tuple, list)):
        return math.prod(num_programs(int(a)) for a in axes)
    return int(grid[axes]) if axes < len(grid) else 1


@checked("nl.program_ndim")
def program_ndim() -> int:
    return len(_grid[-1])


# ---- data movement -----------------------------------------------------------------------------------


@checked("nl.load")
def load(src: Tile, mask: Any = None, dtype: Any = None) -> Tile:
    if not isinstance(src, Tile):
        raise NkiError("nl.load: source must be a kernel tensor (an HBM argument or nl.ndarray)")
    if src.buffer.kind != "hbm":
        raise NkiError(f"nl.load: source {src.name!r} is in {src.buffer.kind.upper()}, not HBM (nki.language.load: "
                       f"'src - HBM tensor to load the data from'); to copy an on-chip tile use nisa.tensor_copy "
                       f"or nl.copy")
    dst = new_tile(src.shape, dtype or src.dtype, sbuf, name=f"load({src.name})")
    return ops.dma(dst, src, mask=mask, what="nl.load", defer=True)


@checked("nl.store")
def store(dst: Tile, value: Any, mask: Any = None) -> Tile:
    if not isinstance(value, Tile):
        raise NkiError("nl.store: value must be a tile (write constants into an SBUF tile first)")
    # nki.language.store: "dst - HBM tensor to store the data into", "value - An SBUF tile" (PSUM: copied first)
    if isinstance(dst, Tile) and dst.buffer.kind != "hbm":
        raise NkiError(f"nl.store: destination {dst.name!r} is in {dst.buffer.kind.upper()}, not HBM; to copy "
                       f"between on-chip tiles use nisa.tensor_copy or nl.copy")
    if value.buffer.kind == "hbm":
        raise NkiError(f"nl.store: value {value.name!r} is an HBM tensor, not an on-chip tile; copy HBM to HBM "
                       f"with nisa.dma_copy(dst=, src=), or nl.load it into SBUF first")
    return ops.dma(dst, value, mask=mask, what="nl.store")


@checked("nl.load_transpose2d")
def load_transpose2d(src: Tile, mask: Any = None, dtype: Any = None) -> Tile:
    if src.ndim != 2:
        raise NkiError("nl.load_transpose2d: source must be 2-D")
    dst = new_tile((src.shape[1], src.shape[0]), dtype or src.dtype, sbuf, name="load_transpose2d")
    return ops.dma(dst, src, mask=mask, what="nl.load_transpose2d", transpose_hbm=True)


@checked("nl.copy")
def copy(x: Tile, dtype: Any = None, mask: Any = None) -> Tile:
    return ops.elementwise("copy", "vector", lambda v: v, [x], dtype=ops.out_dtype(dtype, x), mask=mask)


def copy_into(dst: Tile, value: Any) -> None:
    """`tile[...] = value`: a tensor copy (Vector engine) or a memset for a constant; nothing for the result of
    an instruction a constant False mask did not execute (ops.never_executed)."""
    if isinstance(value, Tile) and value.alloc.not_executed:
        return
    if isinstance(value, Tile) and value.buffer.kind == "hbm" or dst.buffer.kind == "hbm":
        if not isinstance(value, Tile):
            raise NkiError("cannot assign a constant to an HBM tensor; write an SBUF tile and nl.store it")
        ops.dma(dst, value, what="assignment")
        return
    reduction = value._loop_reduce if isinstance(value, Tile) else None
    if reduction is not None:  # dst[...] = nl.loop_reduce(x, op): dst = op(dst, x), one VectorE instruction
        fn, dtype, mask = reduction
        ops.elementwise("loop_reduce", "vector", fn, [dst, value], dst=dst, dtype=ops.out_dtype(dtype, dst),
                        mask=mask)
        return
    if isinstance(value, Tile) and (ops.retarget_load(dst, value) or ops.retarget_result(dst, value)):
        return
    written = ops.masked_result(dst, value)
    ops.elementwise("copy", "vector", lambda v: v, [value], dst=dst,
                    mask=value.alloc.masked_result if written is not None else None, write_mask=written)


def accumulate_into(dst: Tile, other: Any) -> None:
    ops.accumulate_into(dst, other)


@checked("nl.transpose")
def transpose(x: Tile, dtype: Any = None, mask: Any = None) -> Tile:
    """The Tensor engine's transpose, its result in PSUM, the only memory that engine writes (nki.language.transpose
    docs: `result_psum = nl.transpose(x)` then nisa.tensor_copy to SBUF). The kernel's own copy out of PSUM is
    the one charged; used directly as a matmul operand, the copy the compiler inserts is (ops._sbuf_operand).
    It landed in SBUF with its copy charged, so the documented transpose-then-copy paid two copies (public
    decode attention kernels: +5% and +9%). A mask transposes the rectangle of x it selects (ops.transpose);
    a constant False one executes nothing."""
    if not isinstance(x, Tile):
        raise NkiError("nl.transpose: x must be a tile")
    out_dtype = as_dtype(dtype) if dtype else x.dtype
    if ops.never_executed(mask) and x.ndim == 2:
        out = new_tile((x.shape[1], x.shape[0]), out_dtype, psum, name="nl.transpose")
        out.alloc.implicit_buffer = True
        out.alloc.not_executed = True
        return out
    return ops.transpose(None, x, out_buffer=psum, what="nl.transpose", dtype=out_dtype, mask=mask)


@checked("nl.matmul")
def matmul(x: Tile, y: Tile, transpose_x: bool = False, mask: Any = None) -> Tile:
    """x @ y into PSUM. With transpose_x=True, x is given as (K, M) (already transposed). A constant False mask
    (a flash-attention tile above the diagonal) executes neither the transpose nor the matmul; a mask over the
    contraction (partition) axis sums the selected partitions only (ops.contraction_mask)."""
    execute = not ops.never_executed(mask)
    if not execute and not transpose_x:
        if not isinstance(x, Tile) or not isinstance(y, Tile):
            raise NkiError("nl.matmul: x and y must be tiles")
        out = new_tile((x.shape[0], math.prod(y.shape[1:])), "float32", psum, name="nl.matmul")
        out.alloc.implicit_buffer = True
        out.alloc.not_executed = True
        return out
    stationary = x if transpose_x else ops.transpose(None, x, out_buffer=sbuf, what="nl.matmul (transpose of x)")
    return ops.matmul(None, stationary, y, accumulate=False, what="nl.matmul", execute=execute,
                      mask=mask if execute else None)


@checked("nl.where")
def where(condition: Tile, x: Any, y: Any, dtype: Any = None, mask: Any = None) -> Tile:
    return ops.elementwise("where", "vector", lambda c, a, b: np.where(c != 0, a, b), [condition, x, y],
                           dtype=ops.out_dtype(dtype, x, y), mask=mask)


@checked("nl.dropout")
def dropout(x: Tile, rate: Any, dtype: Any = None, mask: Any = None) -> Tile:
    """nki.language.dropout: elements of x zeroed with probability rate (a number or a tile with 1 element);
    the nisa.dropout instruction on the Vector engine (ops.dropout)."""
    if isinstance(rate, Tile):
        if rate.alloc.shape and int(np.prod(rate.shape)) != 1:
            raise NkiError(f"nl.dropout: rate must be a number or a tile with 1 element, got shape {rate.shape}")
        # one value for every partition; read here (its producer is not tracked as a dependency)
        rate = float(np.asarray(rate.read()).reshape(-1)[0])
    return ops.dropout("nl.dropout", x, rate, dst=None, dtype=dtype, mask=mask)


@checked("nl.softmax")
def softmax(x: Tile, axis: Any = -1, dtype: Any = None, compute_dtype: Any = None, mask: Any = None) -> Tile:
    """nki.language.softmax(x, axis, dtype): exp(x - max) / sum(exp(x - max)) along free axes (the last
    contiguous ones, as the docs require), emulated as the instructions it expands to: a VectorE max, the
    subtraction fused into ScalarE's exp as its bias (the activation's free pre-add, arch guide), a VectorE sum,
    reciprocal and multiply. compute_dtype behaves as dtype (its docs)."""
    if not isinstance(x, Tile):
        raise NkiError("nl.softmax: x must be a tile")
    axes = ops.reduce_axes(x, axis, "nl.softmax")
    m = max(x, axis=list(axes), keepdims=True, mask=mask)
    from speedpatch.targets.nki.emulator import isa as _isa  # isa imports this module

    e = _isa.activation(op=exp, data=x, bias=negative(m, mask=mask), mask=mask)
    total = sum(e, axis=list(axes), keepdims=True, mask=mask)
    return multiply(e, reciprocal(total, mask=mask), dtype=dtype or compute_dtype, mask=mask)


@checked("nl.rms_norm")
def rms_norm(x: Tile, w: Any, axis: Any, n: Any, epsilon: float = 1e-6, dtype: Any = None, compute_dtype: Any = None,
             mask: Any = None) -> Tile:
    """nki.language.rms_norm(x, w, axis, n, epsilon): x / RMS(x) * w, RMS the square root of the sum of squares
    along axis over n values plus epsilon (its docs: "n: total number of values to calculate rms"), as the
    instructions it expands to: ScalarE square, VectorE sum, the scale by 1/n and the epsilon in one
    tensor_scalar, ScalarE rsqrt, two VectorE multiplies."""
    if not isinstance(x, Tile):
        raise NkiError("nl.rms_norm: x must be a tile")
    axes = ops.reduce_axes(x, axis, "nl.rms_norm")
    from speedpatch.targets.nki.emulator import isa as _isa

    squares = sum(square(x, mask=mask), axis=list(axes), keepdims=True, mask=mask)
    mean_eps = _isa.tensor_scalar(squares, np.multiply, 1.0 / float(n), op1=np.add, operand1=float(epsilon),
                                  mask=mask)
    normed = multiply(x, rsqrt(mean_eps, mask=mask), mask=mask)
    return multiply(normed, w, dtype=dtype or compute_dtype, mask=mask)


# mask= is accepted and not applied: what is printed is no result of the kernel
@checked("nl.device_print")
def device_print(prefix: str, x: Any, mask: Any = None) -> None:
    print(prefix, x.read() if isinstance(x, Tile) else x)


# ---- public NKI APIs the emulator does not implement: a clear refusal instead of an AttributeError ------

NOT_EMULATED = {
    # collectives and multi-core communication: one modeled NeuronCore, no peers
    "all_reduce": "collective communication", "all_gather": "collective communication",
    "reduce_scatter": "collective communication", "collective_permute": "collective communication",
    # data-dependent memory access and randomness: not modeled
    "atomic_rmw": "atomic read-modify-write to HBM", "gather_flattened": "data-dependent gather",
    "rand": "on-device random numbers", "random_seed": "on-device random numbers",
    # fused high-level operators the compiler expands (softmax and rms_norm are emulated by their expansion)
    "layer_norm": "use bn_stats/bn_aggr",
    # rarely used element-wise functions
    "arctan": "element-wise function", "trunc": "element-wise function",
    "expand_dims": "reshape of on-chip tiles",
    "gelu_apprx_sigmoid": "its pages give no formula for the sigmoid approximation",
}


def not_emulated(module: str, name: str) -> AttributeError:
    why = NOT_EMULATED.get(name) if module == "nl" else NOT_EMULATED_ISA.get(name)
    if why is None:
        return AttributeError(f"module '{'nki.language' if module == 'nl' else 'nki.isa'}' has no attribute {name!r}")
    return NotEmulated(f"{module}.{name} is part of NKI but not of the speedpatch emulator ({why}); "
                       f"targets/nki/README.md lists what is supported")


NOT_EMULATED_ISA = {
    "nc_stream_shuffle": "VectorE cross-partition shuffle", "nc_match_replace8": "max-8 search",
    "local_gather": "GpSimd gather",
    "tensor_copy_dynamic_src": "dynamic addressing", "tensor_copy_dynamic_dst": "dynamic addressing",
    "sequence_bounds": "sequence bounds", "nc_matmul_mx": "MX-format matmul", "quantize_mx": "MX-format quantization",
    "exponential": "fused exponential", "rand2": "on-device random numbers",
    # the rest of the nki.isa index of NKI 0.3 (v2.28-v2.29 pages), refused by name rather than as unknown
    "tensor_scalar_cumulative": "the Vector engine's cumulative scan registers", "nc_n_gather": "per-partition gather",
    "register_alloc": "sequencer registers (dynamic control flow)", "register_load": "sequencer registers (dynamic "
    "control flow)", "register_move": "sequencer registers (dynamic control flow)",
    "register_store": "sequencer registers (dynamic control flow)", "core_barrier": "multi-core synchronization",
    "sendrecv": "multi-core communication", "rng": "on-device random numbers",
    "rand_set_state": "on-device random numbers", "rand_get_state": "on-device random numbers",
    "set_rng_seed": "on-device random numbers", "nonzero_with_count": "a data-dependent output size",
}


# The public nki.language names the emulator implements (for proxies that serve only the public API).
PUBLIC_FUNCTIONS = frozenset({
    "affine_range", "sequential_range", "static_range", "arange", "ds", "ndarray", "zeros", "ones", "full",
    "zeros_like", "empty_like", "loop_reduce", "shared_constant", "shared_identity_matrix", "load", "store", "load_transpose2d", "copy",
    "transpose", "matmul", "where", "dropout", "softmax", "rms_norm", "broadcast_to",
    "program_id", "num_programs", "program_ndim", "device_print", "spmd_dim", "nc", "finfo", "iinfo",
    *(name for name, value in list(globals().items()) if isinstance(value, (NkiOp, Reduction))),
})
PUBLIC_VALUES = frozenset({
    "mgrid", "tile_size", "fp32", "par_dim", "sbuf", "psum", "hbm", "shared_hbm", "private_hbm", "float32", "bfloat16",
    "float16", "tfloat32", "float8_e4m3", "float8_e5m2", "int8", "int16", "int32", "uint8", "uint16", "uint32",
    "bool_",
})


def __getattr__(name: str) -> Any:
    raise not_emulated("nl", name)
