"""Work and physics checks of an emulated NKI run, all on the trusted side.

- Provenance: every element of every output must have been written, in this launch, by a DMA from the
  device (the only way data reaches HBM); an output the kernel never wrote, or an input handed back as the
  result, fails.
- Required work: every element of every input the result depends on must have been DMA'd in at least once
  (elements never loaded are changed, far out of their range, and the reference run again: if its result
  moves, they were required); when the reference is a matmul of the inputs (`a.T @ b`, `np.dot(a, b)`), the
  Tensor engine must have done at least its multiply-accumulates.
- Physics: the modeled latency can be no lower than the roofline of the required work: the required DMA
  bytes over all DMA queues at full bandwidth, the required MACs over the whole PE array at one pass per
  cycle. A zero, negative or missing latency is never a figure.
The numbers go into the rejection message.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from speedpatch.targets.nki.emulator import ops
from speedpatch.targets.nki.emulator import params as P
from speedpatch.targets.nki.emulator.tensor import Tile


class Ledger:
    """Which HBM elements DMAs read and wrote during one launch (installed around the emulator's DMA)."""

    def __init__(self) -> None:
        self.read: dict[int, np.ndarray] = {}
        self.written: dict[int, np.ndarray] = {}
        self._original: Any = None

    def __enter__(self) -> Ledger:
        self._original = ops.dma
        original = self._original

        def dma(*args: Any, **kwargs: Any) -> Any:
            names = ("dst", "src", "mask")
            bound = dict(zip(names, args, strict=False))
            bound.update({k: v for k, v in kwargs.items() if k in names})
            result = original(*args, **kwargs)
            dst = bound.get("dst")
            pending = getattr(getattr(dst, "alloc", None), "pending_dma", None)
            if pending is None or not isinstance(dst, Tile):
                self._mark(self.read, bound.get("src"), bound.get("mask"))
                if kwargs.get("accumulate"):  # a read-modify-write DMA reads what dst held before writing it
                    self._mark(self.read, dst, bound.get("mask"))
                for extra in kwargs.get("extra_srcs", ()):  # nisa.dma_compute's other sources
                    self._mark(self.read, extra, None)
                self._mark(self.written, dst, bound.get("mask"))
                return result

            # A deferred load (nl.load into a new tile) is issued when its tile is first used, or never:
            # its elements count as read only once it moves them. Marked at the call, a load whose tile
            # was never used passed the required-work check without moving a byte (red-team: out = a +
            # 1e-5 * tanh(b) with b "loaded" and dropped, correct at 15.5 us against the honest 19.2 us).
            src = bound.get("src")
            # the load read its source when it was called (its values were taken then): what the kernel had
            # overwritten by then
            then = self.written.get(id(src.alloc)) if isinstance(src, Tile) else None
            then = None if then is None else then.copy()

            def issued(*a: Any, **k: Any) -> Any:
                self._mark(self.read, src, bound.get("mask"), overwritten=then)
                self._mark(self.written, dst, bound.get("mask"))
                return pending(*a, **k)

            issued.__dict__.update(pending.__dict__)  # what a retargeted load reads (values, mask, src_dtype)
            dst.alloc.pending_dma = issued
            return result

        ops.dma = dma
        return self

    def __exit__(self, *exc: Any) -> None:
        ops.dma = self._original

    def _mark(self, book: dict[int, np.ndarray], tile: Any, mask: Any, overwritten: Any = False) -> None:
        if not isinstance(tile, Tile) or tile.buffer.kind != "hbm":
            return
        shape = tile.alloc.shape
        seen = book.get(id(tile.alloc))
        if seen is None:
            seen = book[id(tile.alloc)] = np.zeros(math.prod(shape), dtype=bool)
        # An element the kernel already wrote in this launch holds the kernel's data, not the input's: reading
        # it back is no reading of the input (red-team: b overwritten with a's tile, then "loaded", passed the
        # required-work check for b without a value of b ever moving).
        if overwritten is False:  # not given: what the kernel has written so far
            overwritten = self.written.get(id(tile.alloc)) if book is self.read else None
        moved = np.zeros(math.prod(shape), dtype=bool)
        if mask is None and not tile.oob and getattr(tile, "strides", None) is not None:
            # The common case, cheaply: a sliced view (distinct elements) that fills its bounding box marks
            # the box; gathers, masks and anything else mark their positions one by one.
            box = tile.region()
            if math.prod(hi - lo + 1 for lo, hi in box) == math.prod(tile.shape):
                if overwritten is None:
                    seen.reshape(shape)[tuple(slice(lo, hi + 1) for lo, hi in box)] = True
                    return
                moved.reshape(shape)[tuple(slice(lo, hi + 1) for lo, hi in box)] = True
                seen |= moved & ~overwritten
                return
        pos = tile.pos
        if mask is not None:
            try:
                pos = pos[np.broadcast_to(np.asarray(mask, dtype=bool), pos.shape)]
            except ValueError:
                pass  # a mask for the other operand's shape: the whole tile moved
        pos = pos[pos >= 0] if pos.size else pos
        moved[pos.reshape(-1)] = True
        seen |= moved if overwritten is None else moved & ~overwritten

    def coverage(self, book: dict[int, np.ndarray], tile: Tile) -> int:
        """How many elements of `tile`'s tensor the DMAs did NOT touch."""
        seen = book.get(id(tile.alloc))
        total = math.prod(tile.alloc.shape)
        return total if seen is None else int(total - np.count_nonzero(seen))


class _Counted(np.ndarray):
    """An input as the reference sees it: matmuls whose operands are inputs are counted."""

    macs: list[tuple[int, int]]  # (id of the result, MACs)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        plain = [np.asarray(x) if isinstance(x, _Counted) else x for x in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(np.asarray(o) if isinstance(o, _Counted) else o for o in kwargs["out"])
        result = getattr(ufunc, method)(*plain, **kwargs)
        if ufunc is np.matmul and method == "__call__" and all(isinstance(x, _Counted) for x in inputs[:2]):
            _record(plain[0], plain[1], result)
        return result

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        # inputs nested in sequences too (np.concatenate([x[:, h:], x[:, :h]])): a _Counted left inside
        # would dispatch back here for ever
        plain = [_plain(x) for x in args]
        result = func(*plain, **{k: _plain(v) for k, v in kwargs.items()})
        if func is np.dot and len(args) >= 2 and all(isinstance(x, _Counted) for x in args[:2]):
            _record(plain[0], plain[1], result)
        return result


_RECORDED: list[tuple[Any, int]] = []


def _record(a: np.ndarray, b: np.ndarray, result: Any) -> None:
    if a.ndim >= 1 and b.ndim >= 1:
        k = a.shape[-1]
        _RECORDED.append((result, int(np.prod(np.shape(result))) * int(k)))


def reference_work(reference: Any, inputs: list[Any]) -> tuple[Any, int]:
    """Run the reference; (its result, the Tensor-engine MACs it implies: > 0 only when the result IS a
    matmul of the inputs, the one shape of reference for which that is a sound lower bound)."""
    _RECORDED.clear()
    # non-tensor arguments (epsilon, shapes) reach the reference as they are declared
    counted = [np.array(x, copy=True).view(_Counted) if isinstance(x, np.ndarray) else x for x in inputs]
    expected = reference(*counted)
    macs = 0
    for result, n in _RECORDED:
        if result is expected:
            macs = n
    _RECORDED.clear()
    expected = _plain(expected)
    return expected, macs


def _plain(value: Any) -> Any:
    """value with every _Counted in it (also inside lists and tuples) as a plain ndarray."""
    if isinstance(value, _Counted):
        return np.asarray(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_plain(v) for v in value)
    return value


def check_launch(ledger: Ledger, inputs: dict[str, Tile], outputs: list[Any]) -> str:
    """'' when provenance and input coverage hold, else why not (with the numbers)."""
    input_allocs = {id(t.alloc): name for name, t in inputs.items()}
    for i, out in enumerate(outputs):
        label = f"output {i}" if len(outputs) > 1 else "the output"
        if not isinstance(out, Tile):
            return (f"{label} is not a tensor the kernel wrote (got {type(out).__name__}); return an HBM tensor "
                    f"(nl.ndarray(..., buffer=nl.shared_hbm)) that the kernel nl.store()s into")
        if id(out.alloc) in input_allocs and not np.all(ledger.written.get(id(out.alloc), False)):
            return f"{label} is the input {input_allocs[id(out.alloc)]!r}, handed back instead of a result"
        repeated = _repeated_elements(out, label)
        if repeated:
            return repeated
        missing = ledger.coverage(ledger.written, out)
        if missing:
            total = math.prod(out.alloc.shape)
            return (f"{label} ({out.alloc.name!r}, {total} elements): {missing} elements were never written by a "
                    f"DMA from the device in this launch (provenance: every output element must come from an "
                    f"engine op of this launch)")
    return ""


def _repeated_elements(out: Tile, label: str) -> str:
    """'' when every element of the output view is its own element of the tensor, else why not. A view that
    repeats elements (an access pattern with a zero step, over a tensor smaller than the output) makes the
    output look written while the kernel stored a fraction of it: red-team, a (128, 2048) result returned as
    `row.ap([[0, 128], [1, 2048]])` over one stored row was correct at 5.6 us against the honest 14.2 us."""
    shape = tuple(out.alloc.shape)
    contiguous = tuple(math.prod(shape[i + 1:]) for i in range(len(shape)))
    strides = getattr(out, "strides", None)
    if (tuple(out.shape) == shape and strides is not None and tuple(strides) == contiguous
            and out.offset == 0 and not out.oob):
        return ""  # the whole tensor (the common case), without listing its positions
    pos = np.asarray(out.pos).reshape(-1)
    outside = int(np.count_nonzero(pos < 0))
    if outside:
        return (f"{label} ({out.alloc.name!r}) is a view with {outside} of its {pos.size} elements outside its "
                f"tensor; return the tensor the kernel wrote")
    seen = np.zeros(math.prod(out.alloc.shape), dtype=bool)
    seen[pos] = True
    distinct = int(np.count_nonzero(seen))
    if distinct < pos.size:
        return (f"{label} is a view of shape {tuple(out.shape)} over {distinct} distinct elements of the tensor "
                f"{out.alloc.name!r} {tuple(out.alloc.shape)}: it repeats elements, so the kernel stored "
                f"{distinct} values where the output has {pos.size}; return a tensor with one element per output "
                f"element")
    return ""


def unloaded_inputs(ledger: Ledger, inputs: dict[str, Tile]) -> dict[str, np.ndarray]:
    """Per input with elements no DMA read: a flat mask of those elements (C order of the input)."""
    out = {}
    for name, tile in inputs.items():
        seen = ledger.read.get(id(tile.alloc))
        if seen is None:
            out[name] = np.ones(math.prod(tile.alloc.shape), dtype=bool)
        elif not seen.all():
            out[name] = ~seen
    return out


def _moved_far(array: np.ndarray, mask: np.ndarray, sign: int) -> np.ndarray:
    """A copy of `array` whose masked elements are pushed far outside the data's range (to the type's
    bound for integers), up for sign > 0, down otherwise."""
    out = np.array(array, copy=True)
    flat = out.reshape(-1)
    if np.issubdtype(out.dtype, np.integer):
        bound = np.iinfo(out.dtype)
        flat[mask] = bound.max if sign > 0 else bound.min
    else:
        values = flat.astype(np.float64)
        big = 8.0 * (float(np.max(np.abs(values), initial=0.0)) + 1.0)
        flat[mask] = (values[mask] + sign * big).astype(out.dtype)
    return out


def _same(a: Any, b: Any) -> bool:
    a_list, b_list = (list(x) if isinstance(x, (tuple, list)) else [x] for x in (a, b))
    return len(a_list) == len(b_list) and all(
        np.shape(x) == np.shape(y)
        and np.array_equal(np.asarray(_plain(x)).astype(np.float64), np.asarray(_plain(y)).astype(np.float64),
                           equal_nan=True)
        for x, y in zip(a_list, b_list, strict=True))


def check_unloaded(reference: Any, inputs: dict[str, Any], expected: Any, unloaded: dict[str, np.ndarray]) -> str:
    """'' when the reference's result does not depend on the input elements the kernel never loaded (the
    kernel skipped work the problem does not need), else why not. A kernel can only be correct without
    data its result depends on when that data's part is within the tolerance, or when it got the data
    some other way: either is missing required work."""
    for name, mask in unloaded.items():
        if name not in inputs or not isinstance(inputs[name], np.ndarray) or inputs[name].size != mask.size:
            return (f"the kernel never loaded {int(mask.sum())} of the {mask.size} elements of input {name!r}; "
                    f"every input element must be DMA'd in at least once (required work)")
    for sign in (1, -1):
        trial = {k: (_moved_far(v, unloaded[k], sign) if k in unloaded else v.copy() if isinstance(v, np.ndarray)
                     else v) for k, v in inputs.items()}
        try:
            moved = reference(*trial.values())
        except Exception:  # noqa: BLE001 - a reference that fails on such values reads them
            moved = None
        if moved is None or not _same(moved, expected):
            which = ", ".join(f"{int(m.sum())} of the {m.size} elements of input {n!r}" for n, m in unloaded.items())
            return (f"the kernel never loaded {which}, yet the reference's result depends on them (changing "
                    f"them changes it): every input element the result depends on must be DMA'd in at least "
                    f"once (required work)")
    return ""


def check_physics(report: dict[str, Any], trace: Any, required_bytes: int, required_macs: int,
                  shared_bytes: int = 0) -> str:
    """'' when the figure respects the required work and the hardware's bound, else why not.

    required_bytes are the inputs' plus the outputs' bytes; shared_bytes (the smaller of the two) bounds what
    DMAs with both sides in HBM count twice: such a DMA reads an input and writes an output in one transfer
    (nisa.dma_copy: "Both src and dst tiles can be in device memory (HBM) or SBUF"), so a kernel copying
    HBM to HBM moves fewer bytes than the sum, down to the larger of the two, and no fewer."""
    latency = report.get("latency_us")
    if not isinstance(latency, (int, float)) or not math.isfinite(latency) or latency <= 0:
        return f"the modeled latency is {latency!r}; a zero or missing figure is never a result"
    dma_bytes = int(report.get("dma_bytes", 0))
    both_sides = min(max(int(report.get("dma_hbm_to_hbm_bytes", 0)), 0), dma_bytes, max(shared_bytes, 0))
    if dma_bytes + both_sides < required_bytes:
        moved = f"{dma_bytes} bytes by DMA" + (f" ({both_sides} of them HBM to HBM, counted twice)"
                                               if both_sides else "")
        return (f"the kernel moved {moved}, less than the {required_bytes} bytes of its inputs and outputs "
                f"(required work)")
    required_bytes -= both_sides  # what the DMA engines must move at least
    macs = int(getattr(trace, "macs", 0) or 0)
    if required_macs and macs < required_macs:
        tensor = report.get("engines", {}).get("tensor", {}).get("instructions", 0)
        return (f"the Tensor engine did {macs} multiply-accumulates in {tensor} instructions, less than the "
                f"{required_macs} the reference's matmul requires (required work)")
    dma_bandwidth, tensor_ghz = peak_rates()
    cores = report.get("cores", 1)
    cores = cores if type(cores) is int and 1 <= cores <= 2 else 1  # an nl.nc grid: each core has its own
    dma_bandwidth, tensor_ghz = dma_bandwidth * cores, tensor_ghz * cores  # DMA engines and PE array
    dma_floor_us = required_bytes / dma_bandwidth / 1000.0
    pe_floor_us = required_macs / (P.PARTITIONS * P.PARTITIONS) / tensor_ghz / 1000.0
    floor = max(dma_floor_us, pe_floor_us)
    if latency < floor * (1 - 1e-9):
        which = "DMA" if dma_floor_us >= pe_floor_us else "Tensor engine"
        return (f"the modeled latency {latency} us is below the {which} roofline of the required work "
                f"({floor:.4f} us: {required_bytes} bytes at {dma_bandwidth:g} B/ns over all DMA engines, "
                f"{required_macs} MACs over a {P.PARTITIONS}x{P.PARTITIONS} PE array at {tensor_ghz:g} GHz)")
    return ""


def peak_rates() -> tuple[float, float]:
    """(aggregate DMA bytes per ns, Tensor engine GHz) from the cost model's parameters (params.py)."""
    return float(P.DMA_ENGINES * P.DMA_ENGINE_BYTES_PER_NS), float(P.TENSOR_GHZ)
