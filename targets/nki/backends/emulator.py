"""nki-emulator: run the kernel file in the NumPy NKI emulator (in a subprocess with a time limit) and
report the cost model's latency. Deterministic; needs nothing beyond NumPy."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
from speedpatch.model import OK, Evaluation
from speedpatch.targets.base import Availability, Backend, EvalContext, run_process
from speedpatch.targets.nki.backends.common import RUNNER, new_nonce, now, to_evaluation
from speedpatch.targets.nki.detect import loop_returns_hoisted
from speedpatch.targets.nki.emulator import PKGS_DIR


class NkiEmulatorBackend(Backend):
    name = "nki-emulator"
    settings_keys = frozenset({"seeds", "isolation"})
    target = "nki"
    measures_speed = True
    measured_on = "emulator"
    description = "NumPy emulator of NKI + engine-level cost model (deterministic, modeled microseconds)"

    def availability(self, settings: dict[str, Any] | None = None) -> Availability:
        from speedpatch.targets.nki.isolation.process import sandbox_command

        _, _, isolation = sandbox_command(str((settings or {}).get("isolation", "auto")), Path("/"))
        return Availability(True, f"built in (NumPy {np.__version__}); latency is a deterministic model; the "
                                  f"kernel runs in its own process: {isolation}")

    def evaluate(self, source: str, ctx: EvalContext) -> Evaluation:
        candidate = ctx.workdir / "candidate.py"
        # an NKI loop's body is traced once: a return ending it ends the trace, not the loop (detect.py)
        candidate.write_text(loop_returns_hoisted(source, ctx.kernel.name), encoding="utf-8")
        # The harness comes from the original problem, never from the candidate. The engine always passes
        # it; a direct caller without one (a test, a script) gets the candidate judged by its own harness.
        nonce = new_nonce()
        seeds = ctx.settings.get("seeds", "")
        argv = [sys.executable, str(RUNNER), str(candidate), "--kernel", ctx.kernel.name, "--mode", "emulate",
                "--isolation", str(ctx.settings.get("isolation", "auto")),
                "--pkgs", PKGS_DIR, "--deadline", f"{max(1.0, ctx.timeout - 2.0):.1f}"]
        problem = ctx.workdir / "problem.py"
        problem.write_text(ctx.baseline_source if ctx.baseline_source is not None else source, encoding="utf-8")
        argv += ["--problem", str(problem)]
        if seeds:
            argv += ["--seeds", ",".join(str(s) for s in seeds)]
        # runner.py puts the emulator's package folder first on sys.path of that process only.
        env = dict(os.environ)
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env.setdefault(var, "1")  # tiles are small: BLAS threads only add contention between evaluations
        # The verdict comes back on its own pipe (result_channel), never mixed with what the kernel prints.
        proc = run_process(argv, ctx.workdir, ctx.timeout, env=env, input_text=nonce + "\n", result_channel=True)
        evaluation, result = to_evaluation(proc, nonce, candidate.name, ctx.timeout, "the emulated kernel")
        evaluation.receipt = {
            "backend": self.name,
            "device": "NumPy NKI emulator; engine-level cost model with trn1-like NeuronCore parameters "
                      "(speedpatch/targets/nki/emulator/params.py)",
            "compiler": "none (emulated)",
            "inputs": result.get("inputs", {}),
            "grid": result.get("grid", []),  # the SPMD launch grid of the problem (GRID), [] for none
            "seeds": result.get("seeds", []),
            "warmups": 0,
            "trials": 1,
            "statistic": "deterministic model",
            "isolation": result.get("isolation", ""),
            "date": now(),
        }
        if evaluation.status == OK:
            evaluation.feedback = result.get("report", {})
        return evaluation
