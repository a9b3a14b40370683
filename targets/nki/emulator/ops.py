"""The core of every emulated instruction: operand checks, NumPy evaluation, writing the destination
with hardware rounding, and issuing the instruction to the cost model. language.py and isa.py are thin
API layers over these functions."""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from speedpatch.targets.nki.emulator import costmodel
from speedpatch.targets.nki.emulator import params as P
from speedpatch.targets.nki.emulator.dtypes import DType, as_dtype, promote
from speedpatch.targets.nki.emulator.errors import NkiError, NotEmulated
from speedpatch.targets.nki.emulator.tensor import Tile, accumulator_values, fit_mask, new_tile, psum, sbuf

ENGINE_NAMES = {"vector": "vector", "scalar": "scalar", "act": "scalar", "gpsimd": "gpsimd", "pool": "gpsimd"}


def engine_name(engine: Any, default: str, allowed: tuple[str, ...] = (), what: str = "") -> str:
    """The engine an instruction's `engine=` names (default when unknown). allowed: the engines its API page
    documents for it, when not all three: on another one its cost would be that engine's, for work that engine
    cannot do (red-team: tensor_tensor on ScalarE charged one input stream for two)."""
    if engine is None:
        return default
    name = str(getattr(engine, "name", engine)).lower().replace("_engine", "")
    if name in ("unknown", "tensor", "pe"):
        return default
    if name not in ENGINE_NAMES:
        raise NkiError(f"unknown engine {engine!r}")
    if allowed and ENGINE_NAMES[name] not in allowed:
        raise NkiError(f"{what}: runs on the {' or '.join(allowed)} engine, not {ENGINE_NAMES[name]} (its API "
                       f"documentation)")
    return ENGINE_NAMES[name]


def engine_cost_ns(engine: str, free_elems: int, streams: int = 1, itemsize: int = 4,
                   strided: bool = False) -> float:
    """Occupancy of one Vector/Scalar/GpSimd instruction over `free_elems` elements per partition.

    VectorE takes about N cycles per input tile streamed (2N for tensor_tensor), ScalarE N (it reads one
    tensor), GpSimdE N / (elements per cycle of the type) per input tile streamed (its 512-bit data path
    per 16 partitions carries one tile's elements at that rate, so a second input tile takes as long
    again); at least the static overhead; a most-minor free stride over 16 bytes halves SBUF/PSUM bandwidth
    (params.py for sources)."""
    if engine == "gpsimd":
        cycles = free_elems * max(1, streams) / P.GPSIMD_ELEMS_PER_CYCLE_BY_ITEMSIZE.get(itemsize, 1.0)
    elif engine == "vector":
        cycles = free_elems * max(1, streams)
    else:
        cycles = float(free_elems)
    cycles = max(cycles, P.STATIC_OVERHEAD_CYCLES)
    if strided:
        cycles *= 2
    return P.cycles_to_ns(cycles, engine)


def access_latency_ns(engine: str) -> float:
    """How long after an instruction of `engine` ends its result is readable by a dependent instruction.
    ScalarE: its measured dependent interval less the static overhead the instruction itself already took
    (params.SCALAR_DEPENDENT_INTERVAL_CYCLES); other engines: the SBUF/PSUM access overhead."""
    if engine == "scalar":
        return P.cycles_to_ns(P.SCALAR_DEPENDENT_INTERVAL_CYCLES - P.STATIC_OVERHEAD_CYCLES, engine)
    return P.cycles_to_ns(P.ACCESS_LATENCY_CYCLES, engine)


def tensor_cost_ns(moving_free: int, stationary_free: int, dtype: DType) -> float:
    """TensorE: MultiplyMoving initiation interval max(N, 64) cycles (4x for fp32); LoadStationary runs
    in the background at up to 4x the speed, so it only shows when the stationary is much wider."""
    passes = P.TENSOR_FP32_PASSES if dtype.name == "float32" else 1
    mm = max(moving_free * passes, P.TENSOR_MM_MIN_CYCLES)
    ls = stationary_free * passes / P.TENSOR_LOAD_STATIONARY_SPEEDUP
    return P.cycles_to_ns(max(mm, ls), "tensor")


def require_on_chip(tile: Any, what: str) -> None:
    if isinstance(tile, Tile) and tile.buffer.kind == "hbm":
        raise NkiError(
            f"{what}: operand {tile.name!r} is in HBM; compute engines only access SBUF/PSUM "
            f"(nl.load it into SBUF first)"
        )


def mask_for(tile: Tile, mask: Any) -> Any:
    """The mask if it applies to this tile's shape (operands of other shapes are read unmasked)."""
    if mask is None:
        return None
    mask = fit_mask(mask, [tile])
    try:
        np.broadcast_to(np.asarray(mask), tile.shape)
    except ValueError:
        return None
    return mask


def values_of(x: Any, mask: Any = None) -> Any:
    if isinstance(x, Tile):
        return x.read(mask_for(x, mask))
    if isinstance(x, (int, float, np.integer, np.floating)):
        return np.float32(x)
    if isinstance(x, np.ndarray):
        raise NkiError("a host NumPy array cannot be an instruction operand; pass kernel tensors/tiles")
    raise NkiError(f"unsupported operand {x!r}")


def _integers(value: Any, what: str) -> Any:
    """An operand of an integer instruction as int64: integer tiles as they are, integral numbers (a shift
    amount, a mask) as ints; a fractional number has no bit pattern to operate on."""
    arr = np.asarray(value)
    if arr.dtype.kind in "iub":
        return arr.astype(np.int64)
    if not np.all(np.isfinite(arr)) or not np.all(arr == np.trunc(arr)):
        raise NkiError(f"{what}: integer (bitvec) operators need integer operands, got a non-integral value")
    return arr.astype(np.int64)


def _partition_aligned(values: list[Any], operands: Sequence[Any]) -> list[Any]:
    """NKI broadcasts a 1-D (P,) tile (a reduction without keepdims, an integer-indexed free axis)
    along the free axes of the other operands: it is aligned on the partition axis, not from the right
    as NumPy would."""
    dims = [np.ndim(v) for v, x in zip(values, operands, strict=True) if isinstance(x, Tile)]
    nd = max(dims, default=0)
    if nd < 2 or 1 not in dims:
        return values
    out = []
    for v, x in zip(values, operands, strict=True):
        if isinstance(x, Tile) and np.ndim(v) == 1:
            v = np.reshape(v, (np.shape(v)[0],) + (1,) * (nd - 1))
        out.append(v)
    return out


def check_lanes(tiles: Sequence[Any], what: str) -> None:
    """Every on-chip operand and destination of an engine instruction spans at most 128 partitions: the
    engines have 128 lanes, one per partition ([ARCH] "128 parallel lanes", nl.tile_size.pmax). An
    allocation is checked when it is made; a gather view (a tile indexed with index arrays that are no
    progression) is not, and one of shape (128 * 2048, 1) over a (128, 2048) tile made an instruction cost
    one element per lane instead of 2048 (red-team: a polynomial correct at 11.8 us against the honest
    22.4 us)."""
    for t in tiles:
        if isinstance(t, Tile) and t.buffer.kind != "hbm" and t.partitions > P.PARTITIONS:
            raise NkiError(
                f"{what}: operand {t.name!r} is viewed as {t.partitions} partitions (view shape {t.shape}); an "
                f"engine instruction spans at most {P.PARTITIONS} (nl.tile_size.pmax) -- index the partition "
                f"axis with at most 128 positions and keep the free axes free"
            )


def lane_axis(t: Tile, what: str) -> int:
    """The view axis along which `t`'s elements change partition, checked: every element at index i of that
    axis lies in the same partition, and i -> partition is a progression (p0 + i * step, step >= 1). An
    engine lane reads and writes its own partition; the engines cannot move data across partitions (only
    the Tensor engine's transpose/matmul and DMA can, at their cost) [ARCH]. A view whose partition index
    sits on a free axis (t[i_f, i_p]: a transposed view) or permutes partitions (a gather with a
    permutation) read as an operand moved the data for free: red-team, a transposed view of the loaded rows
    as nc_matmul's stationary operand made a = a.T twice over, a @ b correct at 23.6 us against the
    honest 30.4 us (nc_transpose + copy per tile)."""
    axis = t.par_axis
    alloc = t.alloc
    if t.ndim == 0 or alloc.buffer.kind == "hbm":
        return axis
    if t.shape == alloc.shape and t.strides == alloc.strides and t.offset == 0 and not t.oob and axis == alloc.par_axis:
        return axis  # the whole tensor as allocated (the common case)
    key = (t.offset, t.shape, t.strides, t.lo, t.hi, axis) if t.strides is not None else None
    cache = alloc.region_cache
    if key is not None and ("lanes", key) in cache:
        return axis
    pos = np.asarray(t.pos)
    inner = math.prod(alloc.shape[alloc.par_axis + 1:])
    part = np.where(pos >= 0, (pos // max(1, inner)) % alloc.shape[alloc.par_axis], -1)
    rows = np.moveaxis(part, axis, 0).reshape(t.shape[axis], -1)
    first = np.max(rows, axis=1)  # each lane's partition (-1 for a lane wholly out of bounds)
    crossing = (rows >= 0) & (rows != first[:, None])
    if crossing.any():
        lane = int(np.argwhere(crossing.any(axis=1))[0][0])
        raise NkiError(f"{what}: operand {t.name!r} (view {t.shape}) reads several partitions in one lane (lane "
                       f"{lane} of view axis {axis}); engines cannot move data across partitions -- transpose "
                       f"with nisa.nc_transpose or a DMA, and index the partition axis first")
    used = first[first >= 0]
    if used.size > 1 and (np.any(np.diff(used) < 1) or np.unique(np.diff(used)).size > 1):
        raise NkiError(f"{what}: operand {t.name!r} (view {t.shape}) reads its partitions out of order (not "
                       f"start + step * lane); engines cannot move data across partitions -- use a slice or "
                       f"nl.arange on the partition axis, or a DMA to reorder rows")
    if key is not None and len(cache) < 4096:
        cache[("lanes", key)] = ()
    return axis


def check_same_lanes(tiles: Sequence[Any], what: str) -> None:
    """Operands and destination of one engine instruction keep their partitions on the same view axis:
    NumPy pairs elements by position, so an operand with its partitions on another axis would be a
    transpose in a lane-wise instruction."""
    on_chip = [t for t in tiles if isinstance(t, Tile) and t.buffer.kind != "hbm" and t.ndim >= 2]
    if not on_chip:
        return
    nd = max(t.ndim for t in on_chip)
    axes = {t.name: lane_axis(t, what) for t in on_chip if t.ndim == nd}
    if len(set(axes.values())) > 1:
        shown = ", ".join(f"{name!r} on axis {a}" for name, a in axes.items())
        raise NkiError(f"{what}: the operands' partitions lie on different view axes ({shown}); that would "
                       f"move data across partitions, which engines cannot -- transpose with nisa.nc_transpose")
    for t in on_chip:
        if t.ndim != nd:
            lane_axis(t, what)


def check_partitions(tiles: Sequence[Tile], what: str) -> None:
    parts = {t.partitions for t in tiles if t.shape}
    if len(parts) > 1:
        raise NkiError(
            f"{what}: operands have different partition sizes {sorted(parts)}; engines cannot broadcast "
            f"across partitions (only along the free dimension, e.g. a (P, 1) operand)"
        )


def never_executed(mask: Any) -> bool:
    """A mask that is a compile-time constant False (`mask=(k_i * 512 <= q_tile * 128)` of a loop index and a
    launch constant): the instruction is not executed (NKI API Masking, the mask "controls whether/how this
    instruction is executed"). Its fresh result is marked so that `t[...] = it` and `t += it`, which the
    compiler makes the instruction itself, write nothing either."""
    return isinstance(mask, (bool, np.bool_)) and not bool(mask)


def _fitted(mask: Any, tile: Tile) -> np.ndarray | None:
    """A mask laid over one operand as a bool array of its shape (None where it does not fit that shape)."""
    laid = fit_mask(mask, [tile])
    try:
        return np.broadcast_to(np.asarray(laid, dtype=bool), tile.shape)
    except ValueError:
        return None


def _api(what: str) -> str:
    """An instruction's public name in a message: nl.* as given, nki.isa's with its usual prefix."""
    return what if "." in what else f"nisa.{what}"


def transpose_mask(mask: Any, data: Tile, what: str) -> np.ndarray | None:
    """The input elements a mask of a Tensor-engine transpose selects, a (P, F) bool array (None: all of
    them). NKI API Masking: the mask makes the compiler "generate the instruction with a smaller input tile
    shape", and each of its comparisons gives "which range of indices along one of the input tile axes should
    be valid"; so the selection is a rectangle of rows times columns (Autocomp's conv problem: `(i < B) & (j <
    N)` on a ragged edge tile). One that is no such product (a triangle `i >= j`) is no smaller tile."""
    if mask is None or (isinstance(mask, (bool, np.bool_)) and mask):
        return None
    m = _fitted(mask, data)
    if m is None:
        raise NkiError(f"{what}: mask of shape {np.shape(mask)} does not fit the input tile {data.shape}; "
                       f"build it from the iterators that index the input (mask=(i_p < n) & (i_f < m))")
    if m.all():
        return None
    rows, cols = m.any(axis=1), m.any(axis=0)
    if not np.array_equal(m, np.outer(rows, cols)):
        raise NotEmulated(f"{_api(what)}(mask=...) with a mask that is no rectangle of rows times columns of the input "
                          f"is part of NKI but not of the speedpatch emulator (NKI API Masking: each comparison "
                          f"restricts one input axis, making a smaller tile); restrict rows and columns only, e.g. "
                          f"mask=(i_p < n) & (i_f < m)")
    return np.ascontiguousarray(m)


def contraction_mask(mask: Any, stationary: Tile, moving: Tile, what: str) -> np.ndarray | None:
    """The contraction (partition) rows a mask of a matmul selects, a (K,) bool array (None: all of them).
    NKI API Masking: a matmul's mask field cannot tell the stationary's free axis from the moving's (the
    compiler "cannot distinguish the two input axes"; the pages introduce operand masking for them), so only a
    mask over the partitions both operands share is modeled: the partitions it leaves out take no part in the
    sum (a ragged last K tile whose unloaded rows hold garbage). A mask over a free axis is refused."""
    if mask is None or (isinstance(mask, (bool, np.bool_)) and mask):
        return None
    laid = [(t, m) for t in (stationary, moving) if (m := _fitted(mask, t)) is not None]
    if not laid:
        raise NkiError(f"{what}: mask of shape {np.shape(mask)} fits neither operand ({stationary.shape}, "
                       f"{moving.shape}); a matmul's mask restricts the contraction (partition) axis, e.g. "
                       f"mask=(i_p < k)")
    rows = None
    for t, m in laid:
        flat = m.reshape(t.shape[0], -1)
        if not (flat == flat[:, :1]).all():
            raise NotEmulated(f"{_api(what)}(mask=...) over a free axis is part of NKI but not of the speedpatch "
                              f"emulator: NKI API Masking says a matmul's mask cannot tell the stationary's free "
                              f"axis from the moving's (operand masking); slice the operands to the smaller tile "
                              f"instead (stationary[:, 0:m], moving[:, 0:n]), or mask the partitions only")
        rows = flat[:, 0] if rows is None else rows & flat[:, 0]
    assert rows is not None
    return None if rows.all() else np.ascontiguousarray(rows)


def elementwise(
    what: str,
    engine: str,
    fn: Callable[..., Any],
    operands: Sequence[Any],
    dst: Tile | None = None,
    dtype: Any = None,
    mask: Any = None,
    extra_reads: Sequence[Tile] = (),
    extra_writes: Sequence[Tile] = (),
    integer: bool = False,
    write_mask: Any = None,
    extra_cycles: float = 0.0,
) -> Tile:
    """One engine instruction: fn over the operands' values, written to dst (a new SBUF tile if None).
    write_mask: a mask of the result only (a reduction's partition mask), not of the operands.
    extra_writes are further outputs the caller fills (e.g. an activation's reduce result).
    integer=True: fn computes on integers and its result is written as integers, not through float32 (the
    bitvec operators, which treat their inputs as bit patterns without casting, and nisa.iota's 32-bit
    integer arithmetic; nki.isa.tensor_scalar / tensor_tensor / iota docs). extra_cycles: engine cycles on top
    of the instruction's streaming cost (a fused reduction, params.FUSED_REDUCTION_CYCLES). A constant False
    mask (never_executed) checks the operands, writes nothing and costs nothing."""
    skipped = never_executed(mask)
    fresh = dst is None
    if engine == "gpsimd":
        # a result whose memory the emulator chose (an implicit PSUM tile: nl.transpose, a legacy nc_transpose
        # or nc_matmul without a destination) is where the compiler puts it for its reader: GpSimd reads it
        # from SBUF after a charged VectorE copy (as a matmul operand, _sbuf_operand)
        operands = [_sbuf_operand(x, what) for x in operands]
        extra_reads = [_sbuf_operand(x, what) for x in extra_reads]
    tiles = [x for x in operands if isinstance(x, Tile)] + list(extra_reads)
    mask = fit_mask(mask, [*tiles, dst])
    write_mask = fit_mask(write_mask, [dst, *tiles])
    for t in tiles:
        require_on_chip(t, what)
    check_lanes([*tiles, dst, *extra_writes], what)
    check_same_lanes([*tiles, dst, *extra_writes], what)
    if engine == "gpsimd":
        # [ARCH]: GpSimd reaches SBUF only. On PSUM operands it ran beside VectorE without sharing either
        # of their ports (red-team: a polynomial half on GpSimd over PSUM tiles, 16.8 us against 17.6 us
        # with the same instructions on VectorE)
        for touched in [*tiles, dst, *extra_writes]:
            if isinstance(touched, Tile) and touched.buffer.kind == "psum":
                raise NkiError(f"{what}: GpSimd cannot access PSUM ({touched.name!r} is a PSUM tile); run it on the "
                               f"Vector or Scalar engine, or copy the tile to SBUF first")
    check_partitions(tiles, what)
    values = _partition_aligned([values_of(x, mask) for x in operands], operands)
    if integer:
        values = [_integers(v, what) for v in values]
    with np.errstate(all="ignore"):
        result = np.asarray(fn(*values)) if integer else np.asarray(fn(*values), dtype=np.float32)
    if dst is not None and result.ndim != dst.ndim and result.size > 1 and result.shape[:1] == dst.shape[:1]:
        if result.ndim == 1:  # a (P,) result into (P, 1): one value per partition
            result = result.reshape(result.shape + (1,) * (dst.ndim - 1))
        elif math.prod(result.shape[1:]) == 1:  # (P, 1) into (P,)
            result = result.reshape(result.shape[:1] + (1,) * (dst.ndim - 1))
    if dst is None:
        out_dtype = as_dtype(dtype) if dtype is not None else promote(*[t.dtype for t in tiles]) if tiles else None
        dst = new_tile(result.shape, out_dtype or as_dtype("float32"), sbuf, name=what)
    else:
        require_on_chip(dst, what)
        if result.size != 1:
            try:
                np.broadcast_shapes(result.shape, dst.shape)
            except ValueError:
                raise NkiError(f"{what}: result shape {result.shape} does not fit destination {dst.shape}") from None
            if math.prod(np.broadcast_shapes(result.shape, dst.shape)) != math.prod(dst.shape):
                raise NkiError(f"{what}: result shape {result.shape} does not fit destination {dst.shape}")
    if skipped:
        if fresh:
            dst.alloc.not_executed = True
        return dst
    if integer and not dst.dtype.is_float:
        # a bit pattern wraps to the destination's width (a left shift's high bits are lost), never saturates
        result = result.astype(np.int64).astype(dst.dtype.storage)
    dst.write(result, mask_for(dst, mask if write_mask is None else write_mask))
    free = max([dst.free_size] + [t.free_size for t in tiles])
    streamed = [t for t in tiles if t.free_size > 1]  # a (P, 1) operand is read as a per-lane scalar
    streams = len(streamed)
    if engine == "vector" and streams == 2 and what not in ("tensor_tensor_scan", "scalar_tensor_tensor") and \
            {t.buffer.kind for t in streamed} == {"sbuf", "psum"}:
        # two input tiles, one in PSUM and one in SBUF, stream in parallel over the two ports: N cycles,
        # not 2N (nki.isa.tensor_tensor "Estimated instruction cost"; the scan and scalar_tensor_tensor are 2N in
        # every case, their docs' cost tables)
        streams = 1
    strided = any(t.minor_stride_bytes() > P.MINOR_STRIDE_PENALTY_BYTES for t in [dst, *tiles])
    itemsize = max([dst.dtype.itemsize] + [t.dtype.itemsize for t in tiles])
    writes = [dst.access()] + [t.access() for t in extra_writes]
    cost = engine_cost_ns(engine, free, streams, itemsize, strided) + P.cycles_to_ns(extra_cycles, engine)
    costmodel.current().issue(engine, cost,
                              [t.access() for t in tiles], writes, latency_ns=access_latency_ns(engine))
    return dst


def reduce_axes(tile: Tile, axis: Any, what: str) -> tuple[int, ...]:
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    axes = tuple(int(a) % tile.ndim for a in axes)
    if tile.par_axis in axes:
        raise NkiError(
            f"{what}: cannot reduce along the partition axis {tile.par_axis}; engines reduce along free axes "
            f"(transpose first, or use nc_matmul with a ones vector)"
        )
    return axes


def _sbuf_operand(t: Any, what: str) -> Any:
    """A legacy instruction result the emulator placed in PSUM (the return value of nisa.nc_transpose or
    nisa.nc_matmul without a declared destination) used as a matmul operand: the legacy compiler chose where
    such a tile lives and copies it to SBUF for the Tensor engine, which reads only SBUF (as nl.store from
    PSUM gets a copy); public kernels validated on trn1 do this (nki-samples contributed fft1d:
    nc_matmul(nc_transpose(x), nc_transpose(w))). A VectorE copy is charged. A tile the kernel declared in
    PSUM stays an error. The copy is made once per result (a second matmul reading the same transpose reuses it,
    unless the PSUM tile was written since) and the PSUM bank is freed after it, as the compiler's placement
    would: the SBUF copy is what later matmuls read."""
    if not (isinstance(t, Tile) and t.buffer.kind == "psum" and t.alloc.implicit_buffer):
        return t
    alloc = t.alloc
    memo = alloc.sbuf_copy
    if memo is not None and memo[0] is alloc.producer and memo[1] == (t.offset, t.shape, t.strides):
        return memo[2]
    copy = elementwise("copy", "vector", lambda v: v, [t], dtype=t.dtype)
    alloc.sbuf_copy = (alloc.producer, (t.offset, t.shape, t.strides), copy)
    costmodel.current().release(alloc)
    return copy


def matmul(dst: Tile | None, stationary: Tile, moving: Tile, accumulate: bool, what: str = "nc_matmul",
           execute: bool = True, mask: Any = None) -> Tile:
    """dst (M, N) (+)= stationary(K, M).T @ moving(K, N) on the Tensor engine into PSUM. execute=False (a
    constant False mask): the operands are checked, nothing is written or charged. A mask over the partitions
    (contraction_mask) sums the selected ones only, at the cost of the whole tile (the pages give no cost of a
    smaller one); one that selects none executes nothing."""
    stationary, moving = (_sbuf_operand(t, what) for t in (stationary, moving))
    for t, role in ((stationary, "stationary"), (moving, "moving")):
        if not isinstance(t, Tile):
            raise NkiError(f"{what}: {role} must be a tile")
        if t.buffer.kind != "sbuf":
            raise NkiError(f"{what}: {role} operand {t.name!r} must be in SBUF (it is in {t.buffer.name})")
        if t.ndim < 2:
            raise NkiError(f"{what}: {role} must be (partition, free...), got shape {t.shape}")
        if not t.dtype.is_float:
            raise NkiError(f"{what}: {role} has integer dtype {t.dtype!r}; the Tensor engine multiplies floats")
    # several free axes are read flattened, partition first (the public chunked delta-rule kernel, validated on
    # trn1, multiplies a (128, 2, 128) moving tile into a (128, 2, 128) PSUM destination); the limits apply to
    # the flattened free size
    k, m = stationary.shape[0], math.prod(stationary.shape[1:])
    k2, n = moving.shape[0], math.prod(moving.shape[1:])
    if k != k2:
        raise NkiError(f"{what}: contraction (partition) sizes differ: stationary {stationary.shape}, moving {moving.shape}")
    if k > P.PARTITIONS:
        raise NkiError(f"{what}: contraction dimension {k} > {P.PARTITIONS}; accumulate K tiles in PSUM")
    if m > P.GEMM_STATIONARY_FMAX:
        raise NkiError(f"{what}: stationary free size {m} > {P.GEMM_STATIONARY_FMAX} (gemm_stationary_fmax)")
    if n > P.GEMM_MOVING_FMAX:
        raise NkiError(f"{what}: moving free size {n} > {P.GEMM_MOVING_FMAX} (gemm_moving_fmax)")
    for t in (stationary, moving):
        if lane_axis(t, what) != 0:  # the contraction runs over the partitions, axis 0 of both operands
            raise NkiError(f"{what}: operand {t.name!r} (view {t.shape}) has its partitions on view axis "
                           f"{t.par_axis}; the Tensor engine contracts over the partitions, the first axis -- "
                           f"transpose with nisa.nc_transpose instead of a transposed view")
    if stationary.dtype != moving.dtype:
        raise NkiError(
            f"{what}: stationary is {stationary.dtype!r} but moving is {moving.dtype!r}; both operands must "
            f"have the same dtype"
        )
    rows = contraction_mask(mask, stationary, moving, what) if execute else None
    if rows is not None and not rows.any():
        execute = False
    if not execute:
        if dst is None:
            dst = new_tile((m, n), "float32", psum, name=what)
            dst.alloc.implicit_buffer = True
            dst.alloc.not_executed = True
        return dst
    st_mask, mv_mask = ((None, None) if rows is None else
                        (rows.reshape((k,) + (1,) * (t.ndim - 1)) for t in (stationary, moving)))
    result = np.matmul(stationary.read(st_mask).reshape(k, m).T, moving.read(mv_mask).reshape(k, n),
                       dtype=np.float32)
    if dst is None:
        dst = new_tile((m, n), "float32", psum, name=what)
        dst.alloc.implicit_buffer = True
        accumulate = False
    else:
        if dst.buffer.kind != "psum":
            raise NkiError(f"{what}: destination {dst.name!r} must be in PSUM (it is in {dst.buffer.name})")
        if dst.dtype.name not in ("float32", "bfloat16"):
            raise NkiError(f"{what}: PSUM destination must be float32 (got {dst.dtype!r})")
        if dst.shape[0] != m or math.prod(dst.shape[1:]) != n:
            raise NkiError(f"{what}: destination shape {dst.shape} != ({m}, {n}) = (stationary free, moving free)")
        result = result.reshape(dst.shape)
    reads = [stationary.access(), moving.access()]
    if accumulate:
        result = accumulator_values(dst) + result
        reads.append(dst.access())
    dst.write(result)
    trace = costmodel.current()
    trace.macs += k * m * n
    trace.issue("tensor", tensor_cost_ns(n, m, stationary.dtype), reads, [dst.access()],
                latency_ns=access_latency_ns("tensor"))
    dst.alloc.matmul_result = True
    return dst


def transpose(dst: Tile | None, data: Tile, out_buffer: Any = psum, what: str = "nc_transpose",
              dtype: Any = None, mask: Any = None) -> Tile:
    """(P, F) -> (F, P) through the Tensor engine (a matmul with the identity). Without dst, a new tile in
    out_buffer of `dtype` (default: the data's type in SBUF, float32 in PSUM, as the legacy nc_transpose).
    A mask (transpose_mask, the legacy form's only) transposes the selected rectangle of the input, at the
    cost of the whole tile (the pages give no cost of a smaller one): the rest of the fresh result is never
    written (Allocation.masked_result; in PSUM reading it is an error, as of an nl.ndarray). One that selects
    nothing executes nothing."""
    require_on_chip(data, what)
    if data.ndim != 2:
        raise NkiError(f"{what}: data must be 2-D, got {data.shape}")
    p, f = data.shape
    if p > P.PARTITIONS or f > P.PARTITIONS:
        raise NkiError(f"{what}: tile {data.shape} too large; the Tensor engine transposes at most 128 x 128")
    selected = transpose_mask(mask, data, what)
    if selected is not None and dst is not None:
        raise NkiError(f"{what}: a mask belongs to the form that returns its result")
    if selected is not None and not selected.any():
        out = new_tile((f, p), dtype or (data.dtype if out_buffer is sbuf else "float32"), out_buffer, name=what)
        out.alloc.implicit_buffer = True
        out.alloc.not_executed = True
        return out
    values = data.read(selected).T
    if dst is None:
        dst = new_tile((f, p), dtype or (data.dtype if out_buffer is sbuf else "float32"), out_buffer, name=what)
        dst.alloc.implicit_buffer = True
        if selected is not None:
            dst.alloc.masked_result = np.ascontiguousarray(selected.T)
            if dst.buffer.kind == "psum":
                dst.alloc.unwritten_psum = "ndarray"
    elif tuple(dst.shape) != (f, p):
        raise NkiError(f"{what}: destination shape {dst.shape} != {(f, p)}")
    dst.write(values, None if selected is None else selected.T)
    # a matmul of the data (stationary, F columns) against a P x P identity (moving)
    trace = costmodel.current()
    trace.issue("tensor", tensor_cost_ns(p, f, data.dtype), [data.access()], [dst.access()],
                latency_ns=access_latency_ns("tensor"))
    if dst.buffer.kind == "sbuf":
        # The Tensor engine writes only PSUM ([ISA] nc_matmul): a transpose that ends in SBUF (nl.transpose,
        # nl.matmul's transpose of x, nc_transpose into an SBUF tile) is evacuated by a VectorE copy, as the
        # compiler must. Without it such a transpose cost less than nc_transpose + nl.copy for the same move
        # (red-team: a @ b with nl.transpose, 26.9 us against 30.4 us).
        trace.issue("vector", engine_cost_ns("vector", dst.free_size), [dst.access()], [dst.access()],
                    latency_ns=access_latency_ns("vector"))
    return dst


def vector_transpose(dst: Tile | None, data: Tile, dtype: Any = None) -> Tile:
    """nc_transpose(engine=vector): the Vector engine transposes a tile of at most 32 x 32 (partitions x elements;
    its free axes collapsed into one), reading and writing SBUF or PSUM, bit-exactly (nki.isa.nc_transpose:
    "Tensor Engine nc_transpose can handle an input tile of shape (128, 128) or smaller, while Vector Engine can
    handle shape (32, 32) or smaller"; "Vector Engine nc_transpose can read/write from/to either SBUF or PSUM").
    The page gives no cost: charged as a one-input VectorE instruction over the data's elements per partition
    (N cycles, at least the static overhead)."""
    what = "nc_transpose(engine=vector)"
    require_on_chip(data, what)
    if lane_axis(data, what) != 0:
        raise NkiError(f"{what}: data {data.shape} must have its partitions on axis 0")
    p, f = data.shape[0], data.free_size
    if p > 32 or f > 32:
        raise NkiError(f"{what}: tile {data.shape} too large; the Vector engine transposes at most 32 x 32 "
                       f"(the Tensor engine 128 x 128)")
    values = data.read().reshape(p, f).T
    if dst is None:
        dst = new_tile((f, p), dtype or data.dtype, sbuf, name="nc_transpose")
    else:
        require_on_chip(dst, what)
        if dst.shape[0] != f or dst.free_size != p or math.prod(dst.shape) != f * p or lane_axis(dst, what) != 0:
            raise NkiError(f"{what}: destination shape {dst.shape} != {(f, p)}")
        values = values.reshape(dst.shape)
    dst.write(values)
    costmodel.current().issue("vector", engine_cost_ns("vector", f), [data.access()], [dst.access()],
                              latency_ns=access_latency_ns("vector"))
    return dst


def dma(dst: Tile, src: Tile, mask: Any = None, what: str = "dma", transpose_hbm: bool = False,
        defer: bool = False, permute: tuple[int, ...] | None = None, oob_skip: bool = False,
        accumulate: bool = False, extra_srcs: tuple[Tile, ...] = ()) -> Tile:
    """A DMA between HBM and SBUF (or SBUF and SBUF). With defer=True (nl.load into a new tile) the
    instruction is issued when the result is first used -- or, for `t[...] = nl.load(..)`, retargeted to
    write t directly (copy_into), as the compiler does: no extra SBUF copy. transpose_hbm (a 2-D transpose)
    or permute (axis i of dst is axis permute[i] of src: nisa.dma_transpose) reorder the elements on the
    way; every element is then its own contiguous run, one descriptor each (as nl.load_transpose2d).
    An indirect view (an HBM tensor indexed with SBUF index tiles) makes the DMA read its index tiles too;
    oob_skip (nisa.dma_copy(oob_mode=skip)) moves nothing for its out-of-bounds elements. accumulate
    (nisa.dma_copy(dst_rmw_op=nl.add)) adds src to what dst holds, in float32 as the DMA engines compute
    (nki.isa.dma_compute: "The DMA engines perform all computations in float32 precision internally"); the
    pages give no cost of their own, so it is charged as the copy of the same bytes, reading dst as well.
    extra_srcs (nisa.dma_compute) are added to src in float32 in the same instruction, each source's bytes and
    descriptors charged as its own copy would be."""
    if transpose_hbm:
        permute = (1, 0)
    mask = fit_mask(mask, [src, dst])
    if oob_skip:
        for side in (src, dst):
            if isinstance(side, Tile) and side._indirect and side.oob:
                valid = side.valid_mask()
                mask = valid if mask is None else np.broadcast_to(np.asarray(mask, dtype=bool), side.shape) & valid
    for t, role in ((dst, "destination"), (src, "source")):
        if not isinstance(t, Tile):
            raise NkiError(f"{what}: {role} must be a kernel tensor or tile, got {type(t).__name__}")
    if src.buffer.kind == "psum" and what == "nl.store":
        # nl.store from PSUM: the compiler inserts a copy to SBUF first (legacy nki.language.store docs)
        src = elementwise("copy", "vector", lambda v: v, [src], dtype=src.dtype, mask=mask_for(src, mask))
    for t, role in ((dst, "destination"), (src, "source")):
        if t.buffer.kind == "psum":
            raise NkiError(
                f"{what}: {role} {t.name!r} is in PSUM; DMA cannot access PSUM -- copy it to SBUF first "
                f"(nisa.tensor_copy / nl.copy)"
            )
    src_mask = mask_for(src, mask)
    values = src.read(src_mask)
    if permute is not None:
        values = np.transpose(values, permute)
    if values.size != math.prod(dst.shape):
        raise NkiError(f"{what}: source shape {src.shape} and destination shape {dst.shape} differ in size")
    if values.shape != tuple(dst.shape):
        values = values.reshape(dst.shape)
    if extra_srcs:  # nisa.dma_compute: the sources added in float32, cast once into dst
        values = np.asarray(values, dtype=np.float32) + sum(
            (np.asarray(extra.read(), dtype=np.float32).reshape(dst.shape) for extra in extra_srcs),
            np.zeros(dst.shape, dtype=np.float32))
    if accumulate:
        values = _accumulated(dst, values, mask_for(dst, mask))
    if not defer:
        dst.write(values, mask, exact=dst.dtype == src.dtype)
    def work(source: Tile, source_mask: Any) -> tuple[int, int, int]:
        """(elements, descriptors, bytes) of moving `source` into dst."""
        # What moves: the in-bounds, unmasked elements; in DMA buffers (descriptors) of contiguous memory,
        # at least one per SBUF partition. Out-of-bounds or masked elements of an edge tile move nothing.
        hbm_side = source if source.buffer.kind == "hbm" else dst
        chip_side = dst if hbm_side is source else source
        hbm_mask = source_mask if hbm_side is source else mask_for(dst, mask)
        m = np.broadcast_to(np.asarray(hbm_mask, dtype=bool), hbm_side.shape) if hbm_mask is not None else None
        elems = hbm_side.valid_count if m is None else int(np.count_nonzero(m & hbm_side.valid_mask()))
        descriptors = elems if permute is not None else hbm_side.contiguous_runs(m)
        if permute is None and elems:
            # a descriptor is contiguous on both sides: the other side's runs count too. Counting the HBM side's
            # only, a store from an SBUF view taking one element from each partition in turn (or an HBM-to-HBM
            # copy into a transposed view) moved at full bandwidth: the transpose of examples/nki/transpose.py
            # by DMA access patterns alone was correct at 19.7 us (10.8 us HBM to HBM) against the honest 26.5
            chip_mask = mask_for(chip_side, mask)
            cm = np.broadcast_to(np.asarray(chip_mask, dtype=bool), chip_side.shape) if chip_mask is not None else None
            descriptors = max(descriptors, chip_side.contiguous_runs(cm))
        if chip_side.buffer.kind != "hbm" and elems:
            descriptors = max(descriptors, _active_partitions(chip_side, mask_for(chip_side, mask)))
        # A casting DMA (nl.load(..., dtype=bf16) of an fp32 tensor, nl.store of a bf16 tile into an fp32 output)
        # reads and writes different widths; what crosses HBM is the HBM side's dtype, so that is what it moves
        # (the source's width understated a bf16 tile stored into fp32 output by half, below the output's bytes).
        nbytes = elems * max(hbm_side.dtype.itemsize,
                             chip_side.dtype.itemsize if chip_side.buffer.kind == "hbm" else 0)
        return elems, descriptors, nbytes

    # dma_compute: one instruction reading every source (each its own runs and bytes) and writing dst once
    moved = [work(src, src_mask)] + [work(extra, None) for extra in extra_srcs]
    elems = sum(w[0] for w in moved)
    descriptors = sum(w[1] for w in moved)
    nbytes = sum(w[2] for w in moved)
    hbm_to_hbm = sum(w[2] for w, source in zip(moved, (src, *extra_srcs), strict=True)
                     if source.buffer.kind == "hbm" and dst.buffer.kind == "hbm")
    semaphore = P.DMA_SEMAPHORE_DESCRIPTORS * P.DMA_DESCRIPTOR_NS  # on every engine, data or not
    trace = costmodel.current()
    src_access = src.access()
    index_reads = [t.access() for side in (src, *extra_srcs, dst) for t in side._indirect]  # indirect: index tiles
    index_reads += [extra.access() for extra in extra_srcs]
    if accumulate:
        index_reads.append(dst.access())  # the read half of the read-modify-write

    def issue(extra_writes: tuple[Tile, ...] = ()) -> None:
        if dst.alloc.pending_dma is not None:
            dst.alloc.pending_dma = None
            if not extra_writes:  # the load's own tile is used: its data lands there now
                dst.write(values, mask, exact=dst.dtype == src.dtype)
        # a load retargeted into another tile (retarget_load) writes that tile's view: its runs count (red-team:
        # `t[view] = nl.load(...)` with a view scattering the rows across partitions transposed at full bandwidth)
        count = max([descriptors] + [max(t.contiguous_runs(), t.partitions) for t in extra_writes if elems])
        transfers = max(1, min(P.DMA_ENGINES, count))
        per_transfer = (nbytes / P.DMA_ENGINE_BYTES_PER_NS + count * P.DMA_DESCRIPTOR_NS) / transfers
        trace.dma_bytes += nbytes
        # transfers that read HBM and write HBM ("within HBM", Introduction to DMA with NKI): the required-work
        # check counts them for an input read and an output write (isolation/physics.py)
        trace.dma_hbm_to_hbm_bytes += hbm_to_hbm
        trace.dma_descriptors += count
        trace.issue_dma(transfers * per_transfer + P.DMA_ENGINES * semaphore, per_transfer + semaphore,
                        transfers, [src_access, *index_reads],
                        [(dst.alloc, dst.region())] + [t.access() for t in extra_writes],
                        latency_ns=P.DMA_LATENCY_NS)

    if defer:
        issue_later: Any = issue
        issue_later.values = values  # what a retargeted load writes into its new destination
        issue_later.mask = mask
        issue_later.src_dtype = src.dtype
        dst.alloc.pending_dma = issue_later
    else:
        issue()
    return dst


def _accumulated(dst: Tile, values: np.ndarray, mask: Any) -> np.ndarray:
    """What a read-modify-write DMA leaves in dst: dst + values in float32. In an indirect destination that
    names an element more than once every contribution is added (the pages: with duplicated offsets "the
    compiler automatically adds synchronization to avoid hazards"), not the last one alone."""
    total = np.asarray(dst.read(mask), dtype=np.float32) + np.asarray(values, dtype=np.float32)
    if dst.strides is None:
        pos = np.asarray(dst.pos)
        sel = pos >= 0
        if mask is not None:
            sel &= np.broadcast_to(np.asarray(mask, dtype=bool), pos.shape)
        where = pos[sel]
        if np.unique(where).size < where.size:
            sums = np.zeros(int(where.max()) + 1, dtype=np.float64)
            np.add.at(sums, where, np.asarray(values, dtype=np.float64)[sel])
            old = np.asarray(dst.read(mask), dtype=np.float64)[sel]
            total[sel] = (old + sums[where]).astype(np.float32)
    return total


def _active_partitions(tile: Tile, mask: Any) -> int:
    """SBUF partitions a DMA touches (each needs at least one DMA buffer of its own)."""
    if mask is None or tile.ndim == 0:
        return tile.partitions
    m = np.broadcast_to(np.asarray(mask, dtype=bool), tile.shape)
    axes = tuple(a for a in range(tile.ndim) if a != tile.par_axis)
    return int(np.count_nonzero(m.any(axis=axes) if axes else m))


def retarget_load(dst: Tile, value: Tile) -> bool:
    """`dst[...] = nl.load(src)`: the pending load writes dst itself. False if value is not such a load."""
    pending = value.alloc.pending_dma
    if pending is None or value.shape != value.alloc.shape or value.strides != value.alloc.strides:
        return False
    if math.prod(dst.shape) != math.prod(value.shape) or dst.buffer.kind != "sbuf":
        return False  # DMA reaches neither PSUM nor, here, HBM: a PSUM destination is an engine copy
    if pending.mask is not None:
        return False
    values, same = pending.values, value.dtype == pending.src_dtype
    if not same:
        values = value.dtype.round(values)
    dst.write(np.asarray(values).reshape(dst.shape), exact=same and dst.dtype == value.dtype)
    value.alloc.deferred_fill = lambda: value.write(values, exact=True)  # if the temp is read after all
    pending((dst,))
    costmodel.current().release(value.alloc)
    return True


# Where each engine may write its output (NeuronCore-v2 engines: the Tensor engine writes PSUM only,
# GpSimd cannot access PSUM, Vector and Scalar write either).
_ENGINE_OUTPUTS = {"tensor": ("psum",), "gpsimd": ("sbuf",), "vector": ("sbuf", "psum"), "scalar": ("sbuf", "psum")}


def retarget_result(dst: Tile, value: Tile) -> bool:
    """`dst[...] = <instruction>(...)` in the legacy style: the instruction that just produced the fresh
    temporary `value` writes dst itself, as the compiler emits it (its output access pattern is dst's),
    instead of a Vector-engine copy after it. Only when value is that instruction's whole, never-read
    result, dst is a place its engine can write, and writing dst then breaks no earlier access to dst;
    False otherwise (the caller copies)."""
    alloc = value.alloc
    producer = alloc.producer
    trace = costmodel.current()
    if producer is None or producer[0] is not trace or producer[1] != trace.instructions:
        return False
    _, _, start, visible, engine, reads_then, whole = producer
    if value.strides != alloc.strides or value.shape != alloc.shape or value.offset != 0 or value.oob:
        return False
    if not whole or alloc.reads.last() != reads_then or alloc.pending_dma is not None:
        return False
    if dst.buffer.kind not in _ENGINE_OUTPUTS.get(engine, ()) or math.prod(dst.shape) != math.prod(value.shape):
        return False
    if dst.oob or (alloc.slot is not None and alloc.slot.spilled):
        return False
    if dst.strides is None or dst.minor_stride_bytes() > P.MINOR_STRIDE_PENALTY_BYTES:
        return False  # the instruction was costed for its contiguous temporary, not a strided or gathered write
    target = dst.access()
    if trace._ready([], [target]) > start:
        return False
    # a masked instruction writes dst only where it wrote its own result
    written = alloc.masked_result
    dst.write(value.read(written).reshape(dst.shape), None if written is None else written.reshape(dst.shape),
              exact=dst.dtype == value.dtype)
    target[0].writes.add(target[1], visible)
    trace.release(alloc)
    return True


def accumulate_into(dst: Tile, other: Any) -> None:
    """`dst += other`. A fresh matmul result added into PSUM is the hardware's own PSUM accumulation
    (no extra instruction time); anything else is a Vector-engine add; the result of an instruction that was
    not executed (never_executed) adds nothing: the compiler makes the instruction accumulate into dst."""
    if isinstance(other, Tile) and other.alloc.not_executed:
        return
    producer = getattr(other.alloc, "producer", None) if isinstance(other, Tile) else None
    if (
        dst.buffer.kind == "psum"
        and isinstance(other, Tile)
        and other.buffer.kind == "psum"
        and getattr(other.alloc, "matmul_result", False)
        # its data is still the matmul's (a PSUM tile a matmul once wrote, overwritten since by a VectorE copy,
        # was added for free: only the matmul's own write accumulates in PSUM)
        and producer is not None and producer[4] == "tensor"
    ):
        if tuple(other.shape) != tuple(dst.shape):
            raise NkiError(f"PSUM accumulation: shapes differ {other.shape} vs {dst.shape}")
        dst.write(accumulator_values(dst) + other.read())
        trace = costmodel.current()
        trace.issue("tensor", 0.0, [other.access(), dst.access()], [dst.access()])
        trace.release(other.alloc)  # on hardware the matmul accumulated into dst's bank directly
        return
    elementwise("add", "vector", np.add, [dst, other], dst=dst, mask=masked_result(dst, other))


def masked_result(dst: Tile, value: Any) -> np.ndarray | None:
    """Where `dst[...] = value` / `dst += value` writes when value is the fresh result of a masked instruction
    (Allocation.masked_result): the compiler makes that instruction write dst, so only what it wrote; the mask
    laid out in dst's shape (None: everywhere)."""
    written = value.alloc.masked_result if isinstance(value, Tile) else None
    if written is None:
        return None
    if tuple(dst.shape) == written.shape:
        return written
    if dst.ndim == written.ndim or written.size != int(np.prod(dst.shape)):
        raise NkiError(f"the masked result of shape {written.shape} does not fit {dst.name!r} of shape {dst.shape}")
    return written.reshape(dst.shape)


def out_dtype(dtype: Any, *tiles: Any) -> DType | None:
    if dtype is not None:
        return as_dtype(dtype)
    found = [t.dtype for t in tiles if isinstance(t, Tile)]
    return promote(*found) if found else None


def broadcast_partitions(tile: Tile, shape: tuple[int, ...]) -> Tile:
    """tile.broadcast_to(shape): a single-partition tile copied to shape[0] partitions (a matmul against
    ones on TensorE), or a (P,) / (P, 1) tile repeated along the free axes (a VectorE copy)."""
    require_on_chip(tile, "broadcast_to")
    if tile.partitions == shape[0] and tile.shape[0] == shape[0]:
        values = tile.read()
        if values.ndim == 1 and len(shape) > 1:  # (P,): one value per partition, repeated along free axes
            values = values.reshape(values.shape + (1,) * (len(shape) - 1))
        try:
            values = np.broadcast_to(values, shape)
        except ValueError:
            raise NkiError(f"broadcast_to: cannot broadcast {tile.shape} to {shape}") from None
        return elementwise("broadcast_to", "vector", lambda _v: values, [tile], dtype=tile.dtype)
    if tile.shape[0] != 1:
        raise NkiError(f"broadcast_to: only a single-partition tile, or one with {shape[0]} partitions, can be "
                       f"broadcast to {shape}; got shape {tile.shape}")
    try:
        values = np.broadcast_to(tile.read(), shape)
    except ValueError:
        raise NkiError(f"broadcast_to: cannot broadcast {tile.shape} to {shape}") from None
    # On hardware a TensorE matmul of a ones vector (stationary, 1 x P) with the tile (moving) ([ARCH]), and
    # the Tensor engine writes only PSUM (nki.isa.nc_matmul): the result is a PSUM tile, which a following
    # VectorE tensor_tensor reads at N cycles instead of 2N (params.py). When it is wider than a PSUM
    # tile may be (one 2 KiB bank: 512 fp32, nl.tile_size.psum_fmax) or the banks in scope cannot hold
    # it, it is evacuated to SBUF by a VectorE copy, as the compiler must.
    trace = costmodel.current()
    psum_bytes = math.prod(shape[1:]) * 4  # matmul results are fp32 in PSUM
    in_psum = psum_bytes <= P.PSUM_BANK_BYTES and trace.psum_fits(psum_bytes)
    dst = new_tile(shape, tile.dtype, psum if in_psum else sbuf, name="broadcast_to")
    dst.write(values, exact=True)
    trace.issue("tensor", tensor_cost_ns(dst.free_size, shape[0], tile.dtype), [tile.access()],
                [dst.access()], latency_ns=access_latency_ns("tensor"))
    if not in_psum:
        trace.issue("vector", engine_cost_ns("vector", dst.free_size), [dst.access()], [dst.access()],
                    latency_ns=access_latency_ns("vector"))
    return dst


# nl.dropout / nisa.dropout: the random numbers of one launch come from a generator seeded the same way for
# every launch, so an evaluation stays deterministic (the same kernel drops the same elements every time)
# and nothing the kernel does chooses them.
DROPOUT_SEED = 0x5EED
_dropout_streams: weakref.WeakKeyDictionary[Any, np.random.Generator] = weakref.WeakKeyDictionary()


def dropout(what: str, data: Any, prob: Any, dst: Tile | None = None, dtype: Any = None, mask: Any = None) -> Tile:
    """Each element of data replaced by zero with probability prob, kept as it is otherwise (no rescaling:
    nki.isa.dropout "randomly replace some elements of the input tile data with zeros"; prob 1.0 drops all,
    0.0 keeps all), on the Vector engine. prob is a number or a (partitions, 1) tile of per-partition
    probabilities; with integer data it must be a float32 tile. Costed as one VectorE pass over data (N
    cycles, a (P, 1) prob is a per-lane scalar), as the other one-input VectorE instructions."""
    if not isinstance(data, Tile):
        raise NkiError(f"{what}: data must be a tile")
    if isinstance(prob, Tile):
        if prob.free_size != 1 or prob.partitions != data.partitions:
            raise NkiError(f"{what}: prob must be a number or a ({data.partitions}, 1) tile of per-partition "
                           f"probabilities, got shape {prob.shape}")
        if not data.dtype.is_float and prob.dtype.name != "float32":
            raise NkiError(f"{what}: with integer data ({data.dtype!r}) prob must be float32, it is {prob.dtype!r}")
    elif isinstance(prob, (int, float, np.integer, np.floating)) and not isinstance(prob, bool):
        if not 0.0 <= float(prob) <= 1.0:
            raise NkiError(f"{what}: the drop probability {float(prob)} is outside [0, 1]")
    else:
        raise NkiError(f"{what}: prob must be a number or a (partitions, 1) tile, got {type(prob).__name__}")
    trace = costmodel.current()
    stream = _dropout_streams.get(trace)
    if stream is None:
        stream = _dropout_streams[trace] = np.random.default_rng(DROPOUT_SEED)
    draws = stream.random(data.shape, dtype=np.float32)

    def run(x: np.ndarray, p: Any) -> np.ndarray:
        p = np.asarray(p, dtype=np.float32)
        if p.size > 1 and not ((p >= 0) & (p <= 1)).all():  # said without the values: they are data
            raise NkiError(f"{what}: the prob tile holds a probability outside [0, 1]")
        return np.where(draws >= p, x, np.zeros_like(x))

    return elementwise(what, "vector", run, [data, prob], dst=dst, dtype=out_dtype(dtype, data), mask=mask)

