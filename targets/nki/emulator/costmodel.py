"""The instruction trace and its list scheduler: the modeled latency of an emulated kernel run.

Each emulated instruction calls `Trace.issue` with its engine, cost and the tensor regions it reads and
writes. The instruction starts when its engine (or the earliest-free DMA queue) is free and its data
dependencies are met, so engines and DMA queues run in parallel exactly as far as the data allows.
Parameters and what the model ignores: params.py.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
import sys
import weakref
from collections import defaultdict
from types import FrameType
from typing import TYPE_CHECKING, Any

from speedpatch.targets.nki.emulator import params as P
from speedpatch.targets.nki.emulator.errors import NkiError

if TYPE_CHECKING:
    from speedpatch.targets.nki.emulator.tensor import Allocation

Region = tuple[tuple[int, int], ...]  # inclusive (lo, hi) per axis of an allocation
Access = tuple["Allocation", Region]

_DMA_SPAN_LIMIT = 64  # busy intervals of the DMA pool kept apart; older gaps are filled in
_REGION_LIST_LIMIT = 64  # per allocation; older entries are folded into a conservative floor time


def _overlaps(a: Region, b: Region) -> bool:
    for (alo, ahi), (blo, bhi) in zip(a, b, strict=False):
        if alo > bhi or blo > ahi:
            return False
    return True


class RegionTimes:
    """When the last accesses to regions of one allocation end (for dependency tracking).

    One entry per distinct region (re-accessing a region updates it); when there are too many, the
    older half is folded into a floor that applies to the whole allocation (conservative: later, never
    earlier)."""

    __slots__ = ("entries", "floor", "top")

    def __init__(self) -> None:
        self.entries: dict[Region, float] = {}
        self.floor = 0.0
        self.top = 0.0  # the latest end ever added (last() without a scan)

    def latest(self, region: Region) -> float:
        t = self.floor
        for r, end in self.entries.items():
            if end > t and _overlaps(r, region):
                t = end
        return t

    def add(self, region: Region, end: float) -> None:
        if end > self.top:
            self.top = end
        entries = self.entries
        old = entries.get(region)
        if old is not None:
            if end > old:
                del entries[region]  # keep insertion order = age order
                entries[region] = end
            return
        entries[region] = end
        if len(entries) > _REGION_LIST_LIMIT:
            keys = list(entries)[: _REGION_LIST_LIMIT // 2]
            self.floor = max([self.floor] + [entries.pop(k) for k in keys])

    def last(self) -> float:
        return self.floor if self.floor > self.top else self.top


class _Slot:
    """The on-chip space of one allocation, as the allocator sees it (holds no reference to the tile)."""

    __slots__ = ("kind", "nbytes", "reads", "writes", "retired", "name", "spilled", "partitions", "queued", "gone",
                 "evicted", "region", "born")

    def __init__(self, kind: str, nbytes: int, reads: RegionTimes, writes: RegionTimes, name: str,
                 partitions: int = P.PARTITIONS, region: Region | None = None) -> None:
        self.kind = kind
        self.region = region  # one block of a blocked SBUF tensor (its region), or None: the whole allocation
        self.born = writes.floor  # (a block) the write floor at allocation: a later one means a write folded in
        self.nbytes = nbytes
        self.spilled = False  # its data is in HBM (spilled by the compiler); reloaded at its next use
        self.partitions = partitions
        self.reads = reads
        self.writes = writes
        self.retired = False  # out of scope: its space may be reused once its last access is done
        self.name = name
        self.queued = False  # in the trace's reuse heap (retired, ordered by when its last access ends)
        self.gone = False  # its space was taken back (reused, released or spilled)
        self.evicted = ""  # a PSUM tile whose bank a newer one took (Trace._evict_psum): why, if it is used again

    def retire(self) -> None:
        self.retired = True

    def last_access(self) -> float:
        if self.region is None:
            return max(self.reads.last(), self.writes.last())
        return max(self.reads.latest(self.region), self.writes.latest(self.region))

    def last_write(self) -> float:
        return self.writes.last() if self.region is None else self.writes.latest(self.region)

    def holds_data(self) -> bool:
        """Whether spilling it moves bytes: a block nothing has written yet holds none (the compiler places a
        block at its first write, so its space is free to take until then)."""
        if self.region is None or self.writes.floor > self.born:
            return True
        region = self.region
        return any(_overlaps(r, region) for r in self.writes.entries)


class _Loop:
    """One running NKI loop: the tiles allocated in its current iteration go out of scope at the next."""

    __slots__ = ("slots",)

    def __init__(self) -> None:
        self.slots: list[_Slot] = []

    def end_iteration(self) -> None:
        for slot in self.slots:
            slot.retired = True
        self.slots = []


class Trace:
    """One kernel launch: instruction costs, scheduling state, memory usage."""

    def __init__(self, kernel_file: str = "") -> None:
        self.kernel_file = kernel_file
        self.engine_free: dict[str, float] = {e: 0.0 for e in P.ENGINES if e != "dma"}
        self.dma_spans: list[list[float]] = []  # busy intervals of the DMA pool, sorted and merged
        # VectorE and GpSimdE cannot access SBUF in parallel, nor VectorE and ScalarE PSUM ([ARCH])
        self.port_free = {"sbuf_vector_gpsimd": 0.0, "psum_vector_scalar": 0.0}
        self.busy: dict[str, float] = defaultdict(float)
        self.count: dict[str, int] = defaultdict(int)
        self.instructions = 0
        self.horizon = 0.0
        self.line_time: dict[int, float] = defaultdict(float)
        self.macs = 0
        self.dma_bytes = 0
        self.dma_hbm_to_hbm_bytes = 0  # of dma_bytes, moved by DMAs with both sides in HBM
        self.dma_transfers = 0
        self.dma_descriptors = 0
        self.slots: dict[str, list[_Slot]] = {"sbuf": [], "psum": []}
        # out-of-scope slots by when their last access ends (earliest first): the space a new tile takes
        self.reuse: dict[str, list[tuple[float, int, _Slot]]] = {"sbuf": [], "psum": []}
        self._reuse_seq = itertools.count()
        self.live = {"sbuf": 0, "psum": 0}
        self.peak = {"sbuf": 0, "psum": 0}
        self.reuse_waits = 0
        self.spills = 0
        self.loops: list[_Loop] = []
        self.core = 0  # the NeuronCore instructions go to now (SPMD programs on nl.nc grid dimensions)
        self.cores = 1
        self._core_state: dict[int, dict[str, Any]] = {}

    # ---- NeuronCores ---------------------------------------------------------------------------------
    _PER_CORE = ("engine_free", "dma_spans", "port_free", "slots", "live", "loops", "reuse")

    def set_core(self, core: int, cores: int = 1) -> None:
        """Send the next instructions to NeuronCore `core` (of `cores`): its own engines, DMA engines,
        SBUF and PSUM. HBM is shared, so dependencies through HBM tensors hold across cores; the latency
        is the end of the last instruction on any core."""
        self.cores = max(self.cores, cores, core + 1)
        if core == self.core:
            return
        self._core_state[self.core] = {name: getattr(self, name) for name in self._PER_CORE}
        state = self._core_state.pop(core, None) or {
            "engine_free": {e: 0.0 for e in P.ENGINES if e != "dma"}, "dma_spans": [],
            "port_free": {"sbuf_vector_gpsimd": 0.0, "psum_vector_scalar": 0.0},
            "slots": {"sbuf": [], "psum": []}, "live": {"sbuf": 0, "psum": 0}, "loops": [],
            "reuse": {"sbuf": [], "psum": []}}
        for name, value in state.items():
            setattr(self, name, value)
        self.core = core

    # ---- loops and tile scope ----------------------------------------------------------------------
    def enter_loop(self) -> _Loop:
        loop = _Loop()
        self.loops.append(loop)
        return loop

    def exit_loop(self, loop: _Loop) -> None:
        loop.end_iteration()
        if loop in self.loops:
            self.loops.remove(loop)

    # ---- memory -------------------------------------------------------------------------------
    def allocate(self, alloc: Allocation) -> None:
        """Place an on-chip tile: in free space, else in the space of the oldest out-of-scope tiles,
        after their last access (the reuse dependency that limits how far iterations overlap)."""
        kind = alloc.buffer.kind
        if kind not in self.live:
            return
        nbytes = alloc.bytes_per_partition
        limit = P.SBUF_BYTES_PER_PARTITION if kind == "sbuf" else P.PSUM_BANKS * P.PSUM_BANK_BYTES
        slots = self.slots[kind]
        wait = 0.0
        if self.live[kind] + nbytes > limit:
            # the space of the out-of-scope tiles whose last access ends first (the allocator knows the
            # schedule; the FIFO order of allocation would make a new tile wait for the tile that went out
            # of scope last, e.g. one still being stored, while older space is long free)
            heap = self.reuse[kind]
            for slot in slots:
                if slot.retired and not slot.queued:
                    slot.queued = True
                    heapq.heappush(heap, (slot.last_access(), next(self._reuse_seq), slot))
            freed = False
            while heap and self.live[kind] + nbytes > limit:
                _, _, slot = heapq.heappop(heap)
                if slot.gone:
                    continue
                slot.gone = freed = True
                self.live[kind] -= slot.nbytes
                wait = max(wait, slot.last_access())
            if freed:
                self.slots[kind] = slots = [s for s in slots if not s.gone]
            if wait > 0:
                self.reuse_waits += 1
        if self.live[kind] + nbytes > limit and kind == "sbuf":
            wait = max(wait, self._spill(nbytes, limit))
            slots = self.slots[kind]
        if self.live[kind] + nbytes > limit and kind == "psum":
            wait = max(wait, self._evict_psum(alloc.name, nbytes, limit))
            slots = self.slots[kind]
        if self.live[kind] + nbytes > limit:
            in_scope = sorted((s for s in slots if not s.retired), key=lambda s: -s.nbytes)[:4]
            biggest = ", ".join(f"{s.name!r} {s.nbytes} B" for s in in_scope)
            raise NkiError(
                f"{kind.upper()} overflow: allocating {alloc.name!r} ({nbytes} bytes per partition) with "
                f"{self.live[kind]} bytes per partition in scope exceeds the {limit} bytes per partition "
                f"of {kind.upper()}" + (" (8 banks of 2 KiB)" if kind == "psum" else "")
                + (f"; largest tiles in scope: {biggest}" if biggest else "")
            )
        alloc.reads.floor = alloc.writes.floor = wait
        new = self._slots_of(alloc, kind, nbytes)
        if len(new) == 1:
            alloc.slot = new[0]
        else:
            alloc.block_slots = new
        slots.extend(new)
        self.live[kind] += nbytes
        self.peak[kind] = max(self.peak[kind], self.live[kind])
        for slot in new:
            if self.loops:
                self.loops[-1].slots.append(slot)
            weakref.finalize(alloc, slot.retire)  # no Python name refers to it any more: out of scope

    @staticmethod
    def _slots_of(alloc: Allocation, kind: str, nbytes: int) -> list[_Slot]:
        """The allocator's units of one tensor: one per block of a blocked SBUF tensor (the axes before the
        partition axis; the compiler allocates and spills each block on its own, so a tensor's blocks the
        loop is done with go to HBM, not the whole tensor at each use), else the whole tensor. Tensors
        whose blocks share memory (mod_alloc) stay whole."""
        axes = alloc.par_axis
        count = math.prod(alloc.shape[:axes]) if axes else 1
        partitions = alloc.shape[axes]
        if kind != "sbuf" or count <= 1 or alloc.alias_moduli:
            return [_Slot(kind, nbytes, alloc.reads, alloc.writes, alloc.name, partitions)]
        rest = tuple((0, n - 1) for n in alloc.shape[axes:])
        return [_Slot(kind, nbytes // count, alloc.reads, alloc.writes, alloc.name, partitions,
                      (*((int(c), int(c)) for c in coords), *rest))
                for coords in itertools.product(*(range(n) for n in alloc.shape[:axes]))]

    def psum_fits(self, free_bytes: int) -> bool:
        """Whether a PSUM tile of free_bytes per partition fits next to the PSUM tiles in scope."""
        banks = -(-free_bytes // P.PSUM_BANK_BYTES)
        in_scope = sum(s.nbytes for s in self.slots["psum"] if not s.retired)
        return in_scope + banks * P.PSUM_BANK_BYTES <= P.PSUM_BANKS * P.PSUM_BANK_BYTES

    def _evict_psum(self, name: str, nbytes: int, limit: int) -> float:
        """PSUM tiles in scope fill the 8 banks. A Python name keeping a tile alive is not a use: the compiler
        allocates PSUM by the traced program's live ranges (a tile is live until its last access). So the banks
        of the least recently used tiles go to the new one, after their last access, and a tile evicted so
        that is accessed again proves more than 8 banks live at once: that access is the PSUM overflow
        (Tile.access). Returns when the banks are free."""
        free_at = 0.0
        candidates = sorted((s for s in self.slots["psum"] if not s.retired and s.nbytes > 0),
                            key=lambda s: s.last_access())
        for slot in candidates:
            if self.live["psum"] + nbytes <= limit:
                break
            self.slots["psum"].remove(slot)
            slot.gone = True
            slot.evicted = (f"PSUM overflow: {slot.name!r} is used again after its bank went to {name!r}; more "
                            f"than the {P.PSUM_BANKS} banks of 2 KiB per partition of PSUM are live at once "
                            f"(accumulate fewer tiles at a time, or copy results to SBUF sooner)")
            self.live["psum"] -= slot.nbytes
            free_at = max(free_at, slot.last_access())
        return free_at

    def _spill(self, nbytes: int, limit: int) -> float:
        """SBUF tiles in scope do not fit: like the compiler, spill the least recently used ones to HBM
        (a DMA store each; a DMA reload when next used, see reload). Returns when their space is free."""
        free_at = 0.0
        candidates = sorted((s for s in self.slots["sbuf"] if not s.retired and s.nbytes > 0),
                            key=lambda s: s.last_access())
        for slot in candidates:
            if self.live["sbuf"] + nbytes <= limit:
                break
            if slot.holds_data():
                free_at = max(free_at, self._spill_dma(slot, store=True))
                self.spills += 1
            else:
                free_at = max(free_at, slot.last_access())
            slot.spilled = True
            self.slots["sbuf"].remove(slot)
            slot.gone = True
            self.live["sbuf"] -= slot.nbytes
        return free_at

    def _spill_dma(self, slot: _Slot, store: bool) -> float:
        """The DMA of a spill (store) or reload: the tile's bytes, one descriptor per partition."""
        nbytes = slot.nbytes * slot.partitions
        per_engine = (nbytes / P.DMA_ENGINE_BYTES_PER_NS + slot.partitions * P.DMA_DESCRIPTOR_NS) / P.DMA_ENGINES
        ready = slot.last_write() if store else 0.0
        start = self._dma_place(ready, per_engine + P.DMA_DESCRIPTOR_NS)
        end = start + per_engine + P.DMA_DESCRIPTOR_NS
        self.busy["dma"] += (per_engine + P.DMA_DESCRIPTOR_NS) * P.DMA_ENGINES
        self.dma_bytes += nbytes
        self.horizon = max(self.horizon, end)
        return end if store else end + P.DMA_LATENCY_NS

    def reload(self, alloc: Allocation, region: Region | None = None) -> None:
        """A spilled tile (or, of a blocked one, the blocks `region` touches) is used again: make room for
        it and load it back (its data is ready after)."""
        if alloc.block_slots:
            for block in alloc.block_slots:
                if block.spilled and block.region is not None and (region is None or _overlaps(block.region, region)):
                    self._reload(block, block.region)
            return
        self._reload(alloc.slot, alloc.full_region())

    def _reload(self, slot: _Slot, region: Region) -> None:
        slot.spilled = False
        slot.gone = False
        wait = self._spill(slot.nbytes, P.SBUF_BYTES_PER_PARTITION) if (
            self.live["sbuf"] + slot.nbytes > P.SBUF_BYTES_PER_PARTITION) else 0.0
        if not slot.holds_data():  # nothing to bring back: only its space, once free
            slot.writes.add(region, wait)
        else:
            slot.writes.floor = max(slot.writes.floor, wait)
            slot.writes.add(region, self._spill_dma(slot, store=False))
        self.slots["sbuf"].append(slot)
        self.live["sbuf"] += slot.nbytes
        self.peak["sbuf"] = max(self.peak["sbuf"], self.live["sbuf"])

    def release(self, alloc: Allocation) -> None:
        """Free a temporary the compiler never materializes (the SBUF result of `t[...] = nl.load(..)`,
        the PSUM result of `psum += matmul(..)`): its space is available at once, without a wait."""
        slot = getattr(alloc, "slot", None)
        if slot is not None and slot in self.slots[slot.kind]:
            self.slots[slot.kind].remove(slot)
            slot.gone = True
            self.live[slot.kind] -= slot.nbytes
            alloc.slot = None

    # ---- scheduling ---------------------------------------------------------------------------
    def _ready(self, reads: list[Access], writes: list[Access]) -> float:
        ready = 0.0
        for alloc, region in reads:
            ready = max(ready, alloc.writes.latest(region))
        for alloc, region in writes:
            ready = max(ready, alloc.writes.latest(region), alloc.reads.latest(region))
        return ready

    def _count(self) -> None:
        self.instructions += 1
        if self.instructions > P.MAX_INSTRUCTIONS:
            raise NkiError(
                f"the kernel issued more than {P.MAX_INSTRUCTIONS} instructions; tiles are probably far too "
                f"small or a loop runs far longer than intended"
            )

    def _record(self, engine: str, start: float, end: float, visible: float, busy: float,
                reads: list[Access], writes: list[Access]) -> None:
        for alloc, region in reads:
            alloc.reads.add(region, end)
        for alloc, region in writes:
            alloc.writes.add(region, visible)
        self.horizon = max(self.horizon, visible)
        self.busy[engine] += busy
        self.count[engine] += 1
        line = self._kernel_line()
        if line:
            self.line_time[line] += busy

    def issue(
        self,
        engine: str,
        cost_ns: float,
        reads: list[Access],
        writes: list[Access],
        latency_ns: float = 0.0,
    ) -> float:
        """Schedule one compute-engine instruction; returns its end time (ns)."""
        self._count()
        start = max(self._ready(reads, writes), self.engine_free[engine])
        ports = self._ports(engine, reads, writes)
        for port in ports:
            start = max(start, self.port_free[port])
        end = start + cost_ns
        self.engine_free[engine] = end
        for port in ports:
            self.port_free[port] = end
        self._record(engine, start, end, end + latency_ns, cost_ns, reads, writes)
        for alloc, region in writes:  # who wrote it last: a fresh result may still be retargeted (ops.retarget_result)
            alloc.producer = (self, self.instructions, start, end + latency_ns, engine, alloc.reads.last(),
                              region == alloc.full_region())
        return end

    def _ports(self, engine: str, reads: list[Access], writes: list[Access]) -> tuple[str, ...]:
        if engine not in ("vector", "gpsimd", "scalar"):
            return ()
        kinds = {alloc.buffer.kind for alloc, _ in reads} | {alloc.buffer.kind for alloc, _ in writes}
        ports = []
        if engine != "scalar" and "sbuf" in kinds:
            ports.append("sbuf_vector_gpsimd")
        if engine != "gpsimd" and "psum" in kinds:
            ports.append("psum_vector_scalar")
        return tuple(ports)

    def issue_dma(self, engine_ns: float, duration_ns: float, transfers: int, reads: list[Access],
                  writes: list[Access], latency_ns: float) -> float:
        """Schedule one DMA instruction that keeps the DMA engines busy for engine_ns in all (summed over
        engines) and takes duration_ns from start to end; its data is visible latency_ns after the end.

        The engines are modeled as one pool of DMA_ENGINES lanes (a fluid model): the instruction uses
        engine_ns / DMA_ENGINES of the pool's time, placed in the earliest idle gap at or after its data
        is ready. Unlike the compute engines, DMAs are not held in program order: the compiler issues
        each DMA as soon as its data and buffer allow (loads of later iterations are prefetched while
        earlier ones compute), over several queues."""
        self._count()
        ready = self._ready(reads, writes)
        start = self._dma_place(ready, engine_ns / P.DMA_ENGINES)
        end = start + duration_ns
        self.dma_transfers += transfers
        self._record("dma", start, end, end + latency_ns, engine_ns, reads, writes)
        return end

    def _dma_place(self, ready: float, length: float) -> float:
        """Earliest start >= ready of an idle gap of `length` on the DMA pool timeline; books it."""
        spans = self.dma_spans
        i = bisect.bisect_right(spans, [ready, float("inf")]) - 1
        t = ready
        if i >= 0 and spans[i][1] > t:
            t = spans[i][1]
        j = i + 1
        while j < len(spans) and spans[j][0] < t + length:
            t = max(t, spans[j][1])
            j += 1
        # book [t, t + length), merging with touching neighbours
        lo, hi = t, t + length
        k = bisect.bisect_left(spans, [lo, -1.0])
        if k > 0 and spans[k - 1][1] >= lo:
            k -= 1
            lo = spans[k][0]
        m = k
        while m < len(spans) and spans[m][0] <= hi:
            hi = max(hi, spans[m][1])
            m += 1
        spans[k:m] = [[lo, hi]]
        if len(spans) > _DMA_SPAN_LIMIT:  # give up the oldest small gaps (conservative: later, not earlier)
            half = _DMA_SPAN_LIMIT // 2
            spans[: half + 1] = [[spans[0][0], spans[half][1]]]
        return t

    def _kernel_line(self) -> int:
        frame: FrameType | None = sys._getframe(3)
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
            capacity = total * (P.DMA_ENGINES if engine == "dma" else 1) * self.cores
            engines[engine] = {
                "busy_us": round(busy / 1000.0, 3),
                "utilization": round(busy / capacity, 3),
                "instructions": self.count.get(engine, 0),
            }
        tensor_cycles = total * P.TENSOR_GHZ
        hot = sorted(self.line_time.items(), key=lambda kv: -kv[1])[:3]
        busiest = max(engines, key=lambda e: engines[e]["utilization"])
        return {
            "latency_us": round(self.latency_us, 4),
            "utilization": engines[busiest]["utilization"],  # of the busiest engine (the bottleneck)
            # with no engine busy half the time, waiting on dependencies (serialization) dominates
            "bottleneck": busiest if engines[busiest]["utilization"] >= 0.5 else "dependencies (engines mostly idle)",
            "engines": engines,
            "pe_utilization": round(self.macs / (P.PARTITIONS * P.PARTITIONS * tensor_cycles * self.cores), 4),
            "cores": self.cores,
            "dma_transfers": self.dma_transfers,
            "dma_descriptors": self.dma_descriptors,
            "buffer_reuse_waits": self.reuse_waits,
            "sbuf_spills": self.spills,
            "dma_bytes": self.dma_bytes,
            "dma_hbm_to_hbm_bytes": self.dma_hbm_to_hbm_bytes,
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
