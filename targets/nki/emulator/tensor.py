"""Tensors in HBM, SBUF and PSUM, and tiles (indexed views of them).

A Tile is an allocation plus an integer array of flat element positions (`pos`), so any NKI index
expression -- ints, slices, nl.ds, nl.arange/mgrid arrays -- composes by plain NumPy indexing of `pos`.
Positions of out-of-bounds elements are -1: they are an error when an instruction touches them, unless
the instruction's mask excludes them (that is how NKI kernels handle ragged edges).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from speedpatch.targets.nki.emulator import costmodel
from speedpatch.targets.nki.emulator import params as P
from speedpatch.targets.nki.emulator.dtypes import DType, as_dtype
from speedpatch.targets.nki.emulator.errors import NkiError


@dataclass(frozen=True)
class Buffer:
    name: str
    kind: str  # "hbm", "sbuf" or "psum"

    def __repr__(self) -> str:
        return f"nl.{self.name}"


hbm = Buffer("hbm", "hbm")
shared_hbm = Buffer("shared_hbm", "hbm")
private_hbm = Buffer("private_hbm", "hbm")
sbuf = Buffer("sbuf", "sbuf")
psum = Buffer("psum", "psum")


class par_dim(int):  # noqa: N801 - NKI's public name
    """Marks the partition axis in a shape: (n_tiles, nl.par_dim(128), 512)."""


@dataclass(frozen=True)
class DynSlice:
    start: Any
    size: int
    step: int = 1

    def as_slice(self) -> slice:
        start = int(self.start)
        return slice(start, start + int(self.size) * self.step, self.step)


def as_buffer(value: Any) -> Buffer:
    if isinstance(value, Buffer):
        return value
    kind = getattr(value, "_speedpatch_buffer", None)  # nki.compiler.sbuf.mod_alloc(...) allocators
    if isinstance(kind, Buffer):
        return kind
    raise NkiError(f"unknown buffer {value!r}; use nl.sbuf, nl.psum or nl.shared_hbm")


class Allocation:
    """Storage of one tensor plus the bookkeeping the cost model needs."""

    def __init__(
        self,
        shape: tuple[int, ...],
        dtype: DType,
        buffer: Buffer,
        name: str = "",
        data: np.ndarray | None = None,
    ) -> None:
        dims = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        par_axes = [i for i, d in enumerate(dims) if isinstance(d, par_dim)]
        self.par_axis = par_axes[0] if par_axes else 0
        self.shape = tuple(int(d) for d in dims)
        self.dtype = dtype
        self.buffer = buffer
        self.name = name or "tensor"
        if any(d <= 0 for d in self.shape):
            raise NkiError(f"tensor {self.name!r} has an empty or negative shape {self.shape}")
        if buffer.kind != "hbm":
            self._check_on_chip()
        if data is None:
            data = self._fresh()
        self.data = np.ascontiguousarray(data)
        self._positions: np.ndarray | None = None
        self.reads = costmodel.RegionTimes()
        self.writes = costmodel.RegionTimes()
        costmodel.current().allocate(self)

    def _check_on_chip(self) -> None:
        if not self.shape:
            raise NkiError(f"on-chip tensor {self.name!r} needs a partition dimension")
        parts = self.shape[self.par_axis]
        if parts > P.PARTITIONS:
            raise NkiError(
                f"partition dimension of {self.name!r} is {parts} (shape {self.shape}); at most "
                f"{P.PARTITIONS} (nl.tile_size.pmax) -- split it into tiles of 128 partitions"
            )
        if self.buffer.kind == "psum":
            per_bank = math.prod(self.shape[self.par_axis + 1 :]) * self.dtype.itemsize
            if per_bank > P.PSUM_BANK_BYTES:
                raise NkiError(
                    f"PSUM tile {self.name!r} {self.shape} needs {per_bank} bytes per partition; one PSUM "
                    f"bank holds {P.PSUM_BANK_BYTES} (512 fp32 values)"
                )

    def _fresh(self) -> np.ndarray:
        # SBUF/HBM memory is not initialised on hardware: NaN makes reads of unwritten data visible.
        # PSUM starts at zero because matmuls accumulate into it.
        if self.dtype.is_float and self.buffer.kind != "psum":
            return np.full(self.shape, np.nan, dtype=np.float32)
        return np.zeros(self.shape, dtype=self.dtype.storage)

    @property
    def bytes_per_partition(self) -> int:
        total = math.prod(self.shape)
        return total // max(1, self.shape[self.par_axis]) * self.dtype.itemsize

    def positions(self) -> np.ndarray:
        if self._positions is None:
            size = math.prod(self.shape)
            self._positions = np.arange(size, dtype=np.int64).reshape(self.shape)
        return self._positions

    def full_region(self) -> costmodel.Region:
        return tuple((0, n - 1) for n in self.shape)

    def tile(self) -> Tile:
        return Tile(self, None)


class Tile:
    """A (view of a) tensor as kernel code sees it: indexing gives another Tile of the same memory."""

    __array_priority__ = 100  # so that ndarray <op> Tile defers to Tile's operators

    def __init__(self, alloc: Allocation, pos: np.ndarray | None, oob: str = "") -> None:
        self.alloc = alloc
        self._pos = pos  # None = the whole allocation
        self.oob = oob  # description of the first out-of-bounds index, if any
        self._region: costmodel.Region | None = None

    # ---- what kernel code sees ----------------------------------------------------------------
    @property
    def pos(self) -> np.ndarray:
        return self.alloc.positions() if self._pos is None else self._pos

    @property
    def shape(self) -> tuple[int, ...]:
        return self.alloc.shape if self._pos is None else tuple(self._pos.shape)

    @property
    def dtype(self) -> DType:
        return self.alloc.dtype

    @property
    def buffer(self) -> Buffer:
        return self.alloc.buffer

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def name(self) -> str:
        return self.alloc.name

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return f"<tile {self.name} {self.shape} {self.dtype!r} in {self.buffer!r}>"

    def __getitem__(self, index: Any) -> Tile:
        pos, oob = index_positions(self.pos, index, self.name)
        return Tile(self.alloc, pos, oob or self.oob)

    def reshape(self, shape: Any) -> Tile:
        """The same elements viewed with another shape (HBM tensors, as in x.reshape((1, n)))."""
        dims = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        if math.prod(int(d) for d in dims) != math.prod(self.shape):
            raise NkiError(f"cannot reshape {self.name!r} of shape {self.shape} to {dims}")
        if self.buffer.kind != "hbm":
            raise NkiError("reshape is only available on HBM tensors; on-chip tiles keep their partition layout")
        return Tile(self.alloc, self.pos.reshape(tuple(int(d) for d in dims)), self.oob)

    def broadcast_to(self, shape: Any) -> Tile:
        """A (1, F) tile copied to (P, F) partitions (a GpSimd partition broadcast)."""
        from speedpatch.targets.nki.emulator import ops

        return ops.broadcast_partitions(self, tuple(int(d) for d in shape))

    def __setitem__(self, index: Any, value: Any) -> None:
        from speedpatch.targets.nki.emulator import language

        language.copy_into(self[index], value)

    # ---- structure the ops need -----------------------------------------------------------------
    @property
    def par_axis(self) -> int:
        if self._pos is None:
            return self.alloc.par_axis
        return max(0, self.alloc.par_axis - (len(self.alloc.shape) - self.ndim))

    @property
    def partitions(self) -> int:
        return self.shape[self.par_axis] if self.shape else 1

    @property
    def free_size(self) -> int:
        size = math.prod(self.shape) if self.shape else 1
        return size // max(1, self.partitions)

    def region(self) -> costmodel.Region:
        if self._region is None:
            if self._pos is None:
                self._region = self.alloc.full_region()
            else:
                valid = self._pos[self._pos >= 0] if self.oob else self._pos
                if valid.size == 0:
                    self._region = tuple((0, -1) for _ in self.alloc.shape)
                else:
                    coords = np.unravel_index(valid.reshape(-1), self.alloc.shape)
                    self._region = tuple((int(c.min()), int(c.max())) for c in coords)
        return self._region

    def access(self) -> costmodel.Access:
        return (self.alloc, self.region())

    # ---- data ----------------------------------------------------------------------------------
    def _mask(self, mask: Any) -> np.ndarray | None:
        if mask is None:
            return None
        try:
            return np.broadcast_to(np.asarray(mask, dtype=bool), self.shape)
        except ValueError as exc:
            raise NkiError(f"mask of shape {np.shape(mask)} does not fit tile shape {self.shape}") from exc

    def _checked_positions(self, mask: np.ndarray | None) -> np.ndarray:
        pos = self.pos
        if not self.oob:  # no index of this tile was out of bounds: no -1 positions
            return pos
        bad = pos < 0
        if mask is not None:
            bad = bad & mask
        if bad.any():
            raise NkiError(f"out-of-bounds access to {self.name!r} of shape {self.alloc.shape}: {self.oob}")
        return np.where(pos < 0, 0, pos)

    def read(self, mask: Any = None) -> np.ndarray:
        """The values (float32 for float types), zero where masked out."""
        m = self._mask(mask)
        values = self.alloc.data.reshape(-1)[self._checked_positions(m)]
        if self.dtype.is_float:
            values = values.astype(np.float32, copy=False)
        if m is not None:
            values = np.where(m, values, 0)
        return values

    def write(self, values: Any, mask: Any = None) -> None:
        m = self._mask(mask)
        pos = self._checked_positions(m)
        try:
            vals = np.broadcast_to(np.asarray(values), self.shape)
        except ValueError as exc:
            raise NkiError(
                f"cannot write a value of shape {np.shape(values)} into {self.name!r} tile of shape {self.shape}"
            ) from exc
        vals = self.dtype.round(vals)
        flat = self.alloc.data.reshape(-1)
        if m is None:
            flat[pos.reshape(-1)] = vals.reshape(-1)
        else:
            flat[pos[m]] = vals[m]

    # ---- operators (legacy NKI style: a + b, psum += matmul(...)) -------------------------------
    def _binary(self, other: Any, op: str, reverse: bool = False) -> Tile:
        from speedpatch.targets.nki.emulator import language

        fn = getattr(language, op)
        return fn(other, self) if reverse else fn(self, other)

    def __add__(self, other: Any) -> Tile:
        return self._binary(other, "add")

    def __radd__(self, other: Any) -> Tile:
        return self._binary(other, "add", True)

    def __sub__(self, other: Any) -> Tile:
        return self._binary(other, "subtract")

    def __rsub__(self, other: Any) -> Tile:
        return self._binary(other, "subtract", True)

    def __mul__(self, other: Any) -> Tile:
        return self._binary(other, "multiply")

    def __rmul__(self, other: Any) -> Tile:
        return self._binary(other, "multiply", True)

    def __truediv__(self, other: Any) -> Tile:
        return self._binary(other, "divide")

    def __rtruediv__(self, other: Any) -> Tile:
        return self._binary(other, "divide", True)

    def __neg__(self) -> Tile:
        from speedpatch.targets.nki.emulator import language

        return language.negative(self)

    def __iadd__(self, other: Any) -> Tile:
        from speedpatch.targets.nki.emulator import language

        language.accumulate_into(self, other)
        return self

    def __bool__(self) -> bool:
        raise NkiError("a tile has no truth value on the host; kernel control flow cannot depend on tile data")


def index_positions(pos: np.ndarray, index: Any, name: str) -> tuple[np.ndarray, str]:
    """pos[index] with NKI index objects; out-of-bounds elements become -1 (plus a description)."""
    comps = list(index) if isinstance(index, tuple) else [index]
    comps = [c.as_slice() if isinstance(c, DynSlice) else c for c in comps]
    if any(c is Ellipsis for c in comps):
        at = comps.index(Ellipsis)
        fill = pos.ndim - (len(comps) - 1 - sum(c is None for c in comps))
        comps = comps[:at] + [slice(None)] * fill + comps[at + 1 :]
    if len([c for c in comps if c is not None]) > pos.ndim:
        raise NkiError(f"too many indices for {name!r} of shape {pos.shape}")
    oob = ""
    axis = 0
    normal: list[Any] = []
    for comp in comps:
        if comp is None:
            normal.append(None)
            continue
        n = pos.shape[axis]
        if isinstance(comp, Tile):
            raise NkiError("indexing with tile values is not supported by the emulator; use nl.ds or arange")
        if isinstance(comp, slice):
            if comp.step is not None and int(comp.step) <= 0:
                raise NkiError(f"slice step must be positive when indexing {name!r}")
            start = 0 if comp.start is None else int(comp.start)
            stop = n if comp.stop is None else int(comp.stop)
            if start < 0 or stop > n:
                oob = oob or f"slice {start}:{stop} on axis {axis} of size {n}"
            normal.append(slice(start, stop, comp.step))
        elif isinstance(comp, (int, np.integer)):
            if not 0 <= int(comp) < n:
                oob = oob or f"index {int(comp)} on axis {axis} of size {n}"
            normal.append(int(comp))
        else:
            arr = np.asarray(comp)
            if arr.dtype.kind not in "iu":
                raise NkiError(f"index into {name!r} must be integers, got {arr.dtype}")
            if arr.size and (arr.min() < 0 or arr.max() >= n):
                bad = arr[(arr < 0) | (arr >= n)].flat[0]
                oob = oob or f"index {int(bad)} on axis {axis} of size {n}"
            normal.append(arr)
        axis += 1
    if not oob:
        return pos[tuple(normal)], ""
    return _padded_index(pos, normal, name, oob), oob


def _padded_index(pos: np.ndarray, normal: list[Any], name: str, oob: str) -> np.ndarray:
    """Index a copy of pos padded with -1 so that out-of-bounds elements map to -1."""
    if any(c is None for c in normal):
        raise NkiError(f"out-of-bounds access to {name!r}: {oob}")
    padded = np.pad(pos, [(0, 1)] * pos.ndim, constant_values=-1)
    has_arrays = any(isinstance(c, np.ndarray) for c in normal)
    grid_axes = sum(isinstance(c, slice) for c in normal)
    out: list[Any] = []
    j = 0
    for axis, comp in enumerate(normal):
        n = pos.shape[axis]
        if isinstance(comp, slice):
            if has_arrays:
                raise NkiError(f"out-of-bounds access to {name!r}: {oob}")
            start, stop = comp.start, comp.stop
            arr = np.arange(start, stop, comp.step or 1)
            arr = np.where((arr < 0) | (arr >= n), n, arr)
            shape = [1] * grid_axes
            shape[j] = arr.size
            out.append(arr.reshape(shape))
            j += 1
        elif isinstance(comp, int):
            out.append(np.asarray(comp if 0 <= comp < n else n))
        else:
            out.append(np.where((comp < 0) | (comp >= n), n, comp))
    return padded[tuple(out)]


def new_tile(shape: Any, dtype: Any, buffer: Any, name: str = "") -> Tile:
    return Allocation(shape, as_dtype(dtype), as_buffer(buffer), name).tile()


def hbm_tensor(array: np.ndarray, name: str) -> Tile:
    """A kernel argument: a host array copied into device HBM."""
    dtype = as_dtype(array.dtype)
    data = dtype.round(np.asarray(array)).astype(dtype.storage)
    return Allocation(array.shape, dtype, shared_hbm, name, data=data).tile()
