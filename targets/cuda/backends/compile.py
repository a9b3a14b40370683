"""cuda-compile: no GPU needed. Builds the candidate with its harness and reports what the compiler
knows (registers, shared memory, spills, SASS instruction mix, theoretical occupancy). It cannot time:
its evaluations are NOT_MEASURED and the search will not rank by speed on it."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any

from speedpatch.model import INFRA_ERROR, NOT_MEASURED, Evaluation
from speedpatch.targets.base import Availability, Backend, EvalContext
from speedpatch.targets.cuda.build import (
    compile_flags,
    find_nvcc,
    include_flags,
    kit_units,
    nvcc_version,
)
from speedpatch.targets.cuda.compilerinfo import resource_feedback
from speedpatch.targets.cuda.evaluate import BUILD_KEYS, MEASURING_BACKENDS, checked_candidate
from speedpatch.targets.cuda.localbuild import build_local, default_cache_dir
from speedpatch.targets.cuda.problem import KERNELBENCH
from speedpatch.targets.cuda.sass import find_cuobjdump

CANNOT_TIME = f"cuda-compile cannot time kernels (no GPU); to measure speed use {MEASURING_BACKENDS}"


class CudaCompileBackend(Backend):
    name = "cuda-compile"
    target = "cuda"
    measures_speed = False
    measured_on = "compile-only"
    settings_keys = BUILD_KEYS
    description = "compile-only (no GPU): ptxas registers/shared memory/spills, SASS mix, theoretical occupancy"

    def availability(self, settings: dict[str, Any] | None = None) -> Availability:
        nvcc = find_nvcc(settings)
        if nvcc is None:
            return Availability(False, "nvcc not found: install the CUDA toolkit or set nvcc in [backend.cuda-compile] of speedpatch.toml")
        sass = "SASS mix via cuobjdump" if find_cuobjdump() else "no cuobjdump (pip install nvidia-cuda-cuobjdump)"
        return Availability(True, f"{nvcc_version(nvcc)}; {sass}; compile-only, cannot time")

    def evaluate(self, source: str, ctx: EvalContext) -> Evaluation:
        start = time.monotonic()
        settings = ctx.settings or {}
        nvcc = find_nvcc(settings)
        if nvcc is None:
            return Evaluation(status=INFRA_ERROR, message="nvcc not found on this machine")
        baseline, cand = checked_candidate(source, ctx)
        if isinstance(cand, Evaluation):
            return cand
        if cand.kind == KERNELBENCH:
            return Evaluation(status=INFRA_ERROR, message="cuda-compile handles .cu problems only; KernelBench problems "
                              f"need torch on a GPU host: use {MEASURING_BACKENDS}")
        arch = str(settings.get("arch", "sm_90"))
        flags = compile_flags(arch, list(settings.get("extra_flags", [])))
        includes = include_flags(ctx.path)
        build = ctx.workdir / "build"
        # The same A/B binary cuda-local would run: the link proves the candidate fits the harness.
        built = build_local(kit_units(source, baseline, ctx.path), build, nvcc, flags, includes,
                            default_cache_dir(settings), start + ctx.timeout, cand)
        if built.evaluation is not None:
            built.evaluation.seconds = time.monotonic() - start
            return built.evaluation
        feedback = resource_feedback(built.compiler_output, build / "candidate.o", cand.solution, cand.harness, arch,
                                     max(1.0, ctx.timeout - (time.monotonic() - start)), built.sass)
        feedback["timed"] = False
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
        names = ", ".join(f"{k} {v['registers']} regs" for k, v in feedback["kernels"].items())
        return Evaluation(status=NOT_MEASURED, message=f"compiled for {arch} ({names}); {CANNOT_TIME}",
                          log=built.compiler_output, feedback=feedback, receipt=receipt,
                          seconds=time.monotonic() - start)
