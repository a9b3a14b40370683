"""The core of every emulated instruction: operand checks, NumPy evaluation, writing the destination
with hardware rounding, and issuing the instruction to the cost model. language.py and isa.py are thin
API layers over these functions."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from speedpatch.targets.nki.emulator import costmodel
from speedpatch.targets.nki.emulator import params as P
from speedpatch.targets.nki.emulator.dtypes import DType, as_dtype, promote
from speedpatch.targets.nki.emulator.errors import NkiError
from speedpatch.targets.nki.emulator.tensor import Tile, new_tile, psum, sbuf

ENGINE_NAMES = {"vector": "vector", "scalar": "scalar", "act": "scalar", "gpsimd": "gpsimd", "pool": "gpsimd"}


def engine_name(engine: Any, default: str) -> str:
    if engine is None:
        return default
    name = str(getattr(engine, "name", engine)).lower().replace("_engine", "")
    if name in ("unknown", "tensor", "pe"):
        return default
    if name not in ENGINE_NAMES:
        raise NkiError(f"unknown engine {engine!r}")
    return ENGINE_NAMES[name]


def engine_cost_ns(engine: str, free_elems: int) -> float:
    if engine == "scalar":
        cycles = P.SCALAR_FIXED_CYCLES + free_elems * P.SCALAR_CYCLES_PER_ELEM
    elif engine == "gpsimd":
        cycles = P.GPSIMD_FIXED_CYCLES + free_elems * P.GPSIMD_CYCLES_PER_ELEM
    else:
        cycles = P.VECTOR_FIXED_CYCLES + free_elems * P.VECTOR_CYCLES_PER_ELEM
    return P.cycles_to_ns(cycles)


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


def check_partitions(tiles: Sequence[Tile], what: str) -> None:
    parts = {t.shape[0] for t in tiles if t.shape}
    if len(parts) > 1:
        raise NkiError(
            f"{what}: operands have different partition sizes {sorted(parts)}; engines cannot broadcast "
            f"across partitions (only along the free dimension, e.g. a (P, 1) operand)"
        )


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
) -> Tile:
    """One engine instruction: fn over the operands' values, written to dst (a new SBUF tile if None).
    extra_writes are further outputs the caller fills (e.g. an activation's reduce result)."""
    tiles = [x for x in operands if isinstance(x, Tile)] + list(extra_reads)
    for t in tiles:
        require_on_chip(t, what)
    check_partitions(tiles, what)
    with np.errstate(all="ignore"):
        result = np.asarray(fn(*[values_of(x, mask) for x in operands]), dtype=np.float32)
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
    dst.write(result, mask)
    free = max([dst.free_size] + [t.free_size for t in tiles])
    writes = [dst.access()] + [t.access() for t in extra_writes]
    costmodel.current().issue(engine, engine_cost_ns(engine, free), [t.access() for t in tiles], writes)
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


def matmul(dst: Tile | None, stationary: Tile, moving: Tile, accumulate: bool, what: str = "nc_matmul") -> Tile:
    """dst (M, N) (+)= stationary(K, M).T @ moving(K, N) on the Tensor engine into PSUM."""
    for t, role in ((stationary, "stationary"), (moving, "moving")):
        if not isinstance(t, Tile):
            raise NkiError(f"{what}: {role} must be a tile")
        if t.buffer.kind != "sbuf":
            raise NkiError(f"{what}: {role} operand {t.name!r} must be in SBUF (it is in {t.buffer.name})")
        if t.ndim != 2:
            raise NkiError(f"{what}: {role} must be 2-D (partition, free), got shape {t.shape}")
        if not t.dtype.is_float:
            raise NkiError(f"{what}: {role} has integer dtype {t.dtype!r}; the Tensor engine multiplies floats")
    k, m = stationary.shape
    k2, n = moving.shape
    if k != k2:
        raise NkiError(f"{what}: contraction (partition) sizes differ: stationary {stationary.shape}, moving {moving.shape}")
    if k > P.PARTITIONS:
        raise NkiError(f"{what}: contraction dimension {k} > {P.PARTITIONS}; accumulate K tiles in PSUM")
    if m > P.GEMM_STATIONARY_FMAX:
        raise NkiError(f"{what}: stationary free size {m} > {P.GEMM_STATIONARY_FMAX} (gemm_stationary_fmax)")
    if n > P.GEMM_MOVING_FMAX:
        raise NkiError(f"{what}: moving free size {n} > {P.GEMM_MOVING_FMAX} (gemm_moving_fmax)")
    if stationary.dtype != moving.dtype:
        raise NkiError(
            f"{what}: stationary is {stationary.dtype!r} but moving is {moving.dtype!r}; both operands must "
            f"have the same dtype"
        )
    result = stationary.read().T.astype(np.float32) @ moving.read().astype(np.float32)
    if dst is None:
        dst = new_tile((m, n), "float32", psum, name=what)
        accumulate = False
    else:
        if dst.buffer.kind != "psum":
            raise NkiError(f"{what}: destination {dst.name!r} must be in PSUM (it is in {dst.buffer.name})")
        if dst.dtype.name not in ("float32", "bfloat16"):
            raise NkiError(f"{what}: PSUM destination must be float32 (got {dst.dtype!r})")
        if tuple(dst.shape) != (m, n):
            raise NkiError(f"{what}: destination shape {dst.shape} != ({m}, {n}) = (stationary free, moving free)")
    reads = [stationary.access(), moving.access()]
    if accumulate:
        result = dst.read() + result
        reads.append(dst.access())
    dst.write(result)
    passes = P.TENSOR_FP32_PASSES if stationary.dtype.itemsize == 4 else 1
    trace = costmodel.current()
    trace.macs += k * m * n
    cost = P.cycles_to_ns(P.TENSOR_FIXED_CYCLES + n * passes)
    trace.issue("tensor", cost, reads, [dst.access()])
    dst.alloc.matmul_result = True  # type: ignore[attr-defined]
    return dst


def transpose(dst: Tile | None, data: Tile, out_buffer: Any = psum, what: str = "nc_transpose") -> Tile:
    """(P, F) -> (F, P) through the Tensor engine (a matmul with the identity)."""
    require_on_chip(data, what)
    if data.ndim != 2:
        raise NkiError(f"{what}: data must be 2-D, got {data.shape}")
    p, f = data.shape
    if p > P.PARTITIONS or f > P.PARTITIONS:
        raise NkiError(f"{what}: tile {data.shape} too large; the Tensor engine transposes at most 128 x 128")
    values = data.read().T
    if dst is None:
        dst = new_tile((f, p), data.dtype if out_buffer is sbuf else "float32", out_buffer, name=what)
    elif tuple(dst.shape) != (f, p):
        raise NkiError(f"{what}: destination shape {dst.shape} != {(f, p)}")
    dst.write(values)
    passes = P.TENSOR_FP32_PASSES if data.dtype.itemsize == 4 else 1
    costmodel.current().issue(
        "tensor", P.cycles_to_ns(P.TENSOR_FIXED_CYCLES + p * passes), [data.access()], [dst.access()]
    )
    return dst


def _contiguous_runs(pos: np.ndarray) -> int:
    flat = pos.reshape(-1)
    if flat.size <= 1:
        return flat.size
    return 1 + int(np.count_nonzero(np.diff(flat) != 1))


def dma(dst: Tile, src: Tile, mask: Any = None, what: str = "dma", transpose_hbm: bool = False) -> Tile:
    for t, role in ((dst, "destination"), (src, "source")):
        if not isinstance(t, Tile):
            raise NkiError(f"{what}: {role} must be a kernel tensor or tile, got {type(t).__name__}")
        if t.buffer.kind == "psum":
            raise NkiError(
                f"{what}: {role} {t.name!r} is in PSUM; DMA cannot access PSUM -- copy it to SBUF first "
                f"(nisa.tensor_copy / nl.copy)"
            )
    values = src.read(mask_for(src, mask))
    if transpose_hbm:
        values = values.T
    if values.size != math.prod(dst.shape):
        raise NkiError(f"{what}: source shape {src.shape} and destination shape {dst.shape} differ in size")
    if values.shape != tuple(dst.shape):
        values = values.reshape(dst.shape)
    dst.write(values, mask)
    nbytes = values.size * src.dtype.itemsize
    hbm_side = src if src.buffer.kind == "hbm" else dst
    runs = values.size if transpose_hbm else _contiguous_runs(hbm_side.pos)
    chip_side = dst if dst.buffer.kind != "hbm" else src
    runs = max(runs, chip_side.partitions if chip_side.buffer.kind != "hbm" else 1)
    cost = P.DMA_FIXED_NS + nbytes / P.DMA_BYTES_PER_NS + runs * P.DMA_DESCRIPTOR_NS
    trace = costmodel.current()
    trace.dma_bytes += nbytes
    trace.dma_transfers += 1
    trace.issue("dma", cost, [src.access()], [dst.access()], latency_ns=P.DMA_LATENCY_NS)
    return dst


def accumulate_into(dst: Tile, other: Any) -> None:
    """`dst += other`. A fresh matmul result added into PSUM is the hardware's own PSUM accumulation
    (no extra instruction time); anything else is a Vector-engine add."""
    if (
        dst.buffer.kind == "psum"
        and isinstance(other, Tile)
        and other.buffer.kind == "psum"
        and getattr(other.alloc, "matmul_result", False)
    ):
        if tuple(other.shape) != tuple(dst.shape):
            raise NkiError(f"PSUM accumulation: shapes differ {other.shape} vs {dst.shape}")
        dst.write(dst.read() + other.read())
        costmodel.current().issue("tensor", 0.0, [other.access(), dst.access()], [dst.access()])
        return
    elementwise("add", "vector", np.add, [dst, other], dst=dst)


def out_dtype(dtype: Any, *tiles: Any) -> DType | None:
    if dtype is not None:
        return as_dtype(dtype)
    found = [t.dtype for t in tiles if isinstance(t, Tile)]
    return promote(*found) if found else None


def broadcast_partitions(tile: Tile, shape: tuple[int, ...]) -> Tile:
    """Copy a single-partition tile to `shape[0]` partitions on the GpSimd engine."""
    require_on_chip(tile, "broadcast_to")
    if tile.shape[0] != 1 and tuple(tile.shape) != shape:
        raise NkiError(f"broadcast_to: only a single-partition tile can be broadcast, got shape {tile.shape}")
    try:
        values = np.broadcast_to(tile.read(), shape)
    except ValueError:
        raise NkiError(f"broadcast_to: cannot broadcast {tile.shape} to {shape}") from None
    dst = new_tile(shape, tile.dtype, sbuf, name="broadcast_to")
    dst.write(values)
    costmodel.current().issue("gpsimd", engine_cost_ns("gpsimd", dst.free_size), [tile.access()], [dst.access()])
    return dst
