"""nki-neuron: compile and run on a Trainium host (local or over SSH) with the Neuron SDK; checks the
output against the harness reference on every seed, then times it with nki.benchmark: `iters` runs after
`warmup` runs (settings "warmup", "iters"); the value is the median (P50) latency in microseconds, and
(P99 - P50) / P50 is reported as the spread, so that a speedup inside the run-to-run tail is not claimed."""

from __future__ import annotations

from typing import Any

from speedpatch.model import Evaluation
from speedpatch.targets import hosts
from speedpatch.targets.base import Availability, Backend, EvalContext
from speedpatch.targets.nki.backends import remote
from speedpatch.targets.nki.backends.common import new_nonce, now, to_evaluation


class NkiNeuronBackend(Backend):
    name = "nki-neuron"
    settings_keys = remote.SETTINGS_KEYS | {"warmup", "iters"}
    target = "nki"
    measures_speed = True
    description = "real Trainium (trn1/trn2) via the Neuron SDK, locally or over SSH; nki.benchmark median latency"

    def availability(self, settings: dict[str, Any] | None = None) -> Availability:
        settings = settings or {}
        found = remote.installation(settings, self.name, "" if settings.get("host") else
                                    "; set host = \"<trainium host>\" in [backend.nki-neuron] to use SSH")
        if isinstance(found, str):
            return Availability(False, found)
        info, entry = found
        if not info.get("devices"):
            hint = "" if settings.get("host") else "; set host = \"<trainium host>\" in [backend.nki-neuron] to run over SSH"
            return Availability(False, f"no Neuron device (/dev/neuron*) on {hosts.where(settings)}{hint}")
        if not entry.get("benchmark"):
            return Availability(False, f"nki {entry.get('version')} has no nki.benchmark")
        return Availability(True, f"nki {entry.get('version') or '(version unknown)'}, {info['devices']} Neuron "
                                  f"device(s) on {hosts.where(settings)}")

    def evaluate(self, source: str, ctx: EvalContext) -> Evaluation:
        warmup = int(ctx.settings.get("warmup", 2))
        iters = int(ctx.settings.get("iters", 10))
        nonce = new_nonce()
        argv = ["--kernel", ctx.kernel.name, "--mode", "benchmark", "--warmup", str(warmup), "--iters", str(iters),
                "--deadline", f"{max(1.0, ctx.timeout - 5.0):.1f}"]
        proc = remote.run_runner(ctx.settings, source, argv, nonce, ctx.workdir, ctx.timeout, ctx.baseline_source)
        evaluation, result = to_evaluation(proc, nonce, "candidate.py", ctx.timeout, "the Trainium run")
        timing = result.get("timing") or {}
        if timing.get("p50"):
            evaluation.spread = max(0.0, (timing["p99"] - timing["p50"]) / timing["p50"])
        evaluation.receipt = {
            "backend": self.name,
            "device": f"Trainium NeuronCore on {hosts.where(ctx.settings)}",
            "compiler": f"neuronx-cc via nki {result.get('nki_version', 'unknown')}",
            "inputs": result.get("inputs", {}),
            "grid": result.get("grid", []),  # the SPMD launch grid of the problem (GRID), [] for none
            "seeds": result.get("seeds", []),
            "warmups": warmup,
            "trials": iters,
            "statistic": "median (P50) latency of nki.benchmark; spread = (P99 - P50) / P50",
            "p99_us": timing.get("p99"),
            "date": now(),
        }
        return evaluation
