"""The instruction trace and its list scheduler: the modeled latency of an emulated kernel run.

Each emulated instruction calls `Trace.issue` with its engine, cost and the tensor regions it reads and
writes. The instruction starts when its engine (or the earliest-free DMA queue) is free and its data
dependencies are met, so engines and DMA queues run in parallel exactly as far as the data allows.
Parameters and what the model ignores: params.py.
"""

from __future__ import annotations

import sys
import weakref
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from speedpatch.targets.nki.emulator import params as P
from speedpatch.targets.nki.emulator.errors import NkiError

if TYPE_CHECKING:
    from speedpatch.targets.nki.emulator.tensor import Allocation

Region = tuple[tuple[int, int], ...]  # inclusive (lo, hi) per axis of an allocation
Access = tuple["Allocation", Region]

_REGION_LIST_LIMIT = 128  # per allocation; older entries are folded into a conservative floor time


def _overlaps(a: Region, b: Region) -> bool:
    return all(alo <= bhi and blo <= ahi for (alo, ahi), (blo, bhi) in zip(a, b, strict=False))


def _contains(outer: Region, inner: Region) -> bool:
    return all(olo <= ilo and ihi <= ohi for (olo, ohi), (ilo, ihi) in zip(outer, inner, strict=False))


class RegionTimes:
    """When the last accesses to regions of one allocation end (for dependency tracking)."""

    def __init__(self) -> None:
        self.entries: list[tuple[Region, float]] = []
        self.floor = 0.0

    def latest(self, region: Region) -> float:
        t = self.floor
        for r, end in self.entries:
            if end > t and _overlaps(r, region):
                t = end
        return t

    def add(self, region: Region, end: float) -> None:
        self.entries = [(r, e) for r, e in self.entries if not (_contains(region, r) and e <= end)]
        self.entries.append((region, end))
        if len(self.entries) > _REGION_LIST_LIMIT:
            half = _REGION_LIST_LIMIT // 2
            self.floor = max([self.floor] + [e for _, e in self.entries[:half]])
            self.entries = self.entries[half:]

    def drop_within(self, region: Region, before: float) -> None:
        self.entries = [(r, e) for r, e in self.entries if not (_contains(region, r) and e <= before)]


class Trace:
    """One kernel launch: instruction costs, scheduling state, memory usage."""

    def __init__(self, kernel_file: str = "") -> None:
        self.kernel_file = kernel_file
        self.engine_free: dict[str, float] = {e: 0.0 for e in P.ENGINES if e != "dma"}
        self.dma_free = [0.0] * P.DMA_QUEUES
        self.busy: dict[str, float] = defaultdict(float)
        self.count: dict[str, int] = defaultdict(int)
        self.instructions = 0
        self.barrier = 0.0
        self.horizon = 0.0
        self.line_time: dict[int, float] = defaultdict(float)
        self.macs = 0
        self.dma_bytes = 0
        self.dma_transfers = 0
        self.live = {"sbuf": 0, "psum": 0}
        self.peak = {"sbuf": 0, "psum": 0}

    # ---- memory -------------------------------------------------------------------------------
    def allocate(self, alloc: Allocation) -> None:
        kind = alloc.buffer.kind
        if kind not in self.live:
            return
        nbytes = alloc.bytes_per_partition
        limit = P.SBUF_BYTES_PER_PARTITION if kind == "sbuf" else P.PSUM_BANKS * P.PSUM_BANK_BYTES
        if self.live[kind] + nbytes > limit:
            raise NkiError(
                f"{kind.upper()} overflow: allocating {alloc.name!r} ({nbytes} bytes per partition) with "
                f"{self.live[kind]} bytes per partition already live exceeds the {limit} bytes per partition "
                f"of {kind.upper()}" + (" (8 banks of 2 KiB)" if kind == "psum" else "")
            )
        self.live[kind] += nbytes
        self.peak[kind] = max(self.peak[kind], self.live[kind])
        weakref.finalize(alloc, self._release, kind, nbytes)

    def _release(self, kind: str, nbytes: int) -> None:
        self.live[kind] -= nbytes

    # ---- scheduling ---------------------------------------------------------------------------
    def start_iteration_barrier(self) -> None:
        """sequential_range: nothing of the next iteration starts before all earlier work is done."""
        self.barrier = max(self.barrier, self.horizon)

    def issue(
        self,
        engine: str,
        cost_ns: float,
        reads: list[Access],
        writes: list[Access],
        latency_ns: float = 0.0,
    ) -> float:
        """Schedule one instruction; returns its end time (ns)."""
        self.instructions += 1
        if self.instructions > P.MAX_INSTRUCTIONS:
            raise NkiError(
                f"the kernel issued more than {P.MAX_INSTRUCTIONS} instructions; tiles are probably far too "
                f"small or a loop runs far longer than intended"
            )
        ready = self.barrier
        for alloc, region in reads:
            ready = max(ready, alloc.writes.latest(region))
        for alloc, region in writes:
            ready = max(ready, alloc.writes.latest(region), alloc.reads.latest(region))
        if engine == "dma":
            queue = min(range(len(self.dma_free)), key=self.dma_free.__getitem__)
            start = max(ready, self.dma_free[queue])
            self.dma_free[queue] = start + cost_ns
        else:
            start = max(ready, self.engine_free[engine])
            self.engine_free[engine] = start + cost_ns
        end = start + cost_ns
        visible = end + latency_ns
        for alloc, region in reads:
            alloc.reads.add(region, end)
        for alloc, region in writes:
            alloc.writes.add(region, visible)
            alloc.reads.drop_within(region, start)
        self.horizon = max(self.horizon, visible)
        self.busy[engine] += cost_ns
        self.count[engine] += 1
        line = self._kernel_line()
        if line:
            self.line_time[line] += cost_ns
        return end

    def _kernel_line(self) -> int:
        frame = sys._getframe(2)
        for _ in range(12):
            if frame is None:
                return 0
            if frame.f_code.co_filename == self.kernel_file:
                return frame.f_lineno
            frame = frame.f_back
        return 0

    # ---- results ------------------------------------------------------------------------------
    @property
    def latency_us(self) -> float:
        return self.horizon / 1000.0

    def report(self) -> dict[str, Any]:
        total = self.horizon or 1.0
        engines = {}
        for engine in P.ENGINES:
            busy = self.busy.get(engine, 0.0)
            capacity = total * (P.DMA_QUEUES if engine == "dma" else 1)
            engines[engine] = {
                "busy_us": round(busy / 1000.0, 3),
                "utilization": round(busy / capacity, 3),
                "instructions": self.count.get(engine, 0),
            }
        cycles = total * P.CLOCK_GHZ
        hot = sorted(self.line_time.items(), key=lambda kv: -kv[1])[:3]
        busiest = max(engines, key=lambda e: engines[e]["utilization"])
        return {
            "latency_us": round(self.latency_us, 4),
            "utilization": engines[busiest]["utilization"],  # of the busiest engine (the bottleneck)
            # with no engine busy half the time, waiting on dependencies (serialization) dominates
            "bottleneck": busiest if engines[busiest]["utilization"] >= 0.5 else "dependencies (engines mostly idle)",
            "engines": engines,
            "pe_utilization": round(self.macs / (P.PARTITIONS * P.PARTITIONS * cycles), 4),
            "dma_transfers": self.dma_transfers,
            "dma_bytes": self.dma_bytes,
            "sbuf_peak_kib_per_partition": round(self.peak["sbuf"] / 1024, 2),
            "psum_peak_kib_per_partition": round(self.peak["psum"] / 1024, 2),
            "instructions": self.instructions,
            "hot_lines": [{"line": line, "busy_us": round(t / 1000.0, 3)} for line, t in hot],
        }


_current: Trace | None = None


def current() -> Trace:
    global _current
    if _current is None:
        _current = Trace()
    return _current


def activate(trace: Trace | None) -> Trace | None:
    """Make `trace` the one instructions are recorded into; returns the previous one."""
    global _current
    previous, _current = _current, trace
    return previous
