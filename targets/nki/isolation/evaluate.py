"""An emulated NKI evaluation with the kernel in its own process (called by runner.py, emulate mode).

The trusted process (this one) builds every input set, runs the reference on its own copy, launches the
kernel through the emulator's own launcher (nki.jit) with a stand-in function whose body runs in the
kernel process, compares, checks provenance, required work and the roofline (physics.py), and writes the
verdict. The kernel process never sees an input value, the reference, the cost model or this result.
"""

from __future__ import annotations

import argparse
import math
import re
from typing import Any

import numpy as np
from speedpatch.targets.nki.emulator.dtypes import as_dtype
from speedpatch.targets.nki.emulator.jit import EmulatedKernel, last_report
from speedpatch.targets.nki.emulator.tensor import Tile
from speedpatch.targets.nki.isolation import physics
from speedpatch.targets.nki.isolation.process import KernelProcess, ProtocolError
from speedpatch.targets.nki.isolation.server import KernelError, Server


def _message(info: dict[str, Any]) -> str:
    line, kind, text = info.get("line") or 0, str(info.get("type", "Error")), str(info.get("text", ""))
    where = f"line {line}: " if line else ""
    message = f"{where}{kind}: {info.get('message', '')}" if kind != "NkiError" else f"{where}{info.get('message', '')}"
    return message + (f"  [{text[:160]}]" if text else "")


def _failure(exc: KernelError) -> dict[str, Any]:
    return {"status": exc.status if exc.status in ("compile_error", "runtime_error") else "runtime_error",
            "message": _message(exc.info), "line": exc.info.get("line") or 0,
            "traceback": str(exc.info.get("traceback", ""))[-4000:]}


def _hang(log: str, filename: str) -> dict[str, Any] | None:
    """The kernel process's own deadline dump (faulthandler), as a timeout naming the kernel's line."""
    if "Timeout (" not in log:
        return None
    found = re.findall(r'File "([^"]*)", line (\d+)', log)
    lines = [int(n) for f, n in found if f == filename]
    where = f" (it was at line {lines[0]})" if lines else ""
    return {"status": "timeout", "message": f"the emulated kernel did not finish within its time limit{where}"}


def evaluate_isolated(opts: argparse.Namespace, process: KernelProcess, problem: Any,
                      seeds: list[int]) -> dict[str, Any]:
    """The verdict on the kernel module already booting in `process` (see runner.evaluate)."""
    # The harness helpers live in runner.py (which this module is only ever called from).
    from speedpatch.targets.nki import runner

    try:
        result = _run(Server(process), opts, problem, runner, seeds)
    except ProtocolError as exc:
        log = process.stop()  # waits for the process and the end of its output
        code = process.proc.poll() if process.proc is not None else None
        result = _hang(log, process.filename) or {
            "status": "runtime_error", "message": f"{exc} (exit code {code})"}
    finally:
        log = process.stop()
    if log.strip():
        result["kernel_log"] = "\n".join(runner.KERNEL_LOG_PREFIX + line for line in log.splitlines()[-400:])
    result["isolation"] = process.isolation
    return result


def _run(server: Server, opts: argparse.Namespace, problem: Any, runner: Any, seeds: list[int]) -> dict[str, Any]:
    # Inputs and references first: the kernel process is still booting meanwhile.
    try:
        # the launch grid is the problem's (trusted), never what the kernel module's own objects say
        grid = runner.launch_grid(problem)
    except runner.HarnessError as exc:
        return {"status": "harness_error", "message": str(exc)}
    cases = []
    for seed in seeds:
        try:
            cases.append((seed, *runner.expected_for(problem, seed)))
        except Exception as exc:  # noqa: BLE001
            return runner.harness_failure(exc)
    try:
        kernels = server.wait_ready()
    except KernelError as exc:
        return _failure(exc)
    info = kernels.get(opts.kernel)
    if not isinstance(info, dict):
        return {"status": "rejected", "message": f"kernel {opts.kernel!r} is not defined in the file"}
    if not info.get("jit"):
        return {"status": "runtime_error", "message": "the kernel is not decorated with nki.jit (no launch recorded)"}
    params = [str(p) for p in info.get("params", [])]
    launcher = EmulatedKernel(server.remote_function(opts.kernel, params))
    reports: list[dict[str, Any]] = []
    required_bytes = required_macs = 0
    for n, (seed, inputs, expected, required_macs) in enumerate(cases):
        label = f"input set {n + 1} (seed {seed})"
        rtol, atol = runner.tolerance(problem, runner.as_list(expected), inputs)
        outs = runner.output_buffers(problem)
        with physics.Ledger() as ledger:
            try:
                actual = runner.run_kernel("emulate", None, launcher, runner.copies_of(inputs), outs, grid,
                                           list(inputs))
            except KernelError as exc:
                return _failure(exc)
            except ProtocolError:
                raise
            except Exception as exc:  # noqa: BLE001 - the emulator's launcher refused the result
                return {"status": "runtime_error", "message": f"{type(exc).__name__}: {exc}"}
        try:
            why = runner.compare(actual, expected, rtol, atol, inputs)
        except runner.HarnessError as exc:
            return {"status": "harness_error", "message": str(exc)}
        if why:
            return {"status": "incorrect", "message": f"{label}: {why}", "seeds": seeds}
        in_tiles, out_tiles = _launch_tensors(server, list(inputs), list(outs))
        why = physics.check_launch(ledger, in_tiles, out_tiles)
        unloaded = physics.unloaded_inputs(ledger, in_tiles)
        if not why and unloaded:
            why = physics.check_unloaded(problem.reference, inputs, expected, unloaded)
        if why:
            return {"status": "rejected", "message": f"{label}: {why}", "seeds": seeds}
        report = last_report()
        if report is None:
            return {"status": "runtime_error", "message": "the kernel is not decorated with nki.jit (no launch recorded)"}
        reports.append(report)
        # the input elements the result does not depend on (unloaded, checked above) are not required bytes
        in_bytes = sum(_device_bytes(v) for v in inputs.values() if isinstance(v, np.ndarray)) - sum(
            int(mask.sum()) * as_dtype(inputs[name].dtype).itemsize for name, mask in unloaded.items())
        out_bytes = sum(math.prod(t.alloc.shape) * t.dtype.itemsize for t in out_tiles if isinstance(t, Tile))
        required_bytes = in_bytes + out_bytes
        why = physics.check_physics(report, server.last_trace, required_bytes, required_macs,
                                    shared_bytes=min(in_bytes, out_bytes))
        if why:
            return {"status": "rejected", "message": f"{label}: {why}", "seeds": seeds}
    latencies = sorted({r["latency_us"] for r in reports})
    if len(latencies) > 1:
        return {"status": "rejected", "seeds": seeds,
                "message": f"the modeled latency changed between input sets ({latencies} us); a kernel's work may "
                           f"not depend on earlier launches"}
    report = reports[0]
    report["required_work"] = {"dma_bytes": required_bytes, "tensor_macs": required_macs}
    report["rpc_requests"] = server.requests
    inputs = cases[-1][1]
    return {"status": "ok", "seeds": seeds, "message": f"correct on {len(seeds)} seeds",
            "inputs": runner.describe_inputs(inputs), "grid": [int(d) for d in grid],
            "value": report["latency_us"], "unit": "us", "report": report}


def _device_bytes(array: np.ndarray) -> int:
    return int(array.size) * as_dtype(array.dtype).itemsize


def _launch_tensors(server: Server, input_names: list[str], output_names: list[str]) -> tuple[dict[str, Tile], list[Any]]:
    """The launch's input tensors by name and its output tensors (returned, or OUTPUTS arguments)."""
    args = list(server.last_args)
    inputs = {name: args[i] for i, name in enumerate(input_names) if i < len(args) and isinstance(args[i], Tile)}
    # inputs passed by name (runner.call_arguments: an output parameter before an input one)
    inputs.update({name: server.last_kwargs[name] for name in input_names
                   if isinstance(server.last_kwargs.get(name), Tile)})
    if output_names:
        return inputs, [server.last_kwargs.get(name) for name in output_names]
    result = server.last_result
    return inputs, list(result) if isinstance(result, (tuple, list)) else [result]
