"""Tensors in HBM, SBUF and PSUM, and tiles (indexed views of them).

A Tile is an allocation plus a view of its elements. Most NKI index expressions -- ints, slices, nl.ds,
nl.arange/mgrid progressions such as `k * 128 + i_p` -- describe a strided box, so the tile is kept as
(offset, shape, strides) in elements and its values are a NumPy view of the allocation: no per-element
index arrays, whatever the tensor size. Indices that are not progressions (gathers) fall back to an
explicit array of flat element positions (`pos`).

Out-of-bounds elements (ragged edge tiles) are allowed in a view: they are an error when an instruction
touches them, unless the instruction's mask excludes them. A strided view tracks its in-bounds part as a
box [lo, hi) per view axis; a gather view marks out-of-bounds positions with -1.
"""

from __future__ import annotations

import builtins
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from speedpatch.targets.nki.emulator import costmodel
from speedpatch.targets.nki.emulator import params as P
from speedpatch.targets.nki.emulator.arguments import checked
from speedpatch.targets.nki.emulator.dtypes import DType, as_dtype
from speedpatch.targets.nki.emulator.errors import NkiError
from speedpatch.targets.nki.emulator.errors import NotEmulated as NotEmulatedError


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


_writes = 0  # every Tile.write so far (isolation/server.py: did a failed request already write a result?)


def write_count() -> int:
    """How many tile writes the emulator has made in this process (it only grows)."""
    return _writes


def as_buffer(value: Any) -> Buffer:
    if isinstance(value, Buffer):
        return value
    kind = getattr(value, "_speedpatch_buffer", None)  # nki.compiler.sbuf.mod_alloc(...) allocators
    if isinstance(kind, Buffer):
        return kind
    raise NkiError(f"unknown buffer {value!r}; use nl.sbuf, nl.psum or nl.shared_hbm")


def _c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides = []
    acc = 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= n
    return tuple(reversed(strides))


class Allocation:
    """Storage of one tensor plus the bookkeeping the cost model needs."""

    def __init__(
        self,
        shape: tuple[int, ...],
        dtype: DType,
        buffer: Buffer,
        name: str = "",
        data: np.ndarray | None = None,
        buffers: int = 0,
        free_tiles: tuple[int, ...] = (),
    ) -> None:
        dims = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        par_axes = [i for i, d in enumerate(dims) if isinstance(d, par_dim)]
        self.par_axis = par_axes[0] if par_axes else 0
        self.shape = tuple(int(d) for d in dims)
        self.dtype = dtype
        self.buffer = buffer
        self.name = name or "tensor"
        self.matmul_result = False
        # a PSUM tile not yet wholly written ("ndarray", or "zeros": nl.zeros/nl.full(0) in PSUM): only a
        # matmul may start from its unwritten elements (the hardware's override flag); any other read of them is
        # checked (Tile.read). psum_written: which elements have been written (None: none yet)
        self.unwritten_psum: str | None = None
        self.psum_written: np.ndarray | None = None
        self.implicit_buffer = False  # a legacy instruction result whose memory the emulator chose (ops._sbuf_operand)
        self.not_executed = False  # the fresh result of an instruction a constant False mask skipped (ops.never_executed)
        self.masked_result: np.ndarray | None = None  # where a masked transpose wrote its fresh result (ops.transpose)
        self.sbuf_copy: Any = None  # (producer, view, SBUF copy) of such a PSUM result read by a matmul
        self.slot: Any = None  # the cost model's record of its on-chip space
        self.block_slots: list[Any] = []  # instead, one record per block (a blocked SBUF tensor)
        self.pending_dma: Any = None  # a load not issued yet: it may still be retargeted (ops.dma)
        self.deferred_fill: Any = None  # fills the storage of a retargeted load if it is read after all
        self.producer: Any = None  # its last engine write: (trace, instruction number, start, visible, engine,
        #                            its reads' last end then, whether the whole tensor was written)
        self.region_cache: dict[tuple, costmodel.Region] = {}
        if any(d <= 0 for d in self.shape):
            raise NkiError(f"tensor {self.name!r} has an empty or negative shape {self.shape}")
        if buffer.kind != "hbm":
            self._check_on_chip()
        # storage is created on first use: a load retargeted into another tile never needs its own
        self._data = np.ascontiguousarray(data) if data is not None else None
        self.strides = _c_strides(self.shape)
        self.reads = costmodel.RegionTimes()
        self.writes = costmodel.RegionTimes()
        # mod_alloc(num_free_tiles=...): only that many blocks of the leading (block) axes are physical
        self.physical_blocks = buffers
        self.alias_moduli = self._alias_moduli(free_tiles or ((buffers,) if buffers else ()))
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

    def _alias_moduli(self, free_tiles: tuple[int, ...]) -> tuple[int, ...]:
        """Per block axis, how many physical blocks it has (block i is physical block i % n), when
        mod_alloc(num_free_tiles=) makes fewer blocks physical than the tensor has; () otherwise. A tuple
        shorter or longer than the block axes counts the blocks flattened: one modulus for all of them."""
        blocks = self.shape[: self.par_axis]
        if self.buffer.kind == "hbm" or not free_tiles or not blocks or math.prod(free_tiles) >= math.prod(blocks):
            return ()
        if len(free_tiles) == len(blocks):
            return tuple(max(1, min(n, b)) for n, b in zip(free_tiles, blocks, strict=True))
        return (max(1, math.prod(free_tiles)),)

    def physical_block(self, block: np.ndarray) -> np.ndarray:
        """The physical block of each (flat) logical block index, as a flat index of the block axes."""
        shape = self.shape[: self.par_axis]
        if len(self.alias_moduli) != len(shape):
            return block % self.alias_moduli[0]
        coords = np.unravel_index(block, shape)
        return np.ravel_multi_index(tuple(c % m for c, m in zip(coords, self.alias_moduli, strict=True)), shape)

    def mirror(self, positions: np.ndarray, array: np.ndarray | None = None) -> None:
        """Blocks that share memory (mod_alloc) hold the same values: what was just written at `positions`
        (flat) is what every other block on the same physical block now reads. Without this a kernel kept
        32 MiB resident in a tensor whose 32 blocks shared one 8 KiB-per-partition slot (red-team: a
        two-pass row normalization correct at 282 us against the honest 516 us). array: another array of the
        tensor's shape to mirror instead of the data (which PSUM elements are written)."""
        per = math.prod(self.shape[self.par_axis:])
        data = (self.data if array is None else array).reshape(-1, per)
        block, offset = np.divmod(positions.reshape(-1), per)
        phys = self.physical_block(block)
        values = data[block, offset]
        every = self.physical_block(np.arange(data.shape[0]))
        for logical in range(data.shape[0]):
            sel = phys == every[logical]
            if sel.any():
                data[logical, offset[sel]] = values[sel]

    def physical_region(self, region: costmodel.Region) -> costmodel.Region:
        """A region in the coordinates of the memory it occupies: the block axes of an aliased tensor taken
        modulo their physical blocks, so that blocks on the same memory depend on each other."""
        axes = self.par_axis
        if len(self.alias_moduli) == axes:
            mapped = []
            for (lo, hi), m in zip(region[:axes], self.alias_moduli, strict=True):
                same = hi - lo + 1 < m and lo % m <= hi % m
                mapped.append((lo % m, hi % m) if same else (0, m - 1))
            return (*mapped, *region[axes:])
        shape = self.shape[:axes]
        if all(lo == hi for lo, hi in region[:axes]):
            flat = np.ravel_multi_index(tuple(lo for lo, _ in region[:axes]), shape)
            coords = np.unravel_index(int(self.physical_block(np.asarray(flat))), shape)
            return (*((int(c), int(c)) for c in coords), *region[axes:])
        return (*((0, n - 1) for n in shape), *region[axes:])

    @property
    def data(self) -> np.ndarray:
        if self.pending_dma is not None:  # a deferred load's values are needed: issue it (ops.dma)
            self.pending_dma()
        if self._data is None:
            self._data = self._fresh()
            fill, self.deferred_fill = self.deferred_fill, None
            if fill is not None:
                fill()
        return self._data

    @property
    def flat(self) -> np.ndarray:
        return self.data.reshape(-1)

    def _fresh(self) -> np.ndarray:
        # SBUF/HBM memory is not initialised on hardware: NaN makes reads of unwritten data visible.
        # PSUM starts at zero because matmuls accumulate into it.
        if self.dtype.is_float and self.buffer.kind != "psum":
            return np.full(self.shape, np.nan, dtype=np.float32)
        if self.buffer.kind != "psum":
            # integers have no NaN: the largest value stands for whatever the memory held (red-team: an int32
            # accumulator taken as nl.ndarray and summed into read zeros here, skipping its memset, and would
            # be garbage on a device)
            return np.full(self.shape, np.iinfo(self.dtype.storage).max, dtype=self.dtype.storage)
        return np.zeros(self.shape, dtype=self.dtype.storage)

    @property
    def bytes_per_partition(self) -> int:
        """Bytes one partition holds: the free axes, and the block axes before the partition axis."""
        total = math.prod(self.shape)
        per = total // max(1, self.shape[self.par_axis]) * self.dtype.itemsize
        blocks = math.prod(self.shape[: self.par_axis])
        if self.physical_blocks and blocks > self.physical_blocks:
            per = per // blocks * self.physical_blocks
        if self.buffer.kind == "psum":  # PSUM is allocated in whole 2 KiB banks per partition
            per_block = per // max(1, min(blocks, self.physical_blocks or blocks))
            banks = -(-per_block // P.PSUM_BANK_BYTES)
            per = banks * P.PSUM_BANK_BYTES * max(1, min(blocks, self.physical_blocks or blocks))
        return per

    def full_region(self) -> costmodel.Region:
        return tuple((0, n - 1) for n in self.shape)

    def tile(self) -> Tile:
        view = Tile(self, self.shape, 0, self.strides)
        view._par = self.par_axis
        return view


class Tile:
    """A (view of a) tensor as kernel code sees it: indexing gives another Tile of the same memory."""

    __array_priority__ = 100  # so that ndarray <op> Tile defers to Tile's operators

    def __init__(
        self,
        alloc: Allocation,
        shape: tuple[int, ...],
        offset: int = 0,
        strides: tuple[int, ...] | None = None,
        lo: tuple[int, ...] | None = None,
        hi: tuple[int, ...] | None = None,
        pos: np.ndarray | None = None,
        oob: str = "",
    ) -> None:
        self.alloc = alloc
        self.shape = tuple(shape)
        self.offset = offset
        self.strides = strides  # None for a gather view (then `_pos` holds the positions)
        self.lo = lo if lo is not None else (0,) * len(self.shape)
        self.hi = hi if hi is not None else self.shape
        self._pos = pos
        self.oob = oob  # description of the first out-of-bounds index, if any
        self._region: costmodel.Region | None = None
        self._inplace = False  # set by += until the matching __setitem__ of `t[i] += v`
        self._par: int | None = None  # partition axis of the view, when indexing tracked it
        self._loop_reduce: Any = None  # (op, dtype, mask) of nl.loop_reduce: the assignment reduces into its target
        self._indirect: tuple[Tile, ...] = ()  # SBUF index tiles of an indirect DMA view (read by the DMA)
        self._reinterpret: DType | None = None  # t.view(dtype): the same bits read as another type (view())
        self._iters: tuple[tuple[int, int], ...] | None = None  # the nl.mgrid iterators of its axes (grid_index_space)

    # ---- what kernel code sees ----------------------------------------------------------------
    @property
    def dtype(self) -> DType:
        return self._reinterpret or self.alloc.dtype

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

    def __iter__(self) -> Any:
        # Without it Python and NumPy iterate a tile through __getitem__ until an IndexError, which its lazily
        # checked integer index never raises: `nl.arange(4)[t]` looped in the trusted process (red-team)
        raise TypeError(f"tile {self.alloc.name!r} is not iterable on the host: index it, or loop with nl.affine_range")

    def __repr__(self) -> str:
        return f"<tile {self.name} {self.shape} {self.dtype!r} in {self.buffer!r}>"

    def __getitem__(self, index: Any) -> Tile:
        if self._reinterpret is not None:
            raise NkiError(f"index {self.name!r} before .view({self._reinterpret!r}), not after")
        if type(index).__name__ == "_Grid":  # t[nl.mgrid[0:128, 0:512]]: the grid's axes, as t[i_p, i_f] (the
            index = tuple(index.axes)         # AWS doc example test_nki_isa_reciprocal.py indexes this way)
        comps_in = index if isinstance(index, tuple) else (index,)
        if any(isinstance(c, Tile) for c in comps_in):
            return self._indirect_view(comps_in)
        if (self.ndim == 1 and self.buffer.kind != "hbm" and self.strides is not None and isinstance(index, tuple)
                and len([c for c in index if c is not None]) == 2):
            # a (P,) partition vector (t[:, j] of an on-chip tile) is a (P, 1) tile to NKI: kernels index it
            # again as v[:, 0] (the flash-attention kernel's l_buffer[:, i] handed to its core)
            column = Tile(self.alloc, (self.shape[0], 1), self.offset, (self.strides[0], 1), (self.lo[0], 0),
                          (self.hi[0], 1), oob=self.oob)
            column._par = 0
            return column[index]
        comps = _normalize(index, self.ndim, self.name)
        space = grid_index_space(comps)
        if space is not None:
            laid = [c if isinstance(c, int) else relayout(c, space) for c in comps]
            if any(c is None for c in laid):
                space = None  # an expression whose shape is not its iterators' (a sliced grid): NumPy's rules
            else:
                comps = laid
        view = self._index(comps)
        if space is not None and view.ndim == len(space):
            view._iters = space
        return view

    def _index(self, comps: list[Any]) -> Tile:
        if self.strides is not None:
            view = _strided_index(self, comps)
            if view is not None:
                return view
        pos, oob = index_positions(self.pos, tuple(comps), self.name)
        view = Tile(self.alloc, pos.shape, pos=pos, oob=oob or self.oob)
        view._par = _gather_par_axis(comps, self.par_axis, pos.ndim)
        return view

    def _indirect_view(self, comps: tuple[Any, ...]) -> Tile:
        """An HBM tensor indexed with tile values: the indirect DMA of the legacy nl.load / nl.store docs
        ("Also supports indirect DMA access with dynamic index values": data[idx_tile, i_f] with idx_tile an
        SBUF tile of integer row indices, e.g. loaded from HBM or made by nisa.iota). The index tiles' values
        pick the elements; the DMA that moves the view also reads the index tiles (it waits for them). An
        index outside the axis fails the DMA (oob_mode=error) or, with nisa.dma_copy(oob_mode=skip), moves
        nothing for that element; the message never shows the value (it is data)."""
        if self.buffer.kind != "hbm":
            raise NkiError(f"indexing {self.name!r} with tile values (indirect DMA) is only possible on an HBM "
                           f"tensor (nl.load(data[idx_tile, i_f]), nl.store); index on-chip tiles with ints, "
                           f"slices, nl.ds or nl.arange")
        others_are_arrays = any(isinstance(c, np.ndarray) for c in comps)
        tiles: list[Tile] = []
        plain: list[Any] = []
        for c in comps:
            if isinstance(c, Tile):
                if c.buffer.kind != "sbuf":
                    raise NkiError(f"the index tile {c.name!r} of an indirect DMA into {self.name!r} is in "
                                   f"{c.buffer.name}; indices have to be in SBUF")
                if c.dtype.is_float:
                    raise NkiError(f"the index tile {c.name!r} of an indirect DMA into {self.name!r} is "
                                   f"{c.dtype!r}; indices must be integers (nisa.iota(..., dtype=nl.int32) or an "
                                   f"int32 / uint32 tensor)")
                values = np.asarray(c.read()).astype(np.int64)
                if c.free_size == 1:  # one index per partition: (P, 1) beside index arrays, else (P,)
                    values = values.reshape(-1, 1) if others_are_arrays else values.reshape(-1)
                tiles.append(c)
                plain.append(values)
            else:
                plain.append(c)
        outside = (f"an index tile of the indirect DMA into {self.name!r} holds a value outside the tensor "
                   f"{self.alloc.shape}")
        try:
            view = self[tuple(plain)]
        except NkiError:  # an out-of-bounds gather the index machinery cannot pad: said without the value
            raise NkiError(outside) from None
        if view.oob and view.oob != self.oob:
            view.oob = f"{outside} (oob_mode=error; nisa.dma_copy(..., oob_mode=nisa.oob_mode.skip) skips such elements)"
        view._indirect = tuple(tiles)
        return view

    @checked("tensor.reshape")
    def reshape(self, shape: Any) -> Tile:
        """The same elements viewed with another shape (HBM tensors, as in x.reshape((1, n)))."""
        dims = tuple(int(d) for d in (tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)))
        if math.prod(dims) != math.prod(self.shape):
            raise NkiError(f"cannot reshape {self.name!r} of shape {self.shape} to {dims}")
        if self.buffer.kind != "hbm":
            return self._reshape_on_chip(dims)
        if self.strides is not None and not self.oob and self.strides == _c_strides(self.shape):
            return Tile(self.alloc, dims, self.offset, _c_strides(dims))
        return Tile(self.alloc, dims, pos=self.pos.reshape(dims), oob=self.oob)

    def _reshape_on_chip(self, dims: tuple[int, ...]) -> Tile:
        """An SBUF/PSUM tile's free axes regrouped (nki.language.NkiTensor.reshape; public kernels write
        nl.load(x[...]).reshape((P, a * b))): the partition axis stays the first axis with its size, and the
        free elements of every partition must be contiguous in the tile (no data moves, so a strided or
        gathered view cannot be regrouped)."""
        par = self.par_axis
        if par != 0 or not dims or dims[0] != self.shape[0]:
            raise NkiError(f"cannot reshape on-chip tile {self.name!r} of shape {self.shape} to {dims}: the "
                           f"partition axis (first, {self.shape[par]}) must stay first with the same size; only "
                           f"the free axes can be regrouped")
        free = _c_strides(self.shape[1:])
        if self.strides is None or self.oob or tuple(self.strides[1:]) != free:
            raise NkiError(f"cannot reshape {self.name!r}: its free elements are not contiguous in the tile "
                           f"(a strided or gathered view); copy it to a tile of its own first")
        view = Tile(self.alloc, dims, self.offset, (self.strides[0], *_c_strides(dims[1:])))
        view._par = 0
        return view

    @checked("tensor.ap")
    def ap(self, *pattern_args: Any, offset: Any = 0, scalar_offset: Any = None, vector_offset: Any = None,
           indirect_dim: int = 0, dtype: Any = None, pattern: Any = None) -> Tile:
        """A hardware access pattern on the whole tensor (NKI "Access Patterns" deep dive, nki >= 0.2):
        the tensor flattened to 1-D, read as nested loops of [step, num] pairs (outermost first) from
        `offset`, in elements; the view's shape is the nums. On SBUF/PSUM the first pair walks the
        partitions and its step must be the tensor's free size (partitions are read contiguously)."""
        if pattern is None:
            rest: tuple[Any, ...] = ()
            if pattern_args and _is_pair(pattern_args[0]):  # t.ap([32, 16], [1, 32]) as the docs also write
                pattern = list(pattern_args)
                while pattern and not _is_pair(pattern[-1]):
                    rest = (pattern.pop(), *rest)
            elif pattern_args:
                pattern, rest = pattern_args[0], pattern_args[1:]
            else:
                raise NkiError(f"{self.name}.ap() needs a pattern: a list of [step, num] pairs")
            if rest:
                offset = rest[0]
        if scalar_offset is not None or vector_offset is not None:
            raise NotEmulatedError("ap(scalar_offset=/vector_offset=) is part of NKI but not of the speedpatch emulator "
                              "(dynamic addressing from SBUF values); use a constant offset")
        if dtype is not None and as_dtype(dtype) != self.dtype:
            raise NotEmulatedError(f"ap(dtype=) reinterpret casts ({self.dtype!r} to {as_dtype(dtype)!r}) are part of NKI "
                              f"but not of the speedpatch emulator; keep the tensor's dtype")
        if self.strides is None or self.offset != 0 or self.shape != self.alloc.shape:
            raise NkiError(f"cannot specify an access pattern on an already indexed tensor ({self.name!r}); call "
                           f".ap() on the nl.ndarray itself")
        try:
            pairs = [(int(step), int(num)) for step, num in pattern]
            start = int(offset)
        except (TypeError, ValueError):
            raise NkiError(f"{self.name}.ap(): the pattern must be a list of [step, num] pairs of ints and the "
                           f"offset an int, got {pattern!r} and {offset!r}") from None
        if not pairs:
            raise NkiError(f"{self.name}.ap(): empty pattern")
        if any(num <= 0 for _, num in pairs) or any(step < 0 for step, _ in pairs) or start < 0:
            raise NkiError(f"{self.name}.ap({pairs}, offset={start}): every num must be positive, steps and the "
                           f"offset non-negative")
        total = math.prod(self.alloc.shape)
        last = start + sum(step * (num - 1) for step, num in pairs)
        if last >= total:
            raise NkiError(f"{self.name}.ap({pairs}, offset={start}) reaches element {last} of a tensor of {total} "
                           f"elements {self.alloc.shape}: out of bounds")
        par = None
        if self.buffer.kind != "hbm":
            free = math.prod(self.alloc.shape[self.alloc.par_axis + 1:])
            if pairs[0][0] != free and pairs[0][1] > 1:
                raise NkiError(f"{self.name}.ap(): the first [step, num] pair walks the partitions of this "
                               f"{self.buffer.name} tensor and its step must be the free size {free} (partitions "
                               f"are accessed contiguously), got {pairs[0][0]}")
            if len(pairs) > 5:
                raise NkiError(f"{self.name}.ap(): at most 4 free dimensions after the partition pair on "
                               f"{self.buffer.name}, got {len(pairs) - 1}")
            par = 0
        view = Tile(self.alloc, tuple(num for _, num in pairs), start, tuple(step for step, _ in pairs))
        view._par = par
        return view

    def __getattr__(self, name: str) -> Any:
        # only for names the class does not define: NkiTensor methods not emulated say so by name
        if name in VIEW_METHODS_NOT_EMULATED:
            raise NotEmulatedError(not_emulated_view_message(name))
        raise AttributeError(f"tile {self.alloc.name!r} has no attribute {name!r}")

    # ---- NkiTensor view methods (nki.language.NkiTensor, newer NKI): strided views, no data moved --------
    @checked("tensor.view")
    def view(self, dtype: Any) -> Tile:
        """The same bits read as another type of the same width (t.view(nl.float32) of an int32 tile; public
        kernels build float thresholds from integer bit patterns this way, e.g. nki-samples exact_topk_mask;
        the hardware reinterpret cast of the NKI Access Patterns deep dive's ap(dtype=)). No data moves; only
        types the emulator stores in their own width (float32, int/uint 8/16/32) can be viewed."""
        try:
            target = as_dtype(dtype)
        except NkiError:
            raise NkiError(f"{self.name}.view({dtype!r}): a view reinterprets the dtype; shapes change with "
                           f"reshape / reshape_dim") from None
        own = self.dtype
        stored = {d.name for d in (own, target) if np.dtype(d.storage).itemsize == d.itemsize}
        if own.itemsize != target.itemsize:
            raise NkiError(f"{self.name}.view({target!r}): {own!r} is {own.itemsize} bytes and {target!r} "
                           f"{target.itemsize}; a reinterpret view keeps the element width")
        if "tfloat32" in (own.name, target.name) and own != target:
            # fp32 bits read as tf32 would reach the Tensor engine's one-pass tf32 matmul unrounded (fp32
            # precision at the 16-bit rate); the emulator converts to tf32 only by rounding (dtypes.round_tf32)
            raise NotEmulatedError(f"{self.name}.view({target!r}) from {own!r} is part of NKI but not of the "
                                   f"speedpatch emulator; convert to tf32 with a casting copy or load "
                                   f"(nl.load(..., dtype=nl.tfloat32), nisa.tensor_copy(..., dtype=nl.tfloat32))")
        if stored != {own.name, target.name}:
            raise NotEmulatedError(f"{self.name}.view({target!r}) from {own!r} is part of NKI but not of the "
                                   f"speedpatch emulator (it stores bf16/fp16/fp8 widened to float32); views "
                                   f"between float32 and 32/16/8-bit integer types are emulated")
        if self.strides is None or self.oob or self._indirect:
            raise NkiError(f"{self.name}.view(): apply it to a tile or a slice of it, not a gathered view")
        view = Tile(self.alloc, self.shape, self.offset, self.strides, self.lo, self.hi)
        view._par = self._par
        view._reinterpret = None if target == self.alloc.dtype else target
        return view

    def _view_parts(self, what: str) -> tuple[list[int], list[int], int | None]:
        if self._reinterpret is not None:
            raise NkiError(f"{what} of {self.name!r} before .view({self._reinterpret!r}), not after")
        if self.strides is None or self.oob:
            raise NotEmulatedError(f"{what} on a gathered or out-of-bounds view is not emulated; apply it to the "
                                   f"tensor or a slice of it")
        par = self.par_axis if self.buffer.kind != "hbm" else None
        return list(self.shape), list(self.strides), par

    def _dim(self, dim: Any, ndim: int, what: str) -> int:
        d = int(dim)
        if not -ndim <= d < ndim:
            raise NkiError(f"{self.name}.{what}: dim {d} out of range for a {ndim}-D view {self.shape}")
        return d % ndim

    def _derived(self, shape: list[int], strides: list[int], offset: int, par: int | None) -> Tile:
        view = Tile(self.alloc, tuple(shape), offset, tuple(strides))
        view._par = par
        return view

    @checked("tensor.slice")
    def slice(self, dim: Any, start: Any, end: Any, step: Any = 1) -> Tile:
        """Elements start:end:step along dim."""
        shape, strides, par = self._view_parts("slice")
        d = self._dim(dim, len(shape), "slice")
        a, b, st = int(start), int(end), int(step)
        if st <= 0 or not 0 <= a < b <= shape[d]:
            raise NkiError(f"{self.name}.slice(dim={d}, start={a}, end={b}, step={st}) is outside 0..{shape[d]} "
                           f"or empty (step must be positive)")
        offset = self.offset + a * strides[d]
        shape[d], strides[d] = -(-(b - a) // st), strides[d] * st
        return self._derived(shape, strides, offset, par)

    @checked("tensor.select")
    def select(self, dim: Any, index: Any) -> Tile:
        """The view at one index of dim, without that dimension."""
        shape, strides, par = self._view_parts("select")
        d = self._dim(dim, len(shape), "select")
        i = int(index)
        if not 0 <= i < shape[d]:
            raise NkiError(f"{self.name}.select(dim={d}, index={i}): index out of range 0..{shape[d] - 1}")
        if par is not None and d == par:
            raise NkiError(f"{self.name}.select(dim={d}): the partition dimension of an on-chip tensor cannot be "
                           f"selected away; slice it instead")
        offset = self.offset + i * strides[d]
        del shape[d], strides[d]
        return self._derived(shape, strides, offset, None if par is None else par - (d < par))

    @checked("tensor.permute")
    def permute(self, dims: Any) -> Tile:
        """Dimensions reordered: axis i of the result is axis dims[i] of this view."""
        shape, strides, par = self._view_parts("permute")
        order = [self._dim(x, len(shape), "permute") for x in dims]
        if sorted(order) != list(range(len(shape))):
            raise NkiError(f"{self.name}.permute({list(dims)}) is not a permutation of {len(shape)} dimensions")
        if par is not None and order.index(par) != par:
            raise NkiError(f"{self.name}.permute({list(dims)}): the partition dimension of an on-chip tensor must "
                           f"stay at position {par}")
        return self._derived([shape[x] for x in order], [strides[x] for x in order], self.offset,
                             None if par is None else order.index(par))

    @checked("tensor.broadcast")
    def broadcast(self, dim: Any, size: Any) -> Tile:
        """A size-1 dimension repeated size times (stride 0)."""
        shape, strides, par = self._view_parts("broadcast")
        d = self._dim(dim, len(shape), "broadcast")
        if shape[d] != 1:
            raise NkiError(f"{self.name}.broadcast(dim={d}): only a size-1 dimension broadcasts, it is {shape[d]}")
        if par is not None and d == par:
            raise NkiError(f"{self.name}.broadcast(dim={d}): the partition dimension does not broadcast in a view "
                           f"(use broadcast_to, a TensorE copy)")
        shape[d], strides[d] = int(size), 0
        return self._derived(shape, strides, self.offset, par)

    @checked("tensor.expand_dim")
    def expand_dim(self, dim: Any) -> Tile:
        """A new size-1 dimension at position dim."""
        shape, strides, par = self._view_parts("expand_dim")
        d = self._dim(dim, len(shape) + 1, "expand_dim")
        shape.insert(d, 1)
        strides.insert(d, 0)
        return self._derived(shape, strides, self.offset, None if par is None else par + (d <= par))

    @checked("tensor.squeeze_dim")
    def squeeze_dim(self, dim: Any) -> Tile:
        """The size-1 dimension dim removed."""
        shape, strides, par = self._view_parts("squeeze_dim")
        d = self._dim(dim, len(shape), "squeeze_dim")
        if shape[d] != 1:
            raise NkiError(f"{self.name}.squeeze_dim(dim={d}): the dimension has size {shape[d]}, not 1")
        if par is not None and d == par:
            raise NkiError(f"{self.name}.squeeze_dim(dim={d}): the partition dimension cannot be removed")
        del shape[d], strides[d]
        return self._derived(shape, strides, self.offset, None if par is None else par - (d < par))

    @checked("tensor.reshape_dim")
    def reshape_dim(self, dim: Any, shape: Any) -> Tile:
        """Dimension dim split into several (one of them may be -1: inferred), row-major."""
        dims, strides, par = self._view_parts("reshape_dim")
        d = self._dim(dim, len(dims), "reshape_dim")
        parts = [int(x) for x in shape]
        if parts.count(-1) > 1 or any(x == 0 or x < -1 for x in parts):
            raise NkiError(f"{self.name}.reshape_dim(dim={d}, shape={parts}): sizes must be positive (one -1 at most)")
        known = math.prod(x for x in parts if x != -1)
        if -1 in parts:
            if dims[d] % known:
                raise NkiError(f"{self.name}.reshape_dim(dim={d}, shape={parts}): {dims[d]} is not divisible by {known}")
            parts[parts.index(-1)] = dims[d] // known
        if math.prod(parts) != dims[d]:
            raise NkiError(f"{self.name}.reshape_dim(dim={d}, shape={parts}): the sizes multiply to "
                           f"{math.prod(parts)}, the dimension has {dims[d]}")
        if par is not None and d == par and len(parts) > 1:
            raise NkiError(f"{self.name}.reshape_dim(dim={d}): the partition dimension of an on-chip tensor cannot "
                           f"be split")
        sub = [strides[d] * math.prod(parts[i + 1:]) for i in range(len(parts))]
        new_par = None if par is None else (par if par < d else par + len(parts) - 1 if par > d else par)
        return self._derived(dims[:d] + parts + dims[d + 1:], strides[:d] + sub + strides[d + 1:], self.offset,
                             new_par)

    @checked("tensor.broadcast_to")
    def broadcast_to(self, shape: Any) -> Tile:
        """A (1, F) tile copied to (P, F) partitions (a TensorE matmul against ones on hardware)."""
        from speedpatch.targets.nki.emulator import ops

        return ops.broadcast_partitions(self, tuple(int(d) for d in shape))

    def __setitem__(self, index: Any, value: Any) -> None:
        from speedpatch.targets.nki.emulator import language

        target = self[index]
        if isinstance(value, Tile) and value._inplace:
            # `t[i] += v` is t[i].__iadd__(v) then t[i] = (that result): the update already happened
            value._inplace = False
            if value.alloc is target.alloc and value.region() == target.region():
                return
        language.copy_into(target, value)

    # ---- structure the ops need -----------------------------------------------------------------
    @property
    def pos(self) -> np.ndarray:
        """Flat element positions (-1 where out of bounds)."""
        if self._pos is None:
            pos = np.full(self.shape, self.offset, dtype=np.int64)
            for axis, (n, s) in enumerate(zip(self.shape, self.strides or (), strict=False)):
                shape = [1] * self.ndim
                shape[axis] = n
                pos = pos + (np.arange(n, dtype=np.int64) * s).reshape(shape)
            if self.oob:
                pos = np.where(self.valid_mask(), pos, -1)
            self._pos = pos
        return self._pos

    def valid_mask(self) -> np.ndarray:
        if self.strides is None:
            return self.pos >= 0
        mask = np.zeros(self.shape, dtype=bool)
        mask[self._box()] = True
        return mask

    def _box(self) -> tuple[builtins.slice, ...]:  # builtins': Tile.slice is the NkiTensor method
        return tuple(slice(lo, hi) for lo, hi in zip(self.lo, self.hi, strict=True))

    @property
    def par_axis(self) -> int:
        """The view axis that is the allocation's partition axis (tracked through strided indexing; for
        gathers and views that index the partition axis away, the leading axis after the block axes)."""
        if self._par is not None:
            return self._par
        if self.shape == self.alloc.shape:
            return self.alloc.par_axis
        return max(0, self.alloc.par_axis - (len(self.alloc.shape) - self.ndim))

    @property
    def partitions(self) -> int:
        return self.shape[self.par_axis] if self.shape else 1

    @property
    def free_size(self) -> int:
        size = math.prod(self.shape) if self.shape else 1
        return size // max(1, self.partitions)

    @property
    def valid_count(self) -> int:
        if self.strides is not None:
            return math.prod(max(0, h - a) for a, h in zip(self.lo, self.hi, strict=True))
        return int(np.count_nonzero(self.pos >= 0)) if self.oob else self.pos.size

    def minor_stride_bytes(self) -> int:
        """Stride of the most-minor free axis in bytes (0 when contiguous). For a gather view, the widest step
        between neighbours along that axis: an index array that is no progression (a permutation of strided
        positions) read every eighth element without the strided penalty (red-team: groups of 8 summed,
        correct at 66.1 us against the honest strided 93.5 us)."""
        if self.ndim < 2:
            return 0
        # The partition axis is no free axis: a view with one element per partition (`t[i_p, j]`, shape
        # (128, 1)) has no free stride at all, whatever the partitions' distance in the allocation.
        free_axes = [axis for axis in reversed(range(self.ndim)) if axis != self.par_axis and self.shape[axis] > 1]
        if not free_axes:
            return 0
        axis = free_axes[0]
        if self.strides is None:
            pos = np.asarray(self.pos)
            a, b = np.moveaxis(pos, axis, -1)[..., :-1], np.moveaxis(pos, axis, -1)[..., 1:]
            steps = np.abs(b - a)[(a >= 0) & (b >= 0)]
            return int(steps.max(initial=0)) * self.dtype.itemsize
        return abs(self.strides[axis]) * self.dtype.itemsize

    def contiguous_runs(self, mask: np.ndarray | None = None) -> int:
        """Contiguous runs of memory the (in-bounds, unmasked) elements form: DMA buffers."""
        if self.strides is not None:
            shape = [h - a for a, h in zip(self.lo, self.hi, strict=True)]
            count = math.prod(shape)
            if count == 0:
                return 0
            run, expect = 1, 1
            for n, s in zip(reversed(shape), reversed(self.strides), strict=True):
                if n == 1:
                    continue
                if s != expect:
                    break
                run *= n
                expect = s * n
            if mask is None:
                return count // run
            # the selected elements of each run: every stretch of them is a run of its own (a mask selecting every
            # other element of a row was one descriptor for half the bytes: red-team, 2 * x[:, ::2] correct at
            # 13.1 us against the honest 16.9 us)
            blocks = np.asarray(mask[self._box()], dtype=bool).reshape(-1, run)
            return int(np.count_nonzero(blocks[:, 0]) + np.count_nonzero(blocks[:, 1:] & ~blocks[:, :-1]))
        flat = self.pos if mask is None else np.where(mask, self.pos, -1)
        flat = flat.reshape(-1)
        flat = flat[flat >= 0]
        if flat.size <= 1:
            return int(flat.size)
        return 1 + int(np.count_nonzero(np.diff(flat) != 1))

    def region(self) -> costmodel.Region:
        if self._region is None:
            if self.strides is None:
                self._region = self._gather_region()
                if self.alloc.alias_moduli:
                    self._region = self.alloc.physical_region(self._region)
            else:  # the same view recurs every iteration: cache its region on the allocation
                key = (self.offset, self.shape, self.strides, self.lo, self.hi)
                cache = self.alloc.region_cache
                region = cache.get(key)
                if region is None:
                    region = self._strided_region(self.strides)
                    if self.alloc.alias_moduli:
                        region = self.alloc.physical_region(region)
                    if len(cache) < 4096:
                        cache[key] = region
                self._region = region
        return self._region

    def _gather_region(self) -> costmodel.Region:
        valid = self.pos[self.pos >= 0] if self.oob else self.pos
        if valid.size == 0:
            return tuple((0, -1) for _ in self.alloc.shape)
        coords = np.unravel_index(valid.reshape(-1), self.alloc.shape)
        return tuple((int(c.min()), int(c.max())) for c in coords)

    def _strided_region(self, strides: tuple[int, ...]) -> costmodel.Region:
        """Bounding box in allocation coordinates of the in-bounds elements (strides: this view's)."""
        ashape, astrides = self.alloc.shape, self.alloc.strides
        if any(h <= a for a, h in zip(self.lo, self.hi, strict=True)):
            return tuple((0, -1) for _ in ashape)
        start = self.offset + sum(a * s for a, s in zip(self.lo, strides, strict=True))
        first = []
        rest = start
        for s in astrides:
            first.append(rest // s)
            rest %= s
        last = list(first)
        for a, h, s in zip(self.lo, self.hi, strides, strict=True):
            n = h - a
            if n <= 1 or s == 0:
                continue
            for axis, astride in enumerate(astrides):
                if s % astride == 0 and first[axis] + (s // astride) * (n - 1) < ashape[axis] and s >= astride:
                    last[axis] += (s // astride) * (n - 1)
                    break
            else:  # the view axis crosses allocation axes (a reshaped HBM view): be conservative
                return self.alloc.full_region()
        return tuple((f, min(la, n - 1)) for f, la, n in zip(first, last, ashape, strict=True))

    def access(self) -> costmodel.Access:
        alloc = self.alloc
        if alloc.pending_dma is not None:  # the load's result is used: issue the load now
            alloc.pending_dma()
        if alloc.slot is not None and alloc.slot.evicted:  # its PSUM bank was given away: more than 8 live
            raise NkiError(alloc.slot.evicted)
        if alloc.slot is not None and alloc.slot.spilled:  # the compiler spilled it: reload it first
            costmodel.current().reload(alloc)
        region = self.region()
        if alloc.block_slots:  # the blocks this view touches, those spilled
            costmodel.current().reload(alloc, region)
        return (alloc, region)

    # ---- data ----------------------------------------------------------------------------------
    def _mask(self, mask: Any) -> np.ndarray | None:
        if mask is None:
            return None
        mask = fit_mask(mask, [self])
        try:
            return np.broadcast_to(np.asarray(mask, dtype=bool), self.shape)
        except ValueError as exc:
            raise NkiError(f"mask of shape {np.shape(mask)} does not fit tile shape {self.shape}") from exc

    def _check_bounds(self, mask: np.ndarray | None) -> None:
        if not self.oob:
            return
        bad = ~self.valid_mask()
        if mask is not None:
            bad &= mask
        if bad.any():
            raise NkiError(f"out-of-bounds access to {self.name!r} of shape {self.alloc.shape}: {self.oob}")

    def _view(self, strides: tuple[int, ...], writeable: bool = False, data: np.ndarray | None = None) -> np.ndarray:
        """NumPy view of the in-bounds box of a strided tile (strides: this view's). data: another array of
        the allocation's shape to view instead of its values."""
        if data is None:
            data = self.alloc.data
        shape = tuple(h - a for a, h in zip(self.lo, self.hi, strict=True))
        if any(n <= 0 for n in shape):
            return np.empty(tuple(max(0, n) for n in shape), dtype=data.dtype)
        start = self.offset + sum(a * s for a, s in zip(self.lo, strides, strict=True))
        item = data.itemsize
        view = np.ndarray(shape, data.dtype, buffer=data, offset=start * item,
                          strides=tuple(s * item for s in strides))
        if not writeable:
            view.flags.writeable = False
        return view

    def read(self, mask: Any = None) -> np.ndarray:
        """The values (float32 for float types), zero where masked out. May be a read-only view."""
        m = self._mask(mask)
        self._check_bounds(m)
        if self.alloc.unwritten_psum is not None:
            read_of_unwritten_psum(self, m)
        if self.strides is not None:
            if self.oob:
                values = np.zeros(self.shape, dtype=self.alloc.data.dtype)
                values[self._box()] = self._view(self.strides)
            else:
                values = self._view(self.strides)
        else:
            values = self.alloc.flat[np.where(self.pos < 0, 0, self.pos)]
        if m is not None:
            values = np.where(m, values, 0).astype(self.alloc.data.dtype, copy=False)
        if self._reinterpret is not None:  # view(): the stored bits as the other type
            values = np.ascontiguousarray(values).view(self._reinterpret.storage)
        return values

    def write(self, values: Any, mask: Any = None, exact: bool = False) -> None:
        """Store values, rounded to this tile's dtype (exact=True: they already are)."""
        global _writes
        _writes += 1
        self._store(values, mask, exact)
        if self.alloc.unwritten_psum is not None:
            self._mark_written(mask)
        if self.alloc.alias_moduli:  # mod_alloc: the blocks on the same memory now read these values too
            m = self._mask(mask)
            pos = self.pos if m is None else self.pos[m]
            self.alloc.mirror(pos[pos >= 0])
            written = self.alloc.psum_written
            if written is not None:
                self.alloc.mirror(pos[pos >= 0], written)
                if written.all():
                    self.alloc.unwritten_psum = self.alloc.psum_written = None

    def _covers_allocation(self) -> bool:
        alloc = self.alloc
        return (self.strides == alloc.strides and self.offset == 0 and self.shape == alloc.shape and not self.oob
                and self._reinterpret is None)

    def _mark_written(self, mask: Any) -> None:
        """Record the elements of a PSUM tile this write reached (Allocation.psum_written); once every element
        is written the tile is an ordinary one."""
        alloc = self.alloc
        if mask is None and alloc.psum_written is None and self._covers_allocation():
            alloc.unwritten_psum = None  # the common case: the first write is the whole tile
            return
        if alloc.psum_written is None:
            alloc.psum_written = np.zeros(alloc.shape, dtype=bool)
        m = self._mask(mask)
        if self.strides is not None:
            view = self._view(self.strides, writeable=True, data=alloc.psum_written)
            if m is None:
                view[...] = True
            else:
                view[m[self._box()] if self.oob else m] = True
        else:
            alloc.psum_written.reshape(-1)[self._positions(m)] = True
        if not alloc.alias_moduli and alloc.psum_written.all():  # (aliased blocks: after write() mirrors it)
            alloc.unwritten_psum = alloc.psum_written = None

    def _positions(self, m: np.ndarray | None) -> np.ndarray:
        """The flat positions of a gather view's in-bounds elements that m selects."""
        sel = self.pos >= 0
        return self.pos[sel if m is None else sel & m]

    def unwritten_count(self, m: np.ndarray | None) -> int:
        """How many of the PSUM elements this view reads (in bounds, selected by m) no write has reached."""
        alloc = self.alloc
        if alloc.psum_written is None:
            alloc.psum_written = np.zeros(alloc.shape, dtype=bool)
        if self.strides is not None:
            written = self._view(self.strides, data=alloc.psum_written)
            if m is not None:
                written = written[m[self._box()] if self.oob else m]
        else:
            written = alloc.psum_written.reshape(-1)[self._positions(m)]
        return int(written.size - np.count_nonzero(written))

    def _store(self, values: Any, mask: Any, exact: bool) -> None:
        m = self._mask(mask)
        self._check_bounds(m)
        try:
            vals = values if (isinstance(values, np.ndarray) and values.shape == self.shape) else \
                np.broadcast_to(np.asarray(values), self.shape)
        except ValueError as exc:
            raise NkiError(
                f"cannot write a value of shape {np.shape(values)} into {self.name!r} tile of shape {self.shape}"
            ) from exc
        if not exact:
            vals = self.dtype.round(vals)
        if self._reinterpret is not None:  # view(): store the bits of the viewed type
            vals = np.ascontiguousarray(np.asarray(vals, dtype=self._reinterpret.storage)).view(self.alloc.data.dtype)
        if self.strides is not None:
            box = self._box()
            view = self._view(self.strides, writeable=True)
            if self.oob:
                vals = vals[box]
                m = m[box] if m is not None else None
            if m is None:
                view[...] = vals
            else:
                np.copyto(view, vals, where=m, casting="unsafe")
            return
        flat = self.alloc.flat
        valid = self.pos >= 0
        sel = valid if m is None else (valid & m)
        if sel.all():
            flat[self.pos.reshape(-1)] = vals.reshape(-1)
        else:
            flat[self.pos[sel]] = vals[sel]

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
        self._inplace = True
        return self

    def __bool__(self) -> bool:
        raise NkiError("a tile has no truth value on the host; kernel control flow cannot depend on tile data")


def read_of_unwritten_psum(tile: Tile, m: np.ndarray | None) -> None:
    """An engine reads a PSUM tile not every element of which has been written (m: the read's mask). PSUM
    starts at zero in the emulator only because a matmul into a fresh accumulator overrides instead of
    accumulating (ops.matmul and ops.accumulate_into read it through accumulator_values); on hardware the
    bank holds whatever it held before. Red-team: an accumulator taken as nl.ndarray(buffer=nl.psum) and
    summed into by VectorE was correct here (zeros) and garbage on the device; one from nl.zeros(buffer=
    nl.psum) got its memset for free. So nl.zeros pays its VectorE memset at the first read of an element
    nothing wrote, and an nl.ndarray is refused. The check is per element: a (128, 512) nl.ndarray PSUM tile
    a matmul wrote in columns 0:128 only, then copied whole, read zeros in the other 384 columns (red-team);
    reading only what was written is fine."""
    alloc = tile.alloc
    missing = tile.unwritten_count(m)
    if not missing:
        return
    if alloc.unwritten_psum == "zeros":
        from speedpatch.targets.nki.emulator import ops

        alloc.unwritten_psum = alloc.psum_written = None  # the memset writes all of it (zeros, as stored)
        free = math.prod(alloc.shape) // max(1, alloc.shape[alloc.par_axis])
        costmodel.current().issue("vector", ops.engine_cost_ns("vector", free), [], [alloc.tile().access()],
                                  latency_ns=ops.access_latency_ns("vector"))
        return
    total = math.prod(alloc.shape)
    written = alloc.psum_written
    never = total - (int(np.count_nonzero(written)) if written is not None else 0)
    raise NkiError(f"{alloc.name!r} is read before anything wrote it ({missing} of the elements read; {never} of "
                   f"its {total} elements were never written): a PSUM tile from nl.ndarray holds whatever its bank "
                   f"held before (on hardware); start it with nl.zeros, or read only what a matmul wrote")


def accumulator_values(dst: Tile) -> np.ndarray:
    """dst's values as a matmul accumulating into it sees them: an unwritten PSUM tile is zero (the first
    matmul overrides the bank)."""
    kind, dst.alloc.unwritten_psum = dst.alloc.unwritten_psum, None
    try:
        return dst.read()
    finally:
        dst.alloc.unwritten_psum = kind


# ---- indexing -------------------------------------------------------------------------------------------


def _grid_iters(c: Any) -> dict[tuple[int, int], tuple[int, int]] | None:
    return getattr(c, "grid_iters", None) if isinstance(c, np.ndarray) else None


def grid_index_space(comps: list[Any]) -> tuple[tuple[int, int], ...] | None:
    """The axes of the tile an index made of nl.mgrid expressions (and ints) selects: one per grid iterator
    the index uses (NKI's index expressions are affine expressions of iterators: the programming model's
    `Index`). The iterators of more than one element keep NumPy's order of the open grids (their grid-axis
    order), so the elements are NumPy's and a store through out[i * 128 + i_f, i_p] still writes a (P, F)
    tile transposed (the SD-attention tutorial). What differs is the shape: a grid axis the index does not
    use is no tile axis, and a one-element iterator is an axis where the index names it. So with i_p_io,
    i_f_io, i_p_param = nl.mgrid[0:128, 0:N, 0:1] (the layernorm tutorials) gamma.reshape((1, N))[i_p_param,
    i_f_io] is a (1, N) tile that broadcast_to((128, N)) spreads over the partitions, and with ix, iw, iy =
    nl.mgrid[0:128, 0:1, 0:N] (the rmsnorm tutorial) a[i * 128 + ix, iy] is (128, N), whose nl.sum(axis=[1])
    sums the row, as that tutorial's own NumPy check requires; NumPy's reading of the open grids gives
    (1, N, 1) and (128, 1, N). None for any other index (slices, None, nl.arange arrays): NumPy's rules."""
    grids = [c for c in comps if not isinstance(c, int)]
    if not grids or not all(_grid_iters(c) is not None for c in grids):
        return None
    first: dict[tuple[int, int], int] = {}  # iterator -> the index position that first names it
    where: dict[tuple[int, int], tuple[int, int]] = {}  # iterator -> (size, array axis from the end)
    for at, c in enumerate(comps):
        iters = _grid_iters(c)
        for key, info in sorted((iters or {}).items(), key=lambda kv: kv[1][1]):
            first.setdefault(key, at)
            where.setdefault(key, info)
    wide = [key for key in first if where[key][0] > 1]
    axes = [where[key][1] for key in wide]
    if len(set(axes)) == len(axes):  # NumPy's order (open grids broadcast from the right)
        wide.sort(key=lambda key: where[key][1])
    space = list(wide)
    for key in [k for k in first if where[k][0] == 1]:  # one-element iterators where the index names them
        before = sum(1 for k in space if first[k] < first[key] or (first[k] == first[key] and k in wide
                                                                     and where[k][1] < where[key][1]))
        space.insert(before, key)
    return tuple(space)


def relayout(expr: Any, space: tuple[tuple[int, int], ...]) -> np.ndarray | None:
    """A grid expression as a plain index array over the given iterator space (an axis per iterator, size 1
    where the expression does not depend on it); None if its shape is not that of what it depends on."""
    iters = _grid_iters(expr)
    if iters is None or not all(key in space for key in iters):
        return None
    arr = np.asarray(expr).view(np.ndarray)
    deps = sorted(iters.items(), key=lambda kv: kv[1][1])  # left to right in the array
    sizes = [size for _, (size, _) in deps]
    if arr.size != math.prod(sizes) or arr.ndim < max([-axis for _, (_, axis) in deps], default=0):
        return None
    for axis, n in enumerate(arr.shape):
        if n != 1 and not any(arr.ndim + a == axis for _, (_, a) in deps):
            return None
    sub = arr.reshape(sizes)
    targets = [space.index(key) for key, _ in deps]
    sub = sub.transpose(np.argsort(targets))
    shape = [1] * len(space)
    for t, n in zip(targets, sizes, strict=True):
        shape[t] = n
    return sub.reshape(shape)


def fit_mask(mask: Any, tiles: list[Any]) -> Any:
    """An nl.mgrid predicate (mask=(i * 128 + i_p < n)) laid out over a tile's axes: over the iterator
    space of a tile indexed with grid expressions that include the mask's iterators (a free-axis mask of a
    bn_stats chunk), otherwise -- a computed tile, which names no iterators -- as is if it fits the first
    tile's shape, else over the axes it depends on, leading (a partition predicate of a 3-D grid is (P, 1)
    on a 2-D tile)."""
    iters = _grid_iters(mask)
    if iters is None:
        return mask
    on = [t for t in tiles if isinstance(t, Tile)]
    for t in on:
        if t._iters is not None and all(key in t._iters for key in iters):
            laid = relayout(mask, t._iters)
            if laid is not None:
                return laid
    plain = np.asarray(mask).view(np.ndarray)
    if not on:
        return plain
    try:
        np.broadcast_shapes(plain.shape, on[0].shape)
        return plain
    except ValueError:
        pass
    own = relayout(mask, tuple(key for key, _ in sorted(iters.items(), key=lambda kv: kv[1][1])))
    if own is None or own.ndim > on[0].ndim:
        return plain
    return own.reshape(own.shape + (1,) * (on[0].ndim - own.ndim))


def _normalize(index: Any, ndim: int, name: str) -> list[Any]:
    comps = list(index) if isinstance(index, tuple) else [index]
    out: list[Any] = []
    for c in comps:
        if isinstance(c, DynSlice):
            c = c.as_slice()
        elif isinstance(c, Tile):
            raise NkiError("indexing with tile values is not supported by the emulator; use nl.ds or arange")
        elif isinstance(c, (np.integer,)):
            c = int(c)
        elif isinstance(c, np.ndarray) and c.ndim == 0:
            c = int(c)
        elif not isinstance(c, (int, slice, np.ndarray)) and c is not None and c is not Ellipsis:
            arr = np.asarray(c)
            c = int(arr) if arr.ndim == 0 else arr
        out.append(c)
    if any(c is Ellipsis for c in out):
        at = out.index(Ellipsis)
        fill = ndim - (len(out) - 1 - sum(c is None for c in out))
        out = out[:at] + [slice(None)] * fill + out[at + 1 :]
    if len([c for c in out if c is not None]) > ndim:
        raise NkiError(f"too many indices for {name!r} of shape ({ndim}-D)")
    for c in out:
        if isinstance(c, np.ndarray) and c.dtype.kind not in "iu":
            raise NkiError(f"index into {name!r} must be integers, got {c.dtype}")
        if isinstance(c, slice) and c.step is not None and int(c.step) <= 0:
            raise NkiError(f"slice step must be positive when indexing {name!r}")
    return out


def _is_pair(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and len(value) == 2 and all(
        isinstance(v, (int, np.integer)) for v in value)


def _gather_par_axis(comps: list[Any], parent_par: int, ndim: int) -> int | None:
    """The partition axis of a gather view, when the index says which it is: an index made of arrays and
    ints only (NumPy's result then has the arrays' broadcast shape) whose partition component varies along
    one broadcast axis -- the average-pool tutorial's in_tile[i_0, pool*i_1 + i_2, pool*i_3 + i_4] with
    i_0 = nl.arange(128)[:, None, None, None, None] is a 5-D view whose partitions are its axis 0. None
    (the default rule) otherwise."""
    real = [c for c in comps if c is not None]
    if len(real) != len(comps) or not all(isinstance(c, (np.ndarray, int)) for c in real):
        return None
    if parent_par >= len(real) or not isinstance(real[parent_par], np.ndarray):
        return None
    arrays = [c for c in real if isinstance(c, np.ndarray)]
    nb = max(a.ndim for a in arrays)
    if nb != ndim:
        return None
    shape = (1,) * (nb - real[parent_par].ndim) + real[parent_par].shape
    varying = [i for i, n in enumerate(shape) if n != 1]
    return varying[0] if len(varying) == 1 else None


def _valid_range(v0: int, step: int, n: int, lo: int, hi: int) -> tuple[int, int]:
    """Indices t in [0, n) with lo <= v0 + step * t < hi (step > 0)."""
    t_lo = max(0, -(-(lo - v0) // step))
    t_hi = min(n, -(-(hi - v0) // step))
    return (t_lo, max(t_lo, t_hi))


def _progression(arr: np.ndarray, nb: int) -> tuple[int, int, int, int] | None:
    """(axis in the broadcast shape or -1, start, step, size) when arr is an arithmetic progression along
    at most one axis; None otherwise."""
    shape = (1,) * (nb - arr.ndim) + arr.shape
    big = [i for i, n in enumerate(shape) if n != 1]
    flat = arr.reshape(-1)
    if not big:
        return (-1, int(flat[0]), 1, 1)
    if len(big) > 1:
        return None
    v0 = int(flat[0])
    if flat.size == 1:
        return (big[0], v0, 1, 1)
    step = int(flat[1]) - v0
    if step <= 0 or not np.array_equal(flat, v0 + step * np.arange(flat.size)):
        return None
    return (big[0], v0, step, flat.size)


def _strided_index(tile: Tile, comps: list[Any]) -> Tile | None:
    """tile[comps] as a strided view, or None when the index is a gather."""
    st = tile.strides
    assert st is not None
    offset = tile.offset
    arrays = [i for i, c in enumerate(comps) if isinstance(c, np.ndarray)]
    adv = [i for i, c in enumerate(comps) if isinstance(c, (np.ndarray, int))] if arrays else []
    out_shape: list[int] = []
    out_st: list[int] = []
    out_lo: list[int] = []
    out_hi: list[int] = []
    oob = tile.oob
    empty = False

    def oob_note(text: str) -> None:
        nonlocal oob
        oob = oob or text

    # advanced (array) part: one view axis per broadcast axis
    adv_dims: list[tuple[int, int, int, int]] = []
    par_parent = tile.par_axis
    par_j: int | None = None  # the broadcast axis that indexes the partition axis
    par_out: int | None = None  # the view axis that is the partition axis
    if arrays:
        try:
            bshape = np.broadcast_shapes(*[np.shape(comps[i]) for i in adv])
        except ValueError:
            raise NkiError(f"index arrays of {tile.name!r} do not broadcast together") from None
        nb = len(bshape)
        dims: list[tuple[int, int, int, int] | None] = [None] * nb
        axis = 0
        for comp in comps:
            if comp is None:
                continue
            if isinstance(comp, (np.ndarray, int)):
                if isinstance(comp, int):
                    prog: tuple[int, int, int, int] | None = (-1, comp, 1, 1)
                else:
                    prog = _progression(comp, nb)
                if prog is None:
                    return None
                j, v0, step, size = prog
                lo, hi = tile.lo[axis], tile.hi[axis]
                if j < 0:
                    offset += v0 * st[axis]
                    if not lo <= v0 < hi:
                        empty = True
                        oob_note(f"index {v0} on axis {axis} of size {tile.shape[axis]}")
                else:
                    if dims[j] is not None:
                        return None
                    t_lo, t_hi = _valid_range(v0, step, size, lo, hi)
                    if (t_lo, t_hi) != (0, size):
                        bad = v0 if t_lo > 0 else v0 + step * t_hi
                        oob_note(f"index {bad} on axis {axis} of size {tile.shape[axis]}")
                    offset += v0 * st[axis]
                    dims[j] = (size, st[axis] * step, t_lo, t_hi)
                    if axis == par_parent:
                        par_j = j
            axis += 1
        adv_dims = [d if d is not None else (bshape[j], 0, 0, bshape[j]) for j, d in enumerate(dims)]
        if any(n != 1 and s == 0 for n, s, _, _ in adv_dims):
            return None
    adjacent = bool(adv) and adv == list(range(adv[0], adv[-1] + 1))
    placed = not adv
    axis = 0
    for i, comp in enumerate(comps):
        if adv and not placed and (not adjacent or i == adv[0]):
            if par_j is not None:
                par_out = len(out_shape) + par_j
            for n, s, lo, hi in adv_dims:
                out_shape.append(n)
                out_st.append(s)
                out_lo.append(lo)
                out_hi.append(hi)
            placed = True
        if comp is None:
            out_shape.append(1)
            out_st.append(0)
            out_lo.append(0)
            out_hi.append(1)
            continue
        if i in adv:
            axis += 1
            continue
        n = tile.shape[axis]
        lo, hi = tile.lo[axis], tile.hi[axis]
        if isinstance(comp, int):
            offset += comp * st[axis]
            if not lo <= comp < hi:
                empty = True
                oob_note(f"index {comp} on axis {axis} of size {n}")
        else:
            start = 0 if comp.start is None else int(comp.start)
            stop = n if comp.stop is None else int(comp.stop)
            step = 1 if comp.step is None else int(comp.step)
            size = max(0, -(-(stop - start) // step))
            if size == 0:
                raise NkiError(f"empty slice {start}:{stop} on axis {axis} of {tile.name!r}")
            t_lo, t_hi = _valid_range(start, step, size, lo, hi)
            if start < 0 or stop > n or (t_lo, t_hi) != (0, size):
                oob_note(f"slice {start}:{stop} on axis {axis} of size {n}")
            offset += start * st[axis]
            if axis == par_parent:
                par_out = len(out_shape)
            out_shape.append(size)
            out_st.append(st[axis] * step)
            out_lo.append(t_lo)
            out_hi.append(t_hi)
        axis += 1
    while axis < tile.ndim:  # trailing axes not indexed
        if axis == par_parent:
            par_out = len(out_shape)
        out_shape.append(tile.shape[axis])
        out_st.append(st[axis])
        out_lo.append(tile.lo[axis])
        out_hi.append(tile.hi[axis])
        axis += 1
    if adv and not placed:
        if par_j is not None:
            par_out = len(out_shape) + par_j
        for n, s, lo, hi in adv_dims:
            out_shape.append(n)
            out_st.append(s)
            out_lo.append(lo)
            out_hi.append(hi)
    if empty:
        if not out_shape:
            return None  # a fully out-of-bounds scalar: the gather path describes it
        out_hi = list(out_lo)
    full = all(lo == 0 and hi == n for lo, hi, n in zip(out_lo, out_hi, out_shape, strict=True))
    view = Tile(tile.alloc, tuple(out_shape), offset, tuple(out_st), tuple(out_lo), tuple(out_hi),
                oob="" if full else (oob or "out of bounds"))
    view._par = par_out
    return view


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
    blocks = int(getattr(buffer, "_speedpatch_blocks", 0) or 0)
    free_tiles = tuple(getattr(buffer, "_speedpatch_free_tiles", ()) or ())
    return Allocation(shape, as_dtype(dtype), as_buffer(buffer), name, buffers=blocks, free_tiles=free_tiles).tile()


def hbm_tensor(array: np.ndarray, name: str) -> Tile:
    """A kernel argument: a host array copied into device HBM."""
    dtype = as_dtype(array.dtype)
    data = dtype.round(np.asarray(array, dtype=np.float32) if dtype.is_float else np.asarray(array))
    return Allocation(array.shape, dtype, shared_hbm, name, data=data.astype(dtype.storage, copy=False)).tile()


# NkiTensor view methods the emulator implements (served to isolated kernels) and the ones it does not.
VIEW_METHODS = frozenset({"slice", "select", "permute", "broadcast", "expand_dim", "squeeze_dim", "reshape_dim",
                          "view"})
VIEW_METHODS_NOT_EMULATED = frozenset({"flatten_dims", "rearrange", "indirect", "vector_select",
                                       "get_pattern", "is_contiguous", "is_indirect", "reinterpret_cast"})


def not_emulated_view_message(name: str) -> str:
    if name in ("indirect", "is_indirect"):
        # the NKI Tensor Indirection deep dive: "available on NeuronCore-v4+ (Trainium3)"
        return (f"NkiTensor.{name} (Tensor Indirection) is available on NeuronCore-v4+ (Trainium3) only; the "
                f"emulator models a trn1 NeuronCore-v2 (nisa.get_nc_version() is gen2). For a gather, index an HBM "
                f"tensor with an SBUF index tile in a DMA: nl.load(data[idx_tile, i_f]) (indirect DMA)")
    supported = ", ".join(sorted(VIEW_METHODS | {"ap", "reshape", "broadcast_to"}))
    return (f"NkiTensor.{name} is part of NKI but not of the speedpatch emulator; tiles offer {supported} "
            f"(targets/nki/README.md lists what is supported)")
