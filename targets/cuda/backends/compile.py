"""cuda-compile: no GPU needed. Builds the candidate with its harness and reports what the compiler
knows (registers, shared memory, spills, SASS instruction mix, theoretical occupancy). It cannot time:
its evaluations are NOT_MEASURED and the search will not rank by speed on it."""

from __future__ import annotations

import hashlib
import os
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from speedpatch.model import COMPILE_ERROR, INFRA_ERROR, NOT_MEASURED, REJECTED, Evaluation
from speedpatch.targets.base import Availability, Backend, EvalContext, run_process, timeout_evaluation
from speedpatch.targets.cuda.build import (
    ProblemError,
    compile_flags,
    find_nvcc,
    kit_units,
    layouts,
    nvcc_version,
    write_units,
)
from speedpatch.targets.cuda.evaluate import MEASURING_BACKENDS, static_rejection, trusted_baseline
from speedpatch.targets.cuda.occupancy import block_size, occupancy
from speedpatch.targets.cuda.problem import KERNELBENCH
from speedpatch.targets.cuda.ptxas import parse_ptxas
from speedpatch.targets.cuda.sass import dump_sass, find_cuobjdump, instruction_mix

CANNOT_TIME = f"cuda-compile cannot time kernels (no GPU); to measure speed use {MEASURING_BACKENDS}"


def cache_dir(settings: dict[str, Any]) -> Path:
    configured = settings.get("cache_dir")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "speedpatch" / "cuda"


class CudaCompileBackend(Backend):
    name = "cuda-compile"
    target = "cuda"
    measures_speed = False
    description = "compile-only (no GPU): ptxas registers/shared memory/spills, SASS mix, theoretical occupancy"

    def availability(self, settings: dict[str, Any] | None = None) -> Availability:
        nvcc = find_nvcc(settings)
        if nvcc is None:
            return Availability(False, "nvcc not found: install the CUDA toolkit or set backends.cuda-compile.nvcc")
        sass = "SASS mix via cuobjdump" if find_cuobjdump() else "no cuobjdump (pip install nvidia-cuda-cuobjdump)"
        return Availability(True, f"{nvcc_version(nvcc)}; {sass}; compile-only, cannot time")

    def evaluate(self, source: str, ctx: EvalContext) -> Evaluation:
        start = time.monotonic()
        settings = ctx.settings or {}
        nvcc = find_nvcc(settings)
        if nvcc is None:
            return Evaluation(status=INFRA_ERROR, message="nvcc not found on this machine")
        try:
            cand, _ = layouts(source, trusted_baseline(source, ctx), ctx.path)
        except ProblemError as exc:
            return Evaluation(status=REJECTED, message=str(exc))
        rejected = static_rejection(source, ctx.path)
        if rejected is not None:
            return rejected
        if cand.kind == KERNELBENCH:
            return Evaluation(status=INFRA_ERROR, message="cuda-compile handles .cu problems only; KernelBench problems "
                              f"need torch on a GPU host: use {MEASURING_BACKENDS}")
        arch = str(settings.get("arch", "sm_90"))
        flags = compile_flags(arch, list(settings.get("extra_flags", [])))
        units = kit_units(source, trusted_baseline(source, ctx), ctx.path, single=True)
        build = ctx.workdir / "build"
        write_units(units, build)
        includes = ["-I."] + ([f"-I{os.path.dirname(os.path.abspath(ctx.path))}"] if ctx.path else [])

        def left() -> float:
            return ctx.timeout - (time.monotonic() - start)

        compiled = run_process([nvcc, *flags, "-Xptxas", "-v", *includes, "-c", "candidate.cu", "-o", "candidate.o"],
                               build, max(1.0, left()))
        if compiled.timed_out:
            return timeout_evaluation("nvcc", ctx.timeout, compiled.output)
        if compiled.returncode != 0:
            return Evaluation(status=COMPILE_ERROR, message="nvcc failed", log=compiled.output,
                              seconds=time.monotonic() - start)
        # The harness object depends only on the harness, flags and compiler: build it once, reuse it.
        key = hashlib.sha256("\0".join([units.files["main.cu"], units.files["harness.cuh"], *flags, *includes,
                                        nvcc_version(nvcc), _kit_version()]).encode()).hexdigest()[:20]
        main_obj = cache_dir(settings) / f"main-{key}.o"
        if not main_obj.exists():
            made = run_process([nvcc, *flags, *includes, "-c", "main.cu", "-o", "main.o"], build, max(1.0, left()))
            if made.returncode != 0 or made.timed_out:
                return Evaluation(status=INFRA_ERROR, message="the trusted harness does not compile", log=made.output)
            main_obj.parent.mkdir(parents=True, exist_ok=True)
            tmp = main_obj.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes((build / "main.o").read_bytes())
            os.replace(tmp, main_obj)
        linked = run_process([nvcc, f"-arch={arch}", str(main_obj), "candidate.o", "-o", "bench"], build, max(1.0, left()))
        if linked.returncode != 0 or linked.timed_out:
            return Evaluation(status=COMPILE_ERROR, message="linking with the harness failed (is `launch` declared as "
                              "`void launch(const float* const* inputs, float* output)`?)", log=linked.output)
        feedback = self._feedback(compiled.output, build, cand.solution, cand.harness, arch, max(1.0, left()))
        receipt = {
            "backend": self.name,
            "where": "this machine (no GPU)",
            "compiler": nvcc,
            "compiler_version": nvcc_version(nvcc),
            "flags": flags,
            "arch": arch,
            "timing": "none: compile-only, " + CANNOT_TIME,
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        names = ", ".join(f"{k} {v['registers']} regs" for k, v in feedback.get("kernels", {}).items())
        return Evaluation(status=NOT_MEASURED, message=f"compiled for {arch} ({names}); {CANNOT_TIME}",
                          log=compiled.output, feedback=feedback, receipt=receipt, seconds=time.monotonic() - start)

    def _feedback(self, ptxas_out: str, build: Path, solution: str, harness: str, arch: str, timeout: float) -> dict:
        kernels: dict[str, Any] = {}
        resources = [r for r in parse_ptxas(ptxas_out).values() if "sp_candidate" in r.mangled]
        sass_mix: dict[str, Any] = {}
        sass_note = ""
        cuobjdump = find_cuobjdump()
        if cuobjdump:
            sass, sass_note = dump_sass(cuobjdump, build / "candidate.o", timeout)
            if sass is not None:
                sass_mix = instruction_mix(sass)
        else:
            sass_note = "cuobjdump not found (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)"
        for r in resources:
            info: dict[str, Any] = {"registers": r.registers, "shared_bytes_static": r.shared_bytes,
                                    "spill_stores_bytes": r.spill_stores, "spill_loads_bytes": r.spill_loads,
                                    "stack_bytes": r.stack_bytes}
            threads = block_size(solution, r.name, harness)
            info["occupancy"] = (occupancy(arch, threads, r.registers, r.shared_bytes) if threads
                                 else {"error": "block size not known at compile time"})
            if r.name in sass_mix:
                info["sass"] = sass_mix[r.name]
            kernels[r.name] = info
        feedback: dict[str, Any] = {"kernels": kernels, "timed": False}
        if sass_note:
            feedback["sass"] = sass_note
        return feedback


def _kit_version() -> str:
    """Changes whenever a kit header changes, so cached harness objects are rebuilt."""
    from speedpatch.targets.cuda.build import INCLUDE_DIR

    digest = hashlib.sha256()
    for header in sorted(INCLUDE_DIR.iterdir()):
        digest.update(header.read_bytes())
    return digest.hexdigest()[:12]
