"""Emulated kernel decorators (nki.jit / baremetal / benchmark / profile) and the kernel launch:
host NumPy arrays become HBM tensors, the body runs once per SPMD program under a fresh Trace, returned
tensors come back as NumPy arrays, and the trace's report is kept for the runner."""

from __future__ import annotations

import functools
import inspect
import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
from speedpatch.targets.nki.emulator import costmodel
from speedpatch.targets.nki.emulator import language as nl
from speedpatch.targets.nki.emulator.dtypes import numpy_dtype
from speedpatch.targets.nki.emulator.errors import NkiError
from speedpatch.targets.nki.emulator.tensor import Tile, hbm_tensor

_last: dict[str, Any] = {}


def last_report() -> dict[str, Any] | None:
    """Cost-model report of the most recent kernel launch in this process."""
    return _last.get("report")


class _Latency:
    def __init__(self, us: float) -> None:
        self.us = us

    def get_latency_percentile(self, percentile: int = 50) -> float:
        return self.us  # a deterministic model: every percentile is the same


class _BenchmarkResult:
    def __init__(self, us: float) -> None:
        self.nc_latency = _Latency(us)


class EmulatedKernel:
    def __init__(self, fn: Callable[..., Any], grid: tuple[int, ...] = ()) -> None:
        self.fn = fn
        self.grid = grid
        self.benchmark_result: _BenchmarkResult | None = None
        functools.update_wrapper(self, fn)

    def __getitem__(self, grid: Any) -> EmulatedKernel:
        dims = grid if isinstance(grid, (tuple, list)) else (grid,)
        for d in dims:
            if isinstance(d, bool) or int(d) < 1:
                raise NkiError(f"launch grid {tuple(dims)!r}: every dimension needs at least one program")
        # nl.nc / nl.spmd_dim dimensions are kept: they say which NeuronCore each program runs on
        return EmulatedKernel(self.fn, tuple(d if isinstance(d, (nl.nc, nl.spmd_dim)) else int(d) for d in dims))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(nl._grid) > 1:  # the bottom entry is the default grid outside any launch
            # called from inside a running kernel: a helper decorated @nki.jit too (public kernels do this,
            # e.g. the flash-attention kernel's _flash_attention_core) is traced inline, as part of its caller
            return self.fn(*args, **kwargs)
        trace = costmodel.Trace(kernel_file=self.fn.__code__.co_filename)
        previous = costmodel.activate(trace)
        try:
            host: dict[int, np.ndarray] = {}
            names = list(inspect.signature(self.fn).parameters)

            def wrap(value: Any, name: str) -> Any:
                if isinstance(value, np.ndarray):
                    tile = hbm_tensor(value, name)
                    host[id(tile.alloc)] = value
                    return tile
                return value

            wargs = [wrap(v, names[i] if i < len(names) else f"arg{i}") for i, v in enumerate(args)]
            wkwargs = {k: wrap(v, k) for k, v in kwargs.items()}
            result = None
            nl._grid.append(self.grid)
            shared = nl._SharedHbm()
            nl._shared_hbm.append(shared)
            try:
                for ids in itertools.product(*[range(d) for d in self.grid]) if self.grid else [()]:
                    # programs on one core run one after another; programs on other cores in parallel
                    trace.set_core(*nl.physical_core(self.grid, tuple(ids)))
                    nl._program.append(tuple(ids))
                    try:
                        result = self.fn(*wargs, **wkwargs)
                    finally:
                        nl._program.pop()
                    shared.replay, shared.index = True, 0
            finally:
                nl._grid.pop()
                nl._shared_hbm.pop()
            for tile in [*wargs, *wkwargs.values()]:
                if isinstance(tile, Tile) and id(tile.alloc) in host:
                    target = host[id(tile.alloc)]
                    if target.flags.writeable:
                        np.copyto(target, tile.alloc.data.astype(target.dtype), casting="unsafe")
            report = trace.report()
            _last["report"] = report
            self.benchmark_result = _BenchmarkResult(report["latency_us"])
            return _to_host(result)
        finally:
            costmodel.activate(previous)


def _to_host(value: Any) -> Any:
    if isinstance(value, Tile):
        if value.buffer.kind != "hbm":
            raise NkiError(f"the kernel returned {value.name!r} from {value.buffer.name}; return HBM tensors "
                           f"(nl.ndarray(..., buffer=nl.shared_hbm)) and nl.store results into them")
        return value.read().astype(numpy_dtype(value.dtype))
    if isinstance(value, (tuple, list)):
        return type(value)(_to_host(v) for v in value)
    return value


def _decorator(fn: Callable[..., Any] | None = None, *_: Any, **__: Any) -> Any:
    """Usable bare (@nki.jit) or with arguments (@nki.jit(mode=...), @nki.benchmark(warmup=2, iters=10))."""
    if fn is not None and callable(fn) and not isinstance(fn, EmulatedKernel):
        return EmulatedKernel(fn)
    if isinstance(fn, EmulatedKernel):
        return fn
    return lambda f: f if isinstance(f, EmulatedKernel) else EmulatedKernel(f)


jit = _decorator
baremetal = _decorator
benchmark = _decorator
profile = _decorator
trace = _decorator


def simulate_kernel(kernel: Any, *args: Any, **kwargs: Any) -> Any:
    kern = kernel if isinstance(kernel, EmulatedKernel) else EmulatedKernel(kernel)
    return kern(*args, **kwargs)


def simulate(kernel: Any) -> Callable[..., Any]:
    return functools.partial(simulate_kernel, kernel)
