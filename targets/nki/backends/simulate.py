"""nki-simulate: functional check with the real Neuron `nki.simulate` / `simulate_kernel` (CPU, no
Trainium needed). It does not time kernels, so results are "not_measured" (correctness only)."""

from __future__ import annotations

from typing import Any

from speedpatch.model import NOT_MEASURED, OK, Evaluation
from speedpatch.targets import hosts
from speedpatch.targets.base import Availability, Backend, EvalContext
from speedpatch.targets.nki.backends import remote
from speedpatch.targets.nki.backends.common import new_nonce, now, to_evaluation


class NkiSimulateBackend(Backend):
    name = "nki-simulate"
    settings_keys = remote.SETTINGS_KEYS
    target = "nki"
    measures_speed = False
    measured_on = "simulator"
    description = "functional check with the real nki.simulate (Neuron SDK), no timing"

    def availability(self, settings: dict[str, Any] | None = None) -> Availability:
        settings = settings or {}
        found = remote.installation(settings, self.name)
        if isinstance(found, str):
            return Availability(False, found)
        _, entry = found
        if not entry.get("simulate"):
            return Availability(False, f"nki {entry.get('version')} on {hosts.where(settings)} has no simulate_kernel")
        return Availability(True, f"nki {entry.get('version') or '(version unknown)'} on {hosts.where(settings)}")

    def evaluate(self, source: str, ctx: EvalContext) -> Evaluation:
        nonce = new_nonce()
        argv = ["--kernel", ctx.kernel.name, "--mode", "simulate", "--deadline", f"{max(1.0, ctx.timeout - 2.0):.1f}"]
        proc = remote.run_runner(ctx.settings, source, argv, nonce, ctx.workdir, ctx.timeout, ctx.baseline_source)
        evaluation, result = to_evaluation(proc, nonce, "candidate.py", ctx.timeout, "nki.simulate")
        if evaluation.status == OK:
            evaluation.status = NOT_MEASURED
            evaluation.message = f"{evaluation.message} (nki.simulate: functional only, not timed)"
        evaluation.receipt = {
            "backend": self.name,
            "device": f"nki.simulate on {hosts.where(ctx.settings)}",
            "inputs": result.get("inputs", {}),
            "grid": result.get("grid", []),  # the SPMD launch grid of the problem (GRID), [] for none
            "seeds": result.get("seeds", []),
            "statistic": "none (functional check only)",
            "date": now(),
        }
        return evaluation
